"""Compute classes (traceview.analysis.classes). The integration tests; the topic's description and its
other tests: tests/unit/test_compute_classes.py, tests/corpus/test_compute_classes.py.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.compute_classes_shared import _host, _kernels  # noqa: F401
from traceview.analysis import classes as cc


def _laminar(intervals: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Keep a properly nested subset (each pair disjoint or one inside the other)."""
    kept: list[tuple[int, int]] = []
    for s, e in sorted(set(intervals), key=lambda x: (x[0], -x[1])):
        if all(e <= ks or s >= ke or (ks <= s and e <= ke) or (s <= ks and ke <= e) for ks, ke in kept):
            kept.append((s, e))
    return kept


@settings(max_examples=150, deadline=None)
@given(
    raw=st.lists(st.tuples(st.integers(0, 60), st.integers(1, 30)), min_size=0, max_size=25),
    times=st.lists(st.integers(0, 95), min_size=1, max_size=20),
)
def test_launch_op_matches_slow_reference(raw, times):
    """Innermost = the containing operator (start <= t < end) with the latest start, ties -> the
    shortest; names are the intervals so equal intervals compare equal."""
    ops = _laminar([(s, s + d) for s, d in raw])
    host = _host([(1, s, e, f"{s}-{e}") for s, e in ops], [(1, t, i + 1) for i, t in enumerate(times)])
    got = cc.launch_ops(_kernels(list(range(1, len(times) + 1))), host).to_list()
    expected = []
    for t in times:
        inside = [(s, e) for s, e in ops if s <= t < e]
        best = max(inside, key=lambda x: (x[0], -x[1]), default=None)
        expected.append(f"{best[0]}-{best[1]}" if best else None)
    assert got == expected
