"""A traceview command in a fresh process under a memory limit, timed and measured (issue 30: every
hang case ends within 20 s with one line and bounded memory, and SIGTERM ends it within 3 s).

The child runs with its address space limited (RLIMIT_AS), so an unbounded allocation fails in the
child instead of taking the machine; its peak resident memory comes from `os.wait4` (the child's own
rusage, not every child the test process ever had).
"""

from __future__ import annotations

import contextlib
import os
import resource
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

#: The address-space limit of the child (bytes): the issue's "bounded memory (under 1.5 GB)".
MEMORY_LIMIT = 1536 << 20


@dataclass
class Outcome:
    """How a bounded run ended: exit code (negative: killed by that signal; None: still running
    at the deadline, then killed), output, wall seconds, and peak resident memory in bytes."""

    returncode: int | None
    stdout: str
    stderr: str
    seconds: float
    peak_rss_bytes: int

    @property
    def lines(self) -> list[str]:
        """The non-empty lines the command wrote on stderr."""
        return [line for line in self.stderr.splitlines() if line.strip()]


def _limit(memory: int):
    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))

    return apply


#: The child's environment: a fixed number of polars threads and malloc arenas, since each thread
#: reserves address space (RLIMIT_AS counts it: `summary` of a small sample reserves 1.2 GB with 2
#: polars threads, 1.8 GB with 64), so the limit means the same on a machine of any size.
CHILD_ENV = {"POLARS_MAX_THREADS": "2", "MALLOC_ARENA_MAX": "2"}


def start(args: list[str], memory: int = MEMORY_LIMIT, env: dict | None = None) -> subprocess.Popen:
    """`python -m traceview ARGS` from the repository root, in its own process group, under the
    memory limit (with CHILD_ENV); its output goes to temporary files (a pipe that fills would
    stall it). Add `--no-cache` to ARGS to write no cache."""
    out, err = tempfile.TemporaryFile(), tempfile.TemporaryFile()
    proc = subprocess.Popen(
        [sys.executable, "-m", "traceview", *args],
        cwd=ROOT,
        stdout=out,
        stderr=err,
        env={**os.environ, **CHILD_ENV, **(env or {})},
        preexec_fn=_limit(memory),
        start_new_session=True,
    )
    proc._bounded = (out, err, time.monotonic())  # type: ignore[attr-defined]
    return proc


def _reap(proc: subprocess.Popen, block: bool = False):
    """(exit code, rusage) of the ended child, or None while it runs."""
    pid, status, usage = os.wait4(proc.pid, 0 if block else os.WNOHANG)
    if not pid:
        return None
    return os.waitstatus_to_exitcode(status), usage


def finish(proc: subprocess.Popen, deadline_s: float) -> Outcome:
    """Wait for `proc` (from `start`) at most `deadline_s` seconds from its start; past that its
    process group is killed (returncode None)."""
    out, err, t0 = proc._bounded  # type: ignore[attr-defined]
    while (ended := _reap(proc)) is None and time.monotonic() - t0 <= deadline_s:
        time.sleep(0.02)
    rc: int | None = None
    if ended is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        ended = _reap(proc, block=True)
    else:
        rc = ended[0]
    seconds = time.monotonic() - t0
    proc.returncode = ended[0]
    texts = []
    for f in (out, err):
        f.seek(0)
        texts.append(f.read().decode("utf-8", "replace"))
        f.close()
    return Outcome(rc, texts[0], texts[1], seconds, int(ended[1].ru_maxrss) * 1024)


def run(args: list[str], deadline_s: float = 20.0, memory: int = MEMORY_LIMIT, env: dict | None = None) -> Outcome:
    """Run `python -m traceview ARGS` under the memory limit; killed past `deadline_s`."""
    return finish(start(args, memory, env), deadline_s)


def cpu_seconds(pid: int) -> float:
    """CPU seconds (user + system) a running process has used so far (Linux /proc); 0 if unknown."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return 0.0


def terminate(
    args: list[str],
    after_s: float = 60.0,
    grace_s: float = 3.0,
    memory: int = MEMORY_LIMIT,
    env: dict | None = None,
    after_cpu_s: float | None = None,
) -> tuple[Outcome, float | None]:
    """Start the command, send SIGTERM once it has run `after_s` seconds or (`after_cpu_s`) used
    that much CPU, whichever comes first, if it still runs, and wait at most `grace_s` more. A
    CPU trigger tracks the work done whatever the machine's speed (the imports take a fixed share
    of it). Returns the outcome and the seconds from the signal to the exit (None when it had
    ended before the signal: then the case did not test the signal)."""
    proc = start(args, memory, env)
    t0 = proc._bounded[2]  # type: ignore[attr-defined]
    while time.monotonic() - t0 < after_s and (after_cpu_s is None or cpu_seconds(proc.pid) < after_cpu_s):
        if os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None:
            return finish(proc, 0), None
        time.sleep(0.02)
    sent = time.monotonic()
    with contextlib.suppress(ProcessLookupError):
        os.kill(proc.pid, signal.SIGTERM)
    outcome = finish(proc, (sent - t0) + grace_s)
    return outcome, (time.monotonic() - sent) if outcome.returncode is not None else None
