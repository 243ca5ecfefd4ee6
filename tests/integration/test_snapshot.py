"""PyTorch CUDA memory snapshots (`parsers/snapshot.py`). The integration tests; the topic's
description and its other tests: tests/unit/test_snapshot.py.
"""

from __future__ import annotations

from tests.conftest import run_cli
from tests.support.snapshot_shared import SNAPSHOT  # noqa: F401


def test_report_and_summary_of_a_snapshot(tmp_path):
    out = run_cli("report", str(SNAPSHOT), "-o", str(tmp_path / "r.html"))
    assert out.returncode == 0, out.stderr
    html = (tmp_path / "r.html").read_text()
    assert 'id="memory-table"' in html and "backward (/work/train.py:55)" in html
    text = run_cli("summary", str(SNAPSHOT)).stdout
    assert "memory cuda:0: peak allocated 960.00 MiB, reserved 1.50 GiB" in text
