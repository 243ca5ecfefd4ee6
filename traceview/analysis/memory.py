"""Device memory: the allocator's timeline, its peaks per step and trace, and what is held at the peak.

A memory series is one (rank, device_type, device, component): one device's allocator (Kineto:
PyTorch's caching allocator, component null; Ascend: each memory_record Component). Definitions:

- allocated_bytes: memory handed out by the allocator after a record: its `total_allocated_bytes`;
  for a series that records only changes (Kineto traces before PyTorch 1.10), the running sum of
  `bytes` from the series' first record, basis "relative" (what was allocated before the trace
  started is not in it), else basis "recorded".
- reserved_bytes: memory the allocator holds from the device (its cache), `total_reserved_bytes`.
- peak_allocated_bytes: the largest allocated_bytes in a window; peak_ns: the first record that
  reached it. Windows: the whole trace (step null) and each step's host window [host start, host
  end) (the device window where the step has no host range), as in `Trace.select_steps`.
- peak_device_frac: the series' peak reserved (its peak allocated where reserved is not recorded)
  over the device's memory (`ranks.device_memory_bytes`, given to the series with a device index,
  never to host memory); null when the device's memory is unknown.
- memory at the peak: the blocks (memory_allocations) live at the whole-trace peak_ns of the
  series they belong to (allocated at or before it, released after it or never), summed by
  `operator` = the block's top_op where known (the outermost cpu_op: aten::linear rather than the
  aten::empty inside it), else its op. What the peak holds beyond those blocks was allocated before
  the trace started (the model's weights, typically): the row "(allocated before the trace)".

Units: bytes (Int64), ns; shares are fractions of the series' peak allocated.
"""

from __future__ import annotations

import polars as pl

#: The columns that name one memory series.
SERIES = ["rank", "device_type", "device", "component"]
#: The components whose blocks memory_allocations holds (Kineto: null; torch_npu: PTA, its caching
#: allocator, whose blocks operator_memory.csv lists).
BLOCK_COMPONENTS = (None, "PTA")
BEFORE_TRACE = "(allocated before the trace)"

TIMELINE_SCHEMA = pl.Schema(
    {
        "rank": pl.Int64,
        "device_type": pl.String,
        "device": pl.Int64,
        "component": pl.String,
        "ts_ns": pl.Int64,
        "allocated_bytes": pl.Int64,
        "reserved_bytes": pl.Int64,
        "active_bytes": pl.Int64,
        "basis": pl.String,
    }
)


def memory_timeline(events: pl.DataFrame) -> pl.DataFrame:
    """Per memory series and record, in time order: rank, device_type, device, component, ts_ns,
    allocated_bytes, reserved_bytes, active_bytes (Ascend's Total Active; else null) and basis
    ("recorded" or "relative", see the module docstring; null for a series that records neither
    allocated nor changes, such as Ascend's APP component)."""
    if events.is_empty():
        return pl.DataFrame(schema=TIMELINE_SCHEMA)
    recorded = pl.col("total_allocated_bytes").is_not_null().any().over(SERIES)
    changes = pl.col("bytes").is_not_null().any().over(SERIES)
    return (
        events.sort([*SERIES, "ts_ns"], maintain_order=True, nulls_last=True)
        .with_columns(
            pl.when(recorded)
            .then(pl.col("total_allocated_bytes"))
            .when(changes)
            .then(pl.col("bytes").fill_null(0).cum_sum().over(SERIES))
            .alias("allocated_bytes"),
            pl.when(recorded).then(pl.lit("recorded")).when(changes).then(pl.lit("relative")).alias("basis"),
        )
        .select(
            *SERIES,
            "ts_ns",
            "allocated_bytes",
            pl.col("total_reserved_bytes").alias("reserved_bytes"),
            pl.col("total_active_bytes").alias("active_bytes"),
            "basis",
        )
    )


def memory_peaks(timeline: pl.DataFrame, steps: pl.DataFrame, ranks: pl.DataFrame) -> pl.DataFrame:
    """Per memory series, for the whole trace (step null) and for each step: rank, device_type,
    device, component, step, records, peak_allocated_bytes, peak_ns, peak_reserved_bytes,
    basis, device_memory_bytes, peak_device_frac (module docstring). A step without records has no
    row. Sorted by series, whole trace first, then steps."""
    windows = (
        steps.select(
            "rank",
            "step",
            pl.coalesce("host_start_ns", "device_start_ns").alias("_ws"),
            pl.coalesce("host_end_ns", "device_end_ns").alias("_we"),
        )
        .drop_nulls()
        .sort("_ws")
    )
    stepped = (
        timeline.sort("ts_ns")
        .join_asof(windows, left_on="ts_ns", right_on="_ws", by="rank", check_sortedness=False)
        .filter(pl.col("ts_ns") < pl.col("_we"))
        .drop("_ws", "_we")
    )
    whole = timeline.with_columns(pl.lit(None, pl.Int64).alias("step"))
    allocated = pl.col("allocated_bytes")
    peaks = (
        pl.concat([whole, stepped.select(whole.columns)])
        .group_by([*SERIES, "step"])
        .agg(
            pl.len().alias("records"),
            allocated.max().alias("peak_allocated_bytes"),
            pl.col("ts_ns").filter(allocated == allocated.max()).min().alias("peak_ns"),
            pl.col("reserved_bytes").max().alias("peak_reserved_bytes"),
            pl.col("basis").drop_nulls().first().alias("basis"),
        )
        .join(ranks.select("rank", "device_memory_bytes"), on="rank", how="left", nulls_equal=True)
        .with_columns(  # the device's memory is not the host's
            pl.when(pl.col("device").is_not_null()).then(pl.col("device_memory_bytes")).alias("device_memory_bytes")
        )
        .with_columns(
            (
                pl.coalesce("peak_reserved_bytes", "peak_allocated_bytes").cast(pl.Float64)
                / pl.col("device_memory_bytes")
            ).alias("peak_device_frac")
        )
    )
    return peaks.sort([*SERIES, "step"], nulls_last=False).with_columns(pl.col("records").cast(pl.Int64))


def memory_at_peak(peaks: pl.DataFrame, allocations: pl.DataFrame) -> pl.DataFrame:
    """Per device's block-holding series (BLOCK_COMPONENTS, basis "recorded") at its whole-trace
    peak: rank, device_type, device, component, peak_ns, operator, live_bytes, blocks, share_frac
    (live_bytes / the peak allocated), the last row of a series being BEFORE_TRACE with what the
    blocks do not explain (no row when that is zero or less). Sorted by series, then live_bytes
    descending (BEFORE_TRACE last)."""
    at_peak = peaks.filter(
        pl.col("step").is_null()
        & (pl.col("component").is_null() | pl.col("component").is_in([c for c in BLOCK_COMPONENTS if c]))
        & (pl.col("basis") == "recorded")
    ).select(*SERIES, "peak_ns", "peak_allocated_bytes")
    device = ["rank", "device_type", "device"]
    live = (
        allocations.join(at_peak, on=device, how="inner", nulls_equal=True)
        .filter(
            (pl.col("alloc_ns") <= pl.col("peak_ns"))
            & (pl.col("release_ns").is_null() | (pl.col("release_ns") > pl.col("peak_ns")))
        )
        .group_by([*SERIES, "peak_ns", "peak_allocated_bytes", pl.coalesce("top_op", "op").alias("operator")])
        .agg(pl.col("size_bytes").sum().alias("live_bytes"), pl.len().cast(pl.Int64).alias("blocks"))
    )
    explained = live.group_by(SERIES).agg(pl.col("live_bytes").sum().alias("_explained"))
    before = (
        at_peak.join(explained, on=SERIES, how="left", nulls_equal=True)
        .with_columns((pl.col("peak_allocated_bytes") - pl.col("_explained").fill_null(0)).alias("live_bytes"))
        .filter(pl.col("live_bytes") > 0)
        .select(
            *SERIES,
            "peak_ns",
            "peak_allocated_bytes",
            pl.lit(BEFORE_TRACE).alias("operator"),
            "live_bytes",
            pl.lit(None, pl.Int64).alias("blocks"),
        )
    )
    rows = pl.concat([live, before], how="vertical_relaxed").with_columns(
        (pl.col("live_bytes") / pl.col("peak_allocated_bytes")).alias("share_frac"),
        (pl.col("operator") == BEFORE_TRACE).alias("_last"),
    )
    return rows.sort(
        [*SERIES, "_last", "live_bytes", "operator"],
        descending=[False, False, False, False, False, True, False],
        nulls_last=False,
    ).select(*SERIES, "peak_ns", "operator", "live_bytes", "blocks", "share_frac")


#: The component a rank's memory lane shows, best first (Kineto's allocator is component null).
LANE_COMPONENTS = (None, "PTA+GE", "PTA", "GE")


def lane_series(peaks: pl.DataFrame) -> pl.DataFrame:
    """Per rank, the one memory series its timeline lane shows: a device's (not host memory) with
    allocated values, the first of LANE_COMPONENTS present, the device with the highest peak among
    those. Columns: rank, device_type, device, component, peak_allocated_bytes, peak_reserved_bytes."""
    order = {c: i for i, c in enumerate(LANE_COMPONENTS) if c is not None}
    rank_of = pl.col("component").replace_strict(order, default=len(LANE_COMPONENTS), return_dtype=pl.Int64)
    return (
        peaks.filter(
            pl.col("step").is_null() & pl.col("device").is_not_null() & pl.col("peak_allocated_bytes").is_not_null()
        )
        .with_columns(pl.when(pl.col("component").is_null()).then(0).otherwise(rank_of).alias("_c"))
        .filter(pl.col("_c") < len(LANE_COMPONENTS))
        .sort(["rank", "_c", "peak_allocated_bytes", "device"], descending=[False, False, True, False])
        .group_by("rank", maintain_order=True)
        .first()
        .select(*SERIES, "peak_allocated_bytes", "peak_reserved_bytes")
    )
