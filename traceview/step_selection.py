"""`select_steps`: a Trace holding only some steps (`Trace.select_steps`, `load(..., steps=)`)."""

from __future__ import annotations

import polars as pl

from traceview.errors import TraceError
from traceview.selection import Selection, listing


def select_steps(trace, steps):
    """A new Trace holding only the steps `steps` (a SPEC, integers, or a Selection): see
    `Trace.select_steps` for what is kept. TraceError when none of them is in the trace (naming the
    steps it has); a warning when some are missing."""
    sel = Selection.of(steps, "steps")
    present = set(trace.steps["step"].drop_nulls().to_list())
    chosen = trace.steps.filter(sel.expr("step"))
    if chosen.is_empty():
        raise TraceError(
            None, f"no {sel.describe('step')} in this profile", f"{trace.source} has {listing('step', present)}"
        )
    warnings = list(trace.load_warnings)
    missing = sel.missing(present)
    if missing is not None:
        warnings.append(
            f"{trace.source}: no {missing.describe('step')} in this profile "
            f"(it has {listing('step', present)}); loaded the others"
        )

    device_windows = chosen.select(
        "rank", pl.col("device_start_ns").alias("_ws"), pl.col("device_end_ns").alias("_we")
    ).drop_nulls()
    host_windows = chosen.select(
        "rank",
        pl.coalesce("host_start_ns", "device_start_ns").alias("_ws"),
        pl.coalesce("host_end_ns", "device_end_ns").alias("_we"),
    ).drop_nulls()

    tasks = trace.device_tasks
    task_hit = _in_windows(tasks, device_windows, overlap=True)
    tasks = tasks.filter(sel.expr("step") | task_hit)

    host = trace.host_events
    launched = (  # the launch calls of the kept device tasks, wherever they started
        host.select("rank", "correlation")
        .with_row_index("_i")
        .join(tasks.select("rank", "correlation").drop_nulls().unique(), on=["rank", "correlation"], how="semi")
    )
    launches = pl.int_range(pl.len(), dtype=pl.UInt32).is_in(launched["_i"].implode())
    host = host.filter(_in_windows(host, host_windows, overlap=False) | launches)

    annotations = trace.device_annotations
    annotations = annotations.filter(_in_windows(annotations, device_windows, overlap=False))

    memory = _memory_of(trace.frame("memory_events"), host_windows)
    blocks = trace.frame("memory_allocations")
    held = blocks.with_columns(
        pl.col("alloc_ns").alias("start_ns"), pl.coalesce("release_ns", pl.lit(2**63 - 1)).alias("end_ns")
    )
    blocks = blocks.filter(_in_windows(held, host_windows, overlap=True))

    frames = dict(trace._frames)
    frames.update(
        memory_events=memory,
        memory_allocations=blocks,
        device_tasks=tasks,
        host_events=host,
        device_annotations=annotations,
        steps=chosen,
        ascend_step_trace=trace.ascend_step_trace.filter(sel.expr("step")),
        ascend_communication=trace.ascend_communication.filter(sel.expr("step")),
    )
    selected = type(trace)(trace.source, trace.ranks, frames, warnings, list(trace.failures))
    selected.rules = trace.rules
    selected.companions = trace.companions
    return selected


def _memory_of(events: pl.DataFrame, windows: pl.DataFrame) -> pl.DataFrame:
    """The memory records inside the windows, and each series' last record before each window
    (what the step starts with), in their order."""
    inside = _in_windows(
        events.with_columns(pl.col("ts_ns").alias("start_ns"), pl.col("ts_ns").alias("end_ns")), windows, overlap=False
    )
    if events.is_empty() or windows.is_empty():
        return events.filter(inside)
    series = ["rank", "device_type", "device", "component"]
    key = pl.concat_str([pl.col(c).cast(pl.String).fill_null("-") for c in series], separator="|").alias("_key")
    rows = events.with_row_index("_r").with_columns(key)
    before = (
        rows.select("_key", "rank")
        .unique()
        .join(windows, on="rank")
        .sort("_ws")
        .join_asof(
            rows.select("_key", "ts_ns", "_r").sort("ts_ns"),
            left_on="_ws",
            right_on="ts_ns",
            by="_key",
            allow_exact_matches=False,
            check_sortedness=False,
        )
        .drop_nulls("_r")
    )
    return events.filter(inside | pl.int_range(pl.len(), dtype=pl.UInt32).is_in(before["_r"].implode()))


def _in_windows(frame: pl.DataFrame, windows: pl.DataFrame, overlap: bool) -> pl.Series:
    """Per row of `frame` (rank, start_ns, end_ns): does it start inside one of its rank's windows
    [_ws, _we) (or, with `overlap`, overlap one: start < _we and end > _ws)? Windows of one rank
    must not overlap each other. Vectorised: one backward as-of join (and a forward one)."""
    if frame.is_empty() or windows.is_empty():
        return pl.Series("hit", [False] * frame.height, dtype=pl.Boolean)
    probe = (
        frame.select("rank", "start_ns", "end_ns")
        .with_row_index("_i")
        .drop_nulls(["rank", "start_ns"])
        .sort("rank", "start_ns")
    )
    win = windows.select("rank", "_ws", "_we").sort("rank", "_ws")
    back = probe.join_asof(
        win, left_on="start_ns", right_on="_ws", by="rank", strategy="backward", check_sortedness=False
    )
    hits = back.filter(pl.col("start_ns") < pl.col("_we")).select("_i")
    if overlap:
        ahead = probe.join_asof(
            win, left_on="start_ns", right_on="_ws", by="rank", strategy="forward", check_sortedness=False
        )
        hits = pl.concat([hits, ahead.filter(pl.col("end_ns") > pl.col("_ws")).select("_i")])
    return (
        frame.select(pl.int_range(pl.len(), dtype=pl.UInt32).alias("_i"))
        .select(pl.col("_i").is_in(hits["_i"].implode()))
        .to_series()
        .alias("hit")
    )
