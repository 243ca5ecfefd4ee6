"""The canvas timeline's arithmetic: lane roles, call depth, per-lane level of detail, range totals.

The dashboard's canvas timeline (`traceview.dashboards.timeline.api`) draws *items*: one row per
drawn interval with the columns lane (Int64, the lane it is drawn on), id (Int64, unique), rank,
start_ns, end_ns (Int64 ns, end >= start), name (String) and cls (String: the colour class —
a device task's compute class, a host event's kind, an iteration term, "step"). Items are kept
sorted by start_ns (`traceview.analysis.timeline.sort_tasks`), so a window query is a binary search.

Definitions (W = [start_ns, end_ns), an item overlaps W as in `traceview.analysis.timeline`):

- `stream_roles`: a device stream's role — "HCCL" for tasks with no stream (Ascend's HCCL ops),
  else "NCCL" / "RCCL" / "HCCL" when the stream runs communication tasks whose names say so,
  "communication" for other communication, "memcpy" for a stream of copies only, else "compute".
- `nesting_depth`: per group (a host thread), intervals sorted by (start, longer first); the
  depth of an interval is the number of earlier intervals of its group still open at its start
  (end > start): for properly nested intervals, the number of intervals containing it (its call
  depth). Zero-length intervals count as 1 ns long.
- `lane_window`: per lane, the items overlapping W if there are at most `per_lane` of them (raw),
  else the lane's busy time *per class* in each of `bins` bins (stacked bins): busy_ns(lane, bin,
  c) = |U(items of the lane with class c) ∩ bin| (union, exact, integer edges as in `binned`).
  Summed over the bins, this is |U(items of the lane with class c) ∩ W|.
- `range_totals`: over W, per lane and class: |U(items of the lane with class c) ∩ W|; by lane:
  |U(items of the lane) ∩ W|; a rank's class total over several lanes (its device streams):
  |U(items of those lanes with class c) ∩ W| (each instant once per rank, as the breakdown's
  union across streams). `UnionIndex` answers the same unions for any window from runs merged
  once (two binary searches per group), which the dashboard's range selection uses.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import polars as pl

from traceview.analysis.timeline import _check_window, _edges, _merge, _overlapping

ITEM_COLUMNS = ("lane", "id", "rank", "start_ns", "end_ns", "name", "cls")


def stream_roles(device_tasks: pl.DataFrame) -> pl.DataFrame:
    """One row per (rank, stream) of `device_tasks`: rank, stream, role (module docstring)."""
    name = pl.col("name").str.to_lowercase()
    comm = pl.col("kind") == "communication"
    g = device_tasks.group_by("rank", "stream").agg(
        comm.any().alias("_comm"),
        (comm & name.str.contains("nccl")).any().alias("_nccl"),
        (comm & name.str.contains("rccl")).any().alias("_rccl"),
        (comm & (name.str.contains("hccl") | name.str.starts_with("hcom"))).any().alias("_hccl"),
        (pl.col("kind") == "memcpy").all().alias("_copies"),
    )
    role = (
        pl.when(pl.col("stream").is_null())
        .then(pl.lit("HCCL"))
        .when(pl.col("_nccl"))
        .then(pl.lit("NCCL"))
        .when(pl.col("_rccl"))
        .then(pl.lit("RCCL"))
        .when(pl.col("_hccl"))
        .then(pl.lit("HCCL"))
        .when(pl.col("_comm"))
        .then(pl.lit("communication"))
        .when(pl.col("_copies"))
        .then(pl.lit("memcpy"))
        .otherwise(pl.lit("compute"))
    )
    return g.select("rank", "stream", role.alias("role")).sort("rank", "stream", nulls_last=True)


def nesting_depth(group: np.ndarray, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Depth (Int64) of each interval [start, end) within its integer group (module docstring),
    in the input order. Vectorised: one lexsort and one searchsorted, no loop."""
    n = len(start)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    g = np.asarray(group, dtype=np.int64)
    s = np.asarray(start, dtype=np.int64)
    e = np.maximum(np.asarray(end, dtype=np.int64), s + 1)
    # shift each group into its own disjoint range (as `_merge` does) so one sorted array serves all
    _, gi = np.unique(g, return_inverse=True)
    k = int(gi.max()) + 1
    lo = np.full(k, np.iinfo(np.int64).max, dtype=np.int64)
    hi = np.full(k, np.iinfo(np.int64).min, dtype=np.int64)
    np.minimum.at(lo, gi, s)
    np.maximum.at(hi, gi, e)
    width = hi - lo + 1
    if float(width.astype(np.float64).sum()) >= 2.0**62:
        raise OverflowError("nesting_depth: time span too long for this many groups")
    off = (np.concatenate(([0], np.cumsum(width)[:-1])) - lo)[gi]
    ks, ke = s + off, e + off
    order = np.lexsort((-ke, ks))  # by start, the longer first (groups are disjoint ranges)
    ends_sorted = np.sort(ke)
    closed_before = np.searchsorted(ends_sorted, ks[order], side="right")
    depth = np.empty(n, dtype=np.int64)
    depth[order] = np.arange(n, dtype=np.int64) - closed_before
    return depth


def _codes(values: pl.Series) -> tuple[list[str], np.ndarray]:
    classes = sorted(values.drop_nulls().unique().to_list())
    code = values.replace_strict(classes, list(range(len(classes))), default=len(classes), return_dtype=pl.Int64)
    return classes, code.to_numpy()


def _clipped(hit: pl.DataFrame, start_ns: int, end_ns: int) -> pl.DataFrame:
    return hit.select(
        "lane",
        "rank",
        pl.col("cls").cast(pl.String),
        pl.max_horizontal("start_ns", pl.lit(start_ns, pl.Int64)).alias("s"),
        pl.min_horizontal("end_ns", pl.lit(end_ns, pl.Int64)).alias("e"),
    ).filter(pl.col("e") > pl.col("s"))


def stacked_bins(items: pl.DataFrame, start_ns: int, end_ns: int, bins: int) -> tuple[pl.DataFrame, np.ndarray]:
    """(frame, edges): busy_ns per lane, bin and class over W (module docstring) for the items
    given (already cut to the window or not). Frame columns lane, bin, cls, busy_ns (Int64 ns);
    only non-zero cells, sorted by lane, bin, cls. `edges`: the N+1 integer bin edges (ns)."""
    _check_window(start_ns, end_ns)
    edges = _edges(start_ns, end_ns, bins)
    clipped = _clipped(items, start_ns, end_ns)
    empty = pl.DataFrame(schema={"lane": pl.Int64, "bin": pl.Int64, "cls": pl.String, "busy_ns": pl.Int64})
    if clipped.height == 0:
        return empty, edges
    classes, code = _codes(clipped["cls"])
    nc = len(classes) + 1
    lane = clipped["lane"].to_numpy().astype(np.int64)
    g, s, e = _merge(lane * nc + code, clipped["s"].to_numpy(), clipped["e"].to_numpy())
    cells = _cells(g, s, e, edges)
    out = cells.select(
        (pl.col("g") // nc).alias("lane"),
        "bin",
        (pl.col("g") % nc).replace_strict(list(range(nc)), [*classes, None], return_dtype=pl.String).alias("cls"),
        "busy_ns",
    )
    return out.sort("lane", "bin", "cls"), edges


def _cells(g: np.ndarray, s: np.ndarray, e: np.ndarray, edges: np.ndarray) -> pl.DataFrame:
    """Merged intervals (sorted by group, then start: `_merge`'s output) cut at the bin edges and
    summed per (group, bin): g, bin, busy_ns. The pieces come out ordered by (group, bin), so
    equal keys are adjacent: one reduceat, no sort or hash."""
    first = np.searchsorted(edges, s, side="right") - 1
    last = np.searchsorted(edges, e - 1, side="right") - 1
    count = last - first + 1
    rep = np.repeat(np.arange(len(s)), count)
    b = first[rep] + (np.arange(len(rep)) - (np.cumsum(count) - count)[rep])
    covered = np.minimum(e[rep], edges[b + 1]) - np.maximum(s[rep], edges[b])
    gg = g[rep]
    if len(gg) == 0:
        return pl.DataFrame(schema={"g": pl.Int64, "bin": pl.Int64, "busy_ns": pl.Int64})
    new = np.empty(len(gg), dtype=bool)
    new[0] = True
    new[1:] = (gg[1:] != gg[:-1]) | (b[1:] != b[:-1])
    at = np.flatnonzero(new)
    return pl.DataFrame(
        {"g": gg[at].astype(np.int64), "bin": b[at].astype(np.int64), "busy_ns": np.add.reduceat(covered, at)},
        schema={"g": pl.Int64, "bin": pl.Int64, "busy_ns": pl.Int64},
    )


def lane_window(
    items: pl.DataFrame,
    start_ns: int,
    end_ns: int,
    bins: int,
    per_lane: int | None = None,
    ranks: Iterable[int] | None = None,
    lanes: Iterable[int] | None = None,
) -> dict:
    """What the canvas draws of `items` (sorted by start) over W, lane by lane (module docstring).

    Returns {"raw": the overlapping items of the lanes with <= `per_lane` of them (default
    `bins`), columns as `items`, sorted by lane and start; "stacked": `stacked_bins` of the other
    lanes; "edges": the bin edges; "binned_lanes": those lanes, sorted; "counts": lane -> number of
    overlapping items}. `ranks` / `lanes` keep only those."""
    _check_window(start_ns, end_ns)
    per_lane = bins if per_lane is None else per_lane
    hit = _overlapping(items, start_ns, end_ns, None if ranks is None else list(ranks))
    if lanes is not None:
        hit = hit.filter(pl.col("lane").is_in(list(lanes)))
    counts = hit.group_by("lane").len()
    dense = counts.filter(pl.col("len") > per_lane)["lane"]
    raw = hit.filter(~pl.col("lane").is_in(dense.implode())).sort("lane", "start_ns")
    stacked, edges = stacked_bins(hit.filter(pl.col("lane").is_in(dense.implode())), start_ns, end_ns, bins)
    return {
        "raw": raw,
        "stacked": stacked,
        "edges": edges,
        "binned_lanes": sorted(dense.to_list()),
        "counts": dict(zip(counts["lane"].to_list(), counts["len"].to_list())),
    }


def _union_by(frame: pl.DataFrame, keys: list[str]) -> pl.DataFrame:
    """|U(intervals s..e)| per distinct `keys` of the clipped frame: keys..., busy_ns."""
    if frame.height == 0:
        return pl.DataFrame(schema={**{k: frame.schema[k] for k in keys}, "busy_ns": pl.Int64})
    idx = frame.select(keys).with_columns(pl.struct(keys).rank("dense").cast(pl.Int64).alias("_g") - 1)
    g, s, e = _merge(idx["_g"].to_numpy(), frame["s"].to_numpy(), frame["e"].to_numpy())
    per = pl.DataFrame({"_g": g, "busy_ns": e - s}, schema={"_g": pl.Int64, "busy_ns": pl.Int64})
    per = per.group_by("_g").agg(pl.col("busy_ns").sum())
    return idx.unique("_g").join(per, on="_g").drop("_g").sort(keys, nulls_last=True)


def range_totals(
    items: pl.DataFrame,
    start_ns: int,
    end_ns: int,
    ranks: Iterable[int] | None = None,
    class_lanes: Iterable[int] | None = None,
    parts: Iterable[str] = ("by_lane_class", "by_lane", "by_rank_class"),
) -> dict[str, pl.DataFrame]:
    """Totals over W (module docstring) of `items` (sorted by start), those named in `parts`:

    {"by_lane_class": lane, cls, busy_ns; "by_lane": lane, busy_ns; "by_rank_class": rank, cls,
    busy_ns over the lanes `class_lanes` (e.g. the device streams; all lanes if None), each
    instant once per rank}. All Int64 ns."""
    _check_window(start_ns, end_ns)
    hit = _overlapping(items, start_ns, end_ns, None if ranks is None else list(ranks))
    clipped = _clipped(hit, start_ns, end_ns)
    chosen = clipped if class_lanes is None else clipped.filter(pl.col("lane").is_in(list(class_lanes)))
    make = {
        "by_lane_class": lambda: _union_by(clipped, ["lane", "cls"]),
        "by_lane": lambda: _union_by(clipped, ["lane"]),
        "by_rank_class": lambda: _union_by(chosen, ["rank", "cls"]),
    }
    return {name: make[name]() for name in parts}


class UnionIndex:
    """|U(items of a group) ∩ W| for every group of `keys` (e.g. ("lane",), ("rank", "cls")) and
    any window W, without touching the items again: each group's items merged once into disjoint
    runs (sorted, `traceview.analysis.timeline._merge`) with the running sum of their lengths, so a
    window costs two binary searches per group. Equal to `range_totals` (the same unions)."""

    def __init__(self, items: pl.DataFrame, keys: Iterable[str]):
        self.keys = list(keys)
        ok = items.filter(pl.col("end_ns") > pl.col("start_ns"))
        grouped = ok.select(*self.keys, "start_ns", "end_ns").with_columns(
            (pl.struct(self.keys).rank("dense").cast(pl.Int64) - 1).alias("_g")
        )
        self.groups = grouped.unique("_g").sort("_g").select(self.keys)
        g, s, e = _merge(grouped["_g"].to_numpy(), grouped["start_ns"].to_numpy(), grouped["end_ns"].to_numpy())
        n = self.groups.height
        # per group: its runs [first, last) in the merged arrays, and its own extent [lo, hi]
        self.first = np.searchsorted(g, np.arange(n), side="left")
        self.last = np.searchsorted(g, np.arange(n), side="right")
        self.lo = s[self.first] if n else s[:0]
        self.hi = e[self.last - 1] if n else e[:0]
        # shifted into disjoint increasing ranges, as in _merge, so one searchsorted serves all groups
        width = self.hi - self.lo + 1
        self.shift = np.concatenate(([0], np.cumsum(width)[:-1])).astype(np.int64) - self.lo
        self.s = s + self.shift[g]
        self.e = e + self.shift[g]
        self.cum = np.concatenate(([0], np.cumsum(e - s))).astype(np.int64)

    def totals(self, start_ns: int, end_ns: int, ranks: Iterable[int] | None = None) -> pl.DataFrame:
        """keys..., busy_ns (Int64 ns) over W = [start_ns, end_ns), groups with busy_ns > 0 only
        (of the given ranks: `keys` must then hold "rank"), sorted by keys."""
        _check_window(start_ns, end_ns)
        if ranks is not None and "rank" not in self.keys:
            raise ValueError(f"totals by {self.keys} cannot be limited to ranks: group by rank too")
        # W clipped to each group's extent [lo, hi] (hi + 1 could leave Int64 for an end at its max)
        w0 = np.clip(start_ns, self.lo, self.hi) + self.shift
        w1 = np.clip(end_ns, self.lo, self.hi) + self.shift
        i0 = np.maximum(np.searchsorted(self.e, w0, side="right"), self.first)  # first run ending after W0
        i1 = np.minimum(np.searchsorted(self.s, w1, side="left"), self.last)  # runs starting before W1
        some = i1 > i0
        j0, j1 = np.where(some, i0, 0), np.where(some, i1 - 1, 0)
        head = np.maximum(0, w0 - self.s[j0]) if len(self.s) else np.zeros_like(w0)
        tail = np.maximum(0, self.e[j1] - w1) if len(self.e) else np.zeros_like(w1)
        busy = np.where(some, self.cum[np.where(some, i1, 0)] - self.cum[j0] - head - tail, 0)
        out = self.groups.with_columns(pl.Series("busy_ns", busy, dtype=pl.Int64)).filter(pl.col("busy_ns") > 0)
        if ranks is not None:
            out = out.filter(pl.col("rank").is_in(list(ranks)))
        return out.sort(self.keys, nulls_last=True)


# ---- the whole-trace pyramid: wide windows without touching every item ----


class LaneIndex:
    """Items split by lane (each part sorted by start) with a pre-binned pyramid of the whole
    extent: `pre` = `stacked_bins(items, t0, t1, n_pre)` per lane (a dict lane -> its cells,
    sorted by bin) and its edges. Built once; `window` answers any window from it."""

    def __init__(self, items: pl.DataFrame, t0: int, t1: int, n_pre: int = 65536):
        self.parts = {k[0]: v for k, v in items.partition_by("lane", as_dict=True, maintain_order=True).items()}
        self.starts = {lane: f["start_ns"].to_numpy() for lane, f in self.parts.items()}
        self.longest = {lane: int((f["end_ns"] - f["start_ns"]).max()) for lane, f in self.parts.items()}
        self.rank = {lane: f["rank"][0] for lane, f in self.parts.items()}
        pre, self.pre_edges = stacked_bins(items, t0, max(t1, t0 + 1), n_pre)
        self.classes, code = _codes(pre["cls"])
        self.pre = (pre["lane"].to_numpy(), pre["bin"].to_numpy(), code, pre["busy_ns"].to_numpy())
        lanes_sorted = self.pre[0]
        ids = np.unique(lanes_sorted)
        lo = np.searchsorted(lanes_sorted, ids, side="left")
        hi = np.searchsorted(lanes_sorted, ids, side="right")
        self.pre_at = {int(i): (int(a), int(b)) for i, a, b in zip(ids, lo, hi)}

    def window(
        self, start_ns: int, end_ns: int, bins: int, per_lane: int | None = None, lanes: Iterable[int] | None = None
    ) -> dict:
        """As `lane_window` (same keys), lane by lane: a lane whose items overlapping W are at most
        `per_lane` (default `bins`) is raw; the others are stacked bins — exact (`stacked_bins`)
        when a bin of W is narrower than 2 pyramid bins, else the pyramid's cells summed k at a
        time (`coarsen`: the edges are then the pyramid's edges, every k-th, so still exact)."""
        _check_window(start_ns, end_ns)
        per_lane = bins if per_lane is None else per_lane
        raw, dense, counts = [], [], {}
        for lane in self.parts if lanes is None else [ln for ln in lanes if ln in self.parts]:
            s = self.starts[lane]
            lo = int(np.searchsorted(s, start_ns - self.longest[lane], side="left"))
            hi = int(np.searchsorted(s, end_ns, side="left"))
            if hi - lo <= per_lane:
                part = _overlapping(self.parts[lane].slice(lo, hi - lo), start_ns, end_ns, None)
                counts[lane] = part.height
                raw.append(part)
            else:
                counts[lane] = hi - lo  # an upper bound: the candidates
                dense.append(lane)
        pre_width = (int(self.pre_edges[-1]) - int(self.pre_edges[0])) / max(len(self.pre_edges) - 1, 1)
        if dense and (end_ns - start_ns) / bins >= 2 * pre_width:
            at = [self.pre_at[lane] for lane in dense if lane in self.pre_at]
            cells = tuple(np.concatenate([col[a:b] for a, b in at] or [col[:0]]) for col in self.pre)
            stacked, edges = coarsen(cells, self.classes, self.pre_edges, start_ns, end_ns, bins)
        else:
            hit = [self._cut(lane, start_ns, end_ns) for lane in dense]
            stacked, edges = stacked_bins(pl.concat(hit) if hit else _empty_like(self), start_ns, end_ns, bins)
        first = next(iter(self.parts.values()))
        return {
            "raw": pl.concat(raw) if raw else first.clear(),
            "stacked": stacked,
            "edges": edges,
            "binned_lanes": sorted(dense),
            "counts": counts,
        }

    def _cut(self, lane: int, start_ns: int, end_ns: int) -> pl.DataFrame:
        s = self.starts[lane]
        lo = int(np.searchsorted(s, start_ns - self.longest[lane], side="left"))
        hi = int(np.searchsorted(s, end_ns, side="left"))
        return self.parts[lane].slice(lo, hi - lo)


def _empty_like(index: LaneIndex) -> pl.DataFrame:
    return next(iter(index.parts.values())).clear()


def coarsen(
    cells: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    classes: list[str],
    pre_edges: np.ndarray,
    start_ns: int,
    end_ns: int,
    bins: int,
) -> tuple[pl.DataFrame, np.ndarray]:
    """Pyramid cells (arrays lane, bin, class code into `classes` (len(classes): null), busy_ns
    over `pre_edges`) summed into at most `bins` bins of k pyramid bins each over the pyramid bins
    that meet W: (frame lane, bin, cls, busy_ns; edges = every k-th pyramid edge from the first
    bin meeting W, then the last one). Exact for those edges: each output bin is a union of whole
    pyramid bins, and a lane's per-class busy time is additive over disjoint bins. One bincount
    over (lane, class, bin): no sort of the cells."""
    n_pre = len(pre_edges) - 1
    first = max(0, int(np.searchsorted(pre_edges, start_ns, side="right")) - 1)
    last = min(n_pre, max(first + 1, int(np.searchsorted(pre_edges, end_ns, side="left"))))
    k = max(1, -(-(last - first) // max(bins, 1)))
    edges = np.append(pre_edges[first:last:k], pre_edges[last])
    nb, nc = len(edges) - 1, len(classes) + 1
    lane, b, code, busy = cells
    keep = (b >= first) & (b < last)
    if not keep.any():
        return pl.DataFrame(schema={"lane": pl.Int64, "bin": pl.Int64, "cls": pl.String, "busy_ns": pl.Int64}), edges
    lane_ids, lane_i = np.unique(lane[keep], return_inverse=True)
    key = (lane_i * nc + code[keep]) * nb + (b[keep] - first) // k
    total = np.bincount(key, weights=busy[keep].astype(np.float64), minlength=len(lane_ids) * nc * nb)
    hit = np.flatnonzero(total)
    names = np.array([*classes, None], dtype=object)
    out = pl.DataFrame(
        {
            "lane": lane_ids[hit // (nc * nb)].astype(np.int64),
            "bin": (hit % nb).astype(np.int64),
            "cls": pl.Series(names[(hit // nb) % nc], dtype=pl.String),
            "busy_ns": np.rint(total[hit]).astype(np.int64),
        }
    )
    return out, edges
