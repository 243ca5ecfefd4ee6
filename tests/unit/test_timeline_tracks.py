"""The canvas timeline's arithmetic (traceview.analysis.timeline_tracks): stacked bins, call
depth, per-lane level of detail, range totals, stream roles.

This file holds the topic's unit tests; the others are in tests/integration/test_timeline_tracks.py.
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from tests.support.samples import shared_sample
from tests.support.timeline_tracks_shared import items  # noqa: F401
from traceview.analysis import timeline as tl
from traceview.analysis import timeline_tracks as tt

HAND = items(
    [
        (0, 0, 0, 100, "gemm"),
        (0, 0, 50, 150, "gemm"),  # overlaps the first: counted once
        (0, 0, 120, 400, "communication"),  # another class on the same lane: its own stack
        (1, 0, 0, 1000, "communication"),
        (2, 1, 300, 400, "memcpy"),
    ]
)


def test_stacked_bins_hand_made():
    out, edges = tt.stacked_bins(HAND, 0, 1000, 10)
    assert edges.tolist() == list(range(0, 1001, 100))
    cell = {(r["lane"], r["bin"], r["cls"]): r["busy_ns"] for r in out.iter_rows(named=True)}
    assert cell[(0, 0, "gemm")] == 100 and cell[(0, 1, "gemm")] == 50
    assert cell[(0, 1, "communication")] == 80 and cell[(0, 3, "communication")] == 100
    assert all(cell[(1, b, "communication")] == 100 for b in range(10))
    assert (0, 1, "memcpy") not in cell and cell[(2, 3, "memcpy")] == 100


def depth_reference(group, start, end) -> list[int]:
    """Slow reference: the number of other intervals of the group that contain the interval."""
    n = len(start)
    return [
        sum(
            1
            for j in range(n)
            if j != i
            and group[j] == group[i]
            and start[j] <= start[i]
            and end[i] <= end[j]
            and (start[j], -end[j]) != (start[i], -end[i])
        )
        for i in range(n)
    ]


def nested_intervals(rng, groups=3, roots=6, depth=4):
    """Random properly nested intervals (a call tree per group), no two identical."""
    out = []

    def grow(g, s, e, d):
        out.append((g, s, e))
        if d == 0 or e - s < 8:
            return
        cuts = sorted(rng.choice(np.arange(s + 1, e), size=min(4, e - s - 1), replace=False).tolist())
        for a, b in zip(cuts[0::2], cuts[1::2]):
            if b - a >= 2 and (a, b) != (s, e):
                grow(g, a, b, d - 1)

    for g in range(groups):
        t = int(rng.integers(0, 10**12))  # unrelated clocks per group
        for _ in range(roots):
            length = int(rng.integers(10, 2000))
            grow(g, t, t + length, depth)
            t += length + int(rng.integers(0, 50))
    return out


@pytest.mark.parametrize("seed", range(5))
def test_nesting_depth_against_a_slow_reference(seed):
    rng = np.random.default_rng(seed)
    rows = nested_intervals(rng)
    rng.shuffle(rows)
    g, s, e = (np.array(c, dtype=np.int64) for c in zip(*rows))
    assert tt.nesting_depth(g, s, e).tolist() == depth_reference(g.tolist(), s.tolist(), e.tolist())


def test_nesting_depth_hand_made_and_empty():
    # a parent, two children, a grandchild, a sibling starting where the parent ends, a zero-length call
    g = np.array([0, 0, 0, 0, 0, 0, 1])
    s = np.array([0, 10, 50, 12, 100, 60, 0])
    e = np.array([100, 40, 90, 20, 150, 60, 5])
    assert tt.nesting_depth(g, s, e).tolist() == [0, 1, 1, 2, 0, 2, 0]
    assert tt.nesting_depth(np.array([]), np.array([]), np.array([])).tolist() == []


def test_lane_window_picks_raw_or_stacked_per_lane():
    rows = [(0, 0, 10 * i, 10 * i + 5, "gemm") for i in range(50)] + [(1, 0, 0, 500, "communication")]
    out = tt.lane_window(items(rows), 0, 500, bins=20, per_lane=20)
    assert out["binned_lanes"] == [0]
    assert out["raw"]["lane"].to_list() == [1]
    assert out["stacked"]["busy_ns"].sum() == 250 and out["counts"] == {0: 50, 1: 1}
    assert tt.lane_window(items(rows), 0, 100, bins=20, per_lane=20)["binned_lanes"] == []


def test_range_totals_hand_made():
    out = tt.range_totals(HAND, 0, 200, class_lanes=[0, 2])
    by_lane = dict(zip(out["by_lane"]["lane"], out["by_lane"]["busy_ns"]))
    assert by_lane == {0: 200, 1: 200}
    cls = {(r["rank"], r["cls"]): r["busy_ns"] for r in out["by_rank_class"].iter_rows(named=True)}
    assert cls == {(0, "gemm"): 150, (0, "communication"): 80}


def test_union_index_needs_the_rank_to_filter_by_rank():
    with pytest.raises(ValueError, match="group by rank"):
        tt.UnionIndex(HAND, ("lane",)).totals(0, 10, ranks=[0])


def test_range_totals_of_an_iteration_equal_the_iteration_breakdown():
    """The terms track summed over a step's iteration window gives the iteration breakdown's terms."""
    from traceview.dashboards.timeline.model import track_items

    trace = shared_sample("dp4_nccl")
    f = (
        track_items(trace)
        .filter(pl.col("kind") == "term")
        .with_columns(pl.col("rank").alias("lane"), pl.int_range(pl.len()).cast(pl.Int64).alias("id"))
    )
    f = tl.sort_tasks(f)
    it = trace.iteration_breakdown()
    for row in it.iter_rows(named=True):
        out = tt.range_totals(f, row["iteration_start_ns"], row["iteration_end_ns"], ranks=[row["rank"]])
        got = {r["cls"]: r["busy_ns"] / 1000 for r in out["by_rank_class"].iter_rows(named=True)}
        assert got.get("computing", 0) == pytest.approx(row["iteration_computing_us"], abs=1e-3)
        assert got.get("exposed_comm", 0) == pytest.approx(row["iteration_exposed_comm_us"], abs=1e-3)
        assert got.get("exposed_memcpy", 0) == pytest.approx(row["iteration_exposed_memcpy_us"], abs=1e-3)
        assert got.get("other_idle", 0) == pytest.approx(row["other_idle_us"], abs=1e-3)
        assert sum(got.values()) == pytest.approx(row["iteration_us"], abs=1e-3)


def test_stream_roles():
    tasks = pl.DataFrame(
        {
            "rank": [0, 0, 0, 1, 1],
            "stream": [7, 20, 9, None, 3],
            "name": ["gemm", "ncclDevKernel_AllReduce", "Memcpy HtoD", "hcom_allReduce_", "x"],
            "kind": ["kernel", "communication", "memcpy", "communication", "communication"],
        }
    )
    roles = {(r["rank"], r["stream"]): r["role"] for r in tt.stream_roles(tasks).iter_rows(named=True)}
    assert roles == {(0, 7): "compute", (0, 20): "NCCL", (0, 9): "memcpy", (1, None): "HCCL", (1, 3): "communication"}


@pytest.mark.parametrize(("lo", "hi", "bins"), [(0, 10_000, 7), (1234, 5678, 50), (-500, 20_000, 3), (9000, 9001, 5)])
def test_the_pyramid_index_answers_as_the_direct_computation(lo, hi, bins):
    """`LaneIndex.window` (per-lane parts, the pyramid for wide bins) gives the raw items of the
    sparse lanes and, for the dense ones, the stacked bins of `stacked_bins` over its own edges."""
    rng = np.random.default_rng(7)
    starts = np.sort(rng.integers(0, 10_000, 600))
    rows = [
        (int(i % 3), 0, int(a), int(a + rng.integers(0, 60)), ["gemm", "communication"][i % 2])
        for i, a in enumerate(starts)
    ]
    rows += [(3, 0, 100, 200, "memcpy"), (3, 0, 5000, 5100, "memcpy")]
    f = items(rows)
    index = tt.LaneIndex(f, 0, 10_100, n_pre=256)
    got = index.window(lo, hi, bins, per_lane=20)
    direct = tt.lane_window(f, lo, hi, bins, per_lane=20)
    assert 3 not in got["binned_lanes"] and got["binned_lanes"] == direct["binned_lanes"]
    assert got["raw"]["id"].sort().to_list() == direct["raw"]["id"].sort().to_list()
    edges = got["edges"]
    for lane in got["binned_lanes"]:
        mine = f.filter(pl.col("lane") == lane)
        for b in range(len(edges) - 1):
            want, _ = tt.stacked_bins(mine, int(edges[b]), int(edges[b + 1]), 1)
            cell = got["stacked"].filter((pl.col("lane") == lane) & (pl.col("bin") == b))
            assert dict(zip(cell["cls"], cell["busy_ns"])) == dict(zip(want["cls"], want["busy_ns"]))
