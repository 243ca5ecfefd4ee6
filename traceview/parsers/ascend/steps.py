"""Steps of an Ascend rank: host ProfilerStep#N ranges + device tasks -> the steps table.

- Host range of step N: the `ProfilerStep#N` host event (trace_view.json X event, or the DB's
  STEP_TIME / PYTORCH_API row): host_start_ns / host_end_ns.
- Step of a device task: kernel_details `Step Id` when the export gives one (window_rule
  "step_id"); otherwise the step N whose host range [host_start, host_end) holds the task's
  launch time (window_rule "correlation"; see `trace_view` / `db` for how launch_ns is found).
- Device window of step N: first start / last end of the rank's device tasks of that step;
  window_rule "none" for a step with no device task.
"""

from __future__ import annotations

import polars as pl

from traceview.errors import Warnings
from traceview.parsers.steps import step_in_window, step_ranges

HOST_STEP_SCHEMA = {"step": pl.Int64, "host_start_ns": pl.Int64, "host_end_ns": pl.Int64}


def host_step_ranges(host_events: pl.DataFrame) -> pl.DataFrame:
    """ProfilerStep#N host events -> step, host_start_ns, host_end_ns (one row per N, by start)."""
    return step_ranges(host_events, "host_start_ns", "host_end_ns")


def empty_host_steps() -> pl.DataFrame:
    """A host_step_ranges frame with no rows (no trace_view.json)."""
    return pl.DataFrame(schema=HOST_STEP_SCHEMA)


def fill_steps(
    tasks: pl.DataFrame, host_steps: pl.DataFrame, rule: str, warnings: Warnings
) -> tuple[pl.DataFrame, str]:
    """Tasks with `step` filled from the launch time when the export gave no step for any task.

    Returns (tasks, window_rule): "step_id" when steps came from kernel_details Step Id,
    "correlation" when they came from the launch inside a host ProfilerStep range, else `rule`.
    """
    if tasks["step"].is_not_null().any():
        return tasks, "step_id"
    if host_steps.is_empty():
        return tasks, rule
    tasks = tasks.with_columns(
        step_in_window(tasks, "launch_ns", host_steps, "host_start_ns", "host_end_ns").alias("step")
    )
    warnings.add(
        "device tasks with no launch inside a ProfilerStep range (step left null)", int(tasks["step"].null_count())
    )
    return tasks, "correlation"


def build_steps(host_steps: pl.DataFrame, tasks: pl.DataFrame, rule: str) -> pl.DataFrame:
    """steps frame: host ranges joined with each step's device window (first start, last end of
    the rank's device tasks of that step). window_rule = `rule` where a device task exists, else "none"."""
    device = (
        tasks.drop_nulls("step")
        .group_by("step")
        .agg(pl.col("start_ns").min().alias("device_start_ns"), pl.col("end_ns").max().alias("device_end_ns"))
    )
    steps = host_steps.join(device, on="step", how="full", coalesce=True)
    return steps.with_columns(
        pl.when(pl.col("device_start_ns").is_not_null())
        .then(pl.lit(rule))
        .otherwise(pl.lit("none"))
        .alias("window_rule")
    ).sort("step")
