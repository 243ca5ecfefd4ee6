"""Cross-rank collectives: the same collective matched over its ranks, wait and transfer time,
bandwidth, the straggler, and per-step skew (docs/metrics.md, "Cross-rank collectives").

Input: the canonical `device_tasks` of several ranks (`Trace.device_tasks`); only tasks of kind
`communication` are used, with their `collective`, `process_group`, `group_size` and `msg_bytes`
columns (see docs/schema.md).

Matching rule. A collective instance is identified on every rank by the key
(step, process_group, collective, seq), where seq = k means "the k-th communication task (0-based,
by start time) of that process group and collective type in that step on this rank". Collectives
of one process group run in the same order on every member (NCCL/HCCL require it), so the k-th
all-reduce of group "0" on rank 0 is the k-th all-reduce of group "0" on rank 3. `step` is part of
the key (unless `by_step=False`) so that ranks whose profiles cover different steps still match
step by step; a null step (a task outside every step) is its own value, as is a null process group
or collective (traces that do not record them: then every communication task of that type on a
rank is in one sequence).

Limits of the rule:
- It trusts that every rank recorded the same sequence. If one rank's trace misses a collective
  (a profiler buffer overflow, a trimmed trace) or its profile starts in the middle of a step,
  later instances pair wrongly; `n_ranks` < `group_size` flags instances some rank lacks.
- Point-to-point operations are matched by the same rule, so the k-th `send` of every rank is one
  "instance": a send is not paired with its recv. For symmetric patterns (an all-to-all made of
  SendRecv kernels, every rank exchanging with every other) this is meaningful; for pipeline
  send/recv chains the per-instance wait and skew are not a transfer/wait split, which is why
  `stragglers` leaves point-to-point operations out unless asked.
- When only some ranks of a group were loaded (2 of 128), transfer is the minimum over the loaded
  ranks only, so it can overestimate the true transfer and underestimate waits.
- start_skew_us compares start times on different ranks' clocks: exact on one host, as good as the
  hosts' clock synchronisation otherwise. transfer_us and wait_us use durations only and do not
  depend on clocks.

Clocks that disagree (`clock_offsets`). No rank can finish an all-reduce, all-gather,
reduce-scatter, all-to-all or barrier before every member has started it (each needs the others'
data). When an instance of one of these starts on some rank more than CLOCK_TOLERANCE_NS after it
ended on another, the ranks' clocks disagree (ranks profiled on hosts whose clocks were seconds
apart). Then each rank's clock offset is estimated as the median, over those collectives, of its
end minus the instance's median end (the ends of a synchronising collective nearly coincide), and
`align_start_skew` recomputes start_skew_us on the aligned clocks; `Trace.collectives` adds a
warning naming the offsets. Nothing else changes: the frames keep each rank's own clock.
"""

from __future__ import annotations

import polars as pl

from traceview.analysis.declare import analysis, use

#: Bus-bandwidth factor of each canonical collective (nccl-tests, doc/PERFORMANCE.md), n = ranks in
#: the group: busbw = algbw x factor. Collectives not listed (barrier, coalesced, unknown) get null.
BUS_FACTORS: dict[str, str] = {
    "allreduce": "2(n-1)/n",
    "allgather": "(n-1)/n",
    "reduce_scatter": "(n-1)/n",
    "alltoall": "(n-1)/n",
    "gather": "(n-1)/n",
    "scatter": "(n-1)/n",
    "broadcast": "1",
    "reduce": "1",
    "send": "1",
    "recv": "1",
    "sendrecv": "1",
}

#: Point-to-point (or batched, of unknown kind) operations, left out of `stragglers` by default: the
#: matching rule does not pair a send with its recv, so their wait is not a transfer/wait split.
POINT_TO_POINT = ("send", "recv", "sendrecv", "coalesced")

_KEY = ["_step", "_pg", "_coll", "seq"]

MATCHED_SCHEMA = pl.Schema(
    {
        "collective_id": pl.Int64,
        "collective": pl.String,
        "process_group": pl.String,
        "step": pl.Int64,
        "seq": pl.Int64,
        "rank": pl.Int64,
        "name": pl.String,
        "start_ns": pl.Int64,
        "end_ns": pl.Int64,
        "dur_us": pl.Float64,
        "transfer_us": pl.Float64,
        "wait_us": pl.Float64,
        "start_skew_us": pl.Float64,
        "msg_bytes": pl.Int64,
        "algbw_gbps": pl.Float64,
        "busbw_gbps": pl.Float64,
        "n_ranks": pl.Int64,
        "group_size": pl.Int64,
    }
)


def bus_factor(collective: pl.Expr, n: pl.Expr) -> pl.Expr:
    """busbw / algbw for `collective` over `n` ranks (BUS_FACTORS); null if not defined."""
    nf = n.cast(pl.Float64)
    forms = {"2(n-1)/n": 2.0 * (nf - 1.0) / nf, "(n-1)/n": (nf - 1.0) / nf, "1": pl.lit(1.0)}
    out = pl.when(pl.lit(False)).then(pl.lit(None, pl.Float64))
    for form, expr in forms.items():
        names = [c for c, f in BUS_FACTORS.items() if f == form]
        out = out.when(collective.is_in(names)).then(expr)
    return out.otherwise(pl.lit(None, pl.Float64))


@analysis("matched_collectives", inputs=("device_tasks",), keys=("collective_id", "rank"), public=False)
def match_collectives(device_tasks: pl.DataFrame, by_step: bool = True) -> pl.DataFrame:
    """One row per (collective instance, rank): the same collective matched across ranks.

    Instances are found by the matching rule of the module docstring (key: step, process group,
    collective type, sequence number; `by_step=False` drops the step from the key). Tasks with a
    null rank are ignored.

    Columns (times of one rank on its own clock; µs = 1e-6 s; GB = 1e9 bytes):
    - collective_id: instance number, 0.., in order of the instance's earliest start.
    - collective, process_group, step, seq: the instance key (seq: 0-based sequence number).
    - rank, name (kernel / op name), start_ns, end_ns: the task on this rank.
    - dur_us: the task's duration on this rank.
    - transfer_us: min of dur_us over the instance's ranks (the rank that arrived last only
      transfers: the data-movement time of the collective).
    - wait_us = dur_us − transfer_us: time this rank spent inside the collective waiting for the
      others (>= 0; 0 on the last-arriving rank).
    - start_skew_us = start_ns − earliest start_ns of the instance, in µs (clock-dependent).
    - msg_bytes: this rank's message size (nccl-tests' S: the larger of the input/output buffers).
    - algbw_gbps = msg_bytes / transfer time, GB/s (bytes per ns); null without msg_bytes or when
      transfer is 0.
    - busbw_gbps = algbw_gbps × factor(collective, n): 2(n−1)/n all-reduce; (n−1)/n all-gather,
      reduce-scatter, all-to-all, gather, scatter; 1 broadcast, reduce, send, recv, sendrecv; null
      otherwise. n = group_size when recorded, else n_ranks.
    - n_ranks: ranks that have this instance; group_size: ranks in the process group (recorded).
    Sorted by collective_id, rank.
    """
    comm = device_tasks.filter((pl.col("kind") == "communication") & pl.col("rank").is_not_null())
    if comm.is_empty():
        return pl.DataFrame(schema=MATCHED_SCHEMA)
    part = ["rank", "_step", "_pg", "_coll"]
    tasks = (
        comm.select(
            "rank",
            "name",
            "start_ns",
            "end_ns",
            "dur_ns",
            "collective",
            "process_group",
            "group_size",
            "msg_bytes",
            "step",
            "stream",
            (pl.col("step") if by_step else pl.lit(None, pl.Int64)).alias("_step"),
            pl.col("process_group").alias("_pg"),
            pl.col("collective").alias("_coll"),
        )
        .sort("rank", "start_ns", "end_ns", "stream", "name", nulls_last=True)
        .with_columns(pl.int_range(pl.len(), dtype=pl.Int64).over(part).alias("seq"))
    )
    instances = (
        tasks.group_by(_KEY)
        .agg(
            pl.col("dur_ns").min().alias("_transfer_ns"),
            pl.col("start_ns").min().alias("_first_start_ns"),
            pl.col("rank").n_unique().cast(pl.Int64).alias("n_ranks"),
        )
        .sort("_first_start_ns", "_pg", "_coll", "seq", "_step", nulls_last=True)
        .with_row_index("collective_id")
        .with_columns(pl.col("collective_id").cast(pl.Int64))
    )
    out = tasks.join(instances, on=_KEY, how="left", nulls_equal=True)
    transfer_ns = pl.col("_transfer_ns")
    algbw = pl.when(transfer_ns > 0).then(pl.col("msg_bytes") / transfer_ns)
    n = pl.coalesce("group_size", "n_ranks")
    return (
        out.with_columns(
            (pl.col("dur_ns") / 1000).alias("dur_us"),
            (transfer_ns / 1000).alias("transfer_us"),
            ((pl.col("dur_ns") - transfer_ns) / 1000).alias("wait_us"),
            ((pl.col("start_ns") - pl.col("_first_start_ns")) / 1000).alias("start_skew_us"),
            algbw.alias("algbw_gbps"),
            (algbw * bus_factor(pl.col("collective"), n)).alias("busbw_gbps"),
        )
        .select(list(MATCHED_SCHEMA))
        .cast(dict(MATCHED_SCHEMA))
        .sort("collective_id", "rank")
    )


STRAGGLER_SCHEMA = pl.Schema(
    {
        "rank": pl.Int64,
        "instances": pl.Int64,
        "total_wait_us": pl.Float64,
        "mean_wait_us": pl.Float64,
        "mean_start_skew_us": pl.Float64,
        "max_start_skew_us": pl.Float64,
        "last_arrivals": pl.Int64,
        "is_straggler": pl.Boolean,
    }
)


@analysis("stragglers", inputs={"matched": use("collectives")})
def stragglers(matched: pl.DataFrame, include_p2p: bool = False) -> pl.DataFrame:
    """Per rank: how long it waited in collectives, how late it arrived, and which rank is the straggler.

    Input: `match_collectives` output. Only instances seen on >= 2 ranks count, and, unless
    `include_p2p`, only collectives (not POINT_TO_POINT: send, recv, sendrecv, coalesced; an
    all-to-all that the trace names as such counts even when NCCL runs it as SendRecv kernels).

    Columns: rank; instances (collective instances of the rank on >= 2 ranks); total_wait_us and
    mean_wait_us (sum / mean of wait_us over them); mean_start_skew_us, max_start_skew_us (of
    start_skew_us); last_arrivals (instances in which this rank started last, ties counting for
    every tied rank); is_straggler.

    Straggler rule: the straggler is the one the others wait for. A rank that arrives late at a
    collective finds the others already there and only transfers, so its wait is the smallest; the
    straggler is therefore the rank with the smallest mean_wait_us (a duration-only measure, valid
    across hosts whatever their clocks; mean rather than total so that ranks in more process
    groups are not penalised). Ties go to more last_arrivals, then the larger mean_start_skew_us,
    then the lower rank. No rank is the straggler (all False) when fewer than 2 ranks share instances or
    when no rank waited at all (max total_wait_us == 0).
    Sorted by rank.
    """
    multi = matched.filter(pl.col("n_ranks") >= 2)
    if not include_p2p:
        multi = multi.filter(~pl.col("collective").is_in(POINT_TO_POINT) | pl.col("collective").is_null())
    if multi.is_empty():
        return pl.DataFrame(schema=STRAGGLER_SCHEMA)
    # by start_skew_us rather than start_ns: the same order, on aligned clocks when they disagree
    last = (pl.col("start_skew_us") == pl.col("start_skew_us").max().over("collective_id")).cast(pl.Int64)
    per_rank = (
        multi.with_columns(last.alias("_last"))
        .group_by("rank")
        .agg(
            pl.len().cast(pl.Int64).alias("instances"),
            pl.col("wait_us").sum().alias("total_wait_us"),
            pl.col("wait_us").mean().alias("mean_wait_us"),
            pl.col("start_skew_us").mean().alias("mean_start_skew_us"),
            pl.col("start_skew_us").max().alias("max_start_skew_us"),
            pl.col("_last").sum().cast(pl.Int64).alias("last_arrivals"),
        )
        .sort(
            ["mean_wait_us", "last_arrivals", "mean_start_skew_us", "rank"],
            descending=[False, True, True, False],
        )
    )
    someone_waited = per_rank["total_wait_us"].max() > 0
    first = pl.int_range(pl.len()) == 0
    return (
        per_rank.with_columns((first & pl.lit(per_rank.height >= 2 and bool(someone_waited))).alias("is_straggler"))
        .select(list(STRAGGLER_SCHEMA))
        .sort("rank")
    )


SKEW_SCHEMA = pl.Schema(
    {
        "step": pl.Int64,
        "n_ranks": pl.Int64,
        "min_us": pl.Float64,
        "mean_us": pl.Float64,
        "max_us": pl.Float64,
        "skew_us": pl.Float64,
        "skew_frac": pl.Float64,
        "longest_step_rank": pl.Int64,
        "shortest_step_rank": pl.Int64,
    }
)


@analysis("step_skew", inputs={"step_durations": use("step_breakdown")}, keys=("step",))
def step_skew(step_durations: pl.DataFrame) -> pl.DataFrame:
    """Per step: how unequal the ranks' step durations are.

    Input columns: rank, step, duration_us (e.g. the step breakdown's duration_us); rows with a
    null duration are ignored.
    Columns: step; n_ranks; min_us, mean_us, max_us of duration_us over ranks; skew_us = max_us −
    min_us; skew_frac = skew_us / max_us (null when max_us is 0); longest_step_rank (longest step; ties:
    lowest rank); shortest_step_rank (shortest; ties: lowest rank). Sorted by step.
    """
    d = step_durations.filter(pl.col("duration_us").is_not_null())
    if d.is_empty():
        return pl.DataFrame(schema=SKEW_SCHEMA)
    dur = pl.col("duration_us").cast(pl.Float64)
    out = (
        d.group_by("step")
        .agg(
            pl.col("rank").n_unique().cast(pl.Int64).alias("n_ranks"),
            dur.min().alias("min_us"),
            dur.mean().alias("mean_us"),
            dur.max().alias("max_us"),
            pl.col("rank")
            .sort_by(["duration_us", "rank"], descending=[True, False])
            .first()
            .alias("longest_step_rank"),
            pl.col("rank")
            .sort_by(["duration_us", "rank"], descending=[False, False])
            .first()
            .alias("shortest_step_rank"),
        )
        .with_columns((pl.col("max_us") - pl.col("min_us")).alias("skew_us"))
        .with_columns(pl.when(pl.col("max_us") > 0).then(pl.col("skew_us") / pl.col("max_us")).alias("skew_frac"))
    )
    return out.select(list(SKEW_SCHEMA)).cast(dict(SKEW_SCHEMA)).sort("step")


#: Collectives that no member can finish before every member has started (each needs all members'
#: data); their instances tell whether the ranks' clocks agree.
SYNCHRONISING = ("allreduce", "allgather", "reduce_scatter", "alltoall", "barrier")
#: How far an instance may start on one rank after it ended on another before the clocks are
#: taken to disagree (hosts synchronised by NTP/PTP agree to well under this).
CLOCK_TOLERANCE_NS = 1_000_000

OFFSET_SCHEMA = pl.Schema({"rank": pl.Int64, "offset_ns": pl.Int64, "instances": pl.Int64})


def clock_offsets(matched: pl.DataFrame) -> pl.DataFrame | None:
    """Per rank, its clock's estimated offset (ns, relative to the lowest rank) when the ranks'
    clocks disagree (see the module docstring), else None.

    Input: `match_collectives` output. Columns: rank, offset_ns (add to the lowest rank's clock to
    get this rank's), instances (synchronising instances the estimate used). None when no
    synchronising instance spans >= 2 ranks or none is impossible on the recorded clocks.
    """
    sync = matched.filter((pl.col("n_ranks") >= 2) & pl.col("collective").is_in(SYNCHRONISING))
    if sync.is_empty():
        return None
    spans = sync.group_by("collective_id").agg((pl.col("start_ns").max() - pl.col("end_ns").min()).alias("_late_ns"))
    if spans["_late_ns"].max() <= CLOCK_TOLERANCE_NS:
        return None
    per_rank = (
        sync.with_columns((pl.col("end_ns") - pl.col("end_ns").median().over("collective_id")).alias("_d"))
        .group_by("rank")
        .agg(pl.col("_d").median().alias("_offset"), pl.len().cast(pl.Int64).alias("instances"))
        .sort("rank")
    )
    base = per_rank["_offset"][0]
    return per_rank.select(
        "rank", (pl.col("_offset") - base).round(0).cast(pl.Int64).alias("offset_ns"), "instances"
    ).cast(dict(OFFSET_SCHEMA))


def align_start_skew(matched: pl.DataFrame, offsets: pl.DataFrame) -> pl.DataFrame:
    """`matched` with start_skew_us recomputed on clocks aligned by `offsets` (`clock_offsets`);
    ranks without an offset keep theirs (0)."""
    aligned = pl.col("start_ns") - pl.col("offset_ns").fill_null(0)
    return (
        matched.join(offsets.select("rank", "offset_ns"), on="rank", how="left")
        .with_columns(((aligned - aligned.min().over("collective_id")) / 1000).alias("start_skew_us"))
        .select(matched.columns)
    )


def clock_warning(offsets: pl.DataFrame) -> str:
    """One line for the trace's warnings: which ranks' clocks are off, and by how much."""
    far = offsets.filter(pl.col("offset_ns").abs() > CLOCK_TOLERANCE_NS)
    base = offsets["rank"][0]
    shown = ", ".join(f"rank {r} {o / 1e9:+,.3f} s" for r, o in zip(far["rank"], far["offset_ns"]))
    more = f" and {far.height - 8} more" if far.height > 8 else ""
    if far.height > 8:
        shown = ", ".join(shown.split(", ")[:8])
    return (
        f"ranks' clocks disagree (a collective starts on one rank after it ended on another); clock offsets "
        f"from rank {base}'s, estimated from the ends of synchronising collectives: {shown}{more}. Start skew "
        f"and last arrivals are computed on clocks aligned by these offsets; durations, waits and every "
        f"per-rank number use each rank's own clock and are unaffected; the timeline shows each rank on its own clock"
    )


# ---- declared analyses (`traceview.registry`) ------------------------------------------------------


def _clock_notes(offsets: pl.DataFrame | None) -> list[str]:
    """The trace's warning line when the ranks' clocks disagree (`clock_warning`)."""
    return [] if offsets is None else [clock_warning(offsets)]


@analysis(
    "clock_offsets",
    inputs={"ranks": "ranks", "device_tasks": "device_tasks", "matched": use("matched_collectives", lazy=True)},
    notes=_clock_notes,
    public=False,
)
def clock_offsets_of(ranks: pl.DataFrame, device_tasks: pl.DataFrame, matched) -> pl.DataFrame | None:
    """Per rank, its clock's offset when the ranks' clocks disagree, else None (one rank, or no
    communication: nothing is matched). See `clock_offsets`."""
    if ranks.height < 2 or not device_tasks["kind"].eq("communication").any():
        return None
    return clock_offsets(matched())


@analysis(
    "collectives",
    inputs={"matched": use("matched_collectives"), "offsets": use("clock_offsets")},
    keys=("collective_id", "rank"),
)
def aligned_collectives(matched: pl.DataFrame, offsets: pl.DataFrame | None) -> pl.DataFrame:
    """One row per collective instance and rank, matched across ranks: transfer (min duration
    over ranks), wait, start skew, bandwidths. When the ranks' clocks disagree (`clock_offsets`),
    start skew is computed on aligned clocks and the trace's warnings name the offsets. See
    `match_collectives`."""
    return matched if offsets is None else align_start_skew(matched, offsets)
