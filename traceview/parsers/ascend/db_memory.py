"""The DB export's memory tables -> memory_events and memory_allocations (as the text export's
memory_record.csv, npu_module_mem.csv and operator_memory.csv, `memory`): bytes and ns already;
component and operator names are STRING_IDS ids, module names ENUM_MODULE ids (`db_ids.Names`);
device npu:<deviceId>.

- MEMORY_RECORD(component, timestamp, totalAllocated, totalReserved, totalActive, deviceId)
  -> memory_events, by time.
- NPU_MODULE_MEM(moduleId, timestampNs, totalReserved, deviceId) -> memory_events: the modules
  that hold memory (`memory.holding_modules`), each a `module <NAME>` reserved series.
- OP_MEMORY(name, size, allocationTime, releaseTime, deviceId) -> memory_allocations; a missing
  releaseTime is a block not released within the trace. Rows with no allocation time, released
  before they were allocated, or with a time beyond ±2**62 ns are dropped, counted
  (`base.drop_bad_times`).
"""

from __future__ import annotations

import polars as pl

from traceview.errors import Warnings
from traceview.parsers.ascend.db_ids import Names
from traceview.parsers.ascend.memory import MODULE_PREFIX, holding_modules
from traceview.parsers.base import drop_bad_times
from traceview.parsers.sqlite_columns import INT, KEY, Column, query, settle
from traceview.parsers.sqlite_ro import Database


def read_db_memory(
    db: Database, tables: set[str], strings: Names | None, warnings: Warnings
) -> tuple[pl.DataFrame | None, pl.DataFrame | None]:
    """(memory_events, memory_allocations) of the module docstring; None for a table the export
    lacks (`strings`: STRING_IDS, None when it has none)."""
    events = allocations = None
    if "MEMORY_RECORD" in tables and strings is not None:
        record = "MEMORY_RECORD"
        columns = [
            Column("ts_ns", "timestamp", INT, record, time=True),
            Column("total_allocated_bytes", "totalAllocated", INT, record),
            Column("total_reserved_bytes", "totalReserved", INT, record),
            Column("total_active_bytes", "totalActive", INT, record),
            Column("device", "deviceId", INT, record),
            Column("component_id", "component", KEY, record),
        ]
        frame = strings.look_up(query(db, columns, f"FROM {record}"), {"component_id": "component"}, warnings)
        events = (
            settle(frame, columns, warnings)
            .select("component", *(c.out for c in columns[:-1]))
            .sort("ts_ns", maintain_order=True)
            .with_columns(pl.lit("npu").alias("device_type"))
        )
    if {"NPU_MODULE_MEM", "ENUM_MODULE"} <= tables:
        module = "NPU_MODULE_MEM"
        columns = [
            Column("ts_ns", "timestampNs", INT, module, time=True),
            Column("total_reserved_bytes", "totalReserved", INT, module),
            Column("device", "deviceId", INT, module),
            Column("component_id", "moduleId", KEY, module),
        ]
        names = Names.read(db, "ENUM_MODULE", warnings)
        frame = names.look_up(query(db, columns, f"FROM {module}"), {"component_id": "component"}, warnings)
        modules = (
            settle(frame, columns, warnings)
            .select("component", *(c.out for c in columns[:-1]))
            .sort("ts_ns", maintain_order=True)
            .with_columns(
                (MODULE_PREFIX + pl.col("component").fill_null("?")).alias("component"),
                pl.lit("npu").alias("device_type"),
            )
        )
        modules = holding_modules(modules)
        events = modules if events is None else pl.concat([events, modules], how="diagonal_relaxed")
    if "OP_MEMORY" in tables and strings is not None:
        op = "OP_MEMORY"
        columns = [
            Column("size_bytes", "size", INT, op),
            Column("alloc_ns", "allocationTime", INT, op, time=True),
            Column("release_ns", "releaseTime", INT, op, time=True),
            Column("device", "deviceId", INT, op),
            Column("op_id", "name", KEY, op),
        ]
        frame = strings.look_up(query(db, columns, f"FROM {op}"), {"op_id": "op"}, warnings)
        allocations = (
            settle(frame, columns, warnings)
            .select("op", *(c.out for c in columns[:-1]))
            .with_columns(pl.lit("npu").alias("device_type"))
        )
        allocations = drop_bad_times(allocations, f"rows of {op}", warnings, "alloc_ns", "release_ns", open_end=True)
    return events, allocations
