"""Nsight Systems SQLite exports (`parsers/nsys.py`) on real public exports (tests/data/nsys,
PROVENANCE.md), checked against an independent reading (pipit's GPU trace of the same run), and a
small export built from the documented schema for NVTX step ranges. The integration tests; the
topic's description and its other tests: tests/unit/test_nsys.py.
"""

from __future__ import annotations

from tests.conftest import DATA, run_cli
from tests.support.browser import serve_answers, server_for  # noqa: F401 - fixture
from tests.support.nsys_shared import NSYS, _unpacked, cloverleaf  # noqa: F401


def test_summary_report_and_info_of_an_export(cloverleaf, tmp_path):
    for command in (("info",), ("summary",), ("report", "-o", str(tmp_path / "r.html"))):
        out = run_cli(*command[:1], str(cloverleaf), *command[1:])
        assert out.returncode == 0, out.stderr
    assert "NVIDIA A100-SXM4-80GB" in run_cli("summary", str(cloverleaf)).stdout


def test_serve_answers_for_an_export_and_a_snapshot(cloverleaf, server_for):
    """`traceview serve` on each new format: the pages and the timeline's data answer."""
    for path in (cloverleaf, DATA / "snapshot" / "memory_snapshot.pickle"):
        meta, overlays = serve_answers(server_for(path))
        kinds = set(meta["lanes"]["kind"])
        assert ("device" in kinds) if path == cloverleaf else (kinds == {"memory"} and overlays["memory"]["lane"])
