"""The per-operator roofline (`traceview/analysis/roofline.py`). The integration tests; the topic's
description and its other tests: tests/unit/test_roofline.py, tests/corpus/test_roofline.py.
"""

from __future__ import annotations

import json

import pytest

import traceview as tv
from tests.conftest import run_cli
from tests.support.roofline import transformer_step


def test_summary_report_and_figure_show_the_roofline(tmp_path):
    path, model = transformer_step(tmp_path / "step.json")
    doc = json.loads(run_cli("summary", str(path), "--format", "json").stdout)
    section = doc["ranks"][0]["roofline"]
    expected = 6 * model["params"] * model["tokens"] + model["attention"]
    assert section["steps"][0]["step"] == 1
    assert section["steps"][0]["traced_flops"] == pytest.approx(expected)
    assert {a["family"] for a in section["anatomy"]} == {"gemm", "sdpa", "sdpa_bwd", "(not covered)"}
    assert section["operators"][0]["op"] == "aten::mm"
    text = run_cli("summary", str(path)).stdout
    assert f"traced FLOPs, step 1: {expected / 1e12:,.3f} TFLOP from recorded shapes" in text
    out = run_cli("report", str(path), "-o", str(tmp_path / "r.html"))
    assert out.returncode == 0, out.stderr
    html = (tmp_path / "r.html").read_text()
    assert "roofline-table" in html and "anatomy-table" in html and "traced-flops-table" in html
    t = tv.load(path, use_cache=False)
    names = [d.name for d in t.plot.roofline().data]
    assert names[:2] == ["gemm", "sdpa"] and "roofline, bf16 matrix: 989 TFLOP/s, 3.35 TB/s" in names


def test_diff_shows_each_operator_achieved_tflops_in_both_runs(tmp_path):
    base_path, _ = transformer_step(tmp_path / "base.json")
    doc = json.loads(base_path.read_text())
    for e in doc["traceEvents"]:  # the new run: every kernel twice as long
        if e.get("cat") == "kernel":
            e["dur"] = e["dur"] * 2
    new_path = tmp_path / "new.json"
    new_path.write_text(json.dumps(doc))
    result = tv.diff(tv.load(base_path, use_cache=False), tv.load(new_path, use_cache=False))
    ops = result.operators
    assert set(ops["status"]) == {"both"} and ops.height == tv.load(base_path, use_cache=False).op_roofline().height
    assert (ops["new_achieved_tflops_per_s"] / ops["base_achieved_tflops_per_s"]).to_list() == pytest.approx(
        [0.5] * ops.height
    )
    assert ops["tflops_delta_pct"].to_list() == pytest.approx([-50.0] * ops.height)
    text = run_cli("diff", str(base_path), str(new_path)).stdout
    assert "Operators (recorded shapes" in text and "aten::mm" in text
    assert json.loads(run_cli("diff", str(base_path), str(new_path), "--format", "json").stdout)["operators"]
    page = run_cli("diff", str(base_path), str(new_path), "--format", "html").stdout
    assert 'id="diff-operators"' in page and "aten::mm" in page


def test_compare_lists_each_run_traced_tflops(tmp_path):
    a, _ = transformer_step(tmp_path / "a.json")
    b, _ = transformer_step(tmp_path / "b.json", batch=8)  # twice the tokens: twice the matmul FLOPs
    c = tv.compare([str(a), str(b)])
    want = [tv.load(p, use_cache=False).traced_flops()["traced_tflops_per_device"][0] for p in (a, b)]
    assert c.table["traced_tflops_per_device"].to_list() == pytest.approx(want)
    assert "traced TFLOP/s/device" in run_cli("compare", str(a), str(b)).stdout


def test_what_if_shows_in_summary_report_and_csv(tmp_path):
    """The summary's what_if rows are t.what_if()'s (rounded); the text, the report and the csv
    folder carry them."""
    path, _ = transformer_step(tmp_path / "step.json")
    want = tv.load(path, use_cache=False).what_if().to_dicts()
    doc = json.loads(run_cli("summary", str(path), "--format", "json").stdout)
    assert [r["scenario"] for r in doc["what_if"]] == [r["scenario"] for r in want]
    for got, row in zip(doc["what_if"], want):
        assert got["bound_us"] == pytest.approx(row["bound_us"], abs=1e-3)
    text = run_cli("summary", str(path)).stdout
    assert "What if (bounds on the mean iteration" in text and "matrix_in_fp8" in text
    assert run_cli("report", str(path), "-o", str(tmp_path / "r.html")).returncode == 0
    html = (tmp_path / "r.html").read_text()
    assert 'id="what-if-table"' in html and "matrix_at_peak_frac" in html
    assert run_cli("report", str(path), "--format", "csv", "-o", str(tmp_path / "t")).returncode == 0
    assert (tmp_path / "t" / "what_if.csv").read_text().startswith("scenario,assumption,iteration_us")


def test_both_mfu_estimates_side_by_side_with_their_formulas(tmp_path):
    """With --params the throughput rows carry the traced estimate beside 6 x params x tokens,
    each with its formula (summary JSON and text, the report)."""
    path, model = transformer_step(tmp_path / "step.json")
    keys = ["--tokens-per-step", str(model["tokens"]), "--params", str(model["params"])]
    row = json.loads(run_cli("summary", str(path), "--format", "json", *keys).stdout)["throughput"][0]
    traced = tv.load(path, use_cache=False).traced_flops().row(0, named=True)
    assert row["traced_mfu_frac"] == pytest.approx(traced["traced_mfu_frac"], abs=1e-6)
    assert abs(row["traced_mfu_frac"] / row["mfu_frac"] - 1) < 0.05
    assert row["mfu_formula"].startswith("MFU = 6 x") and row["traced_formula"].startswith("traced MFU = FLOPs")
    text = run_cli("summary", str(path), *keys).stdout
    assert "traced MFU %" in text and "traced MFU = FLOPs summed" in text
    assert run_cli("report", str(path), "-o", str(tmp_path / "r.html"), *keys).returncode == 0
    assert "traced MFU (%)" in (tmp_path / "r.html").read_text()
    plain = json.loads(run_cli("summary", str(path), "--format", "json").stdout)
    assert "throughput" not in plain
