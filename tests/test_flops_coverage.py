"""Traced FLOPs only with their coverage (issue 30): a traced TFLOP/s or MFU counts the FLOPs of the
operators whose shapes the formulas read; where most of the kernel time is in operators whose FLOPs
are unknown (ResNet-50's convolutions recorded without their stride, DLRM's embedding bags), the
number measured the formulas' reach, not the run ("MFU 0.1 %", "MFU 0.0 %" eight times). Below
MIN_FLOPS_COVERAGE every view shows "n/a (FLOPs known for N % of kernel time)" instead."""

from __future__ import annotations

import json

import polars as pl
import pytest

import traceview as tv
from tests.conftest import SHARED_TRACES, needs_shared, run_cli
from tests.support.roofline import BF16, OpTrace, transformer_step
from traceview.analysis import traced_flops as tf

RESNET = "kineto-tb_plugin/tb_plugin/samples/resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz"
DLRM = "param/et_replay/tests/inputs/dlrm_kineto.tar.gz.extracted/dlrm_kineto"


def _step(path, known_us: int, unknown_us: int):
    """One ProfilerStep: an aten::mm whose kernel runs `known_us`, then an unlisted operator
    (aten::embedding_bag) whose kernel runs `unknown_us`."""
    b = OpTrace()
    b.events.append({"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 990,
                     "dur": 20 + known_us + unknown_us})  # fmt: skip
    mm = b.op("aten::mm", 1000, 5, [[512, 512], [512, 512]], [BF16, BF16], ["", ""])
    b.kernel(mm, 1001, 1010, known_us)
    bag = b.op("aten::embedding_bag", 1006, 5, [[1000, 64], [4096]], [BF16, "long"], ["", ""])
    b.kernel(bag, 1007, 1010 + known_us, unknown_us)
    return b.write(path)


def test_a_fully_covered_step_keeps_its_numbers(tmp_path):
    path, _ = transformer_step(tmp_path / "step.json")
    row = tv.load(path, use_cache=False).traced_flops().row(0, named=True)
    assert row["flops_coverage_frac"] == pytest.approx(1.0)
    assert row["traced_note"] is None and row["traced_mfu_frac"] > 0


@pytest.mark.parametrize(("known", "unknown", "covered"), [(60, 40, True), (50, 50, True), (30, 70, False)])
def test_coverage_is_the_known_share_of_kernel_time(tmp_path, known, unknown, covered):
    row = tv.load(_step(tmp_path / "s.json", known, unknown), use_cache=False).traced_flops().row(0, named=True)
    assert row["flops_coverage_frac"] == pytest.approx(known / (known + unknown))
    assert row["traced_flops"] == pytest.approx(2 * 512**3)  # the FLOPs themselves are kept, a lower bound
    if covered:
        assert row["traced_note"] is None and row["traced_tflops_per_device"] > 0
    else:
        assert row["traced_tflops_per_device"] is None and row["traced_mfu_frac"] is None
        assert row["traced_note"] == f"n/a (FLOPs known for {known} % of kernel time)"


def test_means_over_ranks_need_every_rank_covered():
    rows = pl.DataFrame(
        {
            "rank": [0, 1, 0, 1],
            "step": [1, 1, 2, 2],
            "traced_tflops_per_device": [100.0, 120.0, 110.0, None],
            "traced_mfu_frac": [0.1, 0.12, 0.11, None],
            "flops_coverage_frac": [0.9, 0.8, 0.9, 0.03],
            "traced_note": [None, None, None, "n/a (FLOPs known for 3 % of kernel time)"],
        }
    )
    per_step = tf.traced_means(rows, ["step"]).sort("step").to_dicts()
    assert per_step[0]["traced_tflops_per_device"] == pytest.approx(110.0) and per_step[0]["traced_note"] is None
    assert per_step[1]["traced_tflops_per_device"] is None and per_step[1]["traced_mfu_frac"] is None
    assert per_step[1]["traced_note"] == "n/a (FLOPs known for 3 % of kernel time)"
    whole = tf.traced_means(rows, []).row(0, named=True)
    assert whole["traced_mfu_frac"] is None and whole["flops_coverage_frac"] == pytest.approx(0.03)


@pytest.mark.integration
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


@needs_shared
@pytest.mark.parametrize("rel", [RESNET, DLRM])
def test_real_profiles_with_unknown_flops_show_no_mfu(rel):
    """ResNet-50 on V100 (the TensorBoard plugin's sample: convolutions without concrete inputs)
    showed "MFU 0.1 %", the 8-rank DLRM set "MFU 0.0 %" eight times."""
    t = tv.load(SHARED_TRACES / rel, use_cache=False)
    traced = t.traced_flops()
    assert traced.height and traced["traced_mfu_frac"].null_count() == traced.height
    assert (traced["flops_coverage_frac"] < tf.MIN_FLOPS_COVERAGE).all()
    assert traced["traced_note"].str.starts_with("n/a (FLOPs known for ").all()
    text = run_cli("summary", str(SHARED_TRACES / rel)).stdout
    assert "MFU 0." not in text and "n/a (FLOPs known for" in text


def test_the_note_rounds_down_and_a_step_without_kernel_time_has_one(tmp_path):
    row = tv.load(_step(tmp_path / "s.json", 4996, 5004), use_cache=False).traced_flops().row(0, named=True)
    assert row["flops_coverage_frac"] == pytest.approx(0.4996)
    assert row["traced_note"] == "n/a (FLOPs known for 49 % of kernel time)"  # not "50 %", below 50 %
    calls = pl.DataFrame(
        {"rank": [0], "step": [1], "family": ["gemm"], "flop": [1e9], "dtype": ["bf16"], "nested": [False],
         "device_ns": [1000]}
    )  # fmt: skip
    no_kernels = pl.DataFrame({"rank": [0], "step": [1], "kind": ["memcpy"], "dur_ns": [5000]})
    step_times = pl.DataFrame({"rank": [0], "step": [1], "step_time_us": [10.0]})
    out = tf.traced_flops(
        calls,
        step_times,
        pl.DataFrame(schema={"rank": pl.Int64, "dtype": pl.String, "matrix_tflops": pl.Float64}),
        no_kernels,
    )
    row = out.row(0, named=True)
    assert row["flops_coverage_frac"] is None and row["traced_tflops_per_device"] is None
    assert row["traced_note"] == "n/a (no kernel time in the step)"
    assert tf.traced_means(out, []).row(0, named=True)["traced_tflops_per_device"] is None
