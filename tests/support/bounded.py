"""A traceview command in a fresh process under a memory limit, timed and measured (issue 30: every
hang case ends within 20 s with one line and bounded memory, and SIGTERM ends it within 3 s).

The child runs with its address space limited (RLIMIT_AS), so an unbounded allocation fails in the
child instead of taking the machine. Its peak resident memory is the VmHWM of its own memory map
(Linux /proc): the child writes it as it exits, and the parent also samples it while the child runs
(for a child killed by a signal). Not the child's ru_maxrss: that also counts the map forked from
this test process before exec, so a child of a 1.7 GB pytest would read 1.7 GB whatever it used
(the first CI failure of issue 30's round).
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

from traceview.parsers.host_ram import vm_hwm

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


#: Runs `python -m traceview` (runpy, the same process) and, at exit, writes its peak resident
#: memory (`host_ram.peak_rss`, bytes) to the file named by its first argument.
LAUNCH = """
import atexit, runpy, sys
peak_file = sys.argv.pop(1)
def write_peak():
    from traceview.parsers.host_ram import peak_rss
    with open(peak_file, "w") as f:
        f.write(str(peak_rss()))
atexit.register(write_peak)
runpy.run_module("traceview", run_name="__main__", alter_sys=True)
"""


def start(args: list[str], memory: int = MEMORY_LIMIT, env: dict | None = None) -> subprocess.Popen:
    """`python -m traceview ARGS` from the repository root, in its own process group, under the
    memory limit (with CHILD_ENV); its output goes to temporary files (a pipe that fills would
    stall it). Add `--no-cache` to ARGS to write no cache."""
    out, err = tempfile.TemporaryFile(), tempfile.TemporaryFile()
    fd, peak_file = tempfile.mkstemp(prefix="traceview-peak-")
    os.close(fd)
    proc = subprocess.Popen(
        [sys.executable, "-c", LAUNCH, peak_file, *args],
        cwd=ROOT,
        stdout=out,
        stderr=err,
        env={**os.environ, **CHILD_ENV, **(env or {})},
        preexec_fn=_limit(memory),
        start_new_session=True,
    )
    proc._bounded = (out, err, time.monotonic())  # type: ignore[attr-defined]
    proc._peak = [Path(peak_file), 0]  # type: ignore[attr-defined]
    return proc


def _sample_peak(proc: subprocess.Popen) -> None:
    """Keep the highest VmHWM seen so far of the running child."""
    seen = proc._peak  # type: ignore[attr-defined]
    seen[1] = max(seen[1], vm_hwm(proc.pid) or 0)


def _peak_bytes(proc: subprocess.Popen, usage) -> int:
    """The child's peak resident memory: what it wrote at exit, or the highest sample; its
    ru_maxrss where /proc is missing (not Linux)."""
    path, sampled = proc._peak  # type: ignore[attr-defined]
    try:
        written = int(path.read_text() or 0)
    except (OSError, ValueError):
        written = 0
    with contextlib.suppress(OSError):
        path.unlink()
    if vm_hwm() is None:
        return int(usage.ru_maxrss) * 1024
    return max(written, sampled)


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
        _sample_peak(proc)
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
    return Outcome(rc, texts[0], texts[1], seconds, _peak_bytes(proc, ended[1]))


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
        _sample_peak(proc)
        time.sleep(0.02)
    sent = time.monotonic()
    with contextlib.suppress(ProcessLookupError):
        os.kill(proc.pid, signal.SIGTERM)
    outcome = finish(proc, (sent - t0) + grace_s)
    return outcome, (time.monotonic() - sent) if outcome.returncode is not None else None
