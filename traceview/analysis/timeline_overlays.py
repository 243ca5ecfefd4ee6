"""traceview's own analyses as regions of the canvas timeline: collectives split into wait and
transfer, pipeline bubbles, findings. Pure functions of analysis frames (no file reads); the
dashboard (`traceview.dashboards.timeline.overlays`) places them on lanes and sends them.

Definitions (times Int64 ns on each rank's own clock):

- `collective_parts`: each row of `Trace.collectives()` (one per collective instance and rank,
  `traceview.analysis.collectives.match_collectives`) split at start_ns + wait_ns into its *wait*
  part [start_ns, start_ns + wait_ns) — the time this rank sat inside the collective waiting for
  the last-arriving rank — and its *transfer* part [start_ns + wait_ns, start_ns + wait_ns +
  transfer_ns), with wait_ns = wait_us × 1000 and transfer_ns = transfer_us × 1000 exactly as the
  analysis gives them (integers: the analysis divides integer ns by 1000). collective_id names the
  instance on every rank, so a viewer can link the same instance across ranks. p2p marks the
  point-to-point operations (`collectives.POINT_TO_POINT`: send, recv, sendrecv, coalesced): the
  matching rule pairs the k-th send of every rank, not a send with its recv, so their wait is not
  a wait for a peer (the collectives module docstring) and a viewer should not draw it as one.
- `bubble_regions`: the pipeline bubble of rank r in step N (`traceview.analysis.bubbles`:
  bubble_r,N = L_N − |U(COMP_r,N)|, L_N the pipeline step) placed in time: the rank's pipeline
  window P_r,N, L_N long and holding all of its compute (COMP: kinds kernel and memset, by their
  `step`), minus U(COMP_r,N): the stretches of the pipeline step in which stage r computes
  nothing. So their lengths always sum to the analysis' bubble. P_r,N starts at the group's
  earliest compute start in the step (W_N, over every pipeline rank of r's pipeline group), or
  later if the rank's compute would end past W_N + L_N (start = own last end − L_N), or earlier
  if it starts before (start = own first start, when the ranks' clocks disagree). In 1F1B, GPipe
  and interleaved 1F1B on one shared clock stage 0 spans [W_N, W_N + L_N], and P_r,N is that
  window for every stage: the later stages' idle time before their first forward and after their
  last backward is drawn where it happens.
- `finding_regions`: a finding that names a rank (`Trace.findings()`: per-rank findings are
  averages over the rank's steps) marks each step's iteration window of that rank
  (`Trace.iteration_breakdown`: the whole step, host included); a profile-wide finding (rank
  null) marks every rank's. A rank without iteration windows is marked over its whole extent.
"""

from __future__ import annotations

import polars as pl

from traceview.analysis import intervals as iv
from traceview.analysis.bubbles import COMPUTE_KINDS
from traceview.analysis.collectives import POINT_TO_POINT

PART_SCHEMA = pl.Schema(
    {
        "rank": pl.Int64,
        "collective_id": pl.Int64,
        "collective": pl.String,
        "name": pl.String,
        "start_ns": pl.Int64,
        "end_ns": pl.Int64,
        "wait_ns": pl.Int64,
        "transfer_ns": pl.Int64,
        "n_ranks": pl.Int64,
        "p2p": pl.Boolean,
    }
)
BUBBLE_REGION_SCHEMA = pl.Schema(
    {
        "rank": pl.Int64,
        "step": pl.Int64,
        "pipeline_group": pl.String,
        "start_ns": pl.Int64,
        "end_ns": pl.Int64,
        "bubble_us": pl.Float64,
        "step_ns": pl.Int64,
    }
)
FINDING_REGION_SCHEMA = pl.Schema({"finding": pl.Int64, "rank": pl.Int64, "start_ns": pl.Int64, "end_ns": pl.Int64})


def _ns(us: str) -> pl.Expr:
    return (pl.col(us) * 1000).round(0).cast(pl.Int64)


def collective_parts(collectives: pl.DataFrame) -> pl.DataFrame:
    """One row per row of `collectives` (`Trace.collectives()`): rank, collective_id, collective,
    name, start_ns, end_ns, wait_ns, transfer_ns, n_ranks, p2p (module docstring), sorted by start_ns."""
    if collectives.is_empty():
        return pl.DataFrame(schema=PART_SCHEMA)
    return (
        collectives.select(
            "rank",
            "collective_id",
            "collective",
            "name",
            "start_ns",
            "end_ns",
            _ns("wait_us").alias("wait_ns"),
            _ns("transfer_us").alias("transfer_ns"),
            "n_ranks",
            pl.col("collective").is_in(POINT_TO_POINT).fill_null(False).alias("p2p"),
        )
        .cast(dict(PART_SCHEMA))
        .sort("start_ns", "rank", "collective_id")
    )


def bubble_regions(device_tasks: pl.DataFrame, bubbles: pl.DataFrame) -> pl.DataFrame:
    """The bubble of every pipeline rank and step with a positive bubble (`bubbles`:
    `Trace.bubbles()`) as time regions (module docstring). Columns: rank, step, pipeline_group,
    start_ns, end_ns (one compute-idle stretch of P_r,N), bubble_us (the analysis' number for the
    rank and step), step_ns (L_N = step_us × 1000). Sorted by start_ns."""
    pipe = bubbles.filter(pl.col("pipeline") & (pl.col("bubble_us") > 0)).select(
        "rank", "step", "pipeline_group", "bubble_us", _ns("step_us").alias("step_ns")
    )
    if pipe.is_empty():
        return pl.DataFrame(schema=BUBBLE_REGION_SCHEMA)
    comp = device_tasks.filter(
        pl.col("kind").is_in(list(COMPUTE_KINDS))
        & pl.col("step").is_not_null()
        & (pl.col("end_ns") > pl.col("start_ns"))
    ).select("rank", "step", "start_ns", "end_ns")
    members = bubbles.filter(pl.col("pipeline")).select("rank", "step", "pipeline_group")
    group_start = (
        comp.join(members, on=["rank", "step"], how="inner")
        .group_by("step", "pipeline_group")
        .agg(pl.col("start_ns").min().alias("_w"))
    )
    own = comp.group_by("rank", "step").agg(pl.col("start_ns").min().alias("_s"), pl.col("end_ns").max().alias("_e"))
    start = pl.min_horizontal("_s", pl.max_horizontal("_w", pl.col("_e") - pl.col("step_ns")))
    per_rank = (
        pipe.join(group_start, on=["step", "pipeline_group"], how="inner", nulls_equal=True)
        .join(own, on=["rank", "step"], how="left")
        .with_columns(start.alias("win_start_ns"))
        .with_columns((pl.col("win_start_ns") + pl.col("step_ns")).alias("win_end_ns"))
    )
    mine = comp.join(per_rank.select("rank", "step"), on=["rank", "step"], how="semi")
    # the window's bounds as cut points: segments then tile P_r,N, idle stretches included
    cuts = iv.window_cuts(per_rank.select("rank", "step", "win_start_ns", "win_end_ns"), ["rank", "step"])
    segs = iv.segments(mine.with_columns(pl.lit("comp").alias("set")), ["rank", "step"], ["comp"], cuts=cuts)
    idle = segs.filter(~pl.col("comp")).join(per_rank, on=["rank", "step"], how="inner")
    idle = idle.filter(
        (pl.col("seg_start_ns") >= pl.col("win_start_ns")) & (pl.col("seg_end_ns") <= pl.col("win_end_ns"))
    )
    return (
        idle.select(
            "rank",
            "step",
            "pipeline_group",
            pl.col("seg_start_ns").alias("start_ns"),
            pl.col("seg_end_ns").alias("end_ns"),
            "bubble_us",
            "step_ns",
        )
        .cast(dict(BUBBLE_REGION_SCHEMA))
        .sort("start_ns", "rank")
    )


def finding_regions(findings: pl.DataFrame, windows: pl.DataFrame, extents: pl.DataFrame) -> pl.DataFrame:
    """Where each finding applies (module docstring). `findings`: rows of `Trace.findings()` (a
    `rank` column, null for profile-wide), numbered by row; `windows`: rank, start_ns, end_ns (the
    steps' iteration windows); `extents`: rank, start_ns, end_ns (each rank's whole extent, for ranks without
    windows). Columns: finding (row number in `findings`), rank, start_ns, end_ns; sorted by
    start_ns, rank, finding."""
    if findings.is_empty():
        return pl.DataFrame(schema=FINDING_REGION_SCHEMA)
    cols = ["rank", "start_ns", "end_ns"]
    places = pl.concat(
        [
            windows.select(cols),
            extents.select(cols).join(windows.select("rank"), on="rank", how="anti"),
        ]
    ).cast(dict.fromkeys(cols, pl.Int64))
    ranks = places.select("rank").unique()
    numbered = findings.select(pl.col("rank").cast(pl.Int64)).with_row_index("finding")
    named = numbered.filter(pl.col("rank").is_not_null())
    wide = numbered.filter(pl.col("rank").is_null()).drop("rank").join(ranks, how="cross")
    return (
        pl.concat([named, wide.select(named.columns)])
        .join(places, on="rank", how="inner")
        .select(pl.col("finding").cast(pl.Int64), *cols)
        .sort("start_ns", "rank", "finding")
    )


def largest(frame: pl.DataFrame, limit: int, size: pl.Expr, group: str | None = None) -> pl.DataFrame:
    """At most `limit` rows of `frame`: the largest by `size` first (ties: earlier rows); with
    `group`, whole groups only, a group's size being its largest row's. The rows keep their order."""
    if frame.height <= limit:
        return frame
    ranked = frame.with_row_index("_row").with_columns(size.alias("_size"))
    if group is None:
        keep = ranked.sort("_size", "_row", descending=[True, False]).head(limit)["_row"]
    else:
        groups = (
            ranked.group_by(group)
            .agg(pl.col("_size").max(), pl.len().alias("_n"), pl.col("_row").min())
            .sort("_size", "_row", descending=[True, False])
            .filter(pl.col("_n").cum_sum() <= limit)
        )
        keep = ranked.join(groups.select(group), on=group, how="semi")["_row"]
    return ranked.filter(pl.col("_row").is_in(keep.implode())).drop("_row", "_size")
