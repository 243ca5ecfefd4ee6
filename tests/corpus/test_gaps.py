"""Iteration gaps, stream idle time (HTA's rules), launch delays and long steps
(traceview/analysis/gaps.py): hand-made frames with hand-computed values, a hypothesis property
test against a slow reference, the shipped samples, and the real-trace corpus.

This file holds the topic's corpus tests; the others are in tests/unit/test_gaps.py, tests/integration/test_gaps.py.
"""

from __future__ import annotations

import json
import statistics

import polars as pl
import pytest

import traceview as tv
from tests.conftest import SHARED_TRACES, needs_shared
from tests.support.corpus import ROWS  # (path, format) rows of ../shared/traces/INDEX.md
from traceview.analysis import gaps
from traceview.analysis import intervals as iv


@needs_shared
def test_launch_delay_mean_follows_htas_rule_on_the_param_linear_trace():
    """HTA's kernel launch statistics: the GPU events whose correlation id is that of a
    cudaLaunchKernel, cudaMemcpyAsync or cudaMemsetAsync call, delay = GPU start - (call ts +
    dur). Recounted from the raw JSON: traceview's mean and count equal it."""
    import gzip

    rel = "param/et_replay/tests/inputs/linear_kineto.json.gz"
    events = json.loads(gzip.decompress((SHARED_TRACES / rel).read_bytes()))["traceEvents"]
    calls = {
        e["args"]["correlation"]: e["ts"] + e["dur"]
        for e in events
        if e.get("ph") == "X" and e.get("name") in ("cudaLaunchKernel", "cudaMemcpyAsync", "cudaMemsetAsync")
    }
    delays = [
        e["ts"] - calls[e["args"]["correlation"]]
        for e in events
        if e.get("ph") == "X"
        and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")
        and e.get("args", {}).get("correlation") in calls
    ]
    stats = tv.load(SHARED_TRACES / rel, use_cache=False).launch_delays().row(0, named=True)
    assert stats["count"] == len(delays) == 10_356
    assert stats["mean_us"] == pytest.approx(statistics.mean(delays), abs=1e-6)


REAL = [p for p, fmt in ROWS if fmt.startswith("kineto json") or fmt == "ascend pt dir"]


@needs_shared
@pytest.mark.parametrize("rel", REAL)
def test_real_trace_gaps_run_and_add_up(rel):
    trace = tv.load(SHARED_TRACES / rel, use_cache=False)
    tasks, host = trace.device_tasks, trace.host_events
    if tasks.is_empty():
        pytest.skip("no device tasks")
    for by_step in (False, True):
        out = gaps.stream_idle(tasks, host, by_step=by_step)
        if by_step and tasks["step"].is_null().all():
            assert out.is_empty()
            continue
        assert out.height > 0
        cats = out["host_wait_us"] + out["kernel_wait_us"] + out["other_us"]
        assert (cats - out["idle_us"]).abs().max() < 1e-6
        assert (out["idle_us"] + out["busy_us"] - out["span_us"]).abs().max() < 1e-6
        assert (out["idle_us"] >= 0).all() and (out["busy_us"] >= 0).all()
    # busy per stream = |U(tasks of the stream)| from the interval engine
    whole = gaps.stream_idle(tasks, host).with_columns(pl.col("stream").fill_null(-1))
    union = iv.union_length(tasks.with_columns(pl.col("stream").fill_null(-1)), ["rank", "stream"])
    joined = whole.join(union, on=["rank", "stream"], how="left")
    assert ((joined["busy_us"] * 1000).round(0) == joined["union_ns"].fill_null(0)).all()

    times = gaps.step_times(trace.steps, tasks)
    assert times.height == trace.steps.height
    windowed = times.filter(pl.col("device_us").is_not_null())
    if windowed.height:
        first = windowed.group_by("rank").agg(pl.col("step").min())
        firsts = windowed.join(first, on=["rank", "step"])
        assert firsts["gap_before_us"].null_count() == firsts.height
        rest = windowed.join(first, on=["rank", "step"], how="anti")
        assert rest["gap_before_us"].null_count() == 0
        assert (rest["idle_before_us"] >= 0).all()
        assert (rest["idle_before_us"] <= rest["gap_before_us"].clip(lower_bound=0) + 1e-9).all()

    stats = gaps.launch_delay_stats(tasks, host)
    assert (stats["count"] <= stats["tasks"]).all()
    has = stats.filter(pl.col("count") > 0)
    assert (
        (has["p50_us"] <= has["p90_us"] + 1e-9)
        & (has["p90_us"] <= has["p99_us"] + 1e-9)
        & (has["p99_us"] <= has["max_us"] + 1e-9)
    ).all()


@needs_shared
def test_hta_critical_path_sample_delays():
    """HTA's own test of hta/tests/data/critical_path/simple_add asserts a kernel-kernel delay of
    7 µs between the fft kernel (correlation 5597) and the next gemm (5604) on its stream, and a
    kernel-launch edge of 27 µs from the cudaLaunchKernel start to the fft kernel start."""
    rel = "hta/tests/data/critical_path/simple_add/benchmark_result_493459_1694039959_trace.json.gz"
    trace = tv.load(SHARED_TRACES / rel, use_cache=False)
    tasks = trace.device_tasks
    gemm_start = tasks.filter(pl.col("correlation") == 5604)["start_ns"].item()
    g = gaps.stream_gaps(tasks, trace.host_events).filter(pl.col("start_ns") == gemm_start)
    assert g["gap_ns"].to_list() == [7_000] and g["category"].to_list() == ["kernel_wait"]
    fft = gaps.launch_delays(tasks, trace.host_events).filter(pl.col("correlation") == 5597).row(0, named=True)
    assert fft["start_ns"] - fft["launch_start_ns"] == 27_000
    assert fft["launch_delay_us"] + fft["launch_us"] == pytest.approx(27.0)
