"""The analytical model (traceview.analysis.expected, model_config). The integration tests; the topic's
description and its other tests: tests/unit/test_expected.py, tests/corpus/test_expected.py.
"""

from __future__ import annotations

import json

from tests.conftest import run_cli
from tests.support.roofline import transformer_step


def test_summary_and_report_carry_the_model(tmp_path):
    path, _ = transformer_step(tmp_path / "step.json")
    keys = ["--model", "layers=2", "--model", "hidden=1024", "--model", "heads=8", "--model", "seq=128"]
    keys += ["--model", "micro_batch=4", "--model", "causal=false"]
    doc = json.loads(run_cli("summary", str(path), "--format", "json", *keys).stdout)
    terms = {r["term"]: r for r in doc["expected"]["terms"]}
    assert doc["expected"]["verdict"].startswith("expected ") and terms["matrix_flop"]["difference"] == 0
    assert "Analytical model (docs/roofline.md): expected" in run_cli("summary", str(path), *keys).stdout
    assert "expected" not in json.loads(run_cli("summary", str(path), "--format", "json").stdout)
    out = run_cli("report", str(path), "-o", str(tmp_path / "r.html"), *keys)
    assert out.returncode == 0, out.stderr
    html = (tmp_path / "r.html").read_text()
    assert 'id="expected-table"' in html and 'id="expected-verdict"' in html
    out = run_cli("report", str(path), "--format", "csv", "-o", str(tmp_path / "tables"), *keys)
    assert out.returncode == 0, out.stderr
    rows = (tmp_path / "tables" / "expected.csv").read_text().splitlines()
    assert rows[0].startswith("term,rank,unit,expected,measured") and len(rows) == 13
