"""The data layer of the dashboard's timeline: lanes, a window's raw tasks, or a binned busy view.

The timeline shows one *lane* per (rank, stream) of the device tasks, coloured by class (the
`compute_class` column of `Trace.classified_tasks()` when present, else the task `kind`). To keep a
1M-task profile fluid the browser never receives more than `limit` (default 20,000) raw tasks:

- zoomed in, the window holds <= `limit` tasks: `window_tasks` returns them (mode "raw");
- zoomed out, more tasks overlap the window: `binned` cuts the window into `bins` bins of (nearly)
  equal width and returns, per lane and bin, the fraction of the bin that the lane was busy and
  the class that covered most of it (mode "binned").

`view` picks between the two. Definitions (all times Int64 ns on the rank's clock, W = [start_ns,
end_ns) the visible window, a task [s, e) *overlaps* W when s < end_ns and (e > start_ns, or it
has zero length and s >= start_ns)):

- busy of a lane in a set of time X = |U(tasks of the lane) ∩ X|, the union length (overlapping
  tasks on one stream count once, zero-length tasks cover nothing);
- bin b of N over W: [edge_b, edge_{b+1}) with edge_b = start_ns + floor(b · L / N), L = end_ns −
  start_ns; integer edges, so widths differ by at most 1 ns and the bins tile W exactly
  (N is lowered to L when the window is shorter than N ns);
- busy_frac(lane, b) = busy of the lane in bin b / width of bin b (0..1, exact: computed from
  clipped interval lengths, not task counts);
- top_class(lane, b) = the class c maximising |U(tasks of the lane with class c) ∩ bin b| (ties:
  the alphabetically first class); null when the lane is idle in the bin.

Speed: window queries cut the tasks sorted by start with a binary search (`search_sorted`) and
look back by the longest task duration, so only the O(k) candidate rows are touched after O(n)
vectorised checks (sortedness, max duration; sub-millisecond on 1M rows). Pass tasks already
sorted by start_ns (`sort_tasks`) to skip an O(n log n) sort per query. Binning is vectorised:
per-lane union by a cumulative-max sweep, then each merged interval is split over the bins it
spans with integer ranges, so a task spanning many bins costs O(bins spanned). No Python loop
over tasks anywhere.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import polars as pl

LANE_KEYS = ["rank", "stream"]
OPTIONAL_RAW_COLUMNS = ("launch_delay_ns",)  # passed through to the raw tasks when the input has them


def class_column(tasks: pl.DataFrame) -> str:
    """The colour column: `compute_class` when `tasks` has it, else `kind`."""
    return "compute_class" if "compute_class" in tasks.columns else "kind"


def sort_tasks(tasks: pl.DataFrame) -> pl.DataFrame:
    """`tasks` sorted by start_ns (rows with a null start or end dropped): the layout that makes
    `window_tasks` / `binned` / `view` O(log n + k). Returns `tasks` itself when already sorted."""
    if tasks["start_ns"].null_count() or tasks["end_ns"].null_count():
        tasks = tasks.filter(pl.col("start_ns").is_not_null() & pl.col("end_ns").is_not_null())
    if not tasks["start_ns"].is_sorted():
        tasks = tasks.sort("start_ns")
    return tasks


def _merge(g: np.ndarray, s: np.ndarray, e: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Disjoint union of intervals [s, e) (e > s, Int64 ns) per integer group g >= 0.

    One sort and one cumulative max over the whole array: each group's times are shifted so that
    groups occupy disjoint, increasing ranges (group k starts where group k-1's span ends) and a
    run can never cross a group boundary. Each group is shifted by its own first start, so ranks on
    unrelated clocks (a GPU trace's relative µs beside an Ascend rank's epoch ns) fit.
    Returns (g, s, e) of the merged intervals, sorted by group then start."""
    if len(s) == 0:
        return g[:0], s[:0], e[:0]
    gi = g.astype(np.int64)
    n_groups = int(gi.max()) + 1
    lo = np.full(n_groups, np.iinfo(np.int64).max, dtype=np.int64)
    hi = np.full(n_groups, np.iinfo(np.int64).min, dtype=np.int64)
    np.minimum.at(lo, gi, s)
    np.maximum.at(hi, gi, e)
    present = lo <= hi
    lo = np.where(present, lo, 0)
    width = np.where(present, hi - lo + 1, 0)
    if float(width.astype(np.float64).sum()) >= 2.0**62:
        raise OverflowError("timeline window too long for this many lanes/classes")
    shift = np.concatenate(([0], np.cumsum(width)[:-1])) - lo  # group k: t -> t - lo_k + (spans before k)
    off = shift[gi]
    ks, ke = s + off, e + off
    if len(s) > 1 and bool((s[1:] >= s[:-1]).all()):
        # already sorted by start (tasks cut from a start-sorted frame): a stable sort by group
        # suffices, a radix sort when the group ids fit 16 bits
        order = np.argsort(g.astype(np.uint16) if int(g.max()) < 2**16 else g, kind="stable")
    else:
        order = np.argsort(ks, kind="stable")
    ks, ke = ks[order], ke[order]
    reach = np.maximum.accumulate(ke)
    new = np.empty(len(ks), dtype=bool)
    new[0] = True
    new[1:] = ks[1:] > reach[:-1]
    first = np.flatnonzero(new)
    last = np.append(first[1:] - 1, len(ks) - 1)
    mg = g[order][first]
    moff = shift[mg.astype(np.int64)]
    return mg, ks[first] - moff, reach[last] - moff


def lanes(device_tasks: pl.DataFrame) -> pl.DataFrame:
    """One row per (rank, stream) lane of the device tasks, in display order.

    Columns: lane (Int64, 0.. in display order: by rank, then stream; null rank / null stream
    last, e.g. Ascend HCCL tasks that carry no stream), rank, stream, label ("rank 0 · stream 7",
    "rank 1 · HCCL" for a null stream, "rank ?" for a null rank), tasks (count of the lane's
    tasks), busy_us (Float64, µs: |U(lane's tasks)|, the union length over the whole trace;
    zero-length tasks cover nothing).
    """
    counts = device_tasks.group_by(LANE_KEYS).agg(pl.len().cast(pl.Int64).alias("tasks"))
    out = counts.sort(LANE_KEYS, nulls_last=True).with_row_index("lane").with_columns(pl.col("lane").cast(pl.Int64))
    rank_txt = (
        pl.when(pl.col("rank").is_null())
        .then(pl.lit("rank ?"))
        .otherwise(pl.lit("rank ") + pl.col("rank").cast(pl.String))
    )
    stream_txt = (
        pl.when(pl.col("stream").is_null())
        .then(pl.lit("HCCL"))
        .otherwise(pl.lit("stream ") + pl.col("stream").cast(pl.String))
    )
    out = out.with_columns((rank_txt + pl.lit(" · ") + stream_txt).alias("label"))
    iv = _attach_lane(device_tasks, out).filter(pl.col("end_ns") > pl.col("start_ns"))
    g, s, e = _merge(iv["lane"].to_numpy(), iv["start_ns"].to_numpy(), iv["end_ns"].to_numpy())
    busy = pl.DataFrame({"lane": g, "len": e - s}, schema={"lane": pl.Int64, "len": pl.Int64})
    busy = busy.group_by("lane").agg(pl.col("len").sum().alias("busy_ns"))
    return (
        out.join(busy, on="lane", how="left")
        .with_columns((pl.col("busy_ns").fill_null(0) / 1000).alias("busy_us"))
        .select("lane", "rank", "stream", "label", "tasks", "busy_us")
        .sort("lane")
    )


def _attach_lane(tasks: pl.DataFrame, lanes_df: pl.DataFrame) -> pl.DataFrame:
    """`tasks` with a lane column (inner join on rank, stream; nulls match nulls)."""
    key = lanes_df.select("lane", *[pl.col(c).cast(tasks.schema[c]) for c in LANE_KEYS])
    return tasks.join(key, on=LANE_KEYS, how="inner", nulls_equal=True)


def _overlapping(tasks: pl.DataFrame, start_ns: int, end_ns: int, ranks: Iterable[int] | None) -> pl.DataFrame:
    """The tasks overlapping [start_ns, end_ns) (see module docstring), of `ranks` if given.

    Binary search on start (tasks sorted by start) for the right edge, and for the left edge
    start_ns − the longest duration: no task starting earlier can reach into the window."""
    tasks = sort_tasks(tasks)
    if tasks.height == 0:
        return tasks
    starts = tasks["start_ns"]
    longest = int((tasks["end_ns"] - starts).max())
    lo = int(starts.search_sorted(start_ns - max(longest, 0), side="left"))
    hi = int(starts.search_sorted(end_ns, side="left"))
    cand = tasks.slice(lo, max(hi - lo, 0))
    keep = (pl.col("end_ns") > start_ns) | ((pl.col("start_ns") >= start_ns) & (pl.col("end_ns") == pl.col("start_ns")))
    if ranks is not None:
        keep = keep & pl.col("rank").is_in(list(ranks))
    return cand.filter(keep)


def _check_window(start_ns: int, end_ns: int) -> None:
    if end_ns <= start_ns:
        raise ValueError(f"empty timeline window [{start_ns}, {end_ns}): end_ns must be greater than start_ns")


def window_tasks(
    tasks: pl.DataFrame,
    lanes: pl.DataFrame,
    start_ns: int,
    end_ns: int,
    ranks: Iterable[int] | None = None,
    limit: int = 20_000,
) -> pl.DataFrame | None:
    """The raw tasks overlapping the window [start_ns, end_ns) (ns), of the given `ranks`.

    `tasks`: device tasks (optionally with compute_class); sorted by start_ns for O(log n + k)
    (else sorted here). `lanes`: output of `lanes`; tasks of a (rank, stream) absent from it are left out.
    Returns columns lane, rank, stream, name, the class column (compute_class if present in
    `tasks`, else kind), start_ns, end_ns, dur_ns (ns, unclipped), step, correlation (and
    launch_delay_ns when `tasks` has it), sorted by lane and start; or None when more than `limit` tasks overlap (the caller asks for `binned`).
    """
    _check_window(start_ns, end_ns)
    hit = _overlapping(tasks, start_ns, end_ns, ranks)
    if hit.height > limit:
        return None
    return _raw(hit, lanes)


def _raw(hit: pl.DataFrame, lanes_df: pl.DataFrame) -> pl.DataFrame:
    cls = class_column(hit)
    cols = ["lane", "rank", "stream", "name", cls, "start_ns", "end_ns", "dur_ns", "step", "correlation"]
    cols += [c for c in OPTIONAL_RAW_COLUMNS if c in hit.columns]
    return _attach_lane(hit, lanes_df).select(cols).sort("lane", "start_ns")


def _edges(start_ns: int, end_ns: int, bins: int) -> np.ndarray:
    """Integer bin edges start + floor(b·L/N), b = 0..N (N lowered to L for short windows)."""
    length = end_ns - start_ns
    n = max(1, min(int(bins), length))
    b = np.arange(n + 1, dtype=object if length * n >= 2**62 else np.int64)
    return (start_ns + (b * length) // n).astype(np.int64)


def _split(g: np.ndarray, s: np.ndarray, e: np.ndarray, edges: np.ndarray) -> pl.DataFrame:
    """Intervals [s, e) (inside the window) cut at the bin edges: g, bin, covered_ns per piece.

    An interval spanning bins b0..b1 yields b1 − b0 + 1 pieces (repeat + arange, no loop)."""
    first = np.searchsorted(edges, s, side="right") - 1
    last = np.searchsorted(edges, e - 1, side="right") - 1
    count = last - first + 1
    rep = np.repeat(np.arange(len(s)), count)
    starts = np.cumsum(count) - count
    b = first[rep] + (np.arange(len(rep)) - starts[rep])
    lo = np.maximum(s[rep], edges[b])
    hi = np.minimum(e[rep], edges[b + 1])
    return pl.DataFrame(
        {"g": g[rep], "bin": b, "covered_ns": hi - lo},
        schema={"g": pl.Int64, "bin": pl.Int64, "covered_ns": pl.Int64},
    )


def binned(
    tasks: pl.DataFrame,
    lanes: pl.DataFrame,
    start_ns: int,
    end_ns: int,
    bins: int = 1000,
    ranks: Iterable[int] | None = None,
) -> pl.DataFrame:
    """Busy fraction and dominant class per lane and bin over the window [start_ns, end_ns) (ns).

    Every lane of `lanes` (of `ranks` if given) gets every bin (a dense lanes × bins grid).
    Columns: lane, bin (0..N−1), bin_start_ns, bin_end_ns (integer edges, see module docstring),
    busy_ns (Int64: |U(lane's tasks) ∩ bin|, exact), busy_frac (busy_ns / bin width, 0..1),
    top_class (class — compute_class if present in `tasks`, else kind — with the most covered
    time in the bin, by union per class; null when idle). Sorted by lane, bin.
    """
    _check_window(start_ns, end_ns)
    edges = _edges(start_ns, end_ns, bins)
    cls = class_column(tasks)
    lanes_sel = lanes if ranks is None else lanes.filter(pl.col("rank").is_in(list(ranks)))
    hit = _attach_lane(_overlapping(tasks, start_ns, end_ns, ranks), lanes_sel)
    clipped = hit.select(
        "lane",
        pl.col(cls).cast(pl.String).alias("_cls"),
        pl.max_horizontal("start_ns", pl.lit(start_ns, pl.Int64)).alias("s"),
        pl.min_horizontal("end_ns", pl.lit(end_ns, pl.Int64)).alias("e"),
    ).filter(pl.col("e") > pl.col("s"))

    classes = sorted(clipped["_cls"].drop_nulls().unique().to_list())
    nc = len(classes) + 1  # code len(classes) stands for a null class
    code = clipped["_cls"].replace_strict(
        classes, list(range(len(classes))), default=len(classes), return_dtype=pl.Int64
    )
    lane, s, e = clipped["lane"].to_numpy(), clipped["s"].to_numpy(), clipped["e"].to_numpy()

    busy = _split(*_merge(lane, s, e), edges).group_by("g", "bin").agg(pl.col("covered_ns").sum().alias("busy_ns"))
    busy = busy.rename({"g": "lane"})
    per_class = (
        _split(*_merge(lane * nc + code.to_numpy(), s, e), edges)
        .group_by("g", "bin")
        .agg(pl.col("covered_ns").sum())
        .with_columns((pl.col("g") // nc).alias("lane"), (pl.col("g") % nc).alias("_code"))
    )
    top = (
        per_class.group_by("lane", "bin")
        .agg(pl.col("_code").sort_by(["covered_ns", "_code"], descending=[True, False]).first())
        .with_columns(
            pl.col("_code").replace_strict(list(range(nc)), [*classes, None], return_dtype=pl.String).alias("top_class")
        )
        .select("lane", "bin", "top_class")
    )
    grid_bins = pl.DataFrame(
        {"bin": np.arange(len(edges) - 1, dtype=np.int64), "bin_start_ns": edges[:-1], "bin_end_ns": edges[1:]}
    )
    width = pl.col("bin_end_ns") - pl.col("bin_start_ns")
    return (
        lanes_sel.select("lane")
        .join(grid_bins, how="cross")
        .join(busy, on=["lane", "bin"], how="left")
        .join(top, on=["lane", "bin"], how="left")
        .with_columns(pl.col("busy_ns").fill_null(0))
        .with_columns(
            (pl.col("busy_ns") / width).alias("busy_frac"),
            pl.when(pl.col("busy_ns") > 0).then(pl.col("top_class")).alias("top_class"),
        )
        .select("lane", "bin", "bin_start_ns", "bin_end_ns", "busy_ns", "busy_frac", "top_class")
        .sort("lane", "bin")
    )


def view(
    tasks: pl.DataFrame,
    lanes: pl.DataFrame,
    start_ns: int,
    end_ns: int,
    ranks: Iterable[int] | None = None,
    limit: int = 20_000,
    bins: int = 1000,
) -> dict:
    """What the timeline shows for the window [start_ns, end_ns) (ns), level of detail included.

    Returns {"mode": "raw", "tasks": `window_tasks` frame, "n_tasks": k} when k <= `limit` tasks
    (of `ranks`, in `lanes`) overlap the window, else {"mode": "binned", "bins": `binned` frame,
    "n_tasks": k}. k counts the overlapping tasks of the selected ranks.
    """
    _check_window(start_ns, end_ns)
    tasks = sort_tasks(tasks)
    ranks = None if ranks is None else list(ranks)
    hit = _overlapping(tasks, start_ns, end_ns, ranks)
    if hit.height <= limit:
        raw = _raw(hit, lanes)
        return {"mode": "raw", "tasks": raw, "n_tasks": raw.height}
    lanes_sel = lanes if ranks is None else lanes.filter(pl.col("rank").is_in(ranks))
    n = _attach_lane(hit.select(LANE_KEYS), lanes_sel).height
    return {"mode": "binned", "bins": binned(tasks, lanes, start_ns, end_ns, bins, ranks), "n_tasks": n}
