"""Timeline data layer. The integration tests; the topic's description and its other tests:
tests/unit/test_timeline.py.
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support import intervals as ref
from tests.support.timeline import frame
from traceview.analysis import timeline as tl

task_st = st.tuples(st.integers(0, 2), st.integers(0, 300), st.integers(0, 80), st.sampled_from(["kernel", "memcpy"]))


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
