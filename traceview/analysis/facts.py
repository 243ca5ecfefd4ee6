"""The facts the findings read: one row per rank (and one profile-wide row when throughput was
given) condensing the analysis frames a `Trace` memoises. Every column is defined in `FACTS`
(name -> dtype, definition; `fact_table.py`); docs/findings.md has the same table. The rules that read them are in
`traceview.analysis.findings`.

Conventions. "Per step" values are totals over the rank's measured steps divided by their number;
a rank without steps is measured over its whole trace, which then counts as one step (`window` says
which). Times are ms (`_ms`), µs (`_us`) where the quantity is small, fractions are 0-1 (`_frac`).
A fact that cannot be computed is null, and a rule never fires on a null.
"""

from __future__ import annotations

import polars as pl

from traceview.analysis import gaps
from traceview.analysis.declare import analysis, use
from traceview.analysis.device_facts import memory_facts, roofline_facts, unaligned_gemm_facts
from traceview.analysis.fact_table import FACTS
from traceview.analysis.gemm_shapes import GEMM_ALIGNMENT, gemm_dims

#: A kernel shorter than this is "tiny" (µs): below the 5-20 µs a CPU launch costs, per HTA.
TINY_KERNEL_US = 10.0

#: Kineto memcpy names: "Memcpy HtoD (Pageable -> Device)"; the pageable ones go through a staging copy.
_KINETO_MEMCPY = r"^Memcpy \w+ \("
_PAGEABLE = r"\(Pageable"


# --- facts -------------------------------------------------------------------------------------


def _frac(num: str | pl.Expr, den: str | pl.Expr) -> pl.Expr:
    num = pl.col(num) if isinstance(num, str) else num
    den = pl.col(den) if isinstance(den, str) else den
    return pl.when(den > 0).then(num.cast(pl.Float64) / den)


#: Step breakdown terms summed per rank by `_windows` (µs).
_BREAKDOWN_TERMS = (
    "duration_us",
    "computing_us",
    "communication_us",
    "overlapped_us",
    "communication_not_overlapped_us",
    "communication_not_overlapped_exclude_receive_us",
    "exposed_memcpy_us",
    "idle_us",
    "stage_us",
    "bubble_us",
)


def _windows(
    step_breakdown: pl.DataFrame, trace_breakdown: pl.DataFrame, gpu_bubbles: pl.DataFrame | None = None
) -> pl.DataFrame:
    """Per rank: the breakdown totals of its steps, or of its whole trace when it has no steps.

    The pipeline facts read the bubble that `bubble_rule` names: on "receive" ranks torch_npu's
    (bubble_us, pipeline step = stage + bubble, the exclude-receive term), on "pipeline" ranks the
    estimate (`gpu_bubbles`: bubble_us, step_us; exposed communication minus the exposed P2P)."""
    if gpu_bubbles is None:
        gpu_bubbles = pl.DataFrame(
            schema={"rank": pl.Int64, "step": pl.Int64, "step_us": pl.Float64, "exposed_p2p_us": pl.Float64}
        )
    estimate = pl.col("bubble_rule") == "pipeline"
    steps = (
        step_breakdown.join(
            gpu_bubbles.select(
                "rank", "step", pl.col("step_us").alias("_pstep"), pl.col("exposed_p2p_us").alias("_p2p")
            ),
            on=["rank", "step"],
            how="left",
        )
        .with_columns(pl.col("bubble_rule").fill_null("none"))
        .with_columns(
            pl.when(estimate)
            .then(pl.col("communication_not_overlapped_us") - pl.col("_p2p").fill_null(0))
            .otherwise(pl.col("communication_not_overlapped_exclude_receive_us"))
            .alias("_excl_p2p_us"),
            pl.when(estimate).then(pl.col("pipeline_bubble_us")).otherwise(pl.col("bubble_us")).alias("_rule_bubble"),
            pl.when(estimate)
            .then(pl.col("_pstep"))
            .otherwise(pl.col("stage_us") + pl.col("bubble_us"))
            .alias("_rule_pipe"),
        )
        .select(
            "rank",
            "step",
            pl.lit("steps").alias("window"),
            "bubble_rule",
            "_rule_bubble",
            "_rule_pipe",
            "_excl_p2p_us",
            *_BREAKDOWN_TERMS,
        )
    )
    whole = trace_breakdown.join(steps.select("rank").unique(), on="rank", how="anti").select(
        "rank",
        pl.lit(None, pl.Int64).alias("step"),
        pl.lit("trace").alias("window"),
        pl.when(pl.col("bubble_us") > 0).then(pl.lit("receive")).otherwise(pl.lit("none")).alias("bubble_rule"),
        pl.col("bubble_us").alias("_rule_bubble"),
        (pl.col("stage_us") + pl.col("bubble_us")).alias("_rule_pipe"),
        pl.col("communication_not_overlapped_exclude_receive_us").alias("_excl_p2p_us"),
        *_BREAKDOWN_TERMS,
    )
    rows = pl.concat([steps, whole], how="vertical_relaxed").filter(pl.col("duration_us") > 0)
    pipe = pl.col("bubble_rule") != "none"
    return rows.group_by("rank").agg(
        pl.col("window").first(),
        pl.len().cast(pl.Int64).alias("steps"),
        *[pl.col(c).fill_null(0).sum().alias(c) for c in _BREAKDOWN_TERMS],
        pl.col("_excl_p2p_us").fill_null(0).sum(),
        pl.col("_rule_bubble").filter(pipe).sum().alias("_bubble_us"),
        pl.col("_rule_pipe").filter(pipe).sum().alias("_pipe_us"),
        pipe.any().alias("_pipeline"),
    )


def _task_facts(tasks: pl.DataFrame, windows: pl.DataFrame, tiny_kernel_us: float, alignment: int) -> pl.DataFrame:
    """Kernel, memcpy and GEMM totals per rank over the measured tasks (ns / counts, not yet per step).

    Measured tasks: those of a step on ranks measured by steps, all tasks on ranks measured by their
    whole trace. Name and shape work touches the memcpy and GEMM tasks only."""
    trace_ranks = windows.filter(pl.col("window") == "trace")["rank"].implode()
    columns = ("rank", "step", "kind", "dur_ns", "compute_class", "name", "input_shapes", "launch_op")
    measured = tasks.select(columns).filter(
        pl.col("rank").is_in(windows["rank"].implode())
        & (pl.col("step").is_not_null() | pl.col("rank").is_in(trace_ranks))
    )
    dur = pl.col("dur_ns")
    tiny = dur < int(round(tiny_kernel_us * 1000))
    kernels = (
        measured.filter(pl.col("kind") == "kernel")
        .group_by("rank")
        .agg(pl.len().alias("_kernels"), tiny.sum().alias("_tiny"), dur.filter(tiny).sum().alias("_tiny_ns"))
    )
    memcpy = (
        measured.filter(pl.col("kind") == "memcpy")
        .group_by("rank")
        .agg(
            dur.sum().alias("_memcpy_ns"),
            dur.filter(pl.col("name").str.contains(_PAGEABLE)).sum().alias("_pageable_ns"),
            pl.col("name").str.contains(_KINETO_MEMCPY).any().alias("_kineto_memcpy"),
        )
    )
    gemm = measured.filter(pl.col("compute_class") == "gemm")
    dims = gemm_dims(gemm["input_shapes"], alignment).select(
        "input_shapes", "gemm_aligned", pl.format("M={}, N={}, K={}", "m", "n", "k").alias("_mnk")
    )
    gemm = gemm.join(dims, on="input_shapes", how="left")
    unaligned = pl.col("gemm_aligned") == False  # noqa: E712 (null stays null)
    gemms = gemm.group_by("rank").agg(
        dur.sum().alias("_gemm_ns"),
        dur.filter(pl.col("gemm_aligned").is_not_null()).sum().alias("_shaped_ns"),
        dur.filter(unaligned).sum().alias("_unaligned_ns"),
    )
    worst = (
        gemm.filter(unaligned)
        .group_by("rank", "launch_op", "input_shapes", "_mnk")
        .agg(dur.sum().alias("_t"))
        .sort(["rank", "_t", "input_shapes"], descending=[False, True, False])
        .group_by("rank", maintain_order=True)
        .first()
        .select(
            "rank",
            pl.col("_mnk").alias("gemm_unaligned_mnk"),
            pl.col("input_shapes").alias("gemm_unaligned_shapes"),
            pl.col("launch_op").alias("gemm_unaligned_op"),
        )
    )
    out = windows.select("rank")
    for part in (kernels, memcpy, gemms, worst):
        out = out.join(part, on="rank", how="left")
    return out.with_columns(pl.col("_kernels", "_tiny", "_tiny_ns", "_memcpy_ns", "_gemm_ns").fill_null(0))


def _launch_us(tasks: pl.DataFrame, launch_calls: pl.DataFrame | None) -> pl.DataFrame:
    """rank, launch_us: mean duration (µs) of the calls that launched the rank's kernels, each call
    once (a graph launch replays hundreds of kernels: weighted by them, its one call read as the
    typical launch), graph launches (`launch_calls`' graph column) left out: one pays for a whole
    graph, so it is no per-kernel launch cost."""
    if launch_calls is None or launch_calls.is_empty():
        return pl.DataFrame(schema={"rank": pl.Int64, "launch_us": pl.Float64})
    calls = launch_calls.filter(~pl.col("graph")) if "graph" in launch_calls.columns else launch_calls
    return (
        tasks.filter(pl.col("kind") == "kernel")
        .select("rank", "correlation")
        .unique()
        .join(calls, on=["rank", "correlation"], how="inner")
        .group_by("rank")
        .agg(((pl.col("launch_end_ns") - pl.col("launch_start_ns")).mean() / 1000.0).alias("launch_us"))
    )


def _host_wait(tasks: pl.DataFrame, stream_idle: pl.DataFrame | None) -> pl.DataFrame:
    """rank, host_wait_frac over the streams that run compute (kernels or memsets)."""
    if stream_idle is None or stream_idle.is_empty():
        return pl.DataFrame(schema={"rank": pl.Int64, "host_wait_frac": pl.Float64})
    compute_streams = tasks.filter(pl.col("kind").is_in(("kernel", "memset"))).select("rank", "stream").unique()
    return (
        stream_idle.join(compute_streams, on=["rank", "stream"], how="semi", nulls_equal=True)
        .group_by("rank")
        .agg(pl.col("host_wait_us").sum().alias("_hw"), pl.col("idle_us").sum().alias("_idle"))
        .select("rank", _frac("_hw", "_idle").alias("host_wait_frac"))
    )


def _straggler(per: pl.DataFrame, stragglers: pl.DataFrame | None) -> pl.DataFrame:
    """rank, is_straggler, and on the straggler others_wait_ms, straggler_cost_frac, compute_ratio."""
    schema = {
        "rank": pl.Int64,
        "is_straggler": pl.Boolean,
        "others_wait_ms": pl.Float64,
        "straggler_cost_frac": pl.Float64,
        "compute_ratio": pl.Float64,
    }
    if stragglers is None or stragglers.is_empty():
        return pl.DataFrame(schema=schema)
    ranks = stragglers.select("rank", "total_wait_us", pl.col("is_straggler").fill_null(False)).join(
        per.select("rank", "steps", "step_ms", "computing_ms", "exposed_comm_excl_p2p_ms"), on="rank", how="inner"
    )
    straggler = ranks.filter(pl.col("is_straggler"))
    others = ranks.filter(~pl.col("is_straggler"))
    if straggler.is_empty() or others.is_empty():
        return ranks.select("rank", pl.col("is_straggler").alias("is_straggler"))
    exposed = "exposed_comm_excl_p2p_ms"
    extra = (others[exposed] - straggler[exposed][0]).clip(lower_bound=0) / others["step_ms"]
    values = {
        "others_wait_ms": (others["total_wait_us"] / others["steps"] / 1000.0).mean(),
        "straggler_cost_frac": extra.mean(),
        "compute_ratio": straggler["computing_ms"][0] / median if (median := others["computing_ms"].median()) else None,
    }
    return ranks.select(
        "rank",
        pl.col("is_straggler").alias("is_straggler"),
        *[pl.when(pl.col("is_straggler")).then(pl.lit(v, pl.Float64)).alias(k) for k, v in values.items()],
    )


def _worst_steps(step_breakdown: pl.DataFrame) -> pl.DataFrame:
    """rank, worst_step, worst_step_ms, median_step_ms, worst_step_ratio, worst_step_why."""
    every = gaps.long_steps(step_breakdown, factor=0.0)  # every step, with what grew against the median
    return (
        every.sort(["rank", "duration_us", "step"], descending=[False, True, False])
        .group_by("rank", maintain_order=True)
        .first()
        .select(
            "rank",
            pl.col("step").alias("worst_step"),
            (pl.col("duration_us") / 1000.0).alias("worst_step_ms"),
            (pl.col("median_duration_us") / 1000.0).alias("median_step_ms"),
            pl.col("slowdown_ratio").alias("worst_step_ratio"),
            pl.col("why").alias("worst_step_why"),
        )
    )


def facts(
    step_breakdown: pl.DataFrame,
    trace_breakdown: pl.DataFrame,
    tasks: pl.DataFrame,
    *,
    stream_idle: pl.DataFrame | None = None,
    launch_calls: pl.DataFrame | None = None,
    pipeline_stages: pl.DataFrame | None = None,
    stragglers: pl.DataFrame | None = None,
    throughput: pl.DataFrame | None = None,
    micro_batches: int | None = None,
    iterations: pl.DataFrame | None = None,
    gpu_bubbles: pl.DataFrame | None = None,
    platform: pl.DataFrame | None = None,
    memory_peaks: pl.DataFrame | None = None,
    roofline: pl.DataFrame | None = None,
    tiny_kernel_us: float = TINY_KERNEL_US,
    gemm_alignment: int = GEMM_ALIGNMENT,
) -> pl.DataFrame:
    """The facts frame: one row per rank with device tasks, plus a profile-wide row (rank null) when
    `throughput` is given. Columns and their definitions: `FACTS`.

    Inputs (none is modified): `step_breakdown` / `trace_breakdown` (traceview.analysis.breakdown),
    `tasks` = classified device tasks (traceview.analysis.classes.classify: kind, compute_class,
    launch_op, input_shapes, dur_ns, step, stream, correlation, name). Optional, their facts are null
    when absent: `stream_idle` (gaps.stream_idle, whole trace), `launch_calls` (gaps.launch_calls),
    `pipeline_stages` (bubbles.pipeline_stages), `stragglers` (collectives.stragglers), `throughput`
    (throughput.throughput), `micro_batches` (the run's m, for the ideal bubble), `iterations`
    (iteration.iteration_breakdown), `gpu_bubbles` (bubbles.gpu_bubbles: the pipeline-bubble
    estimate the pipeline facts read on ranks whose bubble_rule is "pipeline"), `platform`
    (platform.platform_facts: device type, DDP/FSDP, CUDA graphs), `memory_peaks`
    (memory.memory_peaks), `roofline` (roofline.op_roofline).
    `tiny_kernel_us`: the tiny-kernel bound (µs); `gemm_alignment`: the GEMM dim multiple.
    """
    windows = _windows(step_breakdown, trace_breakdown, gpu_bubbles)
    n = pl.col("steps")

    def per_step_ms(col: str) -> pl.Expr:
        return pl.col(col) / n / 1000.0

    per = windows.select(
        "rank",
        "window",
        "steps",
        per_step_ms("duration_us").alias("step_ms"),
        per_step_ms("computing_us").alias("computing_ms"),
        per_step_ms("communication_us").alias("comm_ms"),
        per_step_ms("communication_not_overlapped_us").alias("exposed_comm_ms"),
        _frac("communication_not_overlapped_us", "duration_us").alias("exposed_comm_frac"),
        per_step_ms("_excl_p2p_us").alias("exposed_comm_excl_p2p_ms"),
        _frac("_excl_p2p_us", "duration_us").alias("exposed_comm_excl_p2p_frac"),
        _frac("overlapped_us", "communication_us").alias("comm_overlap_frac"),
        per_step_ms("exposed_memcpy_us").alias("exposed_memcpy_ms"),
        _frac("exposed_memcpy_us", "duration_us").alias("exposed_memcpy_frac"),
        per_step_ms("idle_us").alias("device_idle_ms"),
        _frac("idle_us", "duration_us").alias("device_idle_frac"),
        pl.when("_pipeline").then(per_step_ms("_bubble_us")).alias("bubble_ms"),
        pl.when("_pipeline").then(_frac("_bubble_us", "_pipe_us")).alias("bubble_frac"),
    )
    t = _task_facts(tasks, windows, tiny_kernel_us, gemm_alignment).join(per.select("rank", "steps"), on="rank")

    def ns_per_step_ms(col: str) -> pl.Expr:
        return pl.col(col) / n / 1e6

    t = t.select(
        "rank",
        (pl.col("_kernels") / n).alias("kernels_per_step"),
        (pl.col("_tiny") / n).alias("tiny_kernels_per_step"),
        _frac("_tiny", "_kernels").alias("tiny_kernel_frac"),
        ns_per_step_ms("_tiny_ns").alias("tiny_kernel_ms"),
        pl.when("_kineto_memcpy").then(_frac("_pageable_ns", "_memcpy_ns")).alias("memcpy_pageable_frac"),
        ns_per_step_ms("_gemm_ns").alias("gemm_ms"),
        _frac("_shaped_ns", "_gemm_ns").alias("gemm_shaped_frac"),
        _frac("_unaligned_ns", "_shaped_ns").alias("gemm_unaligned_frac"),
        ns_per_step_ms("_unaligned_ns").alias("gemm_unaligned_ms"),
        "gemm_unaligned_mnk",
        "gemm_unaligned_shapes",
        "gemm_unaligned_op",
    )
    out = (
        per.join(t, on="rank", how="left")
        .join(_launch_us(tasks, launch_calls), on="rank", how="left")
        .join(_host_wait(tasks, stream_idle), on="rank", how="left")
        .join(_straggler(per, stragglers), on="rank", how="left")
        .join(_worst_steps(step_breakdown), on="rank", how="left")
        .join(_iteration_facts(iterations), on="rank", how="left")
        .join(memory_facts(memory_peaks), on="rank", how="left")
        .join(roofline_facts(roofline, per), on="rank", how="left")
        .join(unaligned_gemm_facts(roofline, per, gemm_alignment), on="rank", how="left")
    )
    if platform is not None:
        out = out.join(platform, on="rank", how="left")
    out = _with_pipeline(out, pipeline_stages, micro_batches)
    out = out.with_columns(pl.col("is_straggler").fill_null(False))
    rows = [out]
    if throughput is not None and throughput.height:
        rows.append(
            throughput.select(
                pl.col("mfu_frac").mean(),
                pl.col("model_tflops_per_device").mean().alias("model_tflops"),
                pl.col("peak_tflops").drop_nulls().first(),
            )
        )
    return _conform(pl.concat(rows, how="diagonal_relaxed") if len(rows) > 1 else out).sort("rank", nulls_last=True)


def _iteration_facts(iterations: pl.DataFrame | None) -> pl.DataFrame:
    """Per rank: iteration_ms, data_loading_ms, data_loading_frac, host_overhead_frac."""
    schema = {"rank": pl.Int64, "iteration_ms": pl.Float64, "data_loading_ms": pl.Float64}
    schema |= {"data_loading_frac": pl.Float64, "host_overhead_frac": pl.Float64}
    if iterations is None or iterations.height == 0:
        return pl.DataFrame(schema=schema)
    lived = iterations.filter(pl.col("iteration_us") > 0)
    total = pl.col("iteration_us").sum()

    def share(col: str) -> pl.Expr:
        return pl.when(pl.col(col).is_not_null().any() & (total > 0)).then(pl.col(col).sum() / total)

    return lived.group_by("rank").agg(
        (pl.col("iteration_us").mean() / 1000).alias("iteration_ms"),
        pl.when(pl.col("data_loading_us").is_not_null().any())
        .then(pl.col("data_loading_us").mean() / 1000)
        .alias("data_loading_ms"),
        share("data_loading_us").alias("data_loading_frac"),
        share("host_overhead_us").alias("host_overhead_frac"),
    )


def _with_pipeline(out: pl.DataFrame, stages: pl.DataFrame | None, micro_batches: int | None) -> pl.DataFrame:
    """Add pipeline_stages, equivalent_micro_batches, ideal_bubble_frac, bubble_excess_frac."""
    if stages is not None and stages.height:
        out = out.join(stages.select("rank", pl.col("n_stages").alias("pipeline_stages")), on="rank", how="left")
    else:
        out = out.with_columns(pl.lit(None, pl.Int64).alias("pipeline_stages"))
    p = pl.col("pipeline_stages").cast(pl.Float64)
    b = pl.col("bubble_frac")
    ideal = (p - 1) / (pl.lit(micro_batches, pl.Float64) + p - 1)
    return out.with_columns(
        pl.when((b > 0) & (p >= 2)).then((p - 1) * (1 - b) / b).alias("equivalent_micro_batches"),
        pl.when(b.is_not_null() & (p >= 2)).then(ideal).alias("ideal_bubble_frac"),
    ).with_columns((b - pl.col("ideal_bubble_frac")).alias("bubble_excess_frac"))


def _conform(df: pl.DataFrame) -> pl.DataFrame:
    return df.select(
        pl.col(c).cast(dtype) if c in df.columns else pl.lit(None, dtype).alias(c) for c, (dtype, _) in FACTS.items()
    )


# ---- declared analyses (`traceview.registry`) ------------------------------------------------------


@analysis(
    "facts",
    inputs={
        "step_breakdown": use("step_breakdown"),
        "trace_breakdown": use("trace_breakdown"),
        "classified": use("classified_tasks"),
        "stream_idle": use("stream_idle", lazy=True),
        "launch_calls": use("launch_calls", lazy=True),
        "pipeline_stages": use("pipeline_stages", lazy=True),
        "stragglers": use("stragglers"),
        "throughput_of": use("throughput", lazy=True),
        "iterations": use("iteration_breakdown"),
        "gpu_bubbles": use("bubbles"),
        "platform": use("platform_facts"),
        "memory_peaks": use("memory_peaks"),
        "roofline": use("measured_roofline"),
    },
)
def fact_frame(
    step_breakdown: pl.DataFrame,
    trace_breakdown: pl.DataFrame,
    classified: pl.DataFrame,
    stream_idle,
    launch_calls,
    pipeline_stages,
    stragglers: pl.DataFrame,
    throughput_of,
    iterations: pl.DataFrame,
    gpu_bubbles: pl.DataFrame,
    platform: pl.DataFrame,
    memory_peaks: pl.DataFrame,
    roofline: pl.DataFrame,
    throughput: dict | None = None,
    details: bool = True,
    micro_batches: int | None = None,
) -> pl.DataFrame:
    """The facts the findings read: one row per rank with device tasks, plus a profile-wide row
    when `throughput` (keyword arguments of the throughput analysis) is given. `details=False`
    skips the costly idle-per-stream, launch-call and pipeline-stage analyses (their facts stay
    null); `micro_batches`: the run's micro-batch count, for the ideal bubble. Columns: `FACTS`;
    see `facts`."""
    return facts(
        step_breakdown,
        trace_breakdown,
        classified,
        stream_idle=stream_idle() if details else None,
        launch_calls=launch_calls() if details else None,
        pipeline_stages=pipeline_stages() if details else None,
        stragglers=stragglers,
        throughput=throughput_of(**throughput) if throughput else None,
        micro_batches=micro_batches,
        iterations=iterations,
        gpu_bubbles=gpu_bubbles,
        platform=platform,
        memory_peaks=memory_peaks,
        roofline=roofline,
    )
