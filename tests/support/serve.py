"""`traceview serve` as a real process, started the same way by every test that needs one."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def serve(target, *args: str, stderr=subprocess.PIPE, text: bool = False) -> subprocess.Popen:
    """`python -m traceview serve TARGET ARGS...` run from the repository root, stdout piped
    (stderr piped too unless `stderr` says otherwise)."""
    return subprocess.Popen(
        [sys.executable, "-m", "traceview", "serve", str(target), *args],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=stderr,
        text=text,
    )


def stop(proc: subprocess.Popen) -> None:
    """End a server started by `serve`: terminate, and kill it if it has not gone in 10 s."""
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
