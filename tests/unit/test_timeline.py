"""Timeline data layer: lanes, raw window tasks, binned busy view, level-of-detail switch.

This file holds the topic's unit tests; the others are in tests/integration/test_timeline.py.
"""

from __future__ import annotations

import polars as pl
import pytest

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
