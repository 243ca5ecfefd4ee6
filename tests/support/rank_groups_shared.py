"""What the split modules of test_rank_groups.py share (helpers and fixtures)."""

from __future__ import annotations

from polars.testing import assert_frame_equal

from traceview import schema


def _frames(trace):
    return {t: trace.frame(t) for t in schema.TABLES}


def _same(a, b):
    for table, frame in _frames(a).items():
        assert_frame_equal(frame, _frames(b)[table], check_row_order=True)
    assert a.load_warnings == b.load_warnings and a.failures == b.failures
