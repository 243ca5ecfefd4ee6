"""Step windows of a Kineto rank: which device time belongs to ProfilerStep#N.

Rules (docs/metrics.md), per rank:
1. gpu_annotation: the GPU-side `ProfilerStep#N` annotation (Kineto cat `gpu_user_annotation`)
   when the trace has one with a positive duration for the step. The device window is that
   annotation; a device task belongs to the step whose window contains its start, unless rule 2
   gives it a step that has no GPU annotation.
2. correlation: otherwise the host `ProfilerStep#N` range is mapped to device time through launch
   correlation ids: the device tasks launched (runtime call start) inside the host step belong to
   it, and the window runs from the first such task's start to the last one's end.
3. none: no ProfilerStep#N at all; tasks have a null step.

`window_rule` in the steps frame says which rule gave each step's window.
"""

from __future__ import annotations

import polars as pl

from traceview import schema
from traceview.errors import Warnings

STEP_NAME = r"^ProfilerStep#(\d+)$"


def step_ranges(events: pl.DataFrame | pl.LazyFrame, start: str, end: str) -> pl.DataFrame | pl.LazyFrame:
    """ProfilerStep#N events -> one row per N: step, `start` (earliest), `end` (latest), by start
    (lazy in, lazy out)."""
    return (
        events.select(
            pl.col("name").str.extract(STEP_NAME, 1).cast(pl.Int64).alias("step"),
            pl.col("start_ns"),
            pl.col("end_ns"),
        )
        .drop_nulls("step")
        .group_by("step")
        .agg(pl.col("start_ns").min().alias(start), pl.col("end_ns").max().alias(end))
        .sort(start)
    )


def step_in_window(points: pl.DataFrame, on: str, windows: pl.DataFrame, start: str, end: str) -> pl.Series:
    """Step of the window [start, end) holding each point's `on` time; null when none (or `on` null).

    Returned in the order of `points`. Windows must not overlap (ProfilerStep ranges do not).
    """
    if windows.is_empty() or points.is_empty():
        return pl.Series("step", [None] * points.height, dtype=pl.Int64)
    return window_steps(points.lazy(), on, windows.lazy(), start, end).collect()["step"]


def window_steps(points: pl.LazyFrame, on: str, windows: pl.LazyFrame, start: str, end: str) -> pl.LazyFrame:
    """`step_in_window` as a lazy query: one column `step`, a row per point, in their order."""
    probe = points.select(pl.col(on).alias("_t")).with_row_index("_i")
    hit = (
        probe.drop_nulls("_t")
        .sort("_t")
        .join_asof(
            windows.select(pl.col(start).alias("_ws"), pl.col(end).alias("_we"), "step").sort("_ws"),
            left_on="_t",
            right_on="_ws",
            strategy="backward",
        )
        .select("_i", pl.when(pl.col("_t") < pl.col("_we")).then(pl.col("step")).alias("step"))
    )
    return probe.join(hit, on="_i", how="left").sort("_i").select(pl.col("step").cast(pl.Int64))


#: Warning (counted per rank) for GPU step annotations that overlap the next one.
OVERLAPPING_GPU_STEPS = (
    "GPU-side ProfilerStep#N annotations overlap the next step's "
    "(by up to {max_us:,.3f} µs): device time in an overlap counts in the later step"
)


def kineto_steps(
    device_tasks: pl.DataFrame,
    host_events: pl.DataFrame,
    device_annotations: pl.DataFrame,
    warn: Warnings | None = None,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Steps of one Kineto rank and its device tasks with the `step` column filled.

    Returns (steps, device_tasks). Inputs are frames of one rank in the canonical schema; they are
    not modified. steps follows `schema.STEPS`. GPU annotations that overlap the next step's are
    counted in `warn` (the later step's window takes the overlap: `step_in_window`).
    """
    host, gpu = pl.collect_all(
        [
            step_ranges(
                host_events.lazy().filter(pl.col("kind").is_in(["operator", "annotation"])),
                "host_start_ns",
                "host_end_ns",
            ),
            step_ranges(device_annotations.lazy(), "gpu_start_ns", "gpu_end_ns").filter(
                pl.col("gpu_end_ns") > pl.col("gpu_start_ns")
            ),
        ]
    )
    if warn is not None and gpu.height > 1:
        overlap = (gpu["gpu_end_ns"].head(-1) - gpu["gpu_start_ns"].tail(-1)).filter(
            gpu["gpu_end_ns"].head(-1) > gpu["gpu_start_ns"].tail(-1)
        )
        if overlap.len():
            warn.add(OVERLAPPING_GPU_STEPS.format(max_us=overlap.max() / 1000), overlap.len())
    if host.is_empty() and gpu.is_empty():
        return schema.empty("steps"), device_tasks

    # One lazy query from here (a rank's steps are a few dozen small operations).
    # Launch-correlation step of every device task (rule 2), computed for all tasks.
    runtime = host_events.lazy().filter(pl.col("correlation").is_not_null() & (pl.col("kind") == "runtime"))
    if host.is_empty():
        launch = runtime.select("correlation", pl.lit(None, dtype=pl.Int64).alias("launch_step"))
    else:
        launch = pl.concat(
            [
                runtime.select("correlation"),
                window_steps(runtime, "start_ns", host.lazy(), "host_start_ns", "host_end_ns").rename(
                    {"step": "launch_step"}
                ),
            ],
            how="horizontal",
        )
    launch_step = launch.unique("correlation", keep="first")
    tasks = device_tasks.lazy().join(launch_step, on="correlation", how="left", maintain_order="left")

    if not gpu.is_empty():
        windows = gpu.lazy().rename({"gpu_start_ns": "s", "gpu_end_ns": "e"})
        window_step = window_steps(tasks, "start_ns", windows, "s", "e").rename({"step": "_window_step"})
        # A step without a GPU annotation (when others have one) keeps rule 2: its tasks are those
        # it launched (found by tests/integration/test_properties.py: they were clipped to its window instead).
        unannotated = host.filter(~pl.col("step").is_in(gpu["step"].implode()))["step"]
        tasks = pl.concat([tasks, window_step], how="horizontal").with_columns(
            pl.when(pl.col("launch_step").is_in(unannotated.implode()))
            .then(pl.col("launch_step"))
            .otherwise(pl.col("_window_step"))
            .alias("step")
        )
        tasks = tasks.drop("_window_step")
    else:
        tasks = tasks.with_columns(pl.col("launch_step").alias("step"))

    by_launch = (
        tasks.drop_nulls("launch_step")
        .group_by("launch_step")
        .agg(pl.col("start_ns").min().alias("corr_start_ns"), pl.col("end_ns").max().alias("corr_end_ns"))
        .rename({"launch_step": "step"})
    )
    steps = (
        host.lazy()
        .join(gpu.lazy(), on="step", how="full", coalesce=True)
        .join(by_launch, on="step", how="left")
        .with_columns(
            pl.when(pl.col("gpu_start_ns").is_not_null())
            .then(pl.lit("gpu_annotation"))
            .when(pl.col("corr_start_ns").is_not_null())
            .then(pl.lit("correlation"))
            .otherwise(pl.lit("none"))
            .alias("window_rule"),
            pl.coalesce("gpu_start_ns", "corr_start_ns").alias("device_start_ns"),
            pl.coalesce("gpu_end_ns", "corr_end_ns").alias("device_end_ns"),
        )
        .sort("step")
    )
    steps, tasks = pl.collect_all([steps, tasks.drop("launch_step")])
    return schema.conform(steps, "steps"), tasks
