"""Step-time decomposition: where each rank's step time went (docs/metrics.md).

Device tasks split into COMP (kernels and memsets), COMM (communication) and MEM (memcpy). Per rank
and window W (one step, or the whole trace), all sets clipped to W, U = union over all streams:

| column (µs)                                        | definition                                      |
|----------------------------------------------------|-------------------------------------------------|
| computing_us                                       | abs(U(COMP))                                    |
| communication_us                                   | abs(U(COMM))                                    |
| overlapped_us                                      | abs(U(COMP) ∩ U(COMM))                          |
| communication_not_overlapped_us (exposed comm)     | abs(U(COMM) − U(COMP))                          |
| exposed_memcpy_us                                  | abs(U(MEM) − U(COMP) − U(COMM))                 |
| busy_us                                            | abs(U(COMP ∪ COMM ∪ MEM))                       |
| free_us                                            | gaps between merged busy intervals inside W: (last busy end − first busy start) − busy |
| idle_us                                            | W's length − busy (TraceLens' idle: also counts time before the first / after the last task) |
| bubble_us                                          | Σ duration of pipeline receive ops (`hcom_receive*`, raw sum, not merged): torch_npu's Bubble; 0 when a run's receives are named otherwise (GPU) |
| stage_us                                           | (last busy end − first busy start) − bubble                                 |
| communication_not_overlapped_exclude_receive_us    | communication_not_overlapped − bubble                                      |
| pipeline_bubble_us                                 | the pipeline-bubble estimate: the pipeline step minus the rank's compute time (`traceview.analysis.bubbles`), on ranks running pipeline P2P in the step, GPU and Ascend alike; null elsewhere and over the whole trace. Never replaces bubble_us |
| preparing_us                                       | first device task start in the step − host ProfilerStep#N start (null without a host step) |
| duration_us                                        | W's length                                      |
| start_us                                           | W's start on the rank's clock                   |

Identity (tested on every real trace): computing + communication_not_overlapped + exposed_memcpy
+ free = last busy end − first busy start; overlapped <= min(computing, communication).

Windows. Whole trace: first device task start to last end, per rank. Steps, by the rank's
`window_rule` (see `traceview.parsers.steps` and the Ascend parser):
- gpu_annotation (Kineto GPU-side ProfilerStep#N): every task is clipped to the annotation window,
  whatever step launched it (TraceLens' rule);
- step_id (Ascend `Step Id`) and correlation (Kineto host step mapped through launches): the step's
  tasks are its members (a task belongs to the step it was assigned to, e.g. the one in which it
  starts), and W runs from their first start to their last end.

A step whose window holds no busy device time (the device ran nothing in it) still has a row, all
idle: every measured term 0, idle = duration, and the terms that need a busy span (free, stage,
the exclude-receive term, preparing) null. Its W is its device window (a GPU annotation), else
its host ProfilerStep#N range, with window_rule "host"; with neither, duration is null.
"""

from __future__ import annotations

import polars as pl

from traceview.analysis import bubbles
from traceview.analysis import intervals as iv
from traceview.analysis.declare import analysis, use
from traceview.terms import BREAKDOWN_TERMS, OVERLAP_TERMS, TABLE_TERMS, TERM_LABELS  # noqa: F401 - re-exported

#: device task kind -> interval set
SET_OF_KIND = {"kernel": "comp", "memset": "comp", "communication": "comm", "memcpy": "mem"}
SETS = ["comp", "comm", "mem"]

#: Pipeline-parallel receive operations whose raw duration is the bubble (torch_npu's rule).
RECEIVE_PATTERN = r"(?i)^hcom_receive"

#: The overlap terms, every term and those a per-step table shows, and their labels: the
#: vocabulary (`traceview.terms`).
TERMS = list(BREAKDOWN_TERMS)

#: Derived from the terms, in every breakdown frame after the `_us` terms (views read these, never
#: compute them): computing_not_overlapped_us = computing − overlapped (computing with no
#: communication at the same time: the stacked bars' computing part), and
#: communication_not_overlapped_frac = communication_not_overlapped_us / duration_us (the exposed
#: communication's share of the window, 0..1; null when the window is empty).
DERIVED = ["computing_not_overlapped_us", "communication_not_overlapped_frac"]


def with_derived(frame: pl.DataFrame) -> pl.DataFrame:
    """`frame` (a breakdown) with the DERIVED columns."""
    return frame.with_columns(
        (pl.col("computing_us") - pl.col("overlapped_us")).alias("computing_not_overlapped_us"),
        pl.when(pl.col("duration_us") > 0)
        .then(pl.col("communication_not_overlapped_us") / pl.col("duration_us"))
        .alias("communication_not_overlapped_frac"),
    )


_BUSY = pl.col("comp") | pl.col("comm") | pl.col("mem")
#: The terms measured from the segments: term -> the segments it counts (by the sets covering them).
MEASURES = {
    "computing": pl.col("comp"),
    "communication": pl.col("comm"),
    "overlapped": pl.col("comp") & pl.col("comm"),
    "communication_not_overlapped": pl.col("comm") & ~pl.col("comp"),
    "exposed_memcpy": pl.col("mem") & ~pl.col("comp") & ~pl.col("comm"),
    "busy": _BUSY,
}


def _labelled(device_tasks: pl.DataFrame) -> pl.DataFrame:
    return device_tasks.select(
        "rank",
        "step",
        "name",
        "start_ns",
        "end_ns",
        "dur_ns",
        pl.col("kind").replace_strict(SET_OF_KIND, default=None).alias("set"),
    ).filter(pl.col("set").is_not_null())


def _measure(segs: pl.DataFrame, by: list[str]) -> pl.DataFrame:
    """Lengths of each term plus the first/last busy instants, per group (ns)."""
    length = pl.col("seg_end_ns") - pl.col("seg_start_ns")
    return segs.group_by(*by).agg(
        *[length.filter(cond).sum().alias(f"{name}_ns") for name, cond in MEASURES.items()],
        pl.col("seg_start_ns").filter(_BUSY).min().alias("first_busy_ns"),
        pl.col("seg_end_ns").filter(_BUSY).max().alias("last_busy_ns"),
    )


def _bubble(tasks: pl.DataFrame, by: list[str]) -> pl.DataFrame:
    """Σ raw duration of receive ops per group, ns."""
    return (
        tasks.filter(pl.col("name").str.contains(RECEIVE_PATTERN))
        .group_by(*by)
        .agg(pl.col("dur_ns").sum().alias("bubble_ns"))
    )


def _finish(m: pl.DataFrame, by: list[str]) -> pl.DataFrame:
    """Derived terms (free, idle, stage, ...) and conversion to µs."""
    span = pl.col("last_busy_ns") - pl.col("first_busy_ns")
    ns = m.with_columns(pl.col("bubble_ns").fill_null(0)).with_columns(
        (span - pl.col("busy_ns")).alias("free_ns"),
        (pl.col("win_end_ns") - pl.col("win_start_ns") - pl.col("busy_ns")).alias("idle_ns"),
        (span - pl.col("bubble_ns")).alias("stage_ns"),
        (pl.col("communication_not_overlapped_ns") - pl.col("bubble_ns")).alias(
            "communication_not_overlapped_exclude_receive_ns"
        ),
        (pl.col("win_end_ns") - pl.col("win_start_ns")).alias("duration_ns"),
        pl.col("win_start_ns").alias("start_ns"),
        pl.lit(None, pl.Int64).alias("pipeline_bubble_ns"),  # step_breakdown adds it (_with_gpu_bubbles)
    )
    return ns.select(
        *by,
        *[(pl.col(f"{t}_ns") / 1000.0).alias(f"{t}_us") for t in TERMS],
        "first_busy_ns",
        "last_busy_ns",
    )


@analysis("trace_breakdown", inputs=("device_tasks",), scope="rank")
def trace_breakdown(device_tasks: pl.DataFrame) -> pl.DataFrame:
    """Decomposition of each rank's whole trace (window: first device task start to last end).

    Returns one row per rank: rank, then the `_us` columns of the module table (preparing_us is
    null), first_busy_ns, last_busy_ns.
    """
    tasks = _labelled(device_tasks)
    segs = iv.segments(tasks, ["rank"], SETS)
    m = _measure(segs, ["rank"])
    win = tasks.group_by("rank").agg(
        pl.col("start_ns").min().alias("win_start_ns"), pl.col("end_ns").max().alias("win_end_ns")
    )
    m = m.join(win, on="rank").join(_bubble(tasks, ["rank"]), on="rank", how="left")
    return with_derived(_finish(m.with_columns(pl.lit(None, pl.Int64).alias("preparing_ns")), ["rank"]).sort("rank"))


@analysis(
    "step_breakdown",
    inputs={"device_tasks": "device_tasks", "steps": "steps", "gpu_bubbles": use("bubbles")},
    keys=("rank", "step"),
)
def step_breakdown(
    device_tasks: pl.DataFrame, steps: pl.DataFrame, gpu_bubbles: pl.DataFrame | None = None
) -> pl.DataFrame:
    """Decomposition per rank and step (window rules in the module docstring).

    `gpu_bubbles`: `bubbles.gpu_bubbles(device_tasks, steps)` when the caller already has it
    (computed here otherwise).

    Returns one row per (rank, step) with busy device time in its window: rank, step, the `_us` columns of the
    module table, window_rule, first_busy_ns, last_busy_ns. Sorted by rank, step.
    """
    tasks = _labelled(device_tasks)
    windows = steps.filter(pl.col("device_start_ns").is_not_null()).select(
        "rank",
        "step",
        "window_rule",
        "host_start_ns",
        pl.col("device_start_ns").alias("win_start_ns"),
        pl.col("device_end_ns").alias("win_end_ns"),
    )
    is_clipped = pl.col("window_rule") == "gpu_annotation"
    clip_ranks = windows.filter(is_clipped)["rank"].unique()
    parts = []

    # Each window by its own rule: a rank whose steps are partly GPU-annotated measures its other
    # steps by membership (found by tests/integration/test_properties.py: they were clipped, over windows
    # overlapping the annotated ones).
    clip_windows = windows.filter(is_clipped)
    if clip_windows.height:
        clip_tasks = tasks.filter(pl.col("rank").is_in(clip_ranks.implode()))
        cuts = iv.window_cuts(clip_windows, ["rank"])
        segs = iv.clip_to_windows(iv.segments(clip_tasks, ["rank"], SETS, cuts=cuts), clip_windows, ["rank"], "step")
        # A window holding no busy time has no row, as under the member rule (found by
        # tests/integration/test_properties.py: a window between two tasks had one, with free/stage null).
        m = _measure(segs, ["rank", "step"]).filter(pl.col("first_busy_ns").is_not_null())
        receive = _in_window_bubble(clip_tasks, clip_windows)
        parts.append(m.join(clip_windows, on=["rank", "step"]).join(receive, on=["rank", "step"], how="left"))

    member_windows = windows.filter(~is_clipped)
    if member_windows.height:
        member_tasks = tasks.filter(pl.col("step").is_not_null())
        segs = iv.segments(member_tasks, ["rank", "step"], SETS)
        m = _measure(segs, ["rank", "step"])
        parts.append(
            m.join(member_windows, on=["rank", "step"]).join(
                _bubble(member_tasks, ["rank", "step"]), on=["rank", "step"], how="left"
            )
        )
    if not parts:
        empty = pl.DataFrame(
            schema={
                "rank": pl.Int64,
                "step": pl.Int64,
                **{f"{t}_us": pl.Float64 for t in TERMS},
                "bubble_rule": pl.String,
                "window_rule": pl.String,
                "first_busy_ns": pl.Int64,
                "last_busy_ns": pl.Int64,
            }
        )
        return with_derived(
            pl.concat([empty, _idle_steps(steps, empty)], how="diagonal_relaxed")
            .select(empty.columns)
            .sort("rank", "step")
        )
    m = pl.concat(parts, how="diagonal_relaxed").with_columns(
        (pl.col("first_busy_ns") - pl.col("host_start_ns")).alias("preparing_ns")
    )
    out = _finish(m, ["rank", "step"]).join(m.select("rank", "step", "window_rule"), on=["rank", "step"])
    if gpu_bubbles is None:
        gpu_bubbles = bubbles.gpu_bubbles(device_tasks, steps)
    out = _with_gpu_bubbles(out, gpu_bubbles, tasks)
    cols = ["rank", "step", *[f"{t}_us" for t in TERMS], "bubble_rule", "window_rule", "first_busy_ns", "last_busy_ns"]
    out = out.select(cols)
    out = pl.concat([out, _idle_steps(steps, out)], how="diagonal_relaxed").select(cols).sort("rank", "step")
    return with_derived(out)


#: Terms of a window without busy time: 0 (measured, nothing there) or null (needs a busy span).
_ZERO_TERMS = (*MEASURES, "bubble")


def _idle_steps(steps: pl.DataFrame, measured: pl.DataFrame) -> pl.DataFrame:
    """All-idle rows for the steps of `steps` that have no row in `measured` (module docstring)."""
    missing = steps.join(measured.select("rank", "step"), on=["rank", "step"], how="anti")
    device = pl.col("device_start_ns").is_not_null() & pl.col("device_end_ns").is_not_null()
    start = pl.when(device).then(pl.col("device_start_ns")).otherwise(pl.col("host_start_ns"))
    end = pl.when(device).then(pl.col("device_end_ns")).otherwise(pl.col("host_end_ns"))
    duration_us = (end - start) / 1000.0
    return missing.select(
        "rank",
        "step",
        *[pl.lit(0.0).alias(f"{t}_us") for t in _ZERO_TERMS],
        duration_us.alias("idle_us"),
        duration_us.alias("duration_us"),
        (start / 1000.0).alias("start_us"),
        *[
            pl.lit(None, pl.Float64).alias(f"{t}_us")
            for t in ("free", "stage", "communication_not_overlapped_exclude_receive", "preparing")
        ],
        pl.lit("none").alias("bubble_rule"),
        pl.when(device).then(pl.col("window_rule")).otherwise(pl.lit("host")).alias("window_rule"),
        pl.lit(None, pl.Int64).alias("first_busy_ns"),
        pl.lit(None, pl.Int64).alias("last_busy_ns"),
    )


def _with_gpu_bubbles(out: pl.DataFrame, gpu_bubbles: pl.DataFrame, tasks: pl.DataFrame) -> pl.DataFrame:
    """Add the pipeline-bubble estimate beside the reference columns, never in their place.

    pipeline_bubble_us: `bubbles.gpu_bubbles`' bubble (the pipeline step minus the rank's compute)
    on ranks that run pipeline point-to-point communication in the step, on GPU and Ascend alike;
    null elsewhere. bubble_us, stage_us and the exclude-receive term stay torch_npu's (Σ receive
    ops; 0 when a run's pipeline receives are named otherwise). bubble_rule says which of the two
    the bubble findings read: "receive" (the rank has receive ops: bubble_us), "pipeline" (else,
    a pipeline rank: pipeline_bubble_us), "none".
    """
    receive_ranks = tasks.filter(pl.col("name").str.contains(RECEIVE_PATTERN))["rank"].unique().implode()
    gpu = gpu_bubbles.select("rank", "step", pl.col("bubble_us").alias("_gpu_bubble"), "pipeline")
    joined = out.join(gpu, on=["rank", "step"], how="left")
    pipeline = pl.col("pipeline").fill_null(False)
    return joined.with_columns(
        pl.when(pipeline).then(pl.col("_gpu_bubble")).alias("pipeline_bubble_us"),
        pl.when(pl.col("rank").is_in(receive_ranks))
        .then(pl.lit("receive"))
        .when(pipeline)
        .then(pl.lit("pipeline"))
        .otherwise(pl.lit("none"))
        .alias("bubble_rule"),
    )


def _in_window_bubble(tasks: pl.DataFrame, windows: pl.DataFrame) -> pl.DataFrame:
    """Receive-op bubble per clipped window: raw durations of receive ops starting inside it."""
    recv = tasks.filter(pl.col("name").str.contains(RECEIVE_PATTERN)).drop("step")
    if recv.is_empty():
        return pl.DataFrame(schema={"rank": pl.Int64, "step": pl.Int64, "bubble_ns": pl.Int64})
    hit = (
        recv.sort("start_ns")
        .join_asof(
            windows.select("rank", "step", "win_start_ns", "win_end_ns").sort("win_start_ns"),
            left_on="start_ns",
            right_on="win_start_ns",
            by="rank",
            strategy="backward",
            check_sortedness=False,
        )
        .filter(pl.col("start_ns") < pl.col("win_end_ns"))
    )
    return hit.group_by("rank", "step").agg(pl.col("dur_ns").sum().alias("bubble_ns"))
