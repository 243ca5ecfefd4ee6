"""Iteration gaps, stream idle time, launch delays and long steps (docs/metrics.md).

Four pure functions of the canonical frames (`device_tasks`, `host_events`, `steps`) and of the
step breakdown (`traceview.analysis.breakdown.step_breakdown`). Inputs are never modified; every
output column carries its unit (`_us` = microseconds, `_ns` = nanoseconds, `_frac` = a fraction
in [0, 1]); missing is null.

- `step_times`: per rank and step, host step length, device window length and the device gap
  between consecutive steps' windows (the iteration gap), with how much of that gap is idle.
- `stream_idle`: HolisticTraceAnalysis' idle-time breakdown per rank and stream (optionally per
  step): every gap between consecutive tasks of one stream is host_wait, kernel_wait or other.
- `launch_delays` / `launch_delay_stats`: per task, task start − end of its host launch call.
- `long_steps`: steps much longer than the rank's median step, and which term grew the most.

A task's *launch call* is the host event of kind `runtime` (Kineto `cuda_runtime` /
`cuda_driver` / ..., Ascend CANN `Node@launch`) on the same rank with the same `correlation`.
When several runtime events share one correlation id (a driver call nested in a runtime call),
the launch call spans from the earliest start to the latest end among them (the outer call).
Tasks without a correlation id, or whose id has no runtime event, have no launch call.

Everything is vectorised polars (sorts, window expressions, joins); no Python loop over tasks.
"""

from __future__ import annotations

import polars as pl

from traceview.analysis import intervals as iv
from traceview.analysis.declare import analysis, use
from traceview.analysis.platform import GRAPH_LAUNCH_PATTERN

#: idle categories of `stream_idle`, in the order they are tested
IDLE_CATEGORIES = ("host_wait", "kernel_wait", "other")

#: `long_steps` terms: step_breakdown column -> the `why` label when it grew the most.
#: "idle_free" is derived (see `long_steps`).
LONG_STEP_TERMS: dict[str, str] = {
    "communication_not_overlapped": "more exposed communication",
    "idle_free": "more idle/free",
    "computing": "more compute",
    "exposed_memcpy": "more exposed memcpy",
}


def _us(expr: pl.Expr) -> pl.Expr:
    """ns (Int64) -> µs (Float64)."""
    return expr.cast(pl.Float64) / 1000.0


def launch_calls(host_events: pl.DataFrame, synchronous: tuple[str, ...] = ()) -> pl.DataFrame:
    """Launch call of each correlation id, per rank.

    Returns rank, correlation, launch_start_ns, launch_end_ns, synchronous, graph: over the host events
    of kind `runtime` with that (rank, correlation), the earliest start and the latest end (ns),
    whether one of them is a synchronous call (its name matches one of the regexes
    `synchronous`, `phases.toml` [[synchronous]]: a call that returns once the device work it
    issued has finished, e.g. `cudaMemcpy`; its tasks have no launch delay to speak of), and
    whether one is a graph launch (`platform.GRAPH_LAUNCH_PATTERN`: one call replays a whole graph).
    """
    runtime = host_events.filter((pl.col("kind") == "runtime") & pl.col("correlation").is_not_null())
    names = runtime.select(pl.col("name").unique().drop_nulls())

    def named(pattern: str) -> pl.Expr:
        """Whether one of the call's runtime events has a name matching `pattern` (each distinct
        name matched once)."""
        if not pattern or not names.height:
            return pl.lit(False)
        return pl.col("name").is_in(names.filter(pl.col("name").str.contains(pattern))["name"].implode()).any()

    return runtime.group_by("rank", "correlation").agg(
        pl.col("start_ns").min().alias("launch_start_ns"),
        pl.col("end_ns").max().alias("launch_end_ns"),
        named("|".join(f"(?:{p})" for p in synchronous)).alias("synchronous"),
        named(GRAPH_LAUNCH_PATTERN).alias("graph"),
    )


def _with_launch(
    device_tasks: pl.DataFrame, host_events: pl.DataFrame, how: str = "left", launches: pl.DataFrame | None = None
) -> pl.DataFrame:
    """device_tasks + launch_start_ns / launch_end_ns of their launch call (null when none).

    `launches`: `launch_calls(host_events)` when the caller already has it (computed otherwise)."""
    if launches is None:
        launches = launch_calls(host_events)
    launches = launches.select("rank", "correlation", "launch_start_ns", "launch_end_ns")
    return device_tasks.join(launches, on=["rank", "correlation"], how=how, maintain_order="left")


def with_launch_delay(tasks: pl.DataFrame, launches: pl.DataFrame | None) -> pl.DataFrame:
    """`tasks` (rank, correlation, start_ns, ...) with launch_delay_ns = task start − its launch
    call's end (ns), null without a launch call and for the tasks of a synchronous call (whose
    call lasts as long as the copy: `launch_calls`); the per-task value behind `launch_delays`."""
    if launches is None or not launches.height or "correlation" not in tasks.columns:
        return tasks.with_columns(pl.lit(None, pl.Int64).alias("launch_delay_ns"))
    ends = launches.select(
        "rank",
        "correlation",
        pl.when(pl.col("synchronous")).then(None).otherwise(pl.col("launch_end_ns")).alias("_launch_end"),
    )
    return (
        tasks.join(ends, on=["rank", "correlation"], how="left", maintain_order="left")
        .with_columns((pl.col("start_ns") - pl.col("_launch_end")).alias("launch_delay_ns"))
        .drop("_launch_end")
    )


# --------------------------------------------------------------------------------------------
# 1. step times and the gaps between steps


def _busy_before(merged: pl.DataFrame, points: pl.DataFrame, at: str) -> pl.Series:
    """|U ∩ (−∞, t)| per row of `points` (columns rank and `at` = t, ns), in the order of points."""
    probe = points.select("rank", pl.col(at).alias("_t")).with_row_index("_i").sort("_t")
    hit = probe.join_asof(
        merged.sort("s"), left_on="_t", right_on="s", by="rank", strategy="backward", check_sortedness=False
    ).with_columns((pl.col("before_ns") + (pl.min_horizontal("_t", "e") - pl.col("s"))).fill_null(0).alias("_busy"))
    return hit.sort("_i")["_busy"]


@analysis("iteration_gaps", inputs=("steps", "device_tasks"), scope="rank", keys=("rank", "step"))
def step_times(steps: pl.DataFrame, device_tasks: pl.DataFrame) -> pl.DataFrame:
    """Host and device length of every step, and the device gap before it.

    Per rank, steps in step-number order. With W_N = [device_start_ns, device_end_ns) the step's
    device window (from the steps frame; its rule in `window_rule`) and H_N the host
    `ProfilerStep#N` range:

    - host_us = |H_N| = host_end − host_start (null without a host range);
    - device_us = |W_N| = device_end − device_start (null without a device window);
    - device_start_us / device_end_us = W_N's bounds on the rank's clock, µs;
    - gap_before_us = device_start(N) − device_end(P), P = the closest earlier step of the rank
      that has a device window: the iteration gap on the device. Null for the rank's first
      windowed step (and for steps without a window). Negative when the windows overlap (possible
      with the `correlation` rule, where a step's last task can end after the next step's first
      task started);
    - idle_before_us = the part of that gap during which no device task of the rank runs on any
      stream: gap − |U(tasks) ∩ [device_end(P), device_start(N))|. 0 when gap <= 0; null when
      gap_before_us is null. It differs from gap_before_us when tasks outside every step window
      run between steps;
    - host_gap_before_us = host_start(N) − host_end(N−1 in order), null for the first step;
    - device_start_ns / device_end_ns = W_N's bounds, exact (Int64 ns): the µs columns are
      Float64 and round epoch-based clocks (Ascend: ~1.7e15 µs) to ~0.25 µs.

    Returns rank, step, window_rule, host_us, device_us, device_start_us, device_end_us,
    gap_before_us, idle_before_us, host_gap_before_us, device_start_ns, device_end_ns; sorted by
    rank, step.
    """
    base = steps.select(
        "rank", "step", "window_rule", "host_start_ns", "host_end_ns", "device_start_ns", "device_end_ns"
    ).sort("rank", "step")
    prev_end = pl.col("device_end_ns").shift(1).forward_fill().over("rank")
    base = base.with_columns(
        pl.when(pl.col("device_start_ns").is_not_null()).then(prev_end).alias("_prev_end_ns"),
        (pl.col("host_start_ns") - pl.col("host_end_ns").shift(1).over("rank")).alias("_host_gap_ns"),
    ).with_columns((pl.col("device_start_ns") - pl.col("_prev_end_ns")).alias("_gap_ns"))

    gaps_ = base.filter(pl.col("_gap_ns") > 0).select("rank", "step", "_prev_end_ns", "device_start_ns")
    merged = iv.merged(device_tasks.filter(pl.col("rank").is_in(gaps_["rank"].unique().implode())))
    # busy inside the gap [prev_end, start) = B(start) − B(prev_end), B(t) = |U(tasks) ∩ (−∞, t)|
    inside = _busy_before(merged, gaps_, "device_start_ns") - _busy_before(merged, gaps_, "_prev_end_ns")
    busy = gaps_.select("rank", "step").with_columns(inside.alias("_busy_ns"))
    out = base.join(busy, on=["rank", "step"], how="left", maintain_order="left").with_columns(
        pl.when(pl.col("_gap_ns") > 0)
        .then(pl.col("_gap_ns") - pl.col("_busy_ns").fill_null(0))
        .when(pl.col("_gap_ns").is_not_null())
        .then(0)
        .alias("_idle_ns")
    )
    return out.select(
        "rank",
        "step",
        "window_rule",
        _us(pl.col("host_end_ns") - pl.col("host_start_ns")).alias("host_us"),
        _us(pl.col("device_end_ns") - pl.col("device_start_ns")).alias("device_us"),
        _us(pl.col("device_start_ns")).alias("device_start_us"),
        _us(pl.col("device_end_ns")).alias("device_end_us"),
        _us(pl.col("_gap_ns")).alias("gap_before_us"),
        _us(pl.col("_idle_ns")).alias("idle_before_us"),
        _us(pl.col("_host_gap_ns")).alias("host_gap_before_us"),
        "device_start_ns",
        "device_end_ns",
    ).sort("rank", "step")


# --------------------------------------------------------------------------------------------
# 2. idle time per stream (HTA's breakdown)


def _classified(
    device_tasks: pl.DataFrame,
    host_events: pl.DataFrame,
    kernel_wait_threshold_us: float,
    by_step: bool,
    launches: pl.DataFrame | None = None,
) -> tuple[pl.DataFrame, list[str]]:
    """Every task with prev_end_ns, gap_ns (0 for the group's first task and when not positive)
    and category (null when gap_ns = 0); the grouping columns."""
    group = ["rank", "stream", "step"] if by_step else ["rank", "stream"]
    threshold_ns = int(round(kernel_wait_threshold_us * 1000))
    tasks = device_tasks.filter(pl.col("step").is_not_null()) if by_step else device_tasks
    cols = ["rank", "stream", "step", "name", "start_ns", "end_ns", "correlation"]
    tasks = _with_launch(tasks.select(cols), host_events, launches=launches)
    tasks = (
        tasks.sort(*group, "start_ns", "end_ns", nulls_last=True)
        .with_columns(pl.col("end_ns").cum_max().shift(1).over(group).alias("prev_end_ns"))
        .with_columns((pl.col("start_ns") - pl.col("prev_end_ns")).clip(lower_bound=0).fill_null(0).alias("gap_ns"))
    )
    category = (
        pl.when(pl.col("gap_ns") <= 0)
        .then(pl.lit(None, pl.String))
        .when(pl.col("launch_start_ns") > pl.col("prev_end_ns"))
        .then(pl.lit("host_wait"))
        .when(pl.col("gap_ns") < threshold_ns)
        .then(pl.lit("kernel_wait"))
        .otherwise(pl.lit("other"))
    )
    return tasks.with_columns(category.alias("category")), group


def stream_gaps(
    device_tasks: pl.DataFrame,
    host_events: pl.DataFrame,
    kernel_wait_threshold_us: float = 30.0,
    by_step: bool = False,
    launches: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """Every idle gap of every stream, classified (the rows `stream_idle` sums).

    Tasks of one group (rank, stream[, step]) sorted by start; for task i (not the first):
    prev_end_i = max(end_j, j < i) (the cumulative max, so a task overlapping an earlier one on
    the same stream leaves no negative gap), gap_i = max(0, start_i − prev_end_i). A positive gap
    is classified, in this order:

    1. host_wait   if task i's launch call started after prev_end_i (launch_start > prev_end):
                   the device had run out of work and waited for the host to enqueue more;
    2. kernel_wait if gap_i < kernel_wait_threshold_us: the back-to-back launch overhead;
    3. other       otherwise (cross-stream / event synchronisation, launch delays, ...).

    A task without a launch call is never host_wait. With by_step, groups are (rank, stream,
    step) by the tasks' `step` column and tasks with a null step are left out.

    Returns one row per gap > 0: rank, stream, [step], name (of the task after the gap),
    prev_end_ns, start_ns, launch_start_ns, gap_ns, category; sorted by group and time.
    """
    tasks, group = _classified(device_tasks, host_events, kernel_wait_threshold_us, by_step, launches)
    return tasks.filter(pl.col("gap_ns") > 0).select(
        *group, "name", "prev_end_ns", "start_ns", "launch_start_ns", "gap_ns", "category"
    )


@analysis(
    "stream_idle",
    inputs={"device_tasks": "device_tasks", "host_events": "host_events", "launches": use("launch_calls")},
    scope="rank",
    keys=("rank", "stream"),
)
def stream_idle(
    device_tasks: pl.DataFrame,
    host_events: pl.DataFrame,
    kernel_wait_threshold_us: float = 30.0,
    by_step: bool = False,
    launches: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """Idle time of each stream and its causes (HolisticTraceAnalysis' idle-time breakdown).

    Per rank and stream (with by_step, per rank, stream and step, by the tasks' `step` column;
    tasks with a null step are left out), over all its device tasks (kernels, memcpy, memset,
    communication; Ascend HCCL ops have a null stream and form one group):

    - span_us = last task end − first task start;
    - idle_us = Σ gaps between consecutive tasks (gap = start − max end of the earlier tasks,
      when positive; see `stream_gaps`) = span − busy;
    - busy_us = |U(tasks of the stream)| = span − idle;
    - host_wait_us + kernel_wait_us + other_us = idle_us, each gap going to one category:
      host_wait when the next task's launch call started after the previous task ended (the
      device waited on the host), else kernel_wait when the gap is under
      kernel_wait_threshold_us (µs, default 30), else other;
    - idle_intervals = number of gaps > 0; tasks = number of tasks;
    - busy_frac = busy / span, idle_frac = idle / span (null when span = 0);
      host_wait_frac, kernel_wait_frac, other_frac = category / idle (HTA's idle_time_ratio;
      null when idle = 0).

    launches: `launch_calls(host_events)` when the caller already has it.

    Differences from HTA: HTA's `consecutive_kernel_delay` is in the trace's time unit (µs in
    its µs-timestamp versions, ns in the later ns ones: pass kernel_wait_threshold_us=0.03 to
    reproduce those); traceview takes µs explicitly. HTA subtracts the previous task's end
    only, so overlapping tasks on one stream give it negative idle; traceview uses the running
    max end, so idle is never negative and idle + busy = span exactly.

    Returns rank, stream, [step], tasks, idle_intervals, span_us, busy_us, idle_us,
    host_wait_us, kernel_wait_us, other_us, busy_frac, idle_frac, host_wait_frac,
    kernel_wait_frac, other_frac; sorted by rank, stream[, step] (null stream last).
    """
    tasks, group = _classified(device_tasks, host_events, kernel_wait_threshold_us, by_step, launches)
    gap = pl.col("gap_ns")
    out = tasks.group_by(group).agg(
        pl.len().cast(pl.Int64).alias("tasks"),
        (gap > 0).sum().cast(pl.Int64).alias("idle_intervals"),
        (pl.col("end_ns").max() - pl.col("start_ns").min()).alias("span_ns"),
        gap.sum().alias("idle_ns"),
        *[gap.filter(pl.col("category") == c).sum().alias(f"{c}_ns") for c in IDLE_CATEGORIES],
    )
    span, idle = pl.col("span_ns"), pl.col("idle_ns")
    busy = span - idle

    def frac(num: pl.Expr, den: pl.Expr) -> pl.Expr:
        return pl.when(den > 0).then(num.cast(pl.Float64) / den)

    return out.select(
        *group,
        "tasks",
        "idle_intervals",
        _us(span).alias("span_us"),
        _us(busy).alias("busy_us"),
        _us(idle).alias("idle_us"),
        *[_us(pl.col(f"{c}_ns")).alias(f"{c}_us") for c in IDLE_CATEGORIES],
        frac(busy, span).alias("busy_frac"),
        frac(idle, span).alias("idle_frac"),
        *[frac(pl.col(f"{c}_ns"), idle).alias(f"{c}_frac") for c in IDLE_CATEGORIES],
    ).sort(group, nulls_last=True)


# --------------------------------------------------------------------------------------------
# 3. launch delays


def _first_of_each_launch(tasks: pl.DataFrame) -> pl.DataFrame:
    """The tasks without a correlation id, and the earliest task of each (rank, correlation)."""
    first = pl.col("start_ns").rank("ordinal").over("rank", "correlation") == 1
    return tasks.filter(pl.col("correlation").is_null() | first)


def _asynchronous(tasks: pl.DataFrame, launches: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(tasks not launched by a synchronous call, per rank the count of those that were)."""
    sync = launches.filter(pl.col("synchronous")).select("rank", "correlation")
    counts = (
        tasks.join(sync, on=["rank", "correlation"], how="semi")
        .group_by("rank")
        .agg(pl.len().cast(pl.Int64).alias("synchronous"))
    )
    return tasks.join(sync, on=["rank", "correlation"], how="anti", maintain_order="left"), counts


def launch_delays(
    device_tasks: pl.DataFrame,
    host_events: pl.DataFrame,
    launches: pl.DataFrame | None = None,
    synchronous: tuple[str, ...] = (),
) -> pl.DataFrame:
    """Launch delay of every device task that has an asynchronous launch call.

    launch_delay_us = task start − launch call end (µs); negative when the task started before
    the launch call returned (common for a short kernel on an idle device). launch_us = the
    launch call's duration (µs). Tasks without a launch call (see the module docstring) are left
    out, and so are all but the first task of a launch call that launched several (a CUDA/HIP
    graph replay: its later kernels wait for the graph's own earlier ones, not for the host), and
    the tasks of synchronous calls (`launch_calls`' synchronous column; `synchronous` gives its
    regexes when `launches` is not given): such a call returns when its copy has finished, so
    its "delay" is minus the copy's length, no delay at all (`launch_delay_stats` counts them
    apart; HTA leaves them out alike).

    Returns rank, stream, step, name, kind, correlation, start_ns, launch_start_ns,
    launch_end_ns, launch_us, launch_delay_us; sorted by rank, start_ns.
    """
    if launches is None:
        launches = launch_calls(host_events, synchronous)
    tasks = _first_of_each_launch(
        device_tasks.select("rank", "stream", "step", "name", "kind", "correlation", "start_ns")
    )
    tasks = _with_launch(_asynchronous(tasks, launches)[0], host_events, how="inner", launches=launches)
    return tasks.with_columns(
        _us(pl.col("launch_end_ns") - pl.col("launch_start_ns")).alias("launch_us"),
        _us(pl.col("start_ns") - pl.col("launch_end_ns")).alias("launch_delay_us"),
    ).sort("rank", "start_ns")


def launch_delay_stats(
    device_tasks: pl.DataFrame,
    host_events: pl.DataFrame,
    launches: pl.DataFrame | None = None,
    synchronous: tuple[str, ...] = (),
) -> pl.DataFrame:
    """Launch-delay distribution per rank (µs), over the tasks of `launch_delays`.

    Returns rank, tasks (all device tasks of the rank), count (tasks with an asynchronous launch
    call, a graph replay counted once), synchronous (tasks of synchronous calls, left out of the
    distribution; see `launch_delays`), mean_us, p50_us, p90_us, p99_us, max_us (quantiles with
    linear interpolation between the two nearest ranks, as numpy's default; null when count = 0);
    sorted by rank.
    """
    if launches is None:
        launches = launch_calls(host_events, synchronous)
    every = device_tasks.select("rank", "correlation", "start_ns")
    tasks, sync_counts = _asynchronous(_first_of_each_launch(every), launches)
    tasks = _with_launch(tasks, host_events, launches=launches)
    totals = every.group_by("rank").agg(pl.len().cast(pl.Int64).alias("tasks"))
    d = _us(pl.col("start_ns") - pl.col("launch_end_ns"))  # null without a launch call
    return (
        tasks.join(totals, on="rank", how="right")
        .group_by("rank")
        .agg(
            pl.col("tasks").first(),
            d.count().cast(pl.Int64).alias("count"),
            d.mean().alias("mean_us"),
            d.quantile(0.5, "linear").alias("p50_us"),
            d.quantile(0.9, "linear").alias("p90_us"),
            d.quantile(0.99, "linear").alias("p99_us"),
            d.max().alias("max_us"),
        )
        .join(sync_counts, on="rank", how="left", nulls_equal=True)
        .select(
            "rank",
            "tasks",
            "count",
            pl.col("synchronous").fill_null(0),
            "mean_us",
            "p50_us",
            "p90_us",
            "p99_us",
            "max_us",
        )
        .sort("rank", nulls_last=True)
    )


# --------------------------------------------------------------------------------------------
# 4. long steps


@analysis("long_steps", inputs={"step_breakdown": use("step_breakdown")}, keys=("rank", "step"))
def long_steps(step_breakdown: pl.DataFrame, factor: float = 1.2) -> pl.DataFrame:
    """Steps whose duration exceeds `factor` × the rank's median step duration, and why.

    Input: a step breakdown with columns rank, step, duration_us, computing_us,
    communication_not_overlapped_us, exposed_memcpy_us (free_us may be present; it is not
    needed). The step time splits into four terms (µs):

        computing + communication_not_overlapped + exposed_memcpy + idle_free = duration

    where idle_free = duration − computing − communication_not_overlapped − exposed_memcpy is the
    window time with no device task busy: free_us plus any idle at the window's edges (equal to
    free_us when the window is bounded by busy time). Null terms count as 0.

    For each rank, the reference "median step" has every term (and the duration) equal to the
    median of that term over the rank's steps. A step is long when
    duration > factor × median duration; for a long step, <term>_delta_us = term − median term,
    and `why` names the term with the largest delta (ties: the order of LONG_STEP_TERMS):
    "more exposed communication", "more idle/free", "more compute", "more exposed memcpy";
    why_delta_us is that delta.

    Returns rank, step, duration_us, median_duration_us, slowdown_ratio (duration / median
    duration), why, why_delta_us, then computing_delta_us, communication_not_overlapped_delta_us,
    exposed_memcpy_delta_us, idle_free_delta_us; sorted by rank, step. Empty when no step is long.
    """
    measured = ["computing", "communication_not_overlapped", "exposed_memcpy"]
    df = (
        step_breakdown.filter(pl.col("duration_us").is_not_null())
        .select("rank", "step", "duration_us", *[pl.col(f"{t}_us").fill_null(0.0).alias(t) for t in measured])
        .with_columns((pl.col("duration_us") - sum((pl.col(t) for t in measured), pl.lit(0.0))).alias("idle_free"))
    )
    terms = list(LONG_STEP_TERMS)
    df = df.with_columns(
        pl.col("duration_us").median().over("rank").alias("median_duration_us"),
        *[(pl.col(t) - pl.col(t).median().over("rank")).alias(f"{t}_delta_us") for t in terms],
    ).filter(pl.col("duration_us") > factor * pl.col("median_duration_us"))

    best = pl.max_horizontal([pl.col(f"{t}_delta_us") for t in terms])
    why = pl.when(pl.col(f"{terms[0]}_delta_us") == best).then(pl.lit(LONG_STEP_TERMS[terms[0]]))
    for t in terms[1:]:
        why = why.when(pl.col(f"{t}_delta_us") == best).then(pl.lit(LONG_STEP_TERMS[t]))
    return df.select(
        "rank",
        "step",
        "duration_us",
        "median_duration_us",
        (pl.col("duration_us") / pl.col("median_duration_us")).alias("slowdown_ratio"),
        why.alias("why"),
        best.alias("why_delta_us"),
        *[f"{t}_delta_us" for t in ("computing", "communication_not_overlapped", "exposed_memcpy", "idle_free")],
    ).sort("rank", "step")
