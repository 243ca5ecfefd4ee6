"""The per-operator roofline (`traceview/analysis/roofline.py`). The corpus tests; the topic's
description and its other tests: tests/unit/test_roofline.py, tests/integration/test_roofline.py.
"""

from __future__ import annotations

import ast
import collections
import csv
import re

import polars as pl
import pytest

import traceview as tv
from tests.conftest import SHARED_TRACES, needs_shared, run_cli
from traceview.analysis.norm_formulas import NORM_FAMILIES

TRACELENS = SHARED_TRACES / "tracelens" / "tests" / "traces"


REPORTS = (
    "GEMM",
    "SDPA_fwd",
    "CONV_fwd",
    "UnaryElementwise",
    "BinaryElementwise",
    "Normalization",
    "Reduce_fwd",
)


#: TraceLens rows of operators traceview does not list (op_flops.toml), and why.
NOT_LISTED = {
    "sgl_kernel::silu_and_mul": "SGLang's fused kernel op: its FLOPs per element are TraceLens' own convention",
    "aiter::fmha_v3_fwd": "AITER attention with its own argument layout",
    **dict.fromkeys(
        (
            "aten::layer_norm",
            "aten::batch_norm",
            "aten::instance_norm",
            "aten::group_norm",
            "aten::linalg_norm",
        ),
        "a wrapper: the operator inside it is listed and compared (listing both would count the work twice)",
    ),
}


#: Reports whose rows TraceLens groups by the operator's parameters rather than its whole input
#: dims (a layer norm with and without a weight share a row, its _first values the first call's):
#: compared per (operator, first input's dims), each side's first call against the other's.
BY_FIRST_INPUT = ("Normalization", "Reduce_fwd")


BY_FIRST_FAMILIES = [*NORM_FAMILIES, *(f"{f}_bwd" for f in NORM_FAMILIES), "reduce", "scan"]


#: Operators whose bytes traceview counts otherwise, and why: the MB check is replaced by "no more
#: than TraceLens" (GFLOP and TFLOP/s are still compared).
BYTES_OTHERWISE = {
    "aten::native_layer_norm": "a layer norm's statistics are a mean and 1/std per row (N / C values, fp32); "
    "TraceLens counts C-sized mean, variance and two running statistics, as for a batch norm "
    "(2x the bytes of a [1, 1024] decode-step layer norm)",
    "aten::native_layer_norm_backward": "the same statistics, read",
}


#: Rows where traceview counts otherwise on purpose, and why (the test requires them to differ).
DIFFERS = {
    ("aten::_fused_rms_norm_backward", "8,16,32,32"): "a weight passed as None: TraceLens reads its empty dims "
    "as a weight (its test is `is not None`) and counts the weight's multiply; traceview does not",
    ("aten::mean", "1,8,768"): "a reduction over dim 1: TraceLens does not parse the dim argument and takes "
    "every reduction to one output element; traceview counts the 768 outputs' bytes",
    ("aten::sum", "8,16"): "a reduction over dim 0: as aten::mean above",
    ("aten::min", "512,512;512,512"): "the minimum of two tensors is elementwise, not a reduction: not counted",
}


def _shapes_text(dims_literal: str) -> str:
    from traceview.parsers.kineto_events import shapes_text

    return shapes_text(ast.literal_eval(dims_literal))


def _paired_reports():
    """(trace, its TraceLens report folder): the `<name>_perf_report_csvs` beside `<name>.json.gz`
    (the inference folders' perf_csvs are built from several capture traces: not one trace's)."""
    for folder in sorted(TRACELENS.rglob("*_perf_report_csvs")):
        trace = folder.with_name(folder.name.removesuffix("_perf_report_csvs") + ".json.gz")
        if trace.exists():
            yield trace, folder


@needs_shared
def test_flops_bytes_and_achieved_tflops_match_tracelens():
    """Every TraceLens row with device time, of an operator traceview lists: GFLOP and bytes per
    call within 1 % of GFLOPS_first and Data Moved_first, achieved TFLOP/s within 2 %, the same
    calls. Rows TraceLens splits by strides are summed per (operator, dims) first; achieved
    TFLOP/s on both sides is all calls' FLOPs over all calls' device time (TraceLens'
    TFLOPS/s_mean averages per-call ratios instead, which weighs a 2 us call like a 2 ms one)."""
    compared, skipped, wrong, names = 0, collections.Counter(), [], set()
    pairs = list(_paired_reports())
    assert len(pairs) >= 10
    for trace_path, folder in pairs:
        ref: dict = collections.defaultdict(lambda: {"count": 0, "time": 0.0, "gflop": None, "mb": None, "cpu": 0})
        for report in REPORTS:
            f = folder / f"{report}.csv"
            if not f.exists():
                continue
            for r in csv.DictReader(open(f, encoding="utf-8")):
                dims = _shapes_text(r["Input Dims_first"])
                key = (r["name"], dims.split(";")[0] if report in BY_FIRST_INPUT else dims)
                time = float(r["Kernel Time (µs)_sum"] or 0)
                if time == 0:  # a call that ran on the host (a CPU tensor): no device work to measure
                    ref[key]["cpu"] += int(r["name_count"])
                    continue
                v = ref[key]
                v["count"] += int(r["name_count"])
                v["time"] += time
                v["kernels"] = v.get("kernels", 0) + sum(
                    int(n) for n in re.findall(r"'count': (\d+)", r["kernel_details__summarize_kernel_stats"])
                )
                v["gflop"] = float(r["GFLOPS_first"])
                # bytes are compared where every row of the shape has one dtype for all its tensors
                # (rows of one shape but other dtypes are summed here; their bytes differ)
                tensor_types = tuple(
                    sorted(
                        {x for x in ast.literal_eval(r["Input type_first"]) if x not in ("", "Scalar", "ScalarList")}
                    )
                )
                v["dtypes"] = v.get("dtypes", set()) | {tensor_types}
                mb = r["Data Moved (MB)_first"]
                v["mb"] = float(mb) if mb and len(v["dtypes"]) == 1 and len(tensor_types) == 1 else None
                v["some_on_host"] = v.get("some_on_host") or float(r["Kernel Time (µs)_min"] or 0) == 0
        t = tv.load(trace_path, use_cache=False)
        first_input = pl.col("family").is_in(BY_FIRST_FAMILIES)
        ours = (
            t.op_calls()
            .sort("start_ns")
            .with_columns(
                pl.when(first_input).then(pl.col("input_dims").str.split(";").list.first()).otherwise("input_dims")
            )
            .group_by("op", "input_dims")
            .agg(
                pl.len().alias("count"),
                pl.col("kernels").sum().alias("tasks"),
                (pl.col("flop").min() == pl.col("flop").max()).alias("one_flop"),
                (pl.col("flop").first() / 1e9).alias("gflop"),
                pl.col("bytes").first(),
                (pl.col("flop").sum() / 1e9).alias("gflop_sum"),
                (pl.col("device_ns").sum() / 1e3).alias("device_time_us"),
            )
        )
        by_key = {(r["op"], r["input_dims"]): r for r in ours.iter_rows(named=True)}
        for (name, dims), v in ref.items():
            if name in NOT_LISTED:
                skipped[name] += 1
                continue
            if v["gflop"] is None:  # only host calls: traceview has no row for them
                assert (name, dims) not in by_key or by_key[(name, dims)]["count"] == 0, (trace_path.name, name, dims)
                skipped["host-only calls"] += 1
                continue
            got = by_key.get((name, dims))
            where = f"{trace_path.parent.name}/{trace_path.name} {name} [{dims}]"
            if (name, dims) in DIFFERS:
                same = got is not None and got["gflop"] is not None and got["bytes"] is not None
                same = same and abs(got["gflop"] - v["gflop"]) <= 0.01 * v["gflop"]
                same = same and (v["mb"] is None or abs(got["bytes"] / 2**20 - v["mb"]) <= 0.01 * v["mb"])
                assert not same, f"{where}: listed as counted otherwise, yet it agrees"
                skipped["counted otherwise (DIFFERS)"] += 1
                continue
            if got is None:
                wrong.append(f"{where}: no row")
                continue
            compared += 1
            names.add(name)
            achieved = got["gflop_sum"] / got["device_time_us"] * 1e-3
            reference = v["gflop"] * v["count"] / v["time"] * 1e-3
            checks = [("GFLOP", got["gflop"], v["gflop"], 0.01)]
            if got["tasks"] > v["kernels"] and abs(got["device_time_us"] - v["time"]) > 0.02 * v["time"]:
                # the op launched a memset too (aten::mean zeroing its output; MIOpen's first call):
                # traceview's device time counts it, TraceLens' kernel time does not
                assert got["device_time_us"] > v["time"], where
                skipped["device time with a memset (TFLOP/s not compared)"] += 1
            elif not got["one_flop"]:
                # calls of other FLOPs share TraceLens' row (a norm with and without a weight),
                # whose TFLOP/s takes every call as the first: compare the device time instead
                checks.append(("device us", got["device_time_us"], v["time"], 0.02))
            else:
                checks.append(("TFLOP/s", achieved, reference, 0.02))
            if name in BYTES_OTHERWISE and v["mb"] is not None:
                assert got["bytes"] / 2**20 <= v["mb"] * 1.01, where
                skipped["bytes counted otherwise (BYTES_OTHERWISE; other checks made)"] += 1
            elif v["mb"] is not None:  # TraceLens leaves it empty for some copies
                checks.append(("MB", got["bytes"] / 2**20, v["mb"], 0.01))
            for what, a, b, tol in checks:
                if abs(a - b) > tol * abs(b):
                    wrong.append(f"{where}: {what} {a:.6g} vs TraceLens {b:.6g}")
            # TraceLens counts calls that launched nothing (a copy_ between CPU tensors) in a row
            # that also has device work: traceview counts calls with device work only
            if got["count"] != v["count"] and not (v.get("some_on_host") and got["count"] < v["count"]):
                wrong.append(f"{where}: {got['count']} calls vs TraceLens {v['count']}")
    assert not wrong, "\n".join(wrong[:30])
    print(f"compared {compared} rows; not compared: {dict(skipped)}")
    assert compared >= 250, (compared, skipped)
    assert {
        "aten::mm",
        "aten::addmm",
        "aten::bmm",
        "aten::_scaled_dot_product_flash_attention",
        "aten::convolution",
        "aten::add",
        "aten::mul",
        "aten::copy_",
        "aten::silu",
        "aten::upsample_nearest1d",
        "aten::native_layer_norm",
        "aten::native_layer_norm_backward",
        "aten::native_batch_norm",
        "aten::native_batch_norm_backward",
        "aten::miopen_batch_norm_backward",
        "aten::native_group_norm",
        "aten::native_group_norm_backward",
        "aten::_fused_rms_norm",
        "aten::mean",
    } <= names, names


ASCEND_TEXT = SHARED_TRACES / "msinsight/test/data/pytorch/text/level1/rank0_ascend_pt"


ASCEND_DB = SHARED_TRACES / "msinsight/test/data/pytorch/db/level2/rank0_ascend_pt"


def _matmul_flops_by_matching(inputs: str, output: str) -> float:
    """2·M·N·K (+ M·N with a bias) with K found by matching A's dims against the output's M
    (A is [M, K] or, transposed, [K, M]; batch dims lead): another route than the code's numel ratio."""
    shapes = [[int(x) for x in s.split(",")] if s else [] for s in inputs.split(";")]
    out = [int(x) for x in output.split(",")]
    m, n = out[-2], out[-1]
    a = shapes[0]
    k = a[-1] if a[-2] == m else a[-2]
    batch = 1
    for d in out[:-2]:
        batch *= d
    bias = len(shapes) > 2 and shapes[2]
    return 2 * batch * m * n * k + (batch * m * n if bias else 0)


@needs_shared
@pytest.mark.parametrize("folder", [ASCEND_TEXT, ASCEND_DB], ids=["text", "db"])
def test_ascend_matmuls_from_their_recorded_shapes(folder, tmp_path):
    t = tv.load(folder, use_cache=False)
    calls = t.op_calls().filter(pl.col("family") == "matmul")
    tasks = t.device_tasks.filter(
        pl.col("op_type").str.starts_with("MatMul") | pl.col("op_type").str.starts_with("BatchMatMul")
    )
    assert calls.height == tasks.height >= 8
    want = sorted(_matmul_flops_by_matching(i, o) for i, o in tasks.select("input_shapes", "output_shapes").iter_rows())
    assert sorted(calls["flop"].to_list()) == pytest.approx(want, rel=1e-12)
    assert calls["device_ns"].sum() == tasks["dur_ns"].sum()
    assert set(calls["dtype"]) == {"fp32"}
    assert t.traced_flops()["traced_flops"][0] >= sum(want)
    for command in (("roofline",), ("roofline", "--format", "csv"), ("report", "-o", str(tmp_path / "r.html"))):
        out = run_cli(command[0], str(folder), *command[1:])
        assert out.returncode == 0, out.stderr
    assert "MatMulV2" in run_cli("roofline", str(folder)).stdout
    assert "roofline-table" in (tmp_path / "r.html").read_text()
