"""The iteration: each step's whole wall time, and where it went (docs/metrics.md, "The whole
iteration"; the TensorBoard plugin's Overview, the MindSpore guide's split of a training step).

The step terms of `traceview.analysis.breakdown` measure the device window of a step (what torch_npu
and TraceLens measure). The iteration is the step as the user lives it: the host preparing the
batch, launching, and the device working, with consecutive iterations tiling the run.

**Window** (per rank and step; `iteration_rule` says which inputs gave it). Steps in order of their
start; for step i with host range [hs_i, he_i) (Kineto: the host `ProfilerStep#N`; Ascend: the
framework layer's step range) and dev_i = the end of the device work it launched:

    iteration_start_i = max(hs_i, iteration_end_{i-1})      (the first: hs_1)
    iteration_end_i   = max(he_i, dev_i, iteration_start_i)

- `host_launched`: dev_i = the latest end of the device tasks whose launch call (the runtime event
  with the task's correlation id) starts inside [hs_i, he_i) (Kineto);
- `host_device_window`: launches are not recorded (Ascend, MindSpore): dev_i = the end of the
  step's device window (`steps.device_end_ns`);
- `device_window`: no host range: [hs_i, he_i) is the step's device window.

`iteration_us` = iteration_end − iteration_start. On the TensorBoard plugin's resnet50 sample this
is the plugin's per-step total exactly.

**Terms**: each instant of the window is attributed once, to the first of these that holds
(U(S) = the union of S's intervals on the rank, all streams or threads; the device sets as in
`breakdown`: COMP = compute kernels and memset, COMM = communication, MEM = memcpy):

1. `iteration_computing_us`: U(COMP)
2. `iteration_exposed_comm_us`: U(COMM), not COMP
3. `iteration_exposed_memcpy_us`: U(MEM), not COMP or COMM
   (the device is idle in what follows)
4. `host_runtime_us`: a runtime call (kernel launch, memcpy call, synchronisation) runs on the host
5. `data_loading_us`: a data-loading span runs (`traceview/rules/phases.toml` [[data_loading]]:
   `enumerate(DataLoader)#...` and its Python frames)
6. `host_framework_us`: any other host operator or annotation runs (framework code; spans
   matching [[not_activity]], such as ProfilerStep#N itself, are not activity)
7. `other_idle_us`: nothing above (the host is in untraced code, or waiting)

`host_overhead_us` = host_runtime_us + host_framework_us. Identity (tested on every profile):
iteration_us = the sum of terms 1-3, data_loading_us, host_overhead_us and other_idle_us (each
term is measured on its own; the window's segments cover it whole).
This order is the plugin's (Kernel, Memcpy, Memset, Runtime, DataLoader, CPU Exec, Other), so its
per-step DataLoader, Runtime and CPU Exec are data_loading_us, host_runtime_us and
host_framework_us. A rank without host events has null host terms: its device idle time is all
other_idle_us.
"""

from __future__ import annotations

import polars as pl

from traceview.analysis import intervals as iv
from traceview.analysis import phases
from traceview.analysis.breakdown import SET_OF_KIND
from traceview.analysis.declare import analysis, use
from traceview.terms import HOST_PARTS, ITERATION_LABELS, ITERATION_TERMS

#: Output columns after rank, step (units in the names), the parts of host_overhead and the
#: labels: the vocabulary (`traceview.terms`).
TERMS = ITERATION_TERMS
LABELS = ITERATION_LABELS

#: The phase columns (µs) after the terms: device time and wall time per phase.
PHASE_COLUMNS = [*phases.DEVICE_COLUMNS, *phases.WALL_COLUMNS]

_SETS = ["comp", "comm", "mem", "runtime", "data", "host", *phases.SETS]
_BUSY = pl.col("comp") | pl.col("comm") | pl.col("mem")
_IDLE = ~_BUSY
_MEASURES = {
    "iteration_computing_ns": pl.col("comp"),
    "iteration_exposed_comm_ns": pl.col("comm") & ~pl.col("comp"),
    "iteration_exposed_memcpy_ns": pl.col("mem") & ~pl.col("comp") & ~pl.col("comm"),
    "host_runtime_ns": _IDLE & pl.col("runtime"),
    "data_loading_ns": _IDLE & ~pl.col("runtime") & pl.col("data"),
    "host_framework_ns": _IDLE & ~pl.col("runtime") & ~pl.col("data") & pl.col("host"),
    "other_idle_ns": _IDLE & ~pl.col("runtime") & ~pl.col("data") & ~pl.col("host"),
}


def _phase_measures() -> dict[str, pl.Expr]:
    """device_<phase>_ns and wall_<phase>_ns over the sweep's sets (`traceview.analysis.phases`):
    each instant to the first phase, in PHASES order, that holds it."""
    out: dict[str, pl.Expr] = {}
    device_before, host_before = pl.lit(False), pl.lit(False)
    host_idle = _IDLE & ~pl.col("data")
    for phase in phases.MARKED:
        device = pl.col(f"dev_{phase}") & ~device_before
        host = host_idle & pl.col(f"host_{phase}") & ~host_before
        out[f"device_{phase}_ns"] = device
        out[f"wall_{phase}_ns"] = device | host
        device_before = device_before | pl.col(f"dev_{phase}")
        host_before = host_before | pl.col(f"host_{phase}")
    out["device_other_ns"] = _BUSY & ~device_before
    out["wall_other_ns"] = (_BUSY & ~device_before) | (_IDLE & (pl.col("data") | ~host_before))
    return out


_MEASURES.update(_phase_measures())


def windows(steps: pl.DataFrame, device_tasks: pl.DataFrame, launches: pl.DataFrame | None = None) -> pl.DataFrame:
    """The iteration window of every step (see the module docstring): rank, step, iteration_rule,
    iteration_start_ns, iteration_end_ns. Steps with neither a host range nor a device window are
    left out. `launches`: `gaps.launch_calls(host_events)` (rank, correlation, launch_start_ns)."""
    has_host = pl.col("host_start_ns").is_not_null() & pl.col("host_end_ns").is_not_null()
    rows = steps.filter(has_host | pl.col("device_start_ns").is_not_null())
    launched = None
    if launches is not None and launches.height and "correlation" in device_tasks.columns:
        hosts = rows.filter(has_host).select("rank", "step", "host_start_ns", "host_end_ns").sort("host_start_ns")
        # the host step is the one whose range holds the launch (not the task's own `step`, which a
        # GPU annotation may give)
        tasks = (
            device_tasks.select("rank", "correlation", "end_ns")
            .join(launches, on=["rank", "correlation"], how="inner")
            .sort("launch_start_ns")
        )
        launched = (
            tasks.join_asof(
                hosts,
                left_on="launch_start_ns",
                right_on="host_start_ns",
                by="rank",
                strategy="backward",
                check_sortedness=False,  # both sorted by time just above
            )
            .filter(pl.col("launch_start_ns") < pl.col("host_end_ns"))
            .group_by("rank", "step")
            .agg(pl.col("end_ns").max().alias("_launched_end"))
        )
    if launched is None:
        launched = pl.DataFrame(schema={"rank": pl.Int64, "step": pl.Int64, "_launched_end": pl.Int64})
    rank_launches = launched.select("rank").unique().with_columns(pl.lit(True).alias("_rank_launches"))
    rows = (
        rows.join(launched, on=["rank", "step"], how="left")
        .join(rank_launches, on="rank", how="left")
        .with_columns(
            pl.when(has_host & pl.col("_rank_launches").fill_null(False))
            .then(pl.lit("host_launched"))
            .when(has_host)
            .then(pl.lit("host_device_window"))
            .otherwise(pl.lit("device_window"))
            .alias("iteration_rule"),
        )
        .with_columns(
            pl.when(has_host).then(pl.col("host_start_ns")).otherwise(pl.col("device_start_ns")).alias("_s"),
            pl.when(has_host).then(pl.col("host_end_ns")).otherwise(pl.col("device_end_ns")).alias("_e"),
            pl.when(pl.col("iteration_rule") == "host_launched")
            .then(pl.col("_launched_end"))
            .when(pl.col("iteration_rule") == "host_device_window")
            .then(pl.col("device_end_ns"))
            .alias("_d"),
        )
        .sort("rank", "_s", "step")
    )
    # end_i = max(e_i, end_{i-1}) with e_i = max(he_i, dev_i, hs_i): a running maximum per rank;
    # start_i = max(hs_i, end_{i-1}).
    own_end = pl.max_horizontal("_e", "_d", "_s")
    return (
        rows.with_columns(own_end.cum_max().over("rank").alias("iteration_end_ns"))
        .with_columns(
            pl.max_horizontal("_s", pl.col("iteration_end_ns").shift(1).over("rank")).alias("iteration_start_ns")
        )
        .select("rank", "step", "iteration_rule", "iteration_start_ns", "iteration_end_ns")
    )


def iteration_segments(
    device_tasks: pl.DataFrame,
    host_events: pl.DataFrame,
    steps: pl.DataFrame,
    launches: pl.DataFrame | None = None,
    rules: phases.HostRules = phases.HostRules(),
    task_phase: pl.Series | None = None,
    host_phase: pl.DataFrame | None = None,
) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """The iteration's sweep: the iteration windows (`windows`, as win_start_ns / win_end_ns),
    the elementary segments of every window with one Boolean column per set (_SETS), and the
    ranks whose device tasks a task rule gave a phase. The terms and phases are lengths of
    Boolean combinations of these columns (_MEASURES); `label_segments` names each segment's.
    `task_phase`, `host_phase`: the device tasks' phases and the host phase spans when the caller
    has them (`phases.classify`)."""
    win = windows(steps, device_tasks, launches).rename(
        {"iteration_start_ns": "win_start_ns", "iteration_end_ns": "win_end_ns"}
    )
    if launches is None:
        launches = pl.DataFrame(schema={"rank": pl.Int64, "correlation": pl.Int64, "launch_start_ns": pl.Int64})
    if host_phase is None or task_phase is None:
        spans, classified = phases.classify(
            device_tasks,
            host_events,
            steps,
            launches,
            rules.phase_rules,
            rules.not_activity,
            rules.enqueue,
            rules.dequeue,
            with_tasks=task_phase is None,
        )
        host_phase = spans if host_phase is None else host_phase
        task_phase = classified if task_phase is None else task_phase
    tasks = device_tasks.with_columns(task_phase.alias("_phase"))
    device = tasks.select(
        "rank", pl.col("kind").replace_strict(SET_OF_KIND, default="comp").alias("set"), "start_ns", "end_ns"
    )
    activity = host_events.filter(~phases.name_matches(rules.not_activity))
    host = pl.concat(
        [
            activity.filter(pl.col("kind") == "runtime").select(
                "rank", pl.lit("runtime").alias("set"), "start_ns", "end_ns"
            ),
            activity.filter(phases.name_matches(rules.data_loading)).select(
                "rank", pl.lit("data").alias("set"), "start_ns", "end_ns"
            ),
            activity.filter(pl.col("kind").is_in(["operator", "annotation"])).select(
                "rank", pl.lit("host").alias("set"), "start_ns", "end_ns"
            ),
            tasks.filter(pl.col("_phase") != "other").select(
                "rank", ("dev_" + pl.col("_phase")).alias("set"), "start_ns", "end_ns"
            ),
            host_phase.select("rank", ("host_" + pl.col("phase")).alias("set"), "start_ns", "end_ns"),
        ]
    )
    spans = pl.concat([device, host]).filter(pl.col("rank").is_in(win["rank"].unique().implode()))
    # an empty window (a step ending before the previous iteration did) holds nothing, and would
    # tie with the next window's start in the as-of clip
    lived = win.filter(pl.col("win_end_ns") > pl.col("win_start_ns"))
    segs = iv.segments(spans, ["rank"], _SETS, cuts=iv.window_cuts(lived, ["rank"]))
    segs = iv.clip_to_windows(segs, lived, ["rank"], "step")
    named_ranks = tasks.filter(pl.col("_phase") != "other").select("rank").unique()
    return win, segs, named_ranks


#: The terms of a segment in attribution order (_MEASURES' term keys; host_overhead in its parts).
SEGMENT_TERMS = [
    "iteration_computing",
    "iteration_exposed_comm",
    "iteration_exposed_memcpy",
    "host_runtime",
    "data_loading",
    "host_framework",
    "other_idle",
]


def label_segments(segs: pl.DataFrame) -> pl.DataFrame:
    """Where each instant of every iteration went: `iteration_segments`' segments as rank, step,
    seg_start_ns, seg_end_ns, `term` (the SEGMENT_TERMS entry the segment's time goes to) and
    `wall_phase` (forward, backward, optimizer or other), sorted by rank and time: the same
    attribution as the iteration's terms and wall phases, so the segments of one rank-step and
    term add up to its `<term>_us` (host terms on ranks with host events)."""

    def first(names: list[str], prefix: str = "") -> pl.Expr:
        expr = pl.lit(None, pl.String)
        for name in reversed(names):
            expr = pl.when(_MEASURES[f"{prefix}{name}_ns"]).then(pl.lit(name.removeprefix(prefix))).otherwise(expr)
        return expr

    return (
        segs.with_columns(
            first(SEGMENT_TERMS).alias("term"),
            first([f"wall_{p}" for p in phases.PHASES]).str.strip_prefix("wall_").alias("wall_phase"),
        )
        .select("rank", "step", "seg_start_ns", "seg_end_ns", "term", "wall_phase")
        .sort("rank", "seg_start_ns")
    )


def iteration_breakdown(
    device_tasks: pl.DataFrame,
    host_events: pl.DataFrame,
    steps: pl.DataFrame,
    launches: pl.DataFrame | None = None,
    rules: phases.HostRules = phases.HostRules(),
    task_phase: pl.Series | None = None,
    host_phase: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """Per rank and step: the iteration window, its terms and its phases (definitions in the
    module docstring and `traceview.analysis.phases`).

    `rules`: what the host spans mean (`phases.host_rules()` gives the shipped ones; a trace holds
    its own in `Trace.rules`);
    `task_phase`, `host_phase`: the device tasks' phases and the host phase spans when the caller
    has them (`phases.classify`).

    Returns rank, step, iteration_rule, iteration_start_ns, iteration_end_ns, iteration_us, the
    TERMS (`_us`), host_runtime_us, host_framework_us, the PHASE_COLUMNS (`_us`); sorted by rank,
    step.
    """
    win, segs, named_ranks = iteration_segments(
        device_tasks, host_events, steps, launches, rules, task_phase, host_phase
    )
    measured = iv.lengths(segs, ["rank", "step"], _MEASURES)
    host_ranks = host_events.select("rank").unique().with_columns(pl.lit(True).alias("_host"))
    phased_ranks = (
        pl.concat([host_ranks.select("rank"), named_ranks]).unique().with_columns(pl.lit(True).alias("_phased"))
    )
    out = (
        win.join(measured, on=["rank", "step"], how="left")
        .join(host_ranks, on="rank", how="left")
        .join(phased_ranks, on="rank", how="left")
        .with_columns(pl.col(c).fill_null(0) for c in _MEASURES)
        .with_columns((pl.col("win_end_ns") - pl.col("win_start_ns")).alias("iteration_ns"))
    )
    host_terms = ["host_runtime_ns", "data_loading_ns", "host_framework_ns"]
    known = pl.col("_host").fill_null(False)
    out = out.with_columns(
        *[pl.when(known).then(pl.col(c)).alias(c) for c in host_terms + [f"{c}_ns" for c in phases.WALL_COLUMNS]],
        *[
            pl.when(pl.col("_phased").fill_null(False)).then(pl.col(f"{c}_ns")).alias(f"{c}_ns")
            for c in phases.DEVICE_COLUMNS
        ],
    ).with_columns((pl.col("host_runtime_ns") + pl.col("host_framework_ns")).alias("host_overhead_ns"))
    us = [(pl.col(f"{t}_ns") / 1000.0).alias(f"{t}_us") for t in ["iteration", *TERMS, *HOST_PARTS, *PHASE_COLUMNS]]
    return out.select(
        "rank",
        "step",
        "iteration_rule",
        pl.col("win_start_ns").alias("iteration_start_ns"),
        pl.col("win_end_ns").alias("iteration_end_ns"),
        *us,
    ).sort("rank", "step")


def headline(step_terms: pl.DataFrame, iteration_terms: pl.DataFrame) -> pl.DataFrame:
    """The profile's first numbers (one row), over every rank's steps:

    - `steps`: rank-steps with a positive device window; `mean_step_us`: their mean duration_us;
      `communication_not_overlapped_frac`: Σ communication_not_overlapped_us / Σ duration_us over
      them (the exposed communication's share of the device step time; `breakdown`);
    - `iterations`: rank-steps with a positive iteration; `mean_iteration_us`: their mean
      iteration_us; `<term>_frac` for each of TERMS: Σ term / Σ iteration_us (its share of all
      iteration time; the shares add up to 1 where host terms are known);
    - `largest_term`: the TERMS entry with the largest share, `largest_term_frac` its share;
    - `wall_<phase>_frac` for each phase: Σ wall_<phase>_us / Σ iteration_us over the rank-steps
      whose phases are known (`traceview.analysis.phases`; they add up to 1).

    Nulls when there is no such step.
    """
    timed = step_terms.filter(pl.col("duration_us") > 0)
    steps = timed.select(
        pl.len().cast(pl.Int64).alias("steps"),
        pl.col("duration_us").mean().alias("mean_step_us"),
        pl.when(pl.col("duration_us").sum() > 0)
        .then(pl.col("communication_not_overlapped_us").fill_null(0).sum() / pl.col("duration_us").sum())
        .alias("communication_not_overlapped_frac"),
    )
    lived = iteration_terms.filter(pl.col("iteration_us") > 0)
    total = pl.col("iteration_us").sum()
    phased = pl.col("iteration_us").filter(pl.col(f"{phases.WALL_COLUMNS[0]}_us").is_not_null())
    shares = lived.select(
        pl.len().cast(pl.Int64).alias("iterations"),
        pl.col("iteration_us").mean().alias("mean_iteration_us"),
        # a term null in every row (host terms without host events) has no share
        *[
            pl.when((total > 0) & pl.col(f"{t}_us").is_not_null().any())
            .then(pl.col(f"{t}_us").sum() / total)
            .alias(f"{t}_frac")
            for t in TERMS
        ],
        *[
            pl.when(phased.sum() > 0).then(pl.col(f"{c}_us").sum() / phased.sum()).alias(f"{c}_frac")
            for c in phases.WALL_COLUMNS
        ],
    )
    known = {t: shares[f"{t}_frac"][0] for t in TERMS if shares[f"{t}_frac"][0] is not None}
    largest = max(known, key=known.get) if known else None
    return pl.concat([steps, shares], how="horizontal").with_columns(
        pl.lit(largest, pl.String).alias("largest_term"),
        pl.lit(known.get(largest) if largest else None, pl.Float64).alias("largest_term_frac"),
    )


# ---- declared analyses (`traceview.registry`) ------------------------------------------------------

#: The inputs of the iteration's sweep.
_SWEEP_INPUTS = {
    "device_tasks": "device_tasks",
    "host_events": "host_events",
    "steps": "steps",
    "launches": use("launch_calls"),
    "phased": use("task_phases"),
    "host_phase": use("host_phases"),
    "rules": "rules.phases",
}


@analysis("iteration_breakdown", inputs=_SWEEP_INPUTS, scope="rank", keys=("rank", "step"))
def iteration_of(
    device_tasks: pl.DataFrame,
    host_events: pl.DataFrame,
    steps: pl.DataFrame,
    launches: pl.DataFrame,
    phased: pl.DataFrame,
    host_phase: pl.DataFrame,
    rules: phases.HostRules,
) -> pl.DataFrame:
    """Per rank and step: the whole iteration (wall time, iterations tiling the run) and where it
    went: computing, exposed communication and memcpy in it, data loading, host overhead (runtime
    and framework), other idle (µs), adding up to iteration_us, by the trace's phase rules (what
    the host spans mean). See `iteration_breakdown`."""
    return iteration_breakdown(device_tasks, host_events, steps, launches, rules, phased["phase"], host_phase)


# the segments (about two rows a task) are rank-local too, but only the timeline and the Perfetto
# export read them: computed when asked, never with every rank's parse (scope "profile")
@analysis("iteration_segments", inputs=_SWEEP_INPUTS, keys=("rank", "seg_start_ns"))
def segments_of(
    device_tasks: pl.DataFrame,
    host_events: pl.DataFrame,
    steps: pl.DataFrame,
    launches: pl.DataFrame,
    phased: pl.DataFrame,
    host_phase: pl.DataFrame,
    rules: phases.HostRules,
) -> pl.DataFrame:
    """Where each instant of every iteration went: rank, step, seg_start_ns, seg_end_ns and the
    segment's term and wall phase (the iteration_breakdown's attribution, instant by instant;
    the Perfetto export draws them). See `label_segments`."""
    sweep = iteration_segments(device_tasks, host_events, steps, launches, rules, phased["phase"], host_phase)
    return label_segments(sweep[1])


@analysis(
    "headline",
    inputs={"step_terms": use("step_breakdown"), "iteration_terms": use("iteration_breakdown")},
    keys=(),
)
def headline_of(step_terms: pl.DataFrame, iteration_terms: pl.DataFrame, step: int | None = None) -> pl.DataFrame:
    """One row, over every rank's steps (or only step `step`): mean step and iteration time (µs),
    the exposed communication's share of the step time, each iteration term's share of the
    iteration time and the largest term. See `headline`."""
    if step is not None:
        step_terms, iteration_terms = (f.filter(pl.col("step") == step) for f in (step_terms, iteration_terms))
    return headline(step_terms, iteration_terms)
