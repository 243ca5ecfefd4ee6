"""The interval engine against a slow pure-Python reference (hypothesis), plus hand-made cases."""

from __future__ import annotations

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support import intervals as ref
from traceview.analysis import intervals as iv
from traceview.analysis.breakdown import MEASURES

SETS = ["comp", "comm", "mem"]


def _reference(rows, window=None):
    """Slow reference (tests.support.intervals.lengths): every cell between all boundaries, with the
    sets covering it."""
    lo, hi = window or (min((s for _, s, _ in rows), default=0), max((e for _, _, e in rows), default=0))
    return ref.lengths(rows, lo, hi)


interval = st.tuples(st.sampled_from(SETS), st.integers(0, 60), st.integers(0, 20)).map(
    lambda t: (t[0], t[1], t[1] + t[2])
)


def _frame(rows):
    return pl.DataFrame(
        {
            "rank": [0] * len(rows),
            "set": [r[0] for r in rows],
            "start_ns": [r[1] for r in rows],
            "end_ns": [r[2] for r in rows],
        },
        schema={"rank": pl.Int64, "set": pl.String, "start_ns": pl.Int64, "end_ns": pl.Int64},
    )


@pytest.mark.integration
@settings(max_examples=300, deadline=None)
@given(st.lists(interval, max_size=25))
def test_lengths_match_reference(rows):
    segs = iv.segments(_frame(rows), ["rank"], SETS)
    got = iv.lengths(segs, ["rank"], MEASURES)
    want = _reference(rows)
    if got.height == 0:
        assert all(v == 0 for v in want.values())
        return
    assert got.drop("rank").row(0, named=True) == want


@pytest.mark.integration
@settings(max_examples=300, deadline=None)
@given(st.lists(interval, max_size=25), st.integers(0, 50), st.integers(1, 40), st.integers(0, 30))
def test_clipped_windows_match_reference(rows, w0, wlen, gap):
    windows = [(1, w0, w0 + wlen), (2, w0 + wlen + gap, w0 + 2 * wlen + gap)]
    win = pl.DataFrame(
        {"rank": [0, 0], "step": [1, 2], "win_start_ns": [w[1] for w in windows], "win_end_ns": [w[2] for w in windows]}
    )
    segs = iv.segments(_frame(rows), ["rank"], SETS, cuts=iv.window_cuts(win, ["rank"]))
    clipped = iv.clip_to_windows(segs, win, ["rank"], "step")
    got = {r["step"]: r for r in iv.lengths(clipped, ["rank", "step"], MEASURES).to_dicts()}
    for step, s, e in windows:
        want = _reference(rows, (s, e))
        row = got.get(step)
        if row is None:
            assert all(v == 0 for v in want.values())
        else:
            assert {k: row[k] for k in want} == want


def test_hand_made_case():
    rows = [("comp", 0, 10), ("comp", 5, 15), ("comm", 12, 30), ("mem", 28, 40), ("comp", 35, 36)]
    segs = iv.segments(_frame(rows), ["rank"], SETS)
    got = iv.lengths(segs, ["rank"], MEASURES).drop("rank").row(0, named=True)
    assert got == {
        "computing": 16,
        "communication": 18,
        "overlapped": 3,
        "communication_not_overlapped": 15,
        "exposed_memcpy": 9,
        "busy": 40,
    }


def test_union_length_groups():
    df = pl.DataFrame({"g": [1, 1, 2], "start_ns": [0, 5, 0], "end_ns": [10, 20, 0]})
    # group 2 holds only a zero-length interval: it covers nothing, so it has no row
    assert iv.union_length(df, ["g"]).rows() == [(1, 20)]
