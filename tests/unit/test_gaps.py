"""Iteration gaps, stream idle time (HTA's rules), launch delays and long steps
(traceview/analysis/gaps.py). The unit tests; the topic's description and its other tests:
tests/integration/test_gaps.py, tests/corpus/test_gaps.py.
"""

from __future__ import annotations

import json
import statistics

import polars as pl
import pytest

import traceview as tv
from tests.conftest import SAMPLES
from tests.support.gaps_shared import _by, _host, _steps, _tasks  # noqa: F401
from tests.support.samples import shared_sample
from traceview.analysis import gaps

#  stream 7 of rank 0 (ns):           gap after previous end  launch start   category
#  A [100000, 110000)  launch 90000-95000    -                   -
#  B [112000, 120000)  launch 96000-97000    2000  (< 30 µs)     96000 < 110000  kernel_wait
#  C [200000, 210000)  launch 150000-152000  80000               150000 > 120000 host_wait
#  D [260000, 270000)  launch 100000-101000  50000 (>= 30 µs)    100000 < 210000 other
#  E [265000, 268000)  inside D              none (overlap)
#  F [290000, 300000)  no correlation        20000 (from 270000) never host_wait -> kernel_wait
#  G [340000, 350000)  corr 7: no runtime event (an operator event at 345000 must be ignored)
#                                            40000               -> other
#  H [352000, 360000)  launch 351000-351500  2000                351000 > 350000 host_wait (wins)
#  span 260000, busy 66000, idle 194000 = host_wait 82000 + kernel_wait 22000 + other 90000
# stream 8: gap of exactly 30 µs (not under the threshold) -> other.
TASKS = [
    {"start": 100_000, "end": 110_000, "corr": 1, "step": 1},
    {"start": 112_000, "end": 120_000, "corr": 2, "step": 1},
    {"start": 200_000, "end": 210_000, "corr": 3, "step": 1},
    {"start": 260_000, "end": 270_000, "corr": 4, "step": 2},
    {"start": 265_000, "end": 268_000, "corr": 5, "step": 2},
    {"start": 290_000, "end": 300_000, "corr": None, "step": 2},
    {"start": 340_000, "end": 350_000, "corr": 7},
    {"start": 352_000, "end": 360_000, "corr": 8},
    {"stream": 8, "start": 400_000, "end": 410_000, "corr": 10},
    {"stream": 8, "start": 440_000, "end": 450_000, "corr": 11},
]


HOST = [
    {"start": 90_000, "end": 95_000, "corr": 1},
    {"start": 96_000, "end": 97_000, "corr": 2},
    {"start": 150_000, "end": 152_000, "corr": 3},
    {"start": 150_500, "end": 151_000, "corr": 3, "name": "cuLaunchKernel"},  # nested driver call
    {"start": 100_000, "end": 101_000, "corr": 4},
    {"start": 101_000, "end": 102_000, "corr": 5},
    {"start": 345_000, "end": 346_000, "corr": 7, "kind": "operator", "name": "aten::mm"},
    {"start": 351_000, "end": 351_500, "corr": 8},
    {"start": 398_000, "end": 401_000, "corr": 10},
    {"start": 399_000, "end": 399_500, "corr": 11},
    {"rank": 1, "start": 250_000, "end": 251_000, "corr": 4},  # another rank's id 4: not D's launch
]


def test_stream_idle_rules_by_hand():
    out = _by(gaps.stream_idle(_tasks(TASKS), _host(HOST)), "rank", "stream")
    s7 = out[(0, 7)]
    assert s7["tasks"] == 8 and s7["idle_intervals"] == 6
    assert s7["span_us"] == 260.0 and s7["busy_us"] == 66.0 and s7["idle_us"] == 194.0
    assert (s7["host_wait_us"], s7["kernel_wait_us"], s7["other_us"]) == (82.0, 22.0, 90.0)
    assert s7["busy_frac"] == pytest.approx(66 / 260) and s7["idle_frac"] == pytest.approx(194 / 260)
    assert s7["host_wait_frac"] == pytest.approx(82 / 194)
    assert s7["kernel_wait_frac"] == pytest.approx(22 / 194)
    assert s7["other_frac"] == pytest.approx(90 / 194)
    s8 = out[(0, 8)]
    assert (s8["idle_us"], s8["host_wait_us"], s8["kernel_wait_us"], s8["other_us"]) == (30.0, 0.0, 0.0, 30.0)


def test_stream_gaps_categories_by_hand():
    g = gaps.stream_gaps(_tasks(TASKS), _host(HOST)).filter(pl.col("stream") == 7)
    assert g["gap_ns"].to_list() == [2_000, 80_000, 50_000, 20_000, 40_000, 2_000]
    assert g["category"].to_list() == ["kernel_wait", "host_wait", "other", "kernel_wait", "other", "host_wait"]
    assert g["prev_end_ns"].to_list() == [110_000, 120_000, 210_000, 270_000, 300_000, 350_000]
    # the nested driver call does not move C's launch start: the outer call's start is used
    assert g.filter(pl.col("start_ns") == 200_000)["launch_start_ns"].to_list() == [150_000]


def test_kernel_wait_threshold_is_strict_and_configurable():
    at = _by(gaps.stream_idle(_tasks(TASKS), _host(HOST), kernel_wait_threshold_us=30.0), "stream")[(8,)]
    above = _by(gaps.stream_idle(_tasks(TASKS), _host(HOST), kernel_wait_threshold_us=30.001), "stream")[(8,)]
    assert (at["kernel_wait_us"], at["other_us"]) == (0.0, 30.0)
    assert (above["kernel_wait_us"], above["other_us"]) == (30.0, 0.0)
    # threshold 0: no gap is kernel_wait; host_wait is unchanged
    zero = _by(gaps.stream_idle(_tasks(TASKS), _host(HOST), kernel_wait_threshold_us=0), "stream")[(7,)]
    assert (zero["host_wait_us"], zero["kernel_wait_us"], zero["other_us"]) == (82.0, 0.0, 112.0)


def test_stream_idle_by_step():
    out = _by(gaps.stream_idle(_tasks(TASKS), _host(HOST), by_step=True), "rank", "stream", "step")
    assert set(out) == {(0, 7, 1), (0, 7, 2)}  # null-step tasks (G, H, stream 8) are left out
    s1, s2 = out[(0, 7, 1)], out[(0, 7, 2)]
    assert (s1["tasks"], s1["span_us"], s1["busy_us"], s1["idle_us"]) == (3, 110.0, 28.0, 82.0)
    assert (s1["host_wait_us"], s1["kernel_wait_us"], s1["other_us"]) == (80.0, 2.0, 0.0)
    assert (s2["tasks"], s2["span_us"], s2["busy_us"], s2["idle_us"]) == (3, 40.0, 20.0, 20.0)
    assert (s2["host_wait_us"], s2["kernel_wait_us"], s2["other_us"]) == (0.0, 20.0, 0.0)


def test_stream_idle_null_stream_and_no_gap():
    # Ascend HCCL ops have a null stream: they form one group; a single task has no idle
    t = _tasks(
        [
            {"stream": None, "start": 0, "end": 10},
            {"stream": None, "start": 15, "end": 20},
            {"stream": 3, "start": 5, "end": 9},
        ]
    )
    out = gaps.stream_idle(t, _host([]))
    assert out["stream"].to_list() == [3, None]
    one, hccl = out.row(0, named=True), out.row(1, named=True)
    assert (one["idle_us"], one["busy_us"], one["idle_frac"], one["host_wait_frac"]) == (0.0, 0.004, 0.0, None)
    assert (hccl["idle_us"], hccl["kernel_wait_us"], hccl["busy_us"]) == (0.005, 0.005, 0.015)


def test_launch_delays_by_hand():
    d = gaps.launch_delays(_tasks(TASKS), _host(HOST))
    # F (no correlation) and G (no runtime event) have no launch call
    got = dict(zip(d["start_ns"].to_list(), d["launch_delay_us"].to_list()))
    assert got == {
        100_000: 5.0,
        112_000: 15.0,
        200_000: 48.0,
        260_000: 159.0,
        265_000: 163.0,
        352_000: 0.5,
        400_000: -1.0,
        440_000: 40.5,
    }
    assert d.filter(pl.col("start_ns") == 200_000)["launch_us"].to_list() == [2.0]
    stats = gaps.launch_delay_stats(_tasks(TASKS), _host(HOST)).row(0, named=True)
    # sorted delays: -1, 0.5, 5, 15, 40.5, 48, 159, 163 (linear interpolation between ranks)
    assert (stats["rank"], stats["tasks"], stats["count"]) == (0, 10, 8)
    assert stats["mean_us"] == pytest.approx(430 / 8)
    assert stats["p50_us"] == pytest.approx(15 + 0.5 * 25.5)
    assert stats["p90_us"] == pytest.approx(159 + 0.3 * 4)
    assert stats["p99_us"] == pytest.approx(159 + 0.93 * 4)
    assert stats["max_us"] == 163.0


def test_launch_delay_stats_without_launches():
    stats = gaps.launch_delay_stats(_tasks([{"start": 0, "end": 5, "corr": 1}]), _host([])).row(0, named=True)
    assert (stats["tasks"], stats["count"], stats["p50_us"], stats["max_us"]) == (1, 0, None, None)


SYNC = ("^cudaMemcpy(?:_v\\d+)?$",)


def test_synchronous_copies_are_left_out_of_launch_delays_and_counted():
    """A synchronous cudaMemcpy returns once its copy is done: task start - call end is minus the
    copy's length. It is no launch delay: left out of the distribution, counted apart (issue 30);
    the per-task delay of such a task is null (the timeline's tooltip)."""
    tasks = _tasks(
        [
            {"start": 100_000, "end": 110_000, "corr": 1},
            {"kind": "memcpy", "start": 120_000, "end": 300_000, "corr": 2},
            {"start": 310_000, "end": 320_000, "corr": 3},
        ]
    )
    host = _host(
        [
            {"start": 90_000, "end": 95_000, "corr": 1},
            {"start": 115_000, "end": 301_000, "corr": 2, "name": "cudaMemcpy"},
            {"start": 115_000, "end": 300_900, "corr": 2, "name": "cudaMemcpy_v3020"},
            {"start": 302_000, "end": 305_000, "corr": 3},
        ]
    )
    launches = gaps.launch_calls(host, SYNC)
    assert dict(zip(launches["correlation"], launches["synchronous"])) == {1: False, 2: True, 3: False}
    stats = gaps.launch_delay_stats(tasks, host, launches).row(0, named=True)
    assert (stats["tasks"], stats["count"], stats["synchronous"]) == (3, 2, 1)
    assert (stats["p50_us"], stats["max_us"]) == (pytest.approx(5.0), 5.0)
    assert gaps.launch_delay_stats(tasks, host, synchronous=SYNC).row(0) == tuple(stats.values())
    assert gaps.launch_delays(tasks, host, synchronous=SYNC)["correlation"].to_list() == [1, 3]
    delays = gaps.with_launch_delay(tasks, launches)["launch_delay_ns"].to_list()
    assert delays == [5_000, None, 5_000]
    # without the rule the copy's -181 µs is in the distribution
    assert gaps.launch_delay_stats(tasks, host).row(0, named=True)["max_us"] == 5.0
    assert gaps.launch_delay_stats(tasks, host)["count"].item() == 3


def test_a_real_nsight_export_of_synchronous_copies(tmp_path):
    """pipit's MPI+CUDA saxpy export (tests/data/nsys): 15 synchronous cudaMemcpy and 5 kernel
    launches. The launch delay was -18,468 µs at p50 (the copies' own length); now it is over the
    5 asynchronous launches only, each recounted here from the export's own tables."""
    import gzip
    import shutil
    import sqlite3

    from tests.conftest import DATA

    path = tmp_path / "saxpy.sqlite"
    with gzip.open(DATA / "nsys" / "saxpy-mpi-cuda_nsys_perlmutter0.sqlite.gz") as src, open(path, "wb") as dst:
        shutil.copyfileobj(src, dst)
    stats = tv.load(path, use_cache=False).launch_delays().row(0, named=True)
    db = sqlite3.connect(path)
    delays = [
        (k_start - r_end) / 1000
        for k_start, r_end in db.execute(
            'SELECT k.start, MAX(r."end") FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN CUPTI_ACTIVITY_KIND_RUNTIME r '
            "USING (correlationId) GROUP BY k.correlationId"
        )
    ]
    (copies,) = db.execute("SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_MEMCPY").fetchone()
    assert (stats["count"], stats["synchronous"]) == (len(delays), copies) == (5, 15)
    assert stats["p50_us"] == pytest.approx(statistics.median(delays)) and stats["p50_us"] > 0
    assert stats["mean_us"] == pytest.approx(statistics.mean(delays))


def test_step_times_by_hand():
    steps = _steps(
        [
            {
                "rank": 0,
                "step": 1,
                "host_start_ns": 0,
                "host_end_ns": 90_000,
                "device_start_ns": 10_000,
                "device_end_ns": 100_000,
                "window_rule": "gpu_annotation",
            },
            {
                "rank": 0,
                "step": 2,
                "host_start_ns": 95_000,
                "host_end_ns": 180_000,
                "device_start_ns": 130_000,
                "device_end_ns": 200_000,
                "window_rule": "gpu_annotation",
            },
            {"rank": 0, "step": 3, "host_start_ns": 185_000, "host_end_ns": 250_000, "window_rule": "none"},
            {
                "rank": 0,
                "step": 4,
                "host_start_ns": 260_000,
                "host_end_ns": 300_000,
                "device_start_ns": 220_000,
                "device_end_ns": 320_000,
                "window_rule": "gpu_annotation",
            },
            {"rank": 1, "step": 1, "device_start_ns": 0, "device_end_ns": 50_000, "window_rule": "correlation"},
            {"rank": 1, "step": 2, "device_start_ns": 40_000, "device_end_ns": 90_000, "window_rule": "correlation"},
        ]
    )
    tasks = _tasks(
        [
            {"start": 10_000, "end": 100_000},
            {"start": 90_000, "end": 105_000},  # runs 5 µs into the gap [100000, 130000)
            {"start": 110_000, "end": 120_000, "stream": 9},  # 10 µs inside the gap, on another stream
            {"start": 112_000, "end": 118_000},  # overlaps the previous one: counted once
            {"start": 130_000, "end": 200_000},
            {"start": 220_000, "end": 320_000},
            {"rank": 1, "start": 0, "end": 90_000},
        ]
    )
    out = _by(gaps.step_times(steps, tasks), "rank", "step")
    r = out[(0, 1)]
    assert (r["host_us"], r["device_us"], r["gap_before_us"], r["idle_before_us"], r["host_gap_before_us"]) == (
        90.0,
        90.0,
        None,
        None,
        None,
    )
    assert (r["device_start_us"], r["device_end_us"], r["window_rule"]) == (10.0, 100.0, "gpu_annotation")
    r = out[(0, 2)]
    assert (r["host_us"], r["device_us"], r["gap_before_us"], r["idle_before_us"], r["host_gap_before_us"]) == (
        85.0,
        70.0,
        30.0,
        15.0,
        5.0,
    )
    r = out[(0, 3)]  # no device window: no device numbers
    assert (r["host_us"], r["device_us"], r["gap_before_us"], r["idle_before_us"], r["host_gap_before_us"]) == (
        65.0,
        None,
        None,
        None,
        5.0,
    )
    r = out[(0, 4)]  # gap measured from step 2, the last step with a window
    assert (r["host_us"], r["device_us"], r["gap_before_us"], r["idle_before_us"], r["host_gap_before_us"]) == (
        40.0,
        100.0,
        20.0,
        20.0,
        10.0,
    )
    r = out[(1, 2)]  # overlapping windows (correlation rule): negative gap, no idle
    assert (r["host_us"], r["gap_before_us"], r["idle_before_us"]) == (None, -10.0, 0.0)


def _breakdown(rows: list[tuple]) -> pl.DataFrame:
    cols = [
        "rank",
        "step",
        "duration_us",
        "computing_us",
        "communication_not_overlapped_us",
        "exposed_memcpy_us",
        "free_us",
    ]
    return pl.DataFrame(
        [dict(zip(cols, r)) for r in rows], schema={c: pl.Int64 if c in ("rank", "step") else pl.Float64 for c in cols}
    )


BREAKDOWN = _breakdown(
    [
        # rank, step, duration, computing, comm not overlapped, exposed memcpy, free
        (0, 1, 100, 80, 10, 1, 9),
        (0, 2, 100, 79, 11, 1, 9),
        (0, 3, 100, 81, 9, 1, 9),
        (0, 4, 130, 80, 40, 1, 9),  # comm grew by 30 vs the median 10
        (0, 5, 101, 80, 10, 1, 10),
        (1, 1, 100, 80, 10, 1, 9),
        (1, 2, 100, 80, 10, 1, 9),
        (1, 3, 125, 80, 10, 1, 34),  # free grew by 25
        (2, 1, 100, 80, 10, 1, 9),
        (2, 2, 100, 80, 10, 1, 9),
        (2, 3, 140, 110, 10, 5, 15),  # compute +30, memcpy +4, idle/free +6
        (3, 1, 100, 80, 10, 1, 9),
        (3, 2, 100, 80, 10, 1, 9),
        (3, 3, 130, 80, 10, 31, 9),  # memcpy +30
        (4, 1, 100, 80, 10, 1, 9),
        (4, 2, 100, 80, 10, 1, 9),
        (4, 3, 150, 80, 10, 1, 9),  # free unchanged, but 50 µs idle at the window's edges
    ]
)


def test_slow_steps_by_hand():
    out = gaps.long_steps(BREAKDOWN)
    assert [(r["rank"], r["step"]) for r in out.to_dicts()] == [(0, 4), (1, 3), (2, 3), (3, 3), (4, 3)]
    got = {r["rank"]: (r["why"], r["why_delta_us"]) for r in out.to_dicts()}
    assert got == {
        0: ("more exposed communication", 30.0),
        1: ("more idle/free", 25.0),
        2: ("more compute", 30.0),
        3: ("more exposed memcpy", 30.0),
        4: ("more idle/free", 50.0),
    }
    r = _by(out, "rank")[(2,)]
    assert (r["median_duration_us"], r["slowdown_ratio"]) == (100.0, 1.4)
    assert (
        r["computing_delta_us"],
        r["communication_not_overlapped_delta_us"],
        r["exposed_memcpy_delta_us"],
        r["idle_free_delta_us"],
    ) == (30.0, 0.0, 4.0, 6.0)


def test_slow_steps_factor_and_empty():
    # 130 is not > 1.3 x 100; 140 and 150 are
    assert [(r["rank"], r["step"]) for r in gaps.long_steps(BREAKDOWN, factor=1.3).to_dicts()] == [(2, 3), (4, 3)]
    none = gaps.long_steps(BREAKDOWN, factor=2.0)
    assert none.is_empty() and "why" in none.columns and "why_delta_us" in none.columns


def _expected(sample: str) -> dict:
    return json.loads((SAMPLES / sample / "expected.json").read_text())


@pytest.fixture(scope="module")
def dp4():
    return shared_sample("dp4_nccl")


def test_dp4_step_times_exact(dp4):
    exp = _expected("dp4_nccl")
    out = _by(gaps.step_times(dp4.steps, dp4.device_tasks), "rank", "step")
    for rank, e in exp["ranks"].items():
        prev = None
        for n in exp["steps"]:
            want = e["steps"][f"ProfilerStep#{n}"]
            row = out[(int(rank), n)]
            assert row["window_rule"] == "gpu_annotation"
            assert row["device_us"] * 1000 == pytest.approx(want["window_ns"], abs=1e-6)
            host_ns = want["host_step_end_ns"] - want["host_step_start_ns"]
            assert row["host_us"] * 1000 == pytest.approx(host_ns, abs=1e-6)
            if prev is None:
                assert row["gap_before_us"] is None and row["host_gap_before_us"] is None
            else:
                gap = want["window_start_ns"] - prev["window_end_ns"]
                assert gap > 0 and row["gap_before_us"] * 1000 == pytest.approx(gap, abs=1e-6)
                # every task is inside a step window, so the whole gap is idle
                assert row["idle_before_us"] == row["gap_before_us"]
                host_gap = want["host_step_start_ns"] - prev["host_step_end_ns"]
                assert row["host_gap_before_us"] * 1000 == pytest.approx(host_gap, abs=1e-6)
            prev = want


def test_dp4_stream_idle_per_step_exact_and_host_wait(dp4):
    """Compute + memcpy run on stream 7 and NCCL on stream 20, so per step: stream-7 busy =
    computing + exposed memcpy, stream-7 span = the step window, stream-20 busy = communication."""
    exp = _expected("dp4_nccl")
    per_step = _by(gaps.stream_idle(dp4.device_tasks, dp4.host_events, by_step=True), "rank", "stream", "step")
    g = gaps.stream_gaps(dp4.device_tasks, dp4.host_events)
    for rank, e in exp["ranks"].items():
        r = int(rank)
        prev = None
        for n in exp["steps"]:
            want = e["steps"][f"ProfilerStep#{n}"]
            s7, s20 = per_step[(r, 7, n)], per_step[(r, 20, n)]
            assert round(s7["busy_us"] * 1000) == want["computing_ns"] + want["exposed_memcpy_ns"]
            assert round(s7["span_us"] * 1000) == want["window_ns"]
            assert round(s20["busy_us"] * 1000) == want["communication_ns"]
            for row in (s7, s20):
                assert row["host_wait_us"] + row["kernel_wait_us"] + row["other_us"] == pytest.approx(row["idle_us"])
            # DDP's finalize makes the compute stream wait for the last all-reduce (an event wait,
            # not the host): the step's longest stream-7 gap is "other"
            longest = g.filter(
                (pl.col("rank") == r)
                & (pl.col("stream") == 7)
                & pl.col("start_ns").is_between(want["window_start_ns"], want["window_end_ns"])
            )
            assert longest.sort("gap_ns")["category"][-1] == "other"
            # the host syncs (aten::item -> cudaStreamSynchronize) at the end of every step, so the
            # first task of the next step is launched after the GPU went idle: host_wait, and the
            # gap is exactly the iteration gap between the two windows
            if prev is not None:
                boundary = g.filter((pl.col("rank") == r) & (pl.col("start_ns") == want["window_start_ns"]))
                assert boundary["category"].to_list() == ["host_wait"]
                assert boundary["gap_ns"].to_list() == [want["window_start_ns"] - prev["window_end_ns"]]
            prev = want
    whole = gaps.stream_idle(dp4.device_tasks, dp4.host_events)
    assert (whole["host_wait_us"] > 0).all()
    assert (whole["idle_us"] + whole["busy_us"] - whole["span_us"]).abs().max() < 1e-6


def test_dp4_launch_delays_plausible(dp4):
    stats = gaps.launch_delay_stats(dp4.device_tasks, dp4.host_events)
    # every kernel / memcpy / memset has exactly one launch call in this sample
    assert stats["count"].to_list() == stats["tasks"].to_list() == [402] * 4
    # the host runs ahead of the GPU (GPU-bound): typical delays are ms, never below the
    # generator's minimum start-after-launch of 2.4 µs minus the launch call's own length
    assert (stats["p50_us"] > 1000).all()
    assert (
        (stats["p50_us"] <= stats["p90_us"])
        & (stats["p90_us"] <= stats["p99_us"])
        & (stats["p99_us"] <= stats["max_us"])
    ).all()
    d = gaps.launch_delays(dp4.device_tasks, dp4.host_events)
    assert d.select((pl.col("start_ns") - pl.col("launch_start_ns")).min()).item() >= 2_400


def test_dp4_slow_steps_from_expected_breakdown():
    """long_steps on the per-step breakdown of expected.json (independent of breakdown.py)."""
    exp = _expected("dp4_nccl")
    rows = []
    for rank, e in exp["ranks"].items():
        for n in exp["steps"]:
            w = e["steps"][f"ProfilerStep#{n}"]
            rows.append(
                (
                    int(rank),
                    n,
                    w["window_ns"] / 1000,
                    w["computing_ns"] / 1000,
                    w["communication_not_overlapped_ns"] / 1000,
                    w["exposed_memcpy_ns"] / 1000,
                    w["free_ns"] / 1000,
                )
            )
    frame = _breakdown(rows)
    assert gaps.long_steps(frame).is_empty()  # steady steps: none is 1.2x the median
    out = gaps.long_steps(frame, factor=1.0).filter(pl.col("rank") == 0)
    steps0 = exp["ranks"]["0"]["steps"]
    durations = {n: steps0[f"ProfilerStep#{n}"]["window_ns"] for n in exp["steps"]}
    med = statistics.median(durations.values())
    assert out["step"].to_list() == [n for n, d in durations.items() if d > med] and out.height == 1

    def median(term):
        return statistics.median(steps0[f"ProfilerStep#{n}"][f"{term}_ns"] for n in exp["steps"])

    for row in out.to_dicts():
        w = steps0[f"ProfilerStep#{row['step']}"]
        deltas = {
            label: w[f"{term}_ns"] - median(term)
            for term, label in (
                ("computing", "more compute"),
                ("communication_not_overlapped", "more exposed communication"),
                ("exposed_memcpy", "more exposed memcpy"),
                ("free", "more idle/free"),
            )
        }
        best = max(deltas, key=deltas.get)
        assert row["why"] == best
        assert row["why_delta_us"] * 1000 == pytest.approx(deltas[best], abs=1e-3)


def test_ascend_sample_stream_idle_and_step_gaps():
    exp = _expected("ascend_2rank")
    trace = shared_sample("ascend_2rank")
    out = gaps.stream_idle(trace.device_tasks, trace.host_events)
    assert set(out["rank"]) == {0, 1}
    assert (out["host_wait_us"] + out["kernel_wait_us"] + out["other_us"] - out["idle_us"]).abs().max() < 1e-6
    # the HCCL ops (null stream, as kernel_details.csv writes N/A) are a group of their own
    assert out.filter(pl.col("stream").is_null())["tasks"].to_list() == [
        e["n_hccl_ops"] for _, e in sorted(exp["ranks"].items())
    ]
    times = _by(gaps.step_times(trace.steps, trace.device_tasks), "rank", "step")
    for rank, e in exp["ranks"].items():
        s8, s9 = e["steps"]["8"], e["steps"]["9"]
        assert times[(int(rank), 8)]["gap_before_us"] is None
        row = times[(int(rank), 9)]
        assert row["window_rule"] == "step_id"
        assert (row["device_start_ns"], row["device_end_ns"]) == (s9["first_task_start_ns"], s9["last_task_end_ns"])
        gap = s9["first_task_start_ns"] - s8["last_task_end_ns"]
        assert gap > 0 and row["gap_before_us"] * 1000 == pytest.approx(gap, abs=1e-6)
        assert row["idle_before_us"] == row["gap_before_us"]
