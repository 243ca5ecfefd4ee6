"""What a rank runs on and with: the facts that make advice fit the run (findings, docs/findings.md).

`platform_facts` gives one row per rank:

- `device_type`: gpu, npu, mtia, cpu (from the rank's metadata; null when unknown);
- `ddp_seen` / `fsdp_seen`: the host recorded DistributedDataParallel / FullyShardedDataParallel
  activity (module scopes `nn.Module: DistributedDataParallel`, `DistributedDataParallel.forward`,
  `FullyShardedDataParallel.*`, `FSDP::...` record functions); false without host events;
- `graph_launches_per_step`: CUDA/HIP graph launches (runtime calls named `cudaGraphLaunch`,
  `hipGraphLaunch`, `cuGraphLaunch`) per measured step (per trace when the rank has no steps);
- `graph_frac`: Σ duration of the device tasks those launches replayed (the tasks carry the
  launch's correlation id) / Σ duration of all the rank's device tasks (0 without graph
  launches; null without device tasks);
- `graph_capture`: the rank's trace is a graph-capture trace (schema `ranks.graph_capture`): the
  program runs graphs, so no advice says to capture them.
"""

from __future__ import annotations

import polars as pl

from traceview import rules as rule_tables
from traceview.analysis.declare import analysis
from traceview.analysis.fact_table import FACTS

#: Host event names that say the model is wrapped in DDP / FSDP.
DDP_PATTERN = r"^(nn\.Module: )?DistributedDataParallel\b"
FSDP_PATTERN = r"^(nn\.Module: )?FullyShardedDataParallel\b|^FSDP::"
#: Runtime calls that replay a captured graph (task_kinds.toml [graphs], shared with ingestion).
GRAPH_LAUNCH_PATTERN = rule_tables.shipped("task_kinds")["graphs"]["launch"]

#: Output columns and dtypes (their definitions are facts: `traceview.analysis.fact_table`).
SCHEMA = {"rank": pl.Int64} | {
    c: FACTS[c][0]
    for c in ("device_type", "ddp_seen", "fsdp_seen", "graph_launches_per_step", "graph_frac", "graph_capture")
}


@analysis("platform_facts", inputs=("ranks", "host_events", "device_tasks"), public=False)
def platform_facts(ranks: pl.DataFrame, host_events: pl.DataFrame, device_tasks: pl.DataFrame) -> pl.DataFrame:
    """One row per rank of `ranks` (module docstring): rank, device_type, ddp_seen, fsdp_seen,
    graph_launches_per_step, graph_frac, graph_capture (the ranks table's: a capture trace loaded as
    a rank of its own)."""
    seen = host_events.group_by("rank").agg(
        pl.col("name").str.contains(DDP_PATTERN).any().alias("ddp_seen"),
        pl.col("name").str.contains(FSDP_PATTERN).any().alias("fsdp_seen"),
    )
    graph_calls = (
        host_events.filter((pl.col("kind") == "runtime") & pl.col("name").str.contains(GRAPH_LAUNCH_PATTERN))
        .select("rank", "correlation")
        .unique()
    )
    steps = device_tasks.group_by("rank").agg(pl.col("step").drop_nulls().n_unique().alias("_steps"))
    replayed = device_tasks.join(
        graph_calls.with_columns(pl.lit(True).alias("_graph")), on=["rank", "correlation"], how="left"
    )
    graphs = replayed.group_by("rank").agg(
        (pl.col("dur_ns").filter(pl.col("_graph").fill_null(False)).sum() / pl.col("dur_ns").sum()).alias("_frac"),
    )
    launches = graph_calls.group_by("rank").agg(pl.len().alias("_launches"))
    return (
        ranks.select("rank", "device_type", pl.col("graph_capture").fill_null(False))
        .join(seen, on="rank", how="left")
        .join(launches, on="rank", how="left")
        .join(graphs, on="rank", how="left")
        .join(steps, on="rank", how="left")
        .select(
            "rank",
            "device_type",
            pl.col("ddp_seen").fill_null(False),
            pl.col("fsdp_seen").fill_null(False),
            (pl.col("_launches").fill_null(0) / pl.max_horizontal(pl.col("_steps").fill_null(0), 1)).alias(
                "graph_launches_per_step"
            ),
            pl.col("_frac").alias("graph_frac"),
            "graph_capture",
        )
        .cast(SCHEMA)
    )
