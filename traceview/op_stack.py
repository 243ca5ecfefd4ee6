"""Which host operators are running at given instants on given threads: the innermost and the
outermost, found for many points at once (no per-point Python).

Operators on one thread nest (a child starts and ends inside its parent). The operators' starts
(+1) and ends (-1) and the points are sorted per thread (ends before starts before points at one
instant; a longer operator before a shorter one starting with it), so the running sum is each
operator's nesting depth and each point's depth. Operators of one depth on a thread never overlap,
so the innermost operator running at a point of depth d is the last operator of depth d to start
before it (one as-of join), and the outermost is the last of depth 1. An operator that ended
before the point (overlap without nesting, as broken traces have) is never returned.

Used by the allocator reader (the operator that allocated a block) and the roofline (every listed
operator around a kernel's launch, through the innermost one and its parents).
"""

from __future__ import annotations

import polars as pl

THREAD = ["pid", "tid"]


def running_ops(points: pl.DataFrame, ops: pl.DataFrame, by: list[str] | None = None) -> pl.DataFrame:
    """Per row of `points` (the thread columns `by`, default pid and tid, and ts_ns), in order:
    `inner` and `outer`, the row numbers in `ops` (`by`, start_ns, end_ns; rows with end_ns >
    start_ns count) of the innermost and outermost operator of that thread running at ts_ns
    (start_ns <= ts_ns < end_ns); null where none. UInt32 columns."""
    thread = list(by or THREAD)
    none = pl.Series([None] * points.height, dtype=pl.UInt32)
    out = pl.DataFrame({"inner": none, "outer": none})
    ops = ops.with_row_index("_o").filter(
        (pl.col("end_ns") > pl.col("start_ns")) & pl.all_horizontal(pl.col(c).is_not_null() for c in thread)
    )
    if ops.is_empty() or points.is_empty():
        return out
    marks = pl.concat(
        [
            ops.select(
                *thread,
                pl.col("end_ns").alias("_t"),
                pl.lit(0).alias("_order"),
                pl.lit(-1).alias("_d"),
                pl.lit(0, pl.Int64).alias("_len"),
                pl.lit(None, pl.UInt32).alias("_o"),
                pl.lit(None, pl.UInt32).alias("_p"),
            ),
            ops.select(
                *thread,
                pl.col("start_ns").alias("_t"),
                pl.lit(1).alias("_order"),
                pl.lit(1).alias("_d"),
                (pl.col("start_ns") - pl.col("end_ns")).alias("_len"),
                "_o",
                pl.lit(None, pl.UInt32).alias("_p"),
            ),
            points.with_row_index("_p").select(
                *thread,
                pl.col("ts_ns").alias("_t"),
                pl.lit(2).alias("_order"),
                pl.lit(0).alias("_d"),
                pl.lit(0, pl.Int64).alias("_len"),
                pl.lit(None, pl.UInt32).alias("_o"),
                "_p",
            ),
        ]
    )
    marks = (
        marks.drop_nulls(thread)
        .sort([*thread, "_t", "_order", "_len"])  # a longer op starting at the same instant opens first
        .with_columns(pl.col("_d").cum_sum().over(thread).alias("_depth"))
    )
    depth = marks.filter(pl.col("_o").is_not_null()).select("_o", "_depth")
    ops = ops.join(depth, on="_o").select(*thread, "_depth", "start_ns", "end_ns", "_o").sort("start_ns")
    probe = marks.filter(pl.col("_p").is_not_null() & (pl.col("_depth") > 0)).select(*thread, "_depth", "_t", "_p")
    inner = probe.sort("_t").join_asof(
        ops, left_on="_t", right_on="start_ns", by=[*thread, "_depth"], check_sortedness=False
    )
    outer = (
        probe.with_columns(pl.lit(1, pl.Int64).alias("_depth").cast(probe.schema["_depth"]))
        .sort("_t")
        .join_asof(ops, left_on="_t", right_on="start_ns", by=[*thread, "_depth"], check_sortedness=False)
    )
    running = pl.col("end_ns") > pl.col("_t")  # operators that overlap without nesting: never one that ended
    found = (
        pl.DataFrame({"_p": pl.int_range(0, points.height, dtype=pl.UInt32, eager=True)})
        .join(inner.select("_p", pl.when(running).then("_o").alias("inner")), on="_p", how="left")
        .join(outer.select("_p", pl.when(running).then("_o").alias("outer")), on="_p", how="left")
        .sort("_p")
    )
    return found.select("inner", "outer")


def op_parents(ops: pl.DataFrame, by: list[str] | None = None) -> pl.Series:
    """Per row of `ops` (the thread columns `by`, default pid and tid, start_ns, end_ns), the row
    number of its parent: the innermost other row of its thread running when it starts (null for
    a top-level row, or one of zero length). Each row's start has the row's nesting depth d
    (as in `running_ops`); its parent is the last row of depth d - 1 on the thread to start at or
    before it, when that row is still running. UInt32."""
    return _parent_of(ops, list(by or THREAD))


def _parent_of(ops: pl.DataFrame, thread: list[str]) -> pl.Series:
    rows = ops.with_row_index("_o").filter(
        (pl.col("end_ns") > pl.col("start_ns")) & pl.all_horizontal(pl.col(c).is_not_null() for c in thread)
    )
    none = pl.Series("parent", [None] * ops.height, dtype=pl.UInt32)
    if rows.is_empty():
        return none
    marks = pl.concat(
        [
            rows.select(*thread, pl.col("end_ns").alias("_t"), pl.lit(0).alias("_order"), pl.lit(-1).alias("_d"),
                        pl.lit(0, pl.Int64).alias("_len"), pl.lit(None, pl.UInt32).alias("_o")),
            rows.select(*thread, pl.col("start_ns").alias("_t"), pl.lit(1).alias("_order"), pl.lit(1).alias("_d"),
                        (pl.col("start_ns") - pl.col("end_ns")).alias("_len"), "_o"),
        ]
    )  # fmt: skip
    marks = marks.sort([*thread, "_t", "_order", "_len"]).with_columns(
        pl.col("_d").cum_sum().over(thread).alias("_depth")
    )
    starts = marks.filter(pl.col("_o").is_not_null()).join(rows.select("_o", "end_ns"), on="_o")
    candidates = starts.select(
        *thread, "_depth", pl.col("_t").alias("_ps"), pl.col("end_ns").alias("_pe"), pl.col("_o").alias("parent")
    ).sort("_ps")
    probe = starts.filter(pl.col("_depth") > 1).with_columns((pl.col("_depth") - 1).alias("_depth")).sort("_t")
    found = probe.join_asof(candidates, left_on="_t", right_on="_ps", by=[*thread, "_depth"], check_sortedness=False)
    found = found.filter(pl.col("_pe") > pl.col("_t")).select("_o", "parent")
    return (
        pl.DataFrame({"_o": pl.int_range(0, ops.height, dtype=pl.UInt32, eager=True)})
        .join(found, on="_o", how="left")
        .sort("_o")["parent"]
    )
