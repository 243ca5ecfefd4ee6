"""The interval engine: union, intersection, difference and gaps of task intervals, as polars.

Every time metric in traceview (computing, exposed communication, free, idle, bubble, ...) is a
length of some Boolean combination of interval sets: U(COMP), U(COMM), U(MEM) of one rank, clipped
to a window. Rather than merging each set and intersecting pairs, the engine sweeps once:

1. each interval [start, end) of set S becomes two events, (start, S, +1) and (end, S, -1);
2. events are summed per time point and cumulated per group (rank, step, ...), giving for each set
   how many of its intervals cover the time from this point to the next one;
3. the result is a list of *elementary segments* [t_i, t_{i+1}) per group with one Boolean column
   per set (covered or not). Segments are contiguous, and their state is constant inside.

Lengths of any combination are then plain filtered sums over segments, e.g.
|U(COMM) - U(COMP)| = sum(length where comm & ~comp). Zero-length intervals cover nothing.
`clip_to_windows` clips everything to per-group windows (a step's device window): the window
boundaries are passed to `segments` as cut points, then each segment is assigned to the window
holding it.

`merged` gives U(S) itself as disjoint intervals (with the busy time before each), for point
lookups such as "how much was busy between t0 and t1".

All operations are vectorised (sorts, cumulative sums, joins): O(n log n) in the number of
intervals, no Python loop over intervals. `tests/integration/test_intervals.py` checks them against a slow
pure-Python reference with hypothesis.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl


def segments(
    intervals: pl.DataFrame,
    by: Sequence[str],
    sets: Sequence[str],
    set_col: str = "set",
    cuts: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """Elementary coverage segments of labelled intervals, per group.

    intervals: columns `by`..., `set_col` (which set the interval belongs to; values in `sets`),
    start_ns, end_ns (Int64, end >= start).
    cuts: optional extra time points (`by`..., t) where segments must also be split, e.g. window
    boundaries for `clip_to_windows`; they change no coverage.
    Returns: `by`..., seg_start_ns, seg_end_ns, and one Boolean column per name in `sets` (True
    where at least one interval of that set covers the segment). Only segments of positive length
    between a group's first and last time point are returned, sorted by group and time.
    """
    by = list(by)
    # One lazy query: polars fuses the steps below instead of materialising each (a 1 GB rank's
    # ~10M events: every intermediate frame is hundreds of MB). The events are sorted narrow
    # (group, time, the set's index, +1/-1) and the per-set columns made after the sort.
    base = intervals.lazy().filter(pl.col(set_col).is_in(list(sets)) & (pl.col("end_ns") > pl.col("start_ns")))
    index = pl.col(set_col).replace_strict(list(sets), list(range(len(sets))), return_dtype=pl.Int32).alias("_s")
    parts = [
        base.select(*by, index, pl.col("start_ns").alias("t"), pl.lit(1, pl.Int32).alias("_d")),
        base.select(*by, index, pl.col("end_ns").alias("t"), pl.lit(-1, pl.Int32).alias("_d")),
    ]
    if cuts is not None:
        schema = intervals.select(*by).schema
        parts.append(
            cuts.lazy().select(
                *(pl.col(c).cast(schema[c]) for c in by),
                pl.lit(-1, pl.Int32).alias("_s"),
                pl.col("t").cast(pl.Int64),
                pl.lit(0, pl.Int32).alias("_d"),
            )
        )
    # Sorted by group then time, every group's deltas sum to zero, so a plain cumulative sum over
    # the whole frame restarts at 0 at each group boundary: no per-group window needed. Several
    # events at one time give zero-length segments, which the final filter drops (so the order of
    # events at one time does not matter).
    ordered = pl.concat(parts).sort(*by, "t")
    same_group = pl.lit(True)
    for col in by:
        same_group = same_group & (pl.col(col).shift(-1) == pl.col(col))
    counted = ordered.with_columns(
        *[
            pl.when(pl.col("_s") == i).then(pl.col("_d")).otherwise(0).cum_sum().gt(0).alias(s)
            for i, s in enumerate(sets)
        ],
        pl.when(same_group).then(pl.col("t").shift(-1)).alias("seg_end_ns"),
    )
    return (
        counted.rename({"t": "seg_start_ns"})
        .filter(pl.col("seg_end_ns").is_not_null() & (pl.col("seg_end_ns") > pl.col("seg_start_ns")))
        .select(*by, "seg_start_ns", "seg_end_ns", *sets)
        .collect()
    )


def window_cuts(windows: pl.DataFrame, by: Sequence[str]) -> pl.DataFrame:
    """The boundaries of `windows` (`by`..., win_start_ns, win_end_ns) as `segments` cut points."""
    by = list(by)
    return pl.concat(
        [windows.select(*by, pl.col("win_start_ns").alias("t")), windows.select(*by, pl.col("win_end_ns").alias("t"))]
    ).unique()


def clip_to_windows(
    segs: pl.DataFrame,
    windows: pl.DataFrame,
    by: Sequence[str],
    label: str,
) -> pl.DataFrame:
    """Keep the segments inside a window, labelled with it.

    segs: output of `segments` grouped by `by`, computed with `cuts=window_cuts(windows, by)` so
    that no segment crosses a window boundary. windows: `by`..., `label`, win_start_ns,
    win_end_ns; windows of one group must not overlap; `by` must name at least one column.
    Returns segs' columns plus `label` and the window bounds. O(n log n): one as-of join.
    """
    by = list(by)
    if not by:
        raise ValueError("clip_to_windows needs at least one group column")
    win = windows.select(*by, label, "win_start_ns", "win_end_ns").sort(*by, "win_start_ns")
    hit = segs.sort(*by, "seg_start_ns").join_asof(
        win,
        left_on="seg_start_ns",
        right_on="win_start_ns",
        by=by,
        strategy="backward",
        check_sortedness=False,  # sorted by group and time just above
    )
    return hit.filter(pl.col("seg_start_ns") < pl.col("win_end_ns"))


def lengths(segs: pl.DataFrame, by: Sequence[str], measures: dict[str, pl.Expr]) -> pl.DataFrame:
    """Total segment length (ns) per group for each named Boolean condition over the set columns.

    `measures` maps an output column name to a Boolean expression, e.g.
    {"communication_not_overlapped_ns": pl.col("comm") & ~pl.col("comp")}.
    Also returns first_ns / last_ns: the first start and last end of segments covered by any set
    named in the conditions (callers usually pass busy = comp | comm | mem as one of them).
    """
    length = pl.col("seg_end_ns") - pl.col("seg_start_ns")
    aggs = [length.filter(cond).sum().alias(name) for name, cond in measures.items()]
    return segs.group_by(*by).agg(*aggs) if by else segs.select(*aggs)


def merged(tasks: pl.DataFrame) -> pl.DataFrame:
    """U(tasks) per rank as disjoint intervals: rank, s, e (ns), sorted, with before_ns = the
    busy length of the rank's earlier merged intervals. Zero-length tasks cover nothing."""
    t = (
        tasks.filter(pl.col("end_ns") > pl.col("start_ns"))
        .select("rank", "start_ns", "end_ns")
        .sort("rank", "start_ns")
    )
    run = (pl.col("start_ns") > pl.col("end_ns").cum_max().shift(1)).fill_null(True).cum_sum()
    merged = (
        t.with_columns(run.over("rank").alias("_run"))
        .group_by("rank", "_run")
        .agg(pl.col("start_ns").min().alias("s"), pl.col("end_ns").max().alias("e"))
        .sort("rank", "s")
    )
    return merged.with_columns(
        (pl.col("e") - pl.col("s")).cum_sum().shift(1, fill_value=0).over("rank").alias("before_ns")
    ).drop("_run")


def union_length(intervals: pl.DataFrame, by: Sequence[str]) -> pl.DataFrame:
    """|U(intervals)| per group, ns: the length covered by at least one interval (start_ns, end_ns)."""
    segs = segments(intervals.with_columns(pl.lit("x").alias("set")), by, ["x"])
    return lengths(segs, by, {"union_ns": pl.col("x")})
