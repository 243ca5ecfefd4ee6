"""Traced FLOPs only with their coverage (issue 30): a traced TFLOP/s or MFU counts the FLOPs of the
operators whose shapes the formulas read; where most of the kernel time is in operators whose FLOPs
are unknown (ResNet-50's convolutions recorded without their stride, DLRM's embedding bags), the
number measured the formulas' reach, not the run ("MFU 0.1 %", "MFU 0.0 %" eight times). Below
MIN_FLOPS_COVERAGE every view shows "n/a (FLOPs known for N % of kernel time)" instead.

This file holds the topic's unit tests; the others are in tests/integration/test_flops_coverage.py, tests/corpus/test_flops_coverage.py.
"""

from __future__ import annotations

import polars as pl
import pytest

import traceview as tv
from tests.support.flops_coverage_shared import _step  # noqa: F401
from tests.support.roofline import transformer_step
from traceview.analysis import traced_flops as tf


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
