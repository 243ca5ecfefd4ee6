"""Traced FLOPs only with their coverage (issue 30). The integration tests; the topic's description and
its other tests: tests/unit/test_flops_coverage.py, tests/corpus/test_flops_coverage.py.
"""

from __future__ import annotations

import json

from tests.conftest import run_cli
from tests.support.flops_coverage_shared import _step  # noqa: F401


def test_every_view_says_na_with_the_coverage(tmp_path):
    path = _step(tmp_path / "s.json", 30, 70)
    note = "n/a (FLOPs known for 30 % of kernel time)"
    model = ["--tokens-per-step", "512", "--params", "1e6"]
    doc = json.loads(run_cli("summary", str(path), "--format", "json", *model).stdout)
    assert doc["ranks"][0]["roofline"]["steps"][0]["traced_note"] == note
    assert doc["throughput"][0]["traced_note"] == note and doc["throughput"][0]["traced_mfu_frac"] is None
    text = run_cli("summary", str(path), *model).stdout
    assert f"TFLOP from recorded shapes: {note}" in text and f"traced TFLOP/s and MFU: {note}" in text
    assert "MFU 0." not in text
    assert run_cli("report", str(path), "-o", str(tmp_path / "r.html"), *model).returncode == 0
    assert (tmp_path / "r.html").read_text().count(note) >= 2  # the roofline section and the throughput table
    compare = run_cli("compare", str(path), str(path)).stdout
    assert f"traced TFLOP/s and MFU {note}" in compare
