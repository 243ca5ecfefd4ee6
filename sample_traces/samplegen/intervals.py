"""Reference interval algebra of the generator (half-open [start, end) integer ns): deliberately plain and slow, the computations the samples' documented numbers come from."""

from __future__ import annotations


# Interval algebra (half-open [start, end) integer nanoseconds).  Deliberately plain and slow: these are the
# reference computations the README numbers come from.
def union(intervals):
    """Merge intervals into a sorted list of disjoint [s, e) pairs (touching intervals are merged)."""
    out = []
    for s, e in sorted((s, e) for s, e in intervals if e > s):
        if out and s <= out[-1][1]:
            if e > out[-1][1]:
                out[-1][1] = e
        else:
            out.append([s, e])
    return [(s, e) for s, e in out]


def length(u):
    return sum(e - s for s, e in u)


def intersect(a, b):
    """Intersection of two merged interval lists."""
    out, i, j = [], 0, 0
    while i < len(a) and j < len(b):
        s, e = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if s < e:
            out.append((s, e))
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return out


def subtract(a, b):
    """a minus b, both merged interval lists."""
    out = []
    for s, e in a:
        cur = s
        for bs, be in b:
            if be <= cur or bs >= e:
                continue
            if bs > cur:
                out.append((cur, bs))
            cur = max(cur, be)
            if cur >= e:
                break
        if cur < e:
            out.append((cur, e))
    return out


def clip(u, lo, hi):
    return intersect(u, [(lo, hi)])


def gaps(u):
    """Total length of the gaps between consecutive merged intervals."""
    return sum(u[k + 1][0] - u[k][1] for k in range(len(u) - 1))


#: overlap_breakdown's lengths (ns) that tile a window, in the order the checks and the README take them.
OVERLAP_TERMS_NS = (
    "computing_ns",
    "communication_ns",
    "overlapped_ns",
    "communication_not_overlapped_ns",
    "exposed_memcpy_ns",
    "free_ns",
)


def overlap_breakdown(comp, comm, mem=()):
    """docs/metrics.md numbers for one rank and one window, given already-clipped interval lists."""
    uc, um, ux = union(comp), union(comm), union(mem)
    busy = union(list(uc) + list(um) + list(ux))
    return {
        "computing_ns": length(uc),
        "communication_ns": length(um),
        "overlapped_ns": length(intersect(uc, um)),
        "communication_not_overlapped_ns": length(subtract(um, uc)),
        "exposed_memcpy_ns": length(subtract(subtract(ux, uc), um)),
        "busy_ns": length(busy),
        "free_ns": gaps(busy),
        "first_busy_start_ns": busy[0][0] if busy else None,
        "last_busy_end_ns": busy[-1][1] if busy else None,
    }
