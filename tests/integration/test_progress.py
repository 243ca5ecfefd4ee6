"""The CLI's progress display. The integration tests; the topic's description and its other tests:
tests/unit/test_progress.py.
"""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import DATA, ROOT


def test_cli_success_writes_nothing_to_stderr_when_piped():
    out = subprocess.run(
        [sys.executable, "-m", "traceview", "info", str(DATA / "kineto_minimal.json")],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert out.returncode == 0 and out.stderr == ""
