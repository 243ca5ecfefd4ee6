"""torch_npu's memory files -> memory_events and memory_allocations.

memory_record.csv (profile_memory=True): one row per change of a component's memory:
    Component, Timestamp(us), Total Allocated(MB), Total Reserved(MB), Total Active(MB),
    Stream Ptr, Device Type. Components: PTA (torch_npu's caching allocator), GE (the graph
    engine), PTA+GE (both), APP (the whole process, reserved only).
operator_memory.csv: one row per block an operator allocated: Name, Size(KB), Allocation Time(us),
    Release Time(us) (empty: not released in the trace), ..., Device Type.
npu_module_mem.csv: each CANN module's memory on the device over time: Component (the module:
    APP, HCCL, RUNTIME, GE, ...), Timestamp(us), Total Reserved(MB), Device. A module's series is
    named `module <NAME>` (MODULE_PREFIX): the module APP is not memory_record's APP (the module
    counts what the application's own module reserved, memory_record's APP the whole process). A
    module that holds nothing at every record (most of the ~78 listed) is left out.
MB are MiB (torch_npu divides bytes by 2^20) and KB KiB: both are converted back to bytes exactly
(the values are multiples of 2^-20 MiB, exact in float64). Times are decimal µs text, converted
exactly. `Device Type` is `NPU:<id>`.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from traceview import schema
from traceview.errors import TraceError, Warnings
from traceview.parsers.ascend.text import column, find_columns, read_text_csv
from traceview.parsers.timeconv import us_text_to_ns

MEMORY_RECORD_COLUMNS = {
    "component": ("component",),
    "ts": ("timestamp(us)",),
    "allocated": ("totalallocated(mb)",),
    "reserved": ("totalreserved(mb)",),
    "active": ("totalactive(mb)",),
    "device": ("devicetype", "device"),
}
OPERATOR_MEMORY_COLUMNS = {
    "op": ("name",),
    "size": ("size(kb)",),
    "alloc": ("allocationtime(us)",),
    "release": ("releasetime(us)",),
    "device": ("devicetype", "device"),
}
NPU_MODULE_MEM_COLUMNS = {
    "component": ("component",),
    "ts": ("timestamp(us)",),
    "reserved": ("totalreserved(mb)",),
    "device": ("device", "devicetype"),
}
#: The component name of a CANN module's memory series (`module HCCL`).
MODULE_PREFIX = "module "
NO_TIME = (
    "memory rows whose time is not decimal microseconds dropped (empty, or rounded by a spreadsheet to a "
    "form such as 1.69512E+15)"
)


def _scaled(expr: pl.Expr, factor: int) -> pl.Expr:
    """Decimal text in units of `factor` bytes -> Int64 bytes (null if not a number)."""
    return (expr.cast(pl.Float64, strict=False) * factor).round(0).cast(pl.Int64, strict=False)


def _device(expr: pl.Expr) -> tuple[pl.Expr, pl.Expr]:
    """`NPU:0` -> ("npu", 0); a text without an index -> (its lower case, null)."""
    parts = expr.str.extract_groups(r"^\s*([A-Za-z_]+)\s*:?\s*(\d+)?\s*$")
    kind = parts.struct.field("1").str.to_lowercase()
    return kind.alias("device_type"), parts.struct.field("2").cast(pl.Int64, strict=False).alias("device")


def read_memory_record(path: Path, warnings: Warnings) -> pl.DataFrame:
    """memory_record.csv -> memory_events (bytes, pid, tid and addr null: totals only)."""
    df = read_text_csv(path, MEMORY_RECORD_COLUMNS)
    cols = find_columns(df, MEMORY_RECORD_COLUMNS)
    mib = 1 << 20
    out = df.select(
        *_device(column(cols, "device")),
        column(cols, "component").alias("component"),
        us_text_to_ns(column(cols, "ts")).alias("ts_ns"),
        _scaled(column(cols, "allocated"), mib).alias("total_allocated_bytes"),
        _scaled(column(cols, "reserved"), mib).alias("total_reserved_bytes"),
        _scaled(column(cols, "active"), mib).alias("total_active_bytes"),
    )
    warnings.add(NO_TIME, out["ts_ns"].null_count())
    return schema.conform(out.drop_nulls("ts_ns").sort("ts_ns", maintain_order=True), "memory_events")


def read_operator_memory(path: Path, warnings: Warnings) -> pl.DataFrame:
    """operator_memory.csv -> memory_allocations (top_op and addr null)."""
    df = read_text_csv(path, OPERATOR_MEMORY_COLUMNS)
    cols = find_columns(df, OPERATOR_MEMORY_COLUMNS)
    out = df.select(
        *_device(column(cols, "device")),
        column(cols, "op").alias("op"),
        _scaled(column(cols, "size"), 1024).alias("size_bytes"),
        us_text_to_ns(column(cols, "alloc")).alias("alloc_ns"),
        us_text_to_ns(column(cols, "release")).alias("release_ns"),
    )
    warnings.add(NO_TIME, out["alloc_ns"].null_count())
    return schema.conform(out.drop_nulls("alloc_ns"), "memory_allocations")


def holding_modules(events: pl.DataFrame) -> pl.DataFrame:
    """Module memory records of the modules that hold memory at some record (the others dropped)."""
    holds = pl.col("total_reserved_bytes").fill_null(0).max().over("device_type", "device", "component") > 0
    return events.filter(holds)


#: The warning when npu_module_mem.csv cannot be read: the rank loads without its module series.
MODULE_MEM_UNREADABLE = "npu_module_mem.csv not read (the CANN modules' memory is left out)"


def read_npu_module_mem(path: Path, warnings: Warnings) -> pl.DataFrame | None:
    """npu_module_mem.csv -> memory_events of the modules that hold memory (reserved only); a
    module without a name is `module ?`. The file is extra: when it cannot be read (empty, columns
    missing) the rank loads without it, with a warning naming why, and this returns None."""
    try:
        df = read_text_csv(path, NPU_MODULE_MEM_COLUMNS)
        cols = find_columns(df, NPU_MODULE_MEM_COLUMNS)
    except TraceError as exc:
        warnings.add(f"{MODULE_MEM_UNREADABLE}: {exc.problem}")
        return None
    out = df.select(
        *_device(column(cols, "device")),
        (MODULE_PREFIX + column(cols, "component").str.strip_chars().fill_null("?")).alias("component"),
        us_text_to_ns(column(cols, "ts")).alias("ts_ns"),
        _scaled(column(cols, "reserved"), 1 << 20).alias("total_reserved_bytes"),
    )
    warnings.add(NO_TIME, out["ts_ns"].null_count())
    out = holding_modules(out.drop_nulls("ts_ns"))
    return schema.conform(out.sort("ts_ns", maintain_order=True), "memory_events")
