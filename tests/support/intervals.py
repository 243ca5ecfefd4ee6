"""The reference interval algebra of the tests: half-open [start, end) integer intervals, walked
cell by cell. Deliberately plain and slow, so that it is obviously right; the analyses
(`traceview.analysis.intervals` and everything built on it) are compared with it."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

#: The breakdown terms `lengths` computes from the covering sets of each cell.
TERMS = ("computing", "communication", "overlapped", "communication_not_overlapped", "exposed_memcpy", "busy")


def cells(intervals: Iterable[tuple[str, int, int]], lo: int, hi: int) -> Iterator[tuple[int, int, set[str]]]:
    """The elementary cells [a, b) of [lo, hi) between all interval ends, each with the set of
    names (the first field of each interval) whose intervals cover it."""
    intervals = list(intervals)
    bounds = sorted({lo, hi} | {x for _, s, e in intervals for x in (s, e) if lo < x < hi})
    for a, b in zip(bounds, bounds[1:]):
        yield a, b, {name for name, s, e in intervals if s <= a and b <= e and e > s}


def merged(spans: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """The union of `spans` as sorted, disjoint, non-touching intervals (empty ones dropped)."""
    out: list[list[int]] = []
    for s, e in sorted((s, e) for s, e in spans if e > s):
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return [(s, e) for s, e in out]


def covered(spans: Iterable[tuple[int, int]], lo: int, hi: int) -> int:
    """Length of [lo, hi) covered by the union of `spans`."""
    return sum(e - s for s, e in merged((max(s, lo), min(e, hi)) for s, e in spans))


def lengths(intervals: Iterable[tuple[str, int, int]], lo: int, hi: int) -> dict[str, int]:
    """The length (ns) of each of TERMS in [lo, hi) over `intervals` (set, start, end) with sets
    "comp", "comm" and "mem"."""
    total = dict.fromkeys(TERMS, 0)
    for a, b, on in cells(intervals, lo, hi):
        n = b - a
        total["computing"] += n * ("comp" in on)
        total["communication"] += n * ("comm" in on)
        total["overlapped"] += n * ({"comp", "comm"} <= on)
        total["communication_not_overlapped"] += n * ("comm" in on and "comp" not in on)
        total["exposed_memcpy"] += n * (on == {"mem"})
        total["busy"] += n * bool(on)
    return total


def window_terms(intervals: list[tuple[str, int, int]], lo: int, hi: int) -> dict | None:
    """Every step-breakdown term (ns) of the window [lo, hi) over `intervals` (set, start, end)
    with sets "comp", "comm" and "mem", or None when no interval covers any of it: the `lengths`,
    plus free (the gaps between the merged busy intervals), first_busy, last_busy, idle and
    duration."""
    busy = merged((a, b) for a, b, on in cells(intervals, lo, hi) if on)
    if not busy:
        return None
    total = lengths(intervals, lo, hi)
    total["free"] = sum(b[0] - a[1] for a, b in zip(busy, busy[1:]))
    total["first_busy"], total["last_busy"] = busy[0][0], busy[-1][1]
    total["idle"] = (hi - lo) - total["busy"]
    total["duration"] = hi - lo
    return total


#: The terms the tests compare with `window_terms` on every breakdown row (beside duration and the
#: first and last busy instants).
WINDOW_TERMS = (*TERMS, "free", "idle")
