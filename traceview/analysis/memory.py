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
- memory at the peak: the blocks (memory_allocations) live at the device's whole-trace peak_ns
  (allocated at or before it, released after it or never), summed by `operator` = the block's
  top_op where known (Kineto: the outermost cpu_op, aten::linear rather than the aten::empty
  inside it; snapshots: the user code's frame), else its op (torch_npu: the operator that asked
  the allocator, often aten::empty_strided), else "(no operator)". What the peak holds beyond
  those blocks was allocated before the trace started (the model's weights, typically): the row
  "(allocated before the trace)"; a device without any block record has one row "(not
  attributed: no allocation records)" instead.

Units: bytes (Int64), ns; shares are fractions of the series' peak allocated.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from traceview.analysis.declare import analysis, use
from traceview.terms import BEFORE_TRACE, MEMORY_SERIES, REMAINDERS, UNATTRIBUTED  # noqa: F401 - REMAINDERS re-exported

#: The columns that name one memory series.
SERIES = MEMORY_SERIES
#: The series whose blocks memory_allocations holds, best first (Kineto: null; torch_npu: PTA+GE,
#: both allocators, whose blocks operator_memory.csv lists; else PTA).
BLOCK_COMPONENTS = (None, "PTA+GE", "PTA")
NO_OPERATOR = "(no operator)"
# The rows of memory_at_peak that are not blocks but what the blocks leave unexplained: REMAINDERS
# (BEFORE_TRACE, UNATTRIBUTED), the vocabulary's (`traceview.terms`).

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


@analysis("memory", inputs={"events": "memory_events"}, keys=(*SERIES, "ts_ns"))
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


@analysis(
    "memory_peaks",
    inputs={"timeline": use("memory"), "steps": "steps", "ranks": "ranks"},
    scope="rank",
    keys=(*SERIES, "step"),
)
def memory_peaks(timeline: pl.DataFrame, steps: pl.DataFrame, ranks: pl.DataFrame) -> pl.DataFrame:
    """Per memory series, for the whole trace (step null) and for each step: rank, device_type,
    device, component, step, records, peak_allocated_bytes, peak_ns, peak_reserved_bytes,
    basis, device_memory_bytes, peak_device_frac (module docstring). A step's values include what
    the series held as it started (its last record before the window, placed at the window's
    start: a step that only frees memory peaks at its start); `records` counts those inside the
    window. A step before a series' first record has no row. Sorted by series, whole trace
    first, then steps."""
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
        .with_columns(pl.lit(False).alias("_carried"))
    )
    # what each series holds as a step starts: its last record before the window, at the window's start
    key = pl.concat_str([pl.col(c).cast(pl.String).fill_null("-") for c in SERIES], separator="|").alias("_key")
    carried = (
        timeline.select(SERIES)
        .unique()
        .join(windows, on="rank", nulls_equal=True)
        .with_columns(key)
        .sort("_ws")
        .join_asof(  # by a text key: an as-of join matches no null key (Kineto's component, host memory's device)
            timeline.with_columns(key).drop(SERIES).sort("ts_ns"),
            left_on="_ws",
            right_on="ts_ns",
            by="_key",
            strategy="backward",
            allow_exact_matches=False,
            check_sortedness=False,
        )
        .filter(pl.col("ts_ns").is_not_null())
        .with_columns(pl.col("_ws").alias("ts_ns"), pl.lit(True).alias("_carried"))
    )
    whole = timeline.with_columns(pl.lit(None, pl.Int64).alias("step"), pl.lit(False).alias("_carried"))
    allocated = pl.col("allocated_bytes")
    peaks = (
        pl.concat([whole, stepped.select(whole.columns), carried.select(whole.columns)])
        .group_by([*SERIES, "step"])
        .agg(
            (~pl.col("_carried")).sum().alias("records"),
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


@analysis(
    "memory_at_peak",
    inputs={"peaks": use("memory_peaks"), "allocations": "memory_allocations"},
    scope="rank",
    keys=(*SERIES, "operator"),
)
def memory_at_peak(peaks: pl.DataFrame, allocations: pl.DataFrame) -> pl.DataFrame:
    """Per device at its whole-trace peak, the series whose blocks memory_allocations holds (the
    first of BLOCK_COMPONENTS present with basis "recorded": PyTorch's allocator; torch_npu's
    PTA+GE, else PTA, as operator_memory.csv lists both allocators' blocks): rank, device_type,
    device, component, peak_ns, operator, live_bytes, blocks, share_frac (live_bytes / the peak
    allocated). `operator` is the block's top_op where known, else its op, else NO_OPERATOR. The
    peak's bytes no block explains are one last row: BEFORE_TRACE when the device has blocks (the
    allocations the trace did not see begin), UNATTRIBUTED when it has none (nothing to say what
    held the peak); no such row when nothing is left. Sorted by series, then live_bytes
    descending, the remainder last."""
    order = {c: i for i, c in enumerate(BLOCK_COMPONENTS) if c is not None}
    rank_of = (
        pl.when(pl.col("component").is_null())
        .then(0)
        .otherwise(pl.col("component").replace_strict(order, default=None, return_dtype=pl.Int64))
    )
    device = ["rank", "device_type", "device"]
    at_peak = (
        peaks.filter(pl.col("step").is_null() & (pl.col("basis") == "recorded"))
        .with_columns(rank_of.alias("_c"))
        .drop_nulls("_c")
        .sort([*device, "_c"], nulls_last=True)
        .unique(device, keep="first", maintain_order=True)
        .select(*SERIES, "peak_ns", "peak_allocated_bytes")
    )
    blocks = allocations.join(at_peak, on=device, how="inner", nulls_equal=True)
    live = (
        blocks.filter(
            (pl.col("alloc_ns") <= pl.col("peak_ns"))
            & (pl.col("release_ns").is_null() | (pl.col("release_ns") > pl.col("peak_ns")))
        )
        .group_by(
            [
                *SERIES,
                "peak_ns",
                "peak_allocated_bytes",
                pl.coalesce("top_op", "op", pl.lit(NO_OPERATOR)).alias("operator"),
            ]
        )
        .agg(pl.col("size_bytes").sum().alias("live_bytes"), pl.len().cast(pl.Int64).alias("blocks"))
    )
    explained = live.group_by(SERIES).agg(pl.col("live_bytes").sum().alias("_explained"))
    has_blocks = blocks.select(*SERIES).unique().with_columns(pl.lit(True).alias("_blocks"))
    rest = (
        at_peak.join(explained, on=SERIES, how="left", nulls_equal=True)
        .join(has_blocks, on=SERIES, how="left", nulls_equal=True)
        .with_columns((pl.col("peak_allocated_bytes") - pl.col("_explained").fill_null(0)).alias("live_bytes"))
        .filter(pl.col("live_bytes") > 0)
        .select(
            *SERIES,
            "peak_ns",
            "peak_allocated_bytes",
            pl.when(pl.col("_blocks")).then(pl.lit(BEFORE_TRACE)).otherwise(pl.lit(UNATTRIBUTED)).alias("operator"),
            "live_bytes",
            pl.lit(None, pl.Int64).alias("blocks"),
        )
    )
    rows = pl.concat([live, rest], how="vertical_relaxed").with_columns(
        (pl.col("live_bytes") / pl.col("peak_allocated_bytes")).alias("share_frac"),
        pl.col("operator").is_in([BEFORE_TRACE, UNATTRIBUTED]).alias("_last"),
    )
    return rows.sort(
        [*SERIES, "_last", "live_bytes", "operator"],
        descending=[False, False, False, False, False, True, False],
        nulls_last=False,
    ).select(*SERIES, "peak_ns", "operator", "live_bytes", "blocks", "share_frac")


#: The component a rank's memory lane shows, best first (Kineto's allocator is component null; an
#: Nsight export's device memory, reserved only, is `cudaMalloc`).
LANE_COMPONENTS = (None, "PTA+GE", "PTA", "GE", "cudaMalloc")


@analysis("lane_memory", inputs={"timeline": use("memory"), "peaks": use("memory_peaks")}, keys=(*SERIES, "ts_ns"))
def lane_memory(timeline: pl.DataFrame, peaks: pl.DataFrame, ranks: Sequence[int] | None = None) -> pl.DataFrame:
    """The records (`memory` rows) of the series each rank's timeline lane shows (`lane_series`),
    of `ranks` only when given: what the memory figure draws."""
    series = lane_series(peaks)
    if ranks is not None:
        series = series.filter(pl.col("rank").is_in(list(ranks)))
    return timeline.join(series.select(SERIES), on=SERIES, how="inner", nulls_equal=True)


def lane_series(peaks: pl.DataFrame) -> pl.DataFrame:
    """Per rank, the one memory series its timeline lane shows: a device's (not host memory) with
    values, the first of LANE_COMPONENTS present, the device with the highest peak (allocated,
    else reserved) among those. Columns: rank, device_type, device, component,
    peak_allocated_bytes, peak_reserved_bytes."""
    order = {c: i for i, c in enumerate(LANE_COMPONENTS) if c is not None}
    rank_of = pl.col("component").replace_strict(order, default=len(LANE_COMPONENTS), return_dtype=pl.Int64)
    peak = pl.coalesce("peak_allocated_bytes", "peak_reserved_bytes")
    return (
        peaks.filter(pl.col("step").is_null() & pl.col("device").is_not_null() & peak.is_not_null())
        .with_columns(pl.when(pl.col("component").is_null()).then(0).otherwise(rank_of).alias("_c"), peak.alias("_p"))
        .filter(pl.col("_c") < len(LANE_COMPONENTS))
        .sort(["rank", "_c", "_p", "device"], descending=[False, False, True, False])
        .group_by("rank", maintain_order=True)
        .first()
        .select(*SERIES, "peak_allocated_bytes", "peak_reserved_bytes")
    )
