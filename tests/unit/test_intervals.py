"""The interval engine against a slow pure-Python reference (hypothesis), plus hand-made cases. The
unit tests; the topic's description and its other tests: tests/integration/test_intervals.py.
"""

from __future__ import annotations

import polars as pl

from tests.support.intervals_shared import SETS, _frame  # noqa: F401
from traceview.analysis import intervals as iv
from traceview.analysis.breakdown import MEASURES


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
