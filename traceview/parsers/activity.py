"""Canonical frames from a vendor tracer's activity records (Nsight Systems exports, rocprofv3).

Both tracers record the same things in their own tables: device activities (kernels, copies,
memsets) with a correlation id, the runtime calls that launched them (same id), and annotation
ranges (NVTX, roctx). Each parser reads its tables into the columns below; `activity_rank` makes
the rank:
- device tasks (`task_columns`): start_ns, end_ns, device, stream, correlation, kind, name,
  grid, block, bytes; `dur_ns` = end_ns - start_ns;
- host events: pid, tid, name, cat, kind ("runtime" for launches, "annotation" for ranges),
  start_ns, end_ns, correlation;
- steps: an annotation range named like a step (STEP_RANGE: `ProfilerStep#3`, `step 3`,
  `iteration 3`) is the host range of that step; device tasks launched inside it belong to it
  (the Kineto rules, `parsers.steps.kineto_steps`, window rule "correlation").
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from traceview.errors import Warnings
from traceview.parsers import steps
from traceview.parsers.base import ParsedRank, drop_bad_times

#: An annotation range naming a step (case-insensitive): its number is the step.
STEP_RANGE = r"(?i)^\s*(?:ProfilerStep#|step[\s_#:-]*|iteration[\s_#:-]*|iter[\s_#:-]*)(\d+)\s*$"


def task_columns(frame: pl.DataFrame, kind: pl.Expr, name: pl.Expr, grid: pl.Expr, block: pl.Expr, size: pl.Expr):
    """The device-task columns of one activity table (it holds start_ns, end_ns, device, stream,
    correlation; the rest come from the expressions)."""
    return frame.select(
        "start_ns",
        "end_ns",
        "device",
        "stream",
        "correlation",
        kind.alias("kind"),
        name.alias("name"),
        grid.alias("grid"),
        block.alias("block"),
        size.cast(pl.Int64).alias("bytes"),
    )


def _timed(frames: list[pl.DataFrame], what: str, warn: Warnings) -> pl.DataFrame | None:
    """The frames as one, sorted by start, with dur_ns; rows without usable times dropped and
    counted (`base.drop_bad_times`); None when nothing is left."""
    if not frames:
        return None
    timed = drop_bad_times(pl.concat(frames, how="vertical_relaxed"), what, warn)
    if timed.is_empty():
        return None
    return timed.with_columns((pl.col("end_ns") - pl.col("start_ns")).alias("dur_ns")).sort(
        "start_ns", maintain_order=True
    )


def activity_rank(
    path: Path,
    warn: Warnings,
    tasks: list[pl.DataFrame],
    host: list[pl.DataFrame],
    meta: dict,
    no_device: str,
    extra: dict[str, pl.DataFrame] | None = None,
) -> ParsedRank:
    """One rank from device-task frames (`task_columns`) and host-event frames (module docstring),
    with `extra` canonical frames as they are (memory_events, ...); `no_device` is the warning
    given when there is no device task. `meta` gets `device_type` ("gpu" when there are device
    tasks) unless it names one."""
    device_tasks = _timed([t.cast({"bytes": pl.Int64}) for t in tasks if t.height], "device tasks", warn)
    host_events = _timed([h for h in host if h.height], "host events", warn)
    frames = dict(extra or {})
    if device_tasks is not None:
        frames["device_tasks"] = device_tasks
    if host_events is not None:
        frames["host_events"] = host_events
    if device_tasks is not None and host_events is not None:
        named = host_events.with_columns(
            pl.when(pl.col("kind") == "annotation")
            .then(pl.format("ProfilerStep#{}", pl.col("name").str.extract(STEP_RANGE, 1)))
            .alias("name")
        )
        step_frame, tasks_with_steps = steps.kineto_steps(
            device_tasks.with_columns(pl.lit(None, pl.Int64).alias("step")),
            named,
            pl.DataFrame(schema={"name": pl.String, "start_ns": pl.Int64, "end_ns": pl.Int64}),
            warn,
        )
        frames["device_tasks"], frames["steps"] = tasks_with_steps, step_frame
    if device_tasks is None:
        warn.add(no_device, 1)
    meta = {"device_type": "gpu" if device_tasks is not None else "cpu", **meta}
    return ParsedRank.build(frames, meta, warn.messages())


def used_devices(tasks: list[pl.DataFrame]) -> list[int]:
    """The device numbers the tasks ran on, sorted."""
    found = {d for t in tasks for d in t["device"].drop_nulls().to_list()}
    return sorted(found)
