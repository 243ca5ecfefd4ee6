"""Pipeline bubbles of GPU traces, and which pipeline stage each rank is (docs/metrics.md, "bubble").

Ascend traces have a tool-defined bubble (torch_npu: Σ raw duration of `hcom_receive*` ops, see
`traceview.analysis.breakdown`). For GPU traces no reference tool defines one, so traceview uses
the definition below and proves it on generated 1F1B schedules whose bubble is known by
construction (`tests/support/pipeline.py`, `sample_traces/pp4_1f1b`).

Definitions (per rank r and step N; U = union of intervals over all streams of the device):

- COMP_r,N: the compute tasks of r in step N (kinds kernel and memset, docs/metrics.md's COMP), by the
  tasks' `step` column (the rank's step window rule). compute_r,N = |U(COMP_r,N)|.
- P2P: communication tasks that are point-to-point: `collective` send, recv or sendrecv, or
  coalesced with a send/recv kernel name (`ncclDevKernel_SendRecv`, `hcom_send`, ...); where
  `collective` is absent, the kernel name alone. An all-to-all or other collective that NCCL runs
  as SendRecv kernels is not P2P when the trace says which collective launched it (the parser
  fills `collective` from `record_param_comms` / `nccl:all_to_all`; the real SendRecv traces in
  the corpus, HTA's and PARAM's DLRM, are all all-to-all / all-reduce / all-gather and give no
  bubble). A rank is a pipeline rank in step N when it ran at least one P2P task in N.
- span_r,N: last COMP end − first COMP start of r in step N.
- pipeline group: the process group of the rank's P2P tasks (Megatron, torchtitan and DeepSpeed
  run pipeline P2P on a group of the pipeline's own ranks); ranks whose traces do not name it form
  one group.
- pipeline step (step_us): L_N = max span_r,N over the pipeline ranks of r's group in step N: the
  length of the pipeline's compute phase. In 1F1B (and GPipe, interleaved 1F1B) stage 0 runs the
  first forward and the last backward, so L_N is stage 0's span, i.e. the window
  W_N = [earliest compute start, latest compute end over all stages].
- **bubble_r,N = L_N − compute_r,N** (bubble_frac = bubble / L_N): the time of the pipeline step
  during which stage r computes nothing. Non-pipeline ranks have bubble 0 and step_us = their own
  span (bubble_frac 0).

Why this definition. In a p-stage 1F1B step with m micro-batches of forward F and backward B on
every stage, every stage computes m(F+B) and stage 0 spans (m+p−1)(F+B); stage s idles s·F before
its first forward, (p−1−s)(F+B) in the steady phase and s·B after its last backward. So bubble =
(p−1)(F+B) and bubble_frac = (p−1)/(m+p−1) on *every* stage, the textbook number. With transfer
time, the pipeline step is longer by the transfers on the critical path and each stage's bubble by
the same amount (sample_traces/pp4_1f1b: step 39,714,000 ns = 11 x 3.6 ms + 19 x 6 µs, bubble
10,914,000 ns = 3 x 3.6 ms + the same 114 µs on every rank: fraction 0.2748 vs 3/11 = 0.2727).

The alternatives were measured and rejected:
- exposed P2P, |U(P2P) − U(COMP)| inside the rank's own step window (the GPU analogue of
  torch_npu's "receive time"): on pp4_1f1b it gives 10.9, 8.5, 6.1, 3.7 ms for stages 0-3 (0.27,
  0.23, 0.17, 0.11 of the step), because the later stages' idle time after their last backward
  (waiting for stage 0 to finish the step) lies after their last P2P kernel and outside their own
  window. It is reported as exposed_p2p_us; it is the share of the bubble spent inside P2P kernels.
- |U(P2P recv) − U(COMP)|: Kineto cannot tell send from recv inside one batched SendRecv kernel
  (one `ncclDevKernel_SendRecv` carries both; its `Collective name` is "coalesced"), and even with
  separate kernels it misses the same trailing idle time. Not needed: the chosen definition uses
  P2P only to decide which ranks are pipeline ranks.

Properties and limits:
- Clock-free: only durations of one rank's own tasks enter (spans and unions), so ranks on
  different hosts with unsynchronised clocks are fine. With a shared clock it equals |W_N| −
  compute_r,N whenever one rank's compute spans W_N (true for 1F1B, GPipe, interleaved 1F1B).
- It counts all compute-idle time of the stage inside the pipeline step: waiting for P2P (the
  pipeline bubble proper) but also exposed collectives (a DP gradient all-reduce or the optimizer's
  grad-norm all-reduce that waits for stage 0) and host-bound gaps. exposed_p2p_us and the step
  breakdown's communication_not_overlapped_us / free_us tell them apart.
- Step N must be the same iteration on every rank (torch.profiler numbers ProfilerStep#N the same
  way on all ranks of one job). A step that a pipeline rank did not record makes L_N the longest
  span among the ranks that did.

Stages (`pipeline_stages`): see its docstring.
"""

from __future__ import annotations

import polars as pl

from traceview.analysis import intervals as iv
from traceview.analysis.declare import analysis

#: Device task kinds that are compute (docs/metrics.md COMP).
COMPUTE_KINDS = ("kernel", "memset")
#: `collective` values of point-to-point communication.
P2P_COLLECTIVES = ("send", "recv", "sendrecv")
#: Names of point-to-point communication kernels / ops (case-insensitive): NCCL/RCCL SendRecv
#: kernels, `*_Send_*` / `*_Recv_*` kernels, Ascend `hcom_send*` / `hcom_receive*`.
P2P_NAME_PATTERN = r"(?i)sendrecv|(?:^|[_:\s])(?:send|recv|receive)(?:[_(:\s]|$)"
#: Host annotations of PyTorch's ProcessGroupNCCL point-to-point calls: `nccl:send <me>-><peer>`,
#: `nccl:recv <me><-<peer>`; the numbers are ranks in the process group the call used.
P2P_TITLE_PATTERN = r"^nccl:(?:send|recv) (\d+)(?:->|<-)(\d+)$"

BUBBLE_SCHEMA = {
    "rank": pl.Int64,
    "step": pl.Int64,
    "bubble_us": pl.Float64,
    "step_us": pl.Float64,
    "bubble_frac": pl.Float64,
    "p2p_us": pl.Float64,
    "exposed_p2p_us": pl.Float64,
    "compute_us": pl.Float64,
    "pipeline": pl.Boolean,
    "pipeline_group": pl.String,
}
STAGE_SCHEMA = {
    "rank": pl.Int64,
    "pipeline_group": pl.String,
    "stage": pl.Int64,
    "n_stages": pl.Int64,
    "stage_rule": pl.String,
}


def p2p_tasks(device_tasks: pl.DataFrame) -> pl.DataFrame:
    """The point-to-point communication tasks among `device_tasks` (rule in the module docstring)."""
    comm = device_tasks.filter(pl.col("kind") == "communication")
    by_name = pl.col("name").str.contains(P2P_NAME_PATTERN)
    if "collective" not in comm.columns:
        return comm.filter(by_name)
    coll = pl.col("collective")
    return comm.filter(
        coll.is_in(list(P2P_COLLECTIVES)) | ((coll == "coalesced") & by_name) | (coll.is_null() & by_name)
    )


def _pipeline_group(p2p: pl.DataFrame) -> pl.DataFrame:
    """rank -> pipeline_group: the most frequent process group of its P2P tasks (null if none named)."""
    if "process_group" not in p2p.columns:
        return p2p.select("rank").unique().with_columns(pl.lit(None, pl.String).alias("pipeline_group"))
    return (
        p2p.group_by("rank")
        .agg(pl.col("process_group").drop_nulls().mode().sort().first().alias("pipeline_group"))
        .select("rank", pl.col("pipeline_group").cast(pl.String))
    )


@analysis("bubbles", inputs=("device_tasks", "steps"), keys=("rank", "step"))
def gpu_bubbles(device_tasks: pl.DataFrame, steps: pl.DataFrame) -> pl.DataFrame:
    """Pipeline bubble per rank and step (definition and rationale in the module docstring).

    Inputs: the canonical `device_tasks` (with the `step` column filled) and `steps` frames of one
    or many ranks. One row per (rank, step) of `steps` with a device window:
    rank, step,
    bubble_us      L_N − compute_us for pipeline ranks, 0 otherwise (µs),
    step_us        L_N, the pipeline step (longest compute span in the pipeline group), or the
                   rank's own compute span for non-pipeline ranks; null if the rank has no compute
                   in the step and is not a pipeline rank (µs),
    bubble_frac    bubble_us / step_us (null when step_us is null or 0),
    p2p_us         |U(P2P tasks of the rank in the step)| (µs),
    exposed_p2p_us |U(P2P) − U(COMP)|: P2P time with no compute running (µs),
    compute_us     |U(COMP)| (µs),
    pipeline       whether the rank ran P2P in the step,
    pipeline_group process group of the rank's P2P tasks (null if not recorded or not a pipeline rank).
    Sorted by rank, step.
    """
    windows = steps.filter(pl.col("device_start_ns").is_not_null()).select("rank", "step").unique()
    if windows.is_empty():
        return pl.DataFrame(schema=BUBBLE_SCHEMA)
    tasks = device_tasks.filter(pl.col("step").is_not_null())
    p2p = p2p_tasks(tasks)
    labelled = pl.concat(
        [
            tasks.filter(pl.col("kind").is_in(list(COMPUTE_KINDS))).select(
                "rank", "step", "start_ns", "end_ns", pl.lit("comp").alias("set")
            ),
            p2p.select("rank", "step", "start_ns", "end_ns", pl.lit("p2p").alias("set")),
        ]
    )
    segs = iv.segments(labelled, ["rank", "step"], ["comp", "p2p"])
    measured = iv.lengths(
        segs,
        ["rank", "step"],
        {
            "compute_ns": pl.col("comp"),
            "p2p_ns": pl.col("p2p"),
            "exposed_p2p_ns": pl.col("p2p") & ~pl.col("comp"),
        },
    )
    spans = (
        labelled.filter((pl.col("set") == "comp") & (pl.col("end_ns") > pl.col("start_ns")))
        .group_by("rank", "step")
        .agg((pl.col("end_ns").max() - pl.col("start_ns").min()).alias("span_ns"))
    )
    is_pipe = p2p.group_by("rank", "step").agg(pl.len().alias("_n_p2p"))
    rows = (
        windows.join(measured, on=["rank", "step"], how="left", nulls_equal=True)
        .join(spans, on=["rank", "step"], how="left", nulls_equal=True)
        .join(is_pipe, on=["rank", "step"], how="left", nulls_equal=True)
        .join(_pipeline_group(p2p), on="rank", how="left", nulls_equal=True)
        .with_columns(
            pl.col("compute_ns", "p2p_ns", "exposed_p2p_ns").fill_null(0),
            (pl.col("_n_p2p").fill_null(0) > 0).alias("pipeline"),
        )
        .with_columns(pl.when(pl.col("pipeline")).then(pl.col("pipeline_group")).alias("pipeline_group"))
    )
    longest = (
        rows.filter(pl.col("pipeline"))
        .group_by("step", "pipeline_group")
        .agg(pl.col("span_ns").max().alias("_pipe_step_ns"))
    )
    rows = rows.join(longest, on=["step", "pipeline_group"], how="left", nulls_equal=True).with_columns(
        pl.when(pl.col("pipeline")).then(pl.col("_pipe_step_ns")).otherwise(pl.col("span_ns")).alias("step_ns")
    )
    bubble = pl.when(pl.col("pipeline")).then(pl.col("step_ns") - pl.col("compute_ns")).otherwise(0)
    return (
        rows.select(
            "rank",
            "step",
            (bubble / 1000.0).alias("bubble_us"),
            (pl.col("step_ns") / 1000.0).alias("step_us"),
            pl.when(pl.col("step_ns") > 0).then(bubble / pl.col("step_ns")).alias("bubble_frac"),
            (pl.col("p2p_ns") / 1000.0).alias("p2p_us"),
            (pl.col("exposed_p2p_ns") / 1000.0).alias("exposed_p2p_us"),
            (pl.col("compute_ns") / 1000.0).alias("compute_us"),
            "pipeline",
            "pipeline_group",
        )
        .cast(BUBBLE_SCHEMA)
        .sort("rank", "step")
    )


@analysis("pipeline_stages", inputs=("device_tasks", "host_events", "ranks"))
def pipeline_stages(
    device_tasks: pl.DataFrame, host_events: pl.DataFrame, ranks: pl.DataFrame | None = None
) -> pl.DataFrame:
    """Pipeline stage of each rank, when the trace allows inferring it.

    Returns one row per rank of `device_tasks`: rank, pipeline_group (process group of the rank's
    P2P tasks, see the module docstring; ranks of one pipeline share it), stage (0-based, 0 = the
    stage that runs the first forward), n_stages (stages of the pipeline), stage_rule
    (p2p_titles, compute_order, or null when nothing could be inferred). Ranks without P2P tasks
    are not pipeline ranks: stage, n_stages and stage_rule are null. `ranks` (optional, the
    canonical ranks frame) supplies world_size for rule 2's completeness check.

    Rule 1, p2p_titles (any clock, any subset of ranks): PyTorch records every unbatched P2P call
    as a host annotation `nccl:send <me>-><peer>` / `nccl:recv <me><-<peer>` whose numbers are ranks
    *in the process group of the call*. Pipelines send over a group of their own stages in order
    (Megatron, torchtitan, DeepSpeed), so <me> is the stage. Used for every rank whose titles name
    exactly one <me>. n_stages = the P2P process group's `group_size` when recorded; otherwise
    <me> + 1 of a rank whose peers are all below it (the last stage; also true with interleaving,
    where the last stage also talks to stage 0); otherwise null.
    Cannot: batched P2P (`batch_isend_irecv`, Megatron's default) records only `nccl:coalesced`,
    without peers; P2P over the default group (group rank = global rank) gives the global rank.

    Rule 2, compute_order (when no rank has titles; needs one shared clock): within a pipeline
    group, stage s starts computing about one forward (plus a transfer) after stage s−1, so ranks
    are ordered by the start of their first compute task in a step and split into stages where
    the gap to the previous rank exceeds half the largest gap (ranks of one stage, e.g. tensor- or
    data-parallel copies, start within a few µs of each other). This is done for every step that all
    ranks of the group recorded, and kept only if every such step gives the same stages. n_stages =
    the number of stages found. Applied only when the group is complete: all `group_size` ranks
    loaded (or, without group_size, all world_size ranks of `ranks`; with neither, the loaded ranks
    are assumed to be all).
    Cannot: ranks on hosts whose clocks differ by more than about half a forward; compute that
    every rank runs at the start of the step before the pipeline (zero_grad kernels, data
    preparation) hides the staggering (the rule then finds one stage and gives up, or steps
    disagree); stages whose first forwards differ by more than 2x in length may split wrongly.
    """
    all_ranks = device_tasks.select("rank").unique().drop_nulls()
    p2p = p2p_tasks(device_tasks).filter(pl.col("rank").is_not_null())
    if p2p.is_empty():
        return (
            all_ranks.with_columns(pl.lit(None).alias(c) for c in ("pipeline_group", "stage", "n_stages", "stage_rule"))
            .cast(STAGE_SCHEMA)
            .sort("rank")
        )
    groups = _pipeline_group(p2p)
    sizes = (
        p2p.group_by("rank").agg(pl.col("group_size").drop_nulls().mode().max().alias("group_size"))
        if "group_size" in p2p.columns
        else groups.select("rank", pl.lit(None, pl.Int64).alias("group_size"))
    )
    pipe = groups.join(sizes, on="rank", how="left")

    titled = _stages_from_titles(host_events, pipe)
    if titled.height:
        staged = titled
    else:
        staged = _stages_from_compute_order(device_tasks, p2p, pipe, ranks)
    out = all_ranks.join(pipe.select("rank", "pipeline_group"), on="rank", how="left").join(
        staged, on="rank", how="left"
    )
    for c in ("stage", "n_stages", "stage_rule"):
        if c not in out.columns:
            out = out.with_columns(pl.lit(None).alias(c))
    return out.select(list(STAGE_SCHEMA)).cast(STAGE_SCHEMA).sort("rank")


def _stages_from_titles(host_events: pl.DataFrame, pipe: pl.DataFrame) -> pl.DataFrame:
    """Rule 1: rank, stage, n_stages, stage_rule from `nccl:send a->b` / `nccl:recv a<-b` titles."""
    titles = (
        host_events.filter(pl.col("name").str.contains(P2P_TITLE_PATTERN))
        .select(
            "rank",
            pl.col("name").str.extract(P2P_TITLE_PATTERN, 1).cast(pl.Int64).alias("me"),
            pl.col("name").str.extract(P2P_TITLE_PATTERN, 2).cast(pl.Int64).alias("peer"),
        )
        .join(pipe.select("rank"), on="rank", how="semi")
    )
    if titles.is_empty():
        return pl.DataFrame(schema={"rank": pl.Int64, "stage": pl.Int64, "n_stages": pl.Int64, "stage_rule": pl.String})
    per_rank = (
        titles.group_by("rank")
        .agg(
            pl.col("me").n_unique().alias("_n_me"),
            pl.col("me").first().alias("stage"),
            pl.col("peer").max().alias("_max_peer"),
        )
        .filter(pl.col("_n_me") == 1)
        .join(pipe, on="rank", how="left")
    )
    last = (
        per_rank.filter((pl.col("stage") > 0) & (pl.col("_max_peer") < pl.col("stage")))
        .group_by("pipeline_group")
        .agg((pl.col("stage").max() + 1).alias("_n_last"))
    )
    return (
        per_rank.join(last, on="pipeline_group", how="left", nulls_equal=True)
        .with_columns(pl.coalesce("group_size", "_n_last").alias("n_stages"))
        .with_columns(pl.when(pl.col("stage") < pl.col("n_stages")).then(pl.col("n_stages")).alias("n_stages"))
        .select("rank", "stage", "n_stages", pl.lit("p2p_titles").alias("stage_rule"))
    )


def _stages_from_compute_order(
    device_tasks: pl.DataFrame, p2p: pl.DataFrame, pipe: pl.DataFrame, ranks: pl.DataFrame | None
) -> pl.DataFrame:
    """Rule 2: rank, stage, n_stages, stage_rule from the order of first compute starts per step."""
    empty = pl.DataFrame(schema={"rank": pl.Int64, "stage": pl.Int64, "n_stages": pl.Int64, "stage_rule": pl.String})
    world = None
    if ranks is not None and "world_size" in ranks.columns:
        ws = ranks["world_size"].drop_nulls().unique()
        world = int(ws[0]) if ws.len() == 1 else None
    g = pl.col("pipeline_group")
    # Completeness of each group: loaded members vs the group size (else world size, else assumed).
    members = (
        pipe.group_by("pipeline_group")
        .agg(pl.len().alias("_loaded"), pl.col("group_size").max().alias("_size"))
        .with_columns(pl.coalesce("_size", pl.lit(world, pl.Int64), "_loaded").alias("_size"))
    )
    complete = members.filter(pl.col("_loaded") == pl.col("_size")).select("pipeline_group")
    first = (
        device_tasks.filter(pl.col("kind").is_in(list(COMPUTE_KINDS)) & pl.col("step").is_not_null())
        .group_by("rank", "step")
        .agg(pl.col("start_ns").min().alias("t"))
        .join(pipe.select("rank", "pipeline_group"), on="rank", how="inner")
        .join(complete, on="pipeline_group", how="semi", nulls_equal=True)
    )
    # Steps recorded by every member of the group.
    n_members = pipe.group_by("pipeline_group").agg(pl.len().alias("_m"))
    first = (
        first.join(n_members, on="pipeline_group", how="left", nulls_equal=True)
        .with_columns(pl.len().over("pipeline_group", "step").alias("_have"))
        .filter((pl.col("_have") == pl.col("_m")) & (pl.col("_m") >= 2))
    )
    if first.is_empty():
        return empty
    gap = pl.col("t").diff().over(g, "step")
    staged = (
        first.sort("pipeline_group", "step", "t", "rank", nulls_last=True)
        .with_columns(gap.fill_null(0).alias("_gap"))
        .with_columns((pl.col("_gap").max().over(g, "step") / 2).alias("_thr"))
        .with_columns(
            ((pl.col("_gap") > pl.col("_thr")) & (pl.col("_thr") > 0))
            .cast(pl.Int64)
            .cum_sum()
            .over(g, "step")
            .alias("stage")
        )
    )
    # Keep a group only if every step gives each rank the same stage and there are >= 2 stages.
    agree = (
        staged.group_by("pipeline_group", "rank")
        .agg(pl.col("stage").n_unique().alias("_k"), pl.col("stage").first())
        .group_by("pipeline_group")
        .agg(pl.col("_k").max().alias("_k"), (pl.col("stage").max() + 1).alias("n_stages"))
        .filter((pl.col("_k") == 1) & (pl.col("n_stages") >= 2))
    )
    return (
        staged.group_by("rank", "pipeline_group")
        .agg(pl.col("stage").first())
        .join(agree.select("pipeline_group", "n_stages"), on="pipeline_group", how="inner", nulls_equal=True)
        .select("rank", "stage", "n_stages", pl.lit("compute_order").alias("stage_rule"))
    )
