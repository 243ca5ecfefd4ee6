"""The per-operator roofline (`traceview/analysis/roofline.py`): every formula on a small trace
whose numbers are worked out by hand here, the ownership of kernels by nested operators, the
command, and on the TraceLens profiles in ../shared every row of TraceLens' own GEMM, SDPA_fwd,
CONV_fwd and elementwise reports that traceview covers.

This file holds the topic's unit tests; the others are in tests/integration/test_roofline.py, tests/corpus/test_roofline.py.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import polars as pl
import pytest

import traceview as tv
from tests.conftest import run_cli
from tests.support.roofline import BF16, F32, OpTrace, transformer_step
from traceview.op_stack import op_parents


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    b = OpTrace()
    # addmm: bias [64], A [32, 128], B [128, 64], bf16, inside an aten::linear (a wrapper, not listed)
    b.op("aten::linear", 100, 40, [[32, 128], [64, 128], [64]], [BF16] * 3, ["", "", ""])
    mm = b.op(
        "aten::addmm",
        105,
        30,
        [[64], [32, 128], [128, 64], [], []],
        [BF16] * 3 + ["Scalar"] * 2,
        ["", "", "", "1", "1"],
    )
    b.kernel(mm, 110, 1000, 10)
    # convolution 2x3x8x8 * 4x3x3x3, stride 1, padding 1: its bias add_ (listed) inside, with its own kernel
    conv = b.op(
        "aten::convolution", 200, 60, [[2, 3, 8, 8], [4, 3, 3, 3], [4], [], [], [], [], [], []], [F32] * 3 + ["ScalarList"] * 3 + ["Scalar", "ScalarList", "Scalar"],
        ["", "", "", "[1, 1]", "[1, 1]", "[1, 1]", "False", "[0, 0]", "1"],
    )  # fmt: skip
    b.kernel(conv, 210, 2000, 5)
    add = b.op("aten::add_", 230, 20, [[2, 4, 8, 8], [1, 4, 1, 1], []], [F32, F32, "Scalar"], ["", "", "1"])
    b.kernel(add, 235, 2006, 1)
    # causal flash attention: q, k, v [1, 2, 16, 8] bf16
    sdpa = b.op(
        "aten::_scaled_dot_product_flash_attention", 300, 20, [[1, 2, 16, 8]] * 3 + [[], [], [], []], [BF16] * 3 + ["Scalar"] * 4,
        ["", "", "", "0.", "True", "False", ""],
    )  # fmt: skip
    b.kernel(sdpa, 305, 3000, 4)
    # broadcast add [4, 1, 8] + [1, 6, 8] fp32
    badd = b.op("aten::add", 400, 10, [[4, 1, 8], [1, 6, 8], []], [F32, F32, "Scalar"], ["", "", "1"])
    b.kernel(badd, 402, 4000, 2)
    # nearest upsample of [1, 2, 4, 4] bf16 to 8 x 8
    up = b.op(
        "aten::upsample_nearest2d",
        500,
        10,
        [[1, 2, 4, 4], [], [], []],
        [BF16, "ScalarList", "", ""],
        ["", "[8, 8]", "", ""],
    )
    b.kernel(up, 502, 5000, 3)
    # mm whose two kernels overlap on two streams: its device time is their union (6 us, not 8)
    two = b.op("aten::mm", 600, 20, [[16, 16], [16, 16]], [BF16, BF16], ["", ""])
    b.kernel(two, 602, 6000, 4, stream=7)
    b.kernel(two, 604, 6002, 4, stream=8)
    # an operator that is not listed: no row
    other = b.op("aten::topk", 700, 10, [[8, 8]], [F32], [""])
    b.kernel(other, 702, 7000, 1)
    return tv.load(b.write(tmp_path_factory.mktemp("roofline") / "small.json"), use_cache=False)


def _row(t, op: str) -> dict:
    rows = t.op_roofline().filter(pl.col("op") == op)
    assert rows.height == 1, rows
    return rows.row(0, named=True)


@pytest.mark.parametrize(
    "op, gflop, data, device_us",
    [
        ("aten::addmm", (2 * 32 * 64 * 128 + 32 * 64) / 1e9, (32 * 128 + 128 * 64 + 32 * 64 + 64) * 2, 10),
        ("aten::convolution", 2 * 2 * 4 * (8 * 8) * 3 * 9 / 1e9, (2 * 3 * 64 + 4 * 3 * 9 + 2 * 4 * 64) * 4, 6),
        ("aten::add_", 2 * 4 * 64 / 1e9, (2 * 4 * 64 + 4 + 2 * 4 * 64) * 4, 1),
        ("aten::_scaled_dot_product_flash_attention", 2 * (2 * 16) * 16 * (8 + 8) * 0.5 / 1e9, (3 * 256 + 256) * 2, 4),
        ("aten::add", 4 * 6 * 8 / 1e9, (32 + 48 + 4 * 6 * 8) * 4, 2),
        ("aten::upsample_nearest2d", 2 * 64 / 1e9, (32 + 128) * 2, 3),
        ("aten::mm", 2 * 16 * 16 * 16 / 1e9, 3 * 256 * 2, 6),
    ],
)
def test_each_formula_on_a_worked_example(small, op, gflop, data, device_us):
    row = _row(small, op)
    assert row["gflop"] == pytest.approx(gflop, rel=1e-12)
    assert row["bytes"] == pytest.approx(data, rel=1e-12)
    assert row["device_time_us"] == pytest.approx(device_us)
    assert row["achieved_tflops_per_s"] == pytest.approx(gflop * 1e9 / (device_us * 1e-6) / 1e12)


@pytest.fixture(scope="module")
def norms(tmp_path_factory):
    """Normalizations and reductions of an fp32 [8, 16, 32, 32] input (N = 131,072), each call
    with one 5 us kernel; the worked examples below count them by hand."""
    b = OpTrace()
    x = [8, 16, 32, 32]
    calls = [
        # batch norm, training, with weight and bias: C = 16
        ("aten::native_batch_norm", [x, [16], [16], [16], [16], [], [], []], [F32] * 5 + ["Scalar"] * 3,
         ["", "", "", "", "", "True", "0.1", "1e-05"]),
        # its backward, training, input gradient wanted, no weight
        ("aten::native_batch_norm_backward", [x, x, [], [16], [16], [16], [16], [], [], []],
         [F32, F32, "", F32, F32, F32, F32, "Scalar", "Scalar", "ScalarList"],
         ["", "", "", "", "", "", "", "True", "1e-05", "[True, False, False]"]),
        # layer norm over [16, 32, 32] (C = 16,384), no weight or bias
        ("aten::native_layer_norm", [x, [], [], [], []], [F32, "ScalarList", "", "", "Scalar"],
         ["", "[16, 32, 32]", "", "", "1e-05"]),
        # RMS norm over [32, 32] (C = 1,024) with a weight
        ("aten::_fused_rms_norm", [x, [], [32, 32], []], [F32, "ScalarList", F32, ""], ["", "[32, 32]", "", ""]),
        # group norm backward, 4 groups (C = 16 / 4), weight, every gradient wanted
        ("aten::native_group_norm_backward", [x, x, [8, 4], [8, 4], [16], [], [], [], [], []],
         [F32] * 5 + ["Scalar"] * 4 + ["ScalarList"], ["", "", "", "", "", "8", "16", "1024", "4", "[True, True, True]"]),
        # mean over the last dim, keepdim: 8 x 16 x 32 outputs
        ("aten::mean", [x, [], [], []], [F32, "ScalarList", "Scalar", ""], ["", "[-1]", "True", ""]),
        # sum over every dim (dim = [])
        ("aten::sum", [x, [], [], []], [F32, "ScalarList", "Scalar", ""], ["", "[]", "False", ""]),
        # the minimum of two tensors: elementwise, not a reduction
        ("aten::min", [x, x], [F32, F32], ["", ""]),
        # a cumulative sum keeps the input's size
        ("aten::cumsum", [x, [], []], [F32, "Scalar", ""], ["", "3", ""]),
    ]  # fmt: skip
    for i, (name, dims, types, concrete) in enumerate(calls):
        ext = b.op(name, 100 + 100 * i, 20, dims, types, concrete)
        b.kernel(ext, 102 + 100 * i, 1000 + 100 * i, 5)
    return tv.load(b.write(tmp_path_factory.mktemp("norms") / "norms.json"), use_cache=False)


N = 8 * 16 * 32 * 32


@pytest.mark.parametrize(
    "op, flop, data",
    [
        # 6·C + 3·N (statistics) + 2·N; input and output, and mean, var, weight, bias, 2 running stats
        ("aten::native_batch_norm", 6 * 16 + 5 * N, (2 * N + 6 * 16) * 4),
        # C·(4·E + 5·E) = 9·N; grad_out, input twice, 1/std (no weight: nothing more)
        ("aten::native_batch_norm_backward", 9 * N, (3 * N + 16) * 4),
        # 6·C + 5·N; input, output, and a mean and 1/std (fp32) per row: N / C = 8 rows
        ("aten::native_layer_norm", 6 * 16384 + 5 * N, 2 * N * 4 + 8 * 2 * 4),
        # (N / C)·(2·C + 2) + 2·N; input, output, weight
        ("aten::_fused_rms_norm", N // 1024 * (2 * 1024 + 2) + 2 * N, (2 * N + 1024) * 4),
        # 9·N; grad_out, input twice, 1/std, weight, its and the bias's gradients over C = 4
        ("aten::native_group_norm_backward", 9 * N, (3 * N + 4 + 4 + 2 * 4) * 4),
        ("aten::mean", N, (N + N // 32) * 4),
        ("aten::sum", N, (N + 1) * 4),
        ("aten::cumsum", N, 2 * N * 4),
    ],
)
def test_norm_and_reduction_formulas_on_worked_examples(norms, op, flop, data):
    row = _row(norms, op)
    assert row["gflop"] * 1e9 == pytest.approx(flop, rel=1e-12)
    assert row["bytes"] == pytest.approx(data, rel=1e-12)
    assert row["peak_tflops"] == 67.0  # vector work: the H100's fp32 rate, not its tensor peak


def test_elementwise_min_of_two_tensors_is_not_counted(norms):
    row = _row(norms, "aten::min")
    assert row["gflop"] is None and row["bytes"] is None and row["device_time_us"] == 5


def test_nested_operators_and_what_is_not_listed(small):
    calls = small.op_calls()
    assert set(calls["op"]) == {
        "aten::addmm",
        "aten::convolution",
        "aten::add_",
        "aten::_scaled_dot_product_flash_attention",
        "aten::add",
        "aten::upsample_nearest2d",
        "aten::mm",
    }  # not aten::linear (a wrapper) nor aten::topk (not listed)
    nested = dict(calls.select("op", "nested").iter_rows())
    assert nested["aten::add_"] and not nested["aten::convolution"]
    conv = calls.filter(pl.col("op") == "aten::convolution").row(0, named=True)
    assert conv["kernels"] == 2  # its own and the bias add_'s


def test_limits_peak_share_and_bound_on_an_h100(small):
    row = _row(small, "aten::addmm")
    assert (row["peak_tflops"], row["memory_tbps"], row["dtype"]) == (989.0, 3.35, "bf16")
    flop, data = row["gflop"] * 1e9, row["bytes"]
    expected_us = max(flop / 989e12, data / 3.35e12) * 1e6
    assert row["expected_us"] == pytest.approx(expected_us)
    assert row["roofline_frac"] == pytest.approx(expected_us / 10)
    assert row["bound"] == ("compute" if flop / 989e12 >= data / 3.35e12 else "memory")
    assert row["peak_frac"] == pytest.approx(row["achieved_tflops_per_s"] / 989.0)
    conv = _row(small, "aten::convolution")  # fp32: the fp32 rate of the table
    assert conv["dtype"] == "fp32" and conv["peak_tflops"] == 67.0


def test_a_trace_without_shapes_has_no_rows_and_the_command_says_why(tmp_path):
    from tests.conftest import DATA

    t = tv.load(DATA / "kineto_minimal.json", use_cache=False)
    assert t.op_roofline().is_empty() and t.op_calls().is_empty()
    out = run_cli("roofline", str(DATA / "kineto_minimal.json"))
    assert out.returncode == 0 and "record_shapes=True" in out.stdout


def test_the_command_in_every_format(small, tmp_path):
    path = Path(small.source)
    text = run_cli("roofline", str(path))
    assert text.returncode == 0, text.stderr
    assert "aten::addmm" in text.stdout and "bound" in text.stdout
    doc = json.loads(run_cli("roofline", str(path), "--format", "json").stdout)
    assert {r["op"] for r in doc["operators"]} >= {"aten::addmm", "aten::convolution"}
    rows = list(csv.DictReader(run_cli("roofline", str(path), "--format", "csv").stdout.splitlines()))
    assert len(rows) == 7 and {"gflop", "achieved_tflops_per_s", "peak_frac", "bound"} <= set(rows[0])


def test_op_parents_nest_by_time():
    ops = pl.DataFrame(
        {
            "pid": [1] * 6,
            "tid": [1] * 6,
            "start_ns": [0, 10, 10, 60, 200, 80],
            "end_ns": [100, 50, 20, 70, 210, 80],
        }
    )
    assert op_parents(ops).to_list() == [None, 0, 1, 0, None, None]


def test_mfu_from_the_trace_equals_six_params_tokens_within_5_percent(tmp_path):
    path, model = transformer_step(tmp_path / "step.json")
    t = tv.load(path, use_cache=False)
    row = t.traced_flops().row(0, named=True)
    six_pt = 6 * model["params"] * model["tokens"]
    assert row["traced_flops"] == pytest.approx(six_pt + model["attention"], rel=1e-12)  # every matmul, summed
    assert abs(row["traced_flops"] / six_pt - 1) < 0.05  # attention is the rest: 2.4 % here
    assert row["peak_dtype"] == "bf16" and row["peak_tflops"] == 989.0
    step_s = row["step_time_us"] / 1e6
    assert row["traced_tflops_per_device"] == pytest.approx(row["traced_flops"] / step_s / 1e12)
    assert row["traced_mfu_frac"] == pytest.approx(row["traced_tflops_per_device"] / 989.0)
    mfu_6pt = t.throughput(tokens_per_step=model["tokens"], params=model["params"], devices=1)["mfu_frac"][0]
    assert abs(row["traced_mfu_frac"] / mfu_6pt - 1) < 0.05
    anatomy = {r["family"]: r for r in t.flops_anatomy().iter_rows(named=True)}
    assert anatomy["gemm"]["flops_frac"] == pytest.approx(six_pt / row["traced_flops"])
    assert sum(r["device_time_frac"] for r in anatomy.values()) == pytest.approx(1.0)


def test_without_shapes_the_summary_has_no_roofline_and_the_report_says_why(tmp_path):
    from tests.conftest import DATA

    doc = json.loads(run_cli("summary", str(DATA / "kineto_minimal.json"), "--format", "json").stdout)
    assert "roofline" not in doc["ranks"][0]
    run_cli("report", str(DATA / "kineto_minimal.json"), "-o", str(tmp_path / "r.html"))
    assert "record the profile with torch.profiler(record_shapes=True)" in (tmp_path / "r.html").read_text()


@pytest.fixture(scope="module")
def edges(tmp_path_factory):
    """Calls whose formulas the first fixture does not reach: optional inputs passed as None,
    transposed convolutions, backward passes, vendor GEMMs, a bilinear resize, calls of one shape
    that differ in a stride or a dtype, an integer copy, and a GEMM far past the ridge point."""
    b = OpTrace()
    ts = [100.0]

    def call(name, dims, types, concrete, dur=2.0):
        ext = b.op(name, ts[0], 8, dims, types, concrete)
        b.kernel(ext, ts[0] + 1, 10 * ts[0], dur)
        ts[0] += 10

    call("vllm::rocm_unquantized_gemm", [[32, 64], [128, 64], []], [BF16, BF16, ""], ["", "", ""])  # bias None
    call("aiter::gemm_a16w16", [[32, 64], [128, 64]], [BF16, BF16], ["", ""])
    conv_types = [F32, F32, ""] + ["ScalarList"] * 3 + ["Scalar", "ScalarList", "Scalar"]
    for stride, transposed in (("[1, 1]", "False"), ("[2, 2]", "False"), ("[2, 2]", "True")):
        call(
            "aten::convolution",
            [[2, 4, 8, 8], [4, 3, 3, 3], [], [], [], [], [], [], []],
            conv_types,
            ["", "", "", stride, "[1, 1]", "[1, 1]", transposed, "[0, 0]", "1"],
        )
    bwd = [[2, 4, 8, 8], [2, 3, 8, 8], [4, 3, 3, 3]] + [[]] * 8
    call(
        "aten::convolution_backward",
        bwd,
        [F32] * 3 + [""] * 8,
        ["", "", "", "", "[1, 1]", "[1, 1]", "[1, 1]", "False", "[0, 0]", "1", ""],
    )
    call(
        "aten::convolution_backward",
        bwd,
        [F32] * 3 + [""] * 8,
        ["", "", "", "", "[1, 1]", "[1, 1]", "[1, 1]", "True", "[0, 0]", "1", ""],
    )
    q = [1, 2, 16, 8]
    call(
        "aten::_scaled_dot_product_efficient_attention_backward",
        [q, q, q, q, [], q] + [[]] * 7,
        [BF16] * 4 + [""] + [BF16] + [""] * 7,
        [""] * 11 + ["True", ""],
    )
    call(
        "aten::upsample_bilinear2d",
        [[1, 2, 4, 4], [], [], []],
        [BF16, "ScalarList", "Scalar", ""],
        ["", "[6, 6]", "False", ""],
    )
    call("aten::add", [[4, 8], [4, 8], []], [BF16, BF16, "Scalar"], ["", "", "1"])
    call("aten::add", [[4, 8], [4, 8], []], [BF16, F32, "Scalar"], ["", "", "1"])
    call("aten::copy_", [[1024], [1024], []], ["long int", "long int", "Scalar"], ["", "", "False"])
    call("aten::mm", [[4096, 4096], [4096, 4096]], [BF16, BF16], ["", ""], dur=200.0)
    return tv.load(b.write(tmp_path_factory.mktemp("edges") / "edges.json"), use_cache=False).op_roofline()


def test_optional_inputs_passed_as_none_count_nothing(edges):
    vllm = edges.filter(pl.col("op") == "vllm::rocm_unquantized_gemm").row(0, named=True)
    assert vllm["gflop"] * 1e9 == 2 * 32 * 128 * 64  # no bias FLOPs for a None bias
    assert vllm["bytes"] == (32 * 64 + 128 * 64 + 32 * 128) * 2
    aiter = edges.filter(pl.col("op") == "aiter::gemm_a16w16").row(0, named=True)
    assert (aiter["gflop"], aiter["bytes"]) == (vllm["gflop"], vllm["bytes"])


def test_a_stride_makes_its_own_row_and_transposed_convolutions_are_not_counted(edges):
    conv = edges.filter(pl.col("op") == "aten::convolution").sort("gflop", nulls_last=True)
    out_1, out_2 = 2 * 4 * 8 * 8, 2 * 4 * 4 * 4  # stride 1 keeps 8 x 8, stride 2 gives 4 x 4
    assert conv["gflop"].to_list()[:2] == pytest.approx([2 * out_2 * 3 * 9 / 1e9, 2 * out_1 * 3 * 9 / 1e9])
    assert conv["bytes"].to_list()[:2] == [(128 * 4 + 108 + out_2) * 4, (128 * 4 + 108 + out_1) * 4]
    transposed = conv.filter(pl.col("concrete_inputs").str.contains("True"))
    assert transposed.select("gflop", "bytes", "expected_us", "bound").row(0) == (None, None, None, None)
    bwd = edges.filter(pl.col("op") == "aten::convolution_backward").sort("gflop", nulls_last=True)
    assert bwd["gflop"][0] * 1e9 == 2 * (2 * 2 * 4 * 64 * 3 * 9)  # twice the forward of the same shapes
    assert bwd["bytes"][0] == (2 * 4 * 64 + 2 * 2 * 3 * 64 + 2 * 108) * 4
    assert bwd["gflop"][1] is None and bwd["bytes"][1] is None  # transposed


def test_attention_backward_bilinear_resize_and_mixed_dtypes(edges):
    sdpa = edges.filter(pl.col("op") == "aten::_scaled_dot_product_efficient_attention_backward").row(0, named=True)
    assert sdpa["gflop"] * 1e9 == 2.5 * 2 * (2 * 16) * 16 * (8 + 8) * 0.5  # causal: half
    assert sdpa["bytes"] == 2 * (4 * 256) * 2
    up = edges.filter(pl.col("op") == "aten::upsample_bilinear2d").row(0, named=True)
    assert up["gflop"] * 1e9 == pytest.approx(2 * 36) and up["bytes"] == (32 + 72) * 2
    add = edges.filter(pl.col("op") == "aten::add").sort("bytes")
    assert add["bytes"].to_list() == [3 * 32 * 2, 32 * 2 + 32 * 4 + 32 * 2] and add.height == 2


def test_every_dtype_has_the_memory_roof_and_the_bound_is_the_larger_term(edges):
    copy = edges.filter(pl.col("op") == "aten::copy_").row(0, named=True)
    assert copy["dtype"] == "int64" and copy["memory_tbps"] == 3.35 and copy["bound"] == "memory"
    mm = edges.filter(pl.col("op") == "aten::mm").row(0, named=True)
    flop, data = 2 * 4096**3, 3 * 4096 * 4096 * 2
    assert mm["intensity_flop_per_byte"] == pytest.approx(flop / data)  # 1,365 FLOP/byte, past H100's ridge (295)
    assert mm["bound"] == "compute" and mm["expected_us"] == pytest.approx(flop / 989e12 * 1e6)
    assert mm["roofline_frac"] == pytest.approx(flop / 989e12 * 1e6 / 200)
    small_add = edges.filter(pl.col("op") == "aten::add").row(0, named=True)
    assert small_add["bound"] == "memory"


def test_a_user_entry_without_dtype_peaks_leaves_the_roofline_to_the_shipped_one(small, tmp_path):
    rules = tmp_path / "rules.toml"
    rules.write_text('[[device_peaks.rule]]\nname = "My H100"\nmatch = "H100"\npeak_tflops = 900.0\n')
    row = small.with_rules(rules).op_roofline().filter(pl.col("op") == "aten::addmm").row(0, named=True)
    assert (row["peak_tflops"], row["memory_tbps"]) == (989.0, 3.35)


def test_a_concrete_input_beyond_int64_is_not_a_crash(tmp_path):
    b = OpTrace()
    conv = b.op(
        "aten::convolution",
        100,
        10,
        [[1, 1, 4, 4], [1, 1, 3, 3], [], [], [], [], [], [], []],
        [F32, F32, ""] + ["ScalarList"] * 3 + ["Scalar", "ScalarList", "Scalar"],
        ["", "", "", "[99999999999999999999, 1]", "[0, 0]", "[1, 1]", "False", "[0, 0]", "1"],
    )
    b.kernel(conv, 101, 1000, 2)
    t = tv.load(b.write(tmp_path / "odd.json"), use_cache=False)
    row = t.op_roofline().row(0, named=True)
    assert row["op"] == "aten::convolution" and row["count"] == 1  # the unreadable stride reads as 1


def test_an_operator_far_below_its_roofline_is_a_finding(tmp_path):
    b = OpTrace()
    b.events.append(
        {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 90, "dur": 2500}
    )
    slow = b.op("aten::mm", 100, 20, [[4096, 4096], [4096, 4096]], [BF16, BF16], ["", ""])
    b.kernel(slow, 105, 200, 2000)  # 139 us on an H100's roofline, measured 2,000 us
    t = tv.load(b.write(tmp_path / "slow.json"), use_cache=False)
    found = t.findings().filter(pl.col("rule") == "far_below_roofline").row(0, named=True)
    expected_us = 2 * 4096**3 / 989e12 * 1e6
    step_ms = t.step_breakdown()["duration_us"][0] / 1000
    assert found["severity"] == "critical"
    assert found["value"] == pytest.approx((2000 - expected_us) / 1000 / step_ms)
    assert (
        f"aten::mm [4096,4096;4096,4096] in bf16 runs at {expected_us / 2000:.0%} of its roofline (compute-bound)"
        in found["message"]
    )
    assert (
        tv.load(Path(small_path(tmp_path)), use_cache=False)
        .findings()
        .filter(pl.col("rule") == "far_below_roofline")
        .is_empty()
    )


def small_path(tmp_path) -> Path:
    """A trace whose only operator runs at its roofline: no finding."""
    b = OpTrace()
    b.events.append(
        {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 90, "dur": 300}
    )
    fast = b.op("aten::mm", 100, 20, [[4096, 4096], [4096, 4096]], [BF16, BF16], ["", ""])
    b.kernel(fast, 105, 200, 150)
    return b.write(tmp_path / "fast.json")


def test_what_if_bounds_from_the_measured_decomposition(tmp_path):
    """The transformer step: 28 matrix calls (8 mm + 2 attention forward, 2 attention backward, 16
    mm backward) of 8 us each, bf16, on an H100 (989 dense bf16, 1,979 fp8)."""
    path, model = transformer_step(tmp_path / "step.json")
    t = tv.load(path, use_cache=False)
    rows = {r["scenario"]: r for r in t.what_if(peak_frac=0.5).iter_rows(named=True)}
    iteration = t.iteration_breakdown()["iteration_us"][0]
    fp8 = rows["matrix_in_fp8"]
    assert fp8["iteration_us"] == pytest.approx(iteration)
    assert fp8["saving_us"] == pytest.approx(28 * 8 * (1 - 989 / 1979))
    assert fp8["bound_us"] == pytest.approx(iteration - fp8["saving_us"]) and fp8["speedup"] > 1
    # at 50 % of the peak each call takes flop / (0.5 x 989 TFLOP/s): all of them under 8 us here
    calls = t.op_calls().filter(pl.col("family").is_in(["gemm", "sdpa", "sdpa_bwd"]))
    want = sum(max(0.0, 8 - f / (0.5 * 989e6)) for f in calls["flop"].to_list())
    assert rows["matrix_at_peak_frac"]["saving_us"] == pytest.approx(want)
    assert rows["hide_exposed_comm"]["saving_us"] == 0.0  # no communication in this step
    assert "pipeline_bubble" not in rows  # no micro-batch count given, no pipeline
    with pytest.raises(ValueError, match="peak_frac"):
        t.what_if(peak_frac=1.5)


def test_unaligned_gemms_cost_against_the_aligned_ones_roofline_share(tmp_path):
    """Two aligned bf16 GEMMs (1024^3) and one unaligned (1020^3: 1020 is not a multiple of 8), 100 us each on an H100: the
    facts set the unaligned ones' roofline share beside the aligned ones' and price the
    difference; the gemm_unaligned finding says it."""
    b = OpTrace()
    shapes = [[[1024, 1024], [1024, 1024]], [[1024, 1024], [1024, 1024]], [[1020, 1020], [1020, 1020]]]
    for i, dims in enumerate(shapes):
        ext = b.op("aten::mm", 100 + 300 * i, 30, dims, [BF16, BF16], ["", ""])
        b.kernel(ext, 105 + 300 * i, 1000 + 300 * i, 100, name="ampere_bf16_s16816gemm_bf16_128x128")
    step = {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 50, "dur": 1500}
    b.events.append(step)
    t = tv.load(b.write(tmp_path / "gemms.json"), use_cache=False)
    facts = t.facts().row(0, named=True)
    rows = {r["input_dims"]: r for r in t.op_roofline().iter_rows(named=True)}
    aligned, unaligned = rows["1024,1024;1024,1024"], rows["1020,1020;1020,1020"]
    # roofline time: 2·1024^3 FLOP at 989 TFLOP/s (compute-bound) over 200 us of device time
    assert aligned["expected_us"] == pytest.approx(2 * 2 * 1024**3 / 989e6)
    assert facts["gemm_aligned_roofline_frac"] == pytest.approx(aligned["expected_us"] / 200)
    assert facts["gemm_unaligned_roofline_frac"] == pytest.approx(unaligned["expected_us"] / 100)
    want = 100 - unaligned["expected_us"] / facts["gemm_aligned_roofline_frac"]  # µs, one step
    assert facts["gemm_unaligned_cost_ms"] == pytest.approx(want / 1000)
    found = t.findings().filter(pl.col("rule") == "gemm_unaligned")
    assert found.height == 1
    message = found["message"][0]
    assert (
        f"at {facts['gemm_aligned_roofline_frac']:.0%}: at that share they would take {want / 1000:.2f} ms less"
        in message
    )


def test_a_profile_with_shapes_but_no_steps_still_has_its_roofline(small, tmp_path):
    """The `small` trace records no ProfilerStep: no traced FLOPs per step, but its operators and
    anatomy are in the summary, its text and the report."""
    assert small.traced_flops().is_empty() and small.op_roofline().height
    from traceview.summary import build_summary

    doc = build_summary(small)
    section = doc["ranks"][0]["roofline"]
    assert section["steps"] == [] and section["operators"] and section["anatomy"]
    assert {o["op"] for o in section["operators"]} <= set(small.op_roofline()["op"])
    from traceview.cli.summary import summary_text

    assert "operators against the roofline" in summary_text(doc)
    from traceview.dashboards.report import report_html

    html = report_html(small, doc)
    assert 'id="roofline-table"' in html and "No operator with recorded shapes" not in html


def test_kernel_names_say_tf32_and_winograd_and_missing_concrete_inputs_count_nothing(tmp_path):
    """fp32 matmul whose kernel says tf32: dtype tf32, measured against the H100's tf32 peak. A
    convolution whose kernel is a Winograd one: its algorithm says why it can beat the direct
    formula. A convolution recorded without Concrete Inputs (PyTorch before 1.13): stride and
    padding unknown, so no FLOPs rather than a guess."""
    b = OpTrace()
    mm = b.op("aten::mm", 100, 20, [[1024, 1024], [1024, 1024]], [F32, F32], ["", ""])
    b.kernel(mm, 102, 1000, 10, name="sm90_xmma_gemm_tf32f32_tf32f32_f32_tn_n_tilesize128x128x32")
    conv_dims = [[8, 64, 56, 56], [64, 64, 3, 3], [], [], [], [], [], [], []]
    conv_types = [F32, F32, ""] + ["ScalarList"] * 3 + ["Scalar", "ScalarList", "Scalar"]
    concrete = ["", "", "", "[1, 1]", "[1, 1]", "[1, 1]", "False", "[0, 0]", "1"]
    conv = b.op("aten::convolution", 200, 20, conv_dims, conv_types, concrete)
    b.kernel(conv, 202, 2000, 10, name="volta_scudnn_winograd_128x128_ldg1_ldg4_relu_tile148t_nt_v1")
    ext = b.next_id
    b.next_id += 1
    b.events.append(
        {"ph": "X", "cat": "cpu_op", "name": "aten::convolution", "pid": 1, "tid": 1, "ts": 300, "dur": 20,
         "args": {"External id": ext, "Input Dims": conv_dims, "Input type": conv_types}}
    )  # fmt: skip
    b.kernel(ext, 302, 3000, 10, name="implicit_convolve_sgemm")
    t = tv.load(b.write(tmp_path / "algos.json"), use_cache=False)
    rows = t.op_roofline()
    mm_row = rows.filter(pl.col("op") == "aten::mm").row(0, named=True)
    assert (mm_row["dtype"], mm_row["algorithm"], mm_row["peak_tflops"]) == ("tf32", "tf32", 494.0)
    convs = rows.filter(pl.col("op") == "aten::convolution").sort("algorithm", nulls_last=True)
    winograd, unknown = convs.row(0, named=True), convs.row(1, named=True)
    assert winograd["algorithm"] == "winograd" and winograd["dtype"] == "fp32"
    assert winograd["gflop"] == pytest.approx(2 * 8 * 64 * 56 * 56 * 64 * 9 / 1e9)
    assert unknown["concrete_inputs"] is None and unknown["gflop"] is None and unknown["bytes"] is None
    text = run_cli("roofline", str(tmp_path / "algos.json")).stdout
    assert "fp32 winograd" in text and " tf32 " in text and "tf32 tf32" not in text


def test_rows_per_step_add_up_to_the_rows_over_all_steps(tmp_path):
    b = OpTrace()
    for step in (1, 2):
        base = 1000 * step
        b.events.append(
            {"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{step}", "pid": 1, "tid": 1, "ts": base,
             "dur": 900}
        )  # fmt: skip
        for i in range(step + 1):  # two calls in step 1, three in step 2
            ext = b.op("aten::mm", base + 10 + 100 * i, 30, [[256, 256], [256, 256]], [BF16, BF16], ["", ""])
            b.kernel(ext, base + 15 + 100 * i, base + 20 + 100 * i, 4 + step)
    t = tv.load(b.write(tmp_path / "steps.json"), use_cache=False)
    whole, per_step = t.op_roofline(), t.op_roofline(by_step=True)
    assert per_step.columns[:2] == ["rank", "step"] and "step" not in whole.columns
    assert dict(per_step.select("step", "count").iter_rows()) == {1: 2, 2: 3}
    assert per_step["device_time_us"].sum() == pytest.approx(whole["device_time_us"][0]) == 2 * 5 + 3 * 6
    text = run_cli("roofline", str(tmp_path / "steps.json"), "--by-step").stdout
    assert text.splitlines()[2].split()[:2] == ["rank", "step"]


def test_overloads_with_other_values_where_a_dim_or_training_flag_goes(tmp_path):
    """aten::sum(self, dtype) holds a dtype where sum(self, dim) holds the dims: everything is
    reduced. _native_batch_norm_legit.no_stats holds eps where the other overload holds training:
    unknown, so training (the default). Either misread would give other numbers."""
    b = OpTrace()
    s = b.op("aten::sum", 100, 20, [[4, 8, 16], []], [F32, "Scalar"], ["", "6"])
    b.kernel(s, 102, 1000, 5)
    x = [8, 16, 32, 32]
    bn = b.op(
        "aten::_native_batch_norm_legit", 200, 20, [x, [16], [16], [], [], []], [F32] * 3 + ["Scalar"] * 3,
        ["", "", "", "True", "0.1", "1e-05"],
    )  # fmt: skip
    b.kernel(bn, 202, 2000, 5)
    t = tv.load(b.write(tmp_path / "overloads.json"), use_cache=False)
    assert _row(t, "aten::sum")["bytes"] == (4 * 8 * 16 + 1) * 4
    assert _row(t, "aten::_native_batch_norm_legit")["gflop"] * 1e9 == pytest.approx(6 * 16 + 5 * N)
