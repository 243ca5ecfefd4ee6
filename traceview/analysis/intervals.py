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
`windows` optionally clips everything to per-group windows (a step's device window) by splitting
segments at window boundaries and keeping the parts inside.

All operations are vectorised (sorts, cumulative sums, joins): O(n log n) in the number of
intervals, no Python loop over intervals. `tests/test_intervals.py` checks them against a slow
pure-Python reference with hypothesis.
"""

from __future__ import annotations

from typing import Sequence

import polars as pl


def segments(
    intervals: pl.DataFrame,
    by: Sequence[str],
    sets: Sequence[str],
    set_col: str = "set",
) -> pl.DataFrame:
    """Elementary coverage segments of labelled intervals, per group.

    intervals: columns `by`..., `set_col` (which set the interval belongs to; values in `sets`),
    start_ns, end_ns (Int64, end >= start).
    Returns: `by`..., seg_start_ns, seg_end_ns, and one Boolean column per name in `sets` (True
    where at least one interval of that set covers the segment). Only segments of positive length
    between a group's first start and last end are returned, sorted by group and time.
    """
    by = list(by)
    deltas = [pl.when(pl.col(set_col) == s).then(pl.col("_d")).otherwise(0).alias(s) for s in sets]
    base = intervals.filter(pl.col(set_col).is_in(list(sets)) & (pl.col("end_ns") > pl.col("start_ns")))
    events = pl.concat(
        [
            base.select(*by, set_col, pl.col("start_ns").alias("t"), pl.lit(1, pl.Int32).alias("_d")),
            base.select(*by, set_col, pl.col("end_ns").alias("t"), pl.lit(-1, pl.Int32).alias("_d")),
        ]
    )
    points = (
        events.select(*by, "t", *deltas)
        .group_by(*by, "t")
        .agg(pl.col(s).sum() for s in sets)
        .sort(*by, "t")
    )
    over = by if by else None
    counted = points.with_columns(
        *[(pl.col(s).cum_sum().over(over) if over else pl.col(s).cum_sum()) > 0 for s in sets],
        (pl.col("t").shift(-1).over(over) if over else pl.col("t").shift(-1)).alias("seg_end_ns"),
    )
    return (
        counted.rename({"t": "seg_start_ns"})
        .filter(pl.col("seg_end_ns").is_not_null() & (pl.col("seg_end_ns") > pl.col("seg_start_ns")))
        .select(*by, "seg_start_ns", "seg_end_ns", *sets)
    )


def clip_to_windows(
    segs: pl.DataFrame,
    windows: pl.DataFrame,
    by: Sequence[str],
    label: str,
) -> pl.DataFrame:
    """Cut segments at window boundaries and keep the parts inside a window, labelled with it.

    segs: output of `segments` grouped by `by`. windows: `by`..., `label`, win_start_ns, win_end_ns;
    windows of one group must not overlap; `by` must name at least one column (e.g. rank).
    Returns segs' columns plus `label`, and the window bounds.
    """
    by = list(by)
    if not by:
        raise ValueError("clip_to_windows needs at least one group column")
    cuts = pl.concat(
        [
            windows.select(*by, pl.col("win_start_ns").alias("cut")),
            windows.select(*by, pl.col("win_end_ns").alias("cut")),
        ]
    ).unique()
    # Split each segment at the cut points inside it: a segment [a, b) with cuts c1 < c2 inside
    # becomes [a, c1), [c1, c2), [c2, b). Done by joining each segment with the cuts of its group
    # that fall strictly inside it (rare: only segments spanning a window boundary have any).
    seg_ix = segs.with_row_index("_seg")
    inside = (
        seg_ix.select(*by, "_seg", "seg_start_ns", "seg_end_ns").join(cuts, on=by, how="inner")
    ).filter((pl.col("cut") > pl.col("seg_start_ns")) & (pl.col("cut") < pl.col("seg_end_ns")))
    if inside.height:
        bounds = pl.concat(
            [
                seg_ix.select("_seg", pl.col("seg_start_ns").alias("p")),
                seg_ix.select("_seg", pl.col("seg_end_ns").alias("p")),
                inside.select("_seg", pl.col("cut").alias("p")),
            ]
        ).unique().sort("_seg", "p")
        pieces = bounds.with_columns(pl.col("p").shift(-1).over("_seg").alias("q")).drop_nulls("q")
        seg_ix = seg_ix.drop("seg_start_ns", "seg_end_ns").join(
            pieces.rename({"p": "seg_start_ns", "q": "seg_end_ns"}), on="_seg"
        )
    seg_ix = seg_ix.sort(*by, "seg_start_ns")
    win = windows.select(*by, label, "win_start_ns", "win_end_ns").sort(*by, "win_start_ns")
    hit = seg_ix.join_asof(
        win, left_on="seg_start_ns", right_on="win_start_ns", by=by, strategy="backward",
        check_sortedness=False,  # sorted by group and time just above
    )
    return hit.filter(pl.col("seg_start_ns") < pl.col("win_end_ns")).drop("_seg")


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


def union_length(intervals: pl.DataFrame, by: Sequence[str]) -> pl.DataFrame:
    """|U(intervals)| per group, ns: the length covered by at least one interval (start_ns, end_ns)."""
    segs = segments(intervals.with_columns(pl.lit("x").alias("set")), by, ["x"])
    return lengths(segs, by, {"union_ns": pl.col("x")})
