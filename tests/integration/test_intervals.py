"""The interval engine against a slow pure-Python reference (hypothesis), plus hand-made cases.

This file holds the topic's integration tests; the others are in tests/unit/test_intervals.py.
"""

from __future__ import annotations

import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support import intervals as ref
from tests.support.intervals_shared import SETS, _frame  # noqa: F401
from traceview.analysis import intervals as iv
from traceview.analysis.breakdown import MEASURES


def _reference(rows, window=None):
    """Slow reference (tests.support.intervals.lengths): every cell between all boundaries, with the
    sets covering it."""
    lo, hi = window or (min((s for _, s, _ in rows), default=0), max((e for _, _, e in rows), default=0))
    return ref.lengths(rows, lo, hi)


interval = st.tuples(st.sampled_from(SETS), st.integers(0, 60), st.integers(0, 20)).map(
    lambda t: (t[0], t[1], t[1] + t[2])
)


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
