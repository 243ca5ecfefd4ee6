"""Timeline data layer: lanes, raw window tasks, binned busy view, level-of-detail switch."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support import intervals as ref
from tests.support.samples import shared_sample
from tests.support.timeline import frame
from traceview.analysis import timeline as tl

HAND = frame(
    [
        (0, 7, "kernel", 0, 100),  # overlaps the next one on the same stream
        (0, 7, "kernel", 50, 150),
        (0, 7, "memcpy", 150, 150),  # zero length: covers nothing
        (0, 20, "communication", 0, 1000),  # spans all 10 bins of [0, 1000)
        (1, None, "communication", 300, 400),  # Ascend HCCL: null stream
        (1, 3, "kernel", 2000, 2100),  # outside the window [0, 1000): an empty lane there
    ]
)


def test_lanes_hand_made():
    lanes = tl.lanes(HAND)
    assert lanes["lane"].to_list() == [0, 1, 2, 3]
    assert lanes["label"].to_list() == ["rank 0 · stream 7", "rank 0 · stream 20", "rank 1 · stream 3", "rank 1 · HCCL"]
    assert lanes["tasks"].to_list() == [3, 1, 1, 1]
    assert lanes["busy_us"].to_list() == [0.15, 1.0, 0.1, 0.1]  # union, not sum (0.2) on lane 0


def test_binned_hand_made():
    lanes = tl.lanes(HAND)
    b = tl.binned(HAND, lanes, 0, 1000, bins=10)
    assert b.height == 4 * 10
    lane0 = b.filter(pl.col("lane") == 0)
    assert lane0["busy_frac"].to_list() == [1.0, 0.5] + [0.0] * 8
    assert lane0["top_class"].to_list() == ["kernel", "kernel"] + [None] * 8
    lane1 = b.filter(pl.col("lane") == 1)  # one task spanning every bin
    assert lane1["busy_frac"].to_list() == [1.0] * 10
    assert set(lane1["top_class"].to_list()) == {"communication"}
    assert b.filter(pl.col("lane") == 2)["busy_frac"].sum() == 0  # empty in this window
    hccl = b.filter(pl.col("lane") == 3)
    assert hccl["busy_frac"].to_list() == [0.0] * 3 + [1.0] + [0.0] * 6
    assert b["bin_start_ns"].to_list()[:3] == [0, 100, 200]


def test_binned_top_class_by_covered_time_and_uneven_edges():
    tasks = frame([(0, 1, "memcpy", 0, 3), (0, 1, "kernel", 3, 7), (0, 1, "kernel", 9, 10)])
    b = tl.binned(tasks, tl.lanes(tasks), 0, 10, bins=3)  # edges 0, 3, 6, 10
    assert b["bin_start_ns"].to_list() == [0, 3, 6] and b["bin_end_ns"].to_list() == [3, 6, 10]
    assert b["busy_ns"].to_list() == [3, 3, 2]
    assert b["busy_frac"].to_list() == [1.0, 1.0, 0.5]
    assert b["top_class"].to_list() == ["memcpy", "kernel", "kernel"]


def test_compute_class_preferred_over_kind():
    tasks = HAND.with_columns(pl.lit("gemm").alias("compute_class"))
    lanes = tl.lanes(tasks)
    raw = tl.window_tasks(tasks, lanes, 0, 1000)
    assert "compute_class" in raw.columns and "kind" not in raw.columns
    assert set(tl.binned(tasks, lanes, 0, 1000, bins=4)["top_class"].drop_nulls()) == {"gemm"}


def test_window_tasks_overlap_and_ranks():
    lanes = tl.lanes(HAND)
    raw = tl.window_tasks(HAND.reverse(), lanes, 120, 350)  # unsorted input is accepted
    assert raw["correlation"].to_list() == [1, 2, 3, 4]  # ends after 120, starts before 350
    assert raw.columns == [
        "lane",
        "rank",
        "stream",
        "name",
        "kind",
        "start_ns",
        "end_ns",
        "dur_ns",
        "step",
        "correlation",
    ]
    assert tl.window_tasks(HAND, lanes, 120, 350, ranks=[1])["correlation"].to_list() == [4]
    assert tl.window_tasks(HAND, lanes, 0, 3000, limit=5) is None
    assert tl.window_tasks(HAND, lanes, 100, 150)["correlation"].to_list() == [1, 3]  # [0,100) ends at 100
    with pytest.raises(ValueError):
        tl.window_tasks(HAND, lanes, 10, 10)


def test_view_switches_above_limit():
    lanes = tl.lanes(HAND)
    v = tl.view(HAND, lanes, 0, 3000, limit=6)
    assert v["mode"] == "raw" and v["n_tasks"] == 6 and v["tasks"].height == 6
    v = tl.view(HAND, lanes, 0, 3000, limit=5, bins=30)
    assert v["mode"] == "binned" and v["n_tasks"] == 6 and v["bins"].height == 4 * 30
    v = tl.view(HAND, lanes, 0, 3000, limit=1, ranks=[1])
    assert v["mode"] == "binned" and v["n_tasks"] == 2 and set(v["bins"]["lane"]) == {2, 3}


task_st = st.tuples(st.integers(0, 2), st.integers(0, 300), st.integers(0, 80), st.sampled_from(["kernel", "memcpy"]))


@pytest.mark.integration
@settings(max_examples=150, deadline=None)
@given(st.lists(task_st, min_size=1, max_size=40), st.integers(-50, 250), st.integers(1, 300), st.integers(1, 40))
def test_binned_busy_equals_clipped_union(items, lo, width, bins):
    tasks = frame([(0, stream, kind, a, a + d) for stream, a, d, kind in items])
    lanes = tl.lanes(tasks)
    b = tl.binned(tasks, lanes, lo, lo + width, bins=bins)
    for lane, stream in zip(lanes["lane"], lanes["stream"]):
        mine = b.filter(pl.col("lane") == lane)
        widths = mine["bin_end_ns"] - mine["bin_start_ns"]
        want = ref.covered([(a, a + d) for s, a, d, _ in items if s == stream], lo, lo + width)
        assert (mine["busy_frac"] * widths).sum() == pytest.approx(want, abs=1e-6)
        assert mine["busy_ns"].sum() == want
        assert mine["busy_frac"].is_between(0, 1).all()
        for row in mine.iter_rows(named=True):  # per bin, too
            busy = ref.covered(
                [(a, a + d) for s, a, d, _ in items if s == stream], row["bin_start_ns"], row["bin_end_ns"]
            )
            assert row["busy_ns"] == busy
            assert (row["top_class"] is None) == (busy == 0)


def test_sample_dp4_nccl_lanes_and_binned_whole_trace():
    t = shared_sample("dp4_nccl")
    tasks = t.classified_tasks()
    lanes = tl.lanes(tasks)
    assert lanes.height == 8
    assert lanes.group_by("rank").len()["len"].to_list() == [2] * 4
    assert lanes["rank"].n_unique() == 4 and lanes["stream"].n_unique() == 2
    start, end = int(tasks["start_ns"].min()), int(tasks["end_ns"].max())
    bins = 700
    b = tl.binned(tasks, lanes, start, end, bins=bins)
    width = pl.col("bin_end_ns") - pl.col("bin_start_ns")
    got = b.group_by("lane").agg((pl.col("busy_frac") * width).sum().alias("ns")).sort("lane")
    diff = (got["ns"] - lanes["busy_us"] * 1000).abs()
    assert (diff <= bins + 1).all()  # within 1 ns per bin edge
    assert (
        b.group_by("lane").agg(pl.col("busy_ns").sum()).sort("lane")["busy_ns"]
        == (lanes["busy_us"] * 1000).round().cast(pl.Int64)
    ).all()
    assert set(b["top_class"].drop_nulls()) <= set(tasks["compute_class"])


def synthetic(n_lanes=16, per_lane=62_500, seed=0):
    rng = np.random.default_rng(seed)
    dur = rng.integers(1_000, 50_000, size=(n_lanes, per_lane))
    gap = rng.integers(-2_000, 20_000, size=(n_lanes, per_lane))  # some overlap on a stream
    start = np.cumsum(dur + gap, axis=1) - dur
    lane = np.repeat(np.arange(n_lanes), per_lane)
    first, last = int(start.min()), int((start + dur).max())
    start[-1, -1], dur[-1, -1] = first, last - first  # one task spanning the whole trace: found by the look-back
    return pl.DataFrame(
        {
            "rank": lane // 2,
            "stream": np.where(lane % 2 == 0, 7, 20),
            "name": "k",
            "kind": np.where(rng.random(lane.size) < 0.2, "communication", "kernel"),
            "start_ns": start.ravel(),
            "end_ns": (start + dur).ravel(),
            "dur_ns": dur.ravel(),
            "step": 1,
            "correlation": np.arange(lane.size),
        }
    ).sort("start_ns")


@pytest.mark.integration
def test_one_million_tasks_raw_then_binned():
    tasks = synthetic()
    assert tasks.height == 1_000_000
    lanes = tl.lanes(tasks)
    start, end = int(tasks["start_ns"].min()), int(tasks["end_ns"].max())
    mid = start + (end - start) // 2
    v = tl.view(tasks, lanes, mid, mid + 2_000_000)
    assert v["mode"] == "raw"
    want = tasks.filter((pl.col("start_ns") < mid + 2_000_000) & (pl.col("end_ns") > mid))
    assert v["n_tasks"] == want.height and sorted(v["tasks"]["correlation"]) == sorted(want["correlation"])
    assert 999_999 in v["tasks"]["correlation"]  # the long task, found through the look-back
    v = tl.view(tasks, lanes, start, end)
    assert v["mode"] == "binned" and v["n_tasks"] == 1_000_000
    bins = v["bins"]
    assert bins.height == 16 * 1000
    per_lane = bins.group_by("lane").agg(pl.col("busy_ns").sum()).sort("lane")
    assert (per_lane["busy_ns"] == (lanes["busy_us"] * 1000).round().cast(pl.Int64)).all()
    assert bins.filter(pl.col("lane") == 15)["busy_frac"].min() == 1.0  # the long task covers all bins
