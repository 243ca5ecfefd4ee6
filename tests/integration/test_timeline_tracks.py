"""The canvas timeline's arithmetic (traceview.analysis.timeline_tracks). The integration tests; the
topic's description and its other tests: tests/unit/test_timeline_tracks.py.
"""

from __future__ import annotations

import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support import intervals as ref
from tests.support.timeline_tracks_shared import items  # noqa: F401
from traceview.analysis import timeline_tracks as tt

item_st = st.tuples(
    st.integers(0, 2), st.integers(0, 300), st.integers(0, 80), st.sampled_from(["gemm", "communication", "memcpy"])
)


@settings(max_examples=120, deadline=None)
@given(st.lists(item_st, min_size=1, max_size=40), st.integers(-50, 250), st.integers(1, 300), st.integers(1, 40))
def test_stacked_bins_sum_to_the_busy_time_per_class(rows, lo, width, bins):
    f = items([(lane, 0, a, a + d, c) for lane, a, d, c in rows])
    out, edges = tt.stacked_bins(f, lo, lo + width, bins)
    for lane in range(3):
        for cls in ("gemm", "communication", "memcpy"):
            spans = [(a, a + d) for ln, a, d, c in rows if ln == lane and c == cls]
            mine = out.filter((pl.col("lane") == lane) & (pl.col("cls") == cls))
            assert mine["busy_ns"].sum() == ref.covered(spans, lo, lo + width)
            for r in mine.iter_rows(named=True):  # per bin, too
                assert r["busy_ns"] == ref.covered(spans, int(edges[r["bin"]]), int(edges[r["bin"] + 1]))


@settings(max_examples=150, deadline=None)
@given(
    rows=st.lists(
        st.tuples(
            st.integers(0, 5),
            st.integers(0, 1000),
            st.integers(0, 150),
            st.sampled_from(["gemm", "communication", None]),
        ),
        max_size=40,
    ),
    window=st.tuples(st.integers(-50, 1200), st.integers(1, 700)),
    ranks=st.sampled_from([None, [0], [1, 2]]),
)
def test_union_index_equals_range_totals(rows, window, ranks):
    """The precomputed unions (a range selection in two binary searches per group) give the same
    totals as cutting the items: by lane, and by rank and class."""
    f = items([(lane, lane // 2, s, s + d, cls) for lane, s, d, cls in rows])
    start, end = window[0], window[0] + window[1]
    want = tt.range_totals(f, start, end, ranks, parts=("by_lane", "by_rank_class"))
    by_lane = tt.UnionIndex(f, ("rank", "lane")).totals(start, end, ranks).drop("rank")
    by_class = tt.UnionIndex(f, ("rank", "cls")).totals(start, end, ranks)
    assert by_lane.equals(want["by_lane"].filter(pl.col("busy_ns") > 0).sort("lane"))
    assert by_class.equals(want["by_rank_class"].filter(pl.col("busy_ns") > 0).sort("rank", "cls", nulls_last=True))
