"""What the split modules of test_dashboard.py share (helpers and fixtures)."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import ROOT
from tests.support.hostile import HOSTILE, hostile_trace  # noqa: F401 - fixture


def run_cli(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "traceview", *args], capture_output=True, text=True, cwd=ROOT, timeout=timeout
    )
