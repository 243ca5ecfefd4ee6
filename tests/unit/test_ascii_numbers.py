"""Numbers a user types (sizes in the environment, rank and step SPECs) are ASCII digits: Python's
`\\d` and `int()` also take full-width and other Unicode digits (`１２`, `١٢`), which no user means
and which the dashboard's API already refuses (issue 30)."""

from __future__ import annotations

import pytest

from traceview.errors import TraceError
from traceview.selection import Selection
from traceview.sizes import parse_size


@pytest.mark.parametrize("text", ["１２G", "١٢M", "8\u0663G"])
def test_a_size_in_other_digits_is_refused(text):
    with pytest.raises(TraceError, match="is not a size"):
        parse_size(text, "TRACEVIEW_MEMORY_LIMIT")
    assert parse_size("12G", "X") == 12 << 30 and parse_size("1.5k", "X") == 1536


@pytest.mark.parametrize("spec", ["１-３", "0-٧", "２"])
def test_a_spec_in_other_digits_is_refused(spec):
    with pytest.raises(ValueError, match="is not a number or a range"):
        Selection.parse(spec, "ranks")
    assert Selection.parse("0-7,12").ranges == [(0, 7), (12, 12)]
