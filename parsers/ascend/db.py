"""The DB-only export (`ASCEND_PROFILER_OUTPUT/ascend_pytorch_profiler_<rank>.db`, SQLite, opened
read only) -> device tasks, host events and host step ranges.

Used when there is no kernel_details.csv and no trace_view.json. Text columns are ids into
STRING_IDS(id, value); times are Int64 ns already.
- device_tasks, compute: COMPUTE_TASK_INFO c JOIN TASK t ON globalTaskId: name = c.name,
  op_type = c.opType, core_type = c.taskType (AI_CORE, AI_VECTOR_CORE, MIX_AIV, DSA_SQE: the
  kernel_details `Accelerator Core`), input_shapes = c.inputShapes, start/end = t.startNs/
  t.endNs, stream = t.streamId, device = t.deviceId, correlation = t.connectionId,
  aic_mac_ns / aiv_vec_ns = TASK_PMU_INFO 'aic_mac_time' / 'aiv_vec_time' (µs).
  TASK rows without COMPUTE_TASK_INFO (MEMCPY_ASYNC, EVENT_*, HCCL sub-tasks) are skipped, as
  for trace_view.json.
- device_tasks, communication: COMMUNICATION_OP: name = opName, op_type = opType, start/end =
  startNs/endNs, correlation = connectionId, core_type "HCCL", stream null (its sub-tasks in
  COMMUNICATION_TASK_INFO are not loaded).
- launch_ns of a task: start of the CANN_API row with the same connectionId.
- host_events: PYTORCH_API (type via ENUM_API_TYPE: op -> operator, queue -> runtime, trace ->
  python, mstx -> annotation; `ProfilerStep#N` -> annotation) and CANN_API (-> runtime,
  correlation = connectionId); pid/tid = globalTid >> 32 / globalTid & 0xffffffff.
- host steps: STEP_TIME(id, startNs, endNs) = host ProfilerStep ranges (else the ProfilerStep#N
  host events); tasks get their step from the launch inside a step range (`steps.fill_steps`).
- memory: MEMORY_RECORD -> memory_events, OP_MEMORY -> memory_allocations (as the text export's
  memory_record.csv and operator_memory.csv; `_db_memory`).
- meta: device_name = NPU_INFO.name (the DB records the model, e.g. Ascend910B); rank =
  RANK_DEVICE_MAP.rankId (used when there is no profiler_info file).
On the real level-2 sample the DB tasks give Stage = 124219.742 µs and Preparing = 17894.588 µs,
exactly analysis.db's StepTraceTime. (analysis.db itself, torch_npu's own numbers, is read by
`reference`.)
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import polars as pl

from traceview.errors import TraceError, Warnings
from traceview.parsers.ascend.kinds import task_kind
from traceview.parsers.ascend.memory import MODULE_PREFIX, holding_modules
from traceview.parsers.ascend.steps import HOST_STEP_SCHEMA, host_step_ranges
from traceview.parsers.ascend.text import texts
from traceview.parsers.sqlite_ro import PENDING_WAL, connect_ro, pending_wal, table_names
from traceview.parsers.steps import STEP_NAME
from traceview.parsers.timeconv import us_text_to_ns

#: ENUM_API_TYPE name of a PYTORCH_API row -> host kind.
DB_PYTORCH_API_KINDS: dict[str, str] = {"op": "operator", "queue": "runtime", "trace": "python", "mstx": "annotation"}


def query(con: sqlite3.Connection, sql: str, schema: dict[str, pl.DataType]) -> pl.DataFrame:
    """Run `sql` and return its rows as a frame with `schema` (column order = SELECT order).

    String columns get each value's text (a REAL by its exact repr, not SQLite's 15-digit text);
    other columns are cast (non-convertible values -> null).
    """
    rows = con.execute(sql).fetchall()
    columns = list(zip(*rows)) if rows else [()] * len(schema)
    data = {}
    for (name, dtype), values in zip(schema.items(), columns):
        if dtype == pl.String:
            data[name] = pl.Series(name, texts(list(values)), dtype=pl.String)
        else:
            data[name] = pl.Series(name, list(values), strict=False).cast(dtype, strict=False)
    return pl.DataFrame(data)


def read_profiler_db(path: Path, warnings: Warnings) -> dict:
    """ascend_pytorch_profiler_<rank>.db -> {"tasks", "host_events", "host_steps", "device_name", "rank"}."""
    if pending_wal(path):
        warnings.add(PENDING_WAL)
    con = connect_ro(path)
    try:
        tables = table_names(con)
        if not {"TASK", "COMPUTE_TASK_INFO", "STRING_IDS"} <= tables and "COMMUNICATION_OP" not in tables:
            raise TraceError(
                path,
                "this DB export has no TASK/COMPUTE_TASK_INFO/COMMUNICATION_OP tables (unsupported DB layout)",
                "re-export with torch_npu's text output (export_type text) to get kernel_details.csv",
            )
        parts = []
        if {"TASK", "COMPUTE_TASK_INFO", "STRING_IDS"} <= tables:
            parts.append(_db_compute_tasks(con, "TASK_PMU_INFO" in tables))
        if {"COMMUNICATION_OP", "STRING_IDS"} <= tables:
            parts.append(_db_comm_ops(con))
        tasks = pl.concat(parts, how="diagonal_relaxed") if parts else pl.DataFrame()
        launches = _db_launches(con) if "CANN_API" in tables else None
        if launches is not None:
            tasks = tasks.join(launches, on="correlation", how="left")
        else:
            tasks = tasks.with_columns(pl.lit(None, dtype=pl.Int64).alias("launch_ns"))
        tasks = tasks.with_columns(
            pl.lit(None, dtype=pl.Int64).alias("step"),
            task_kind(pl.col("name"), pl.col("op_type"), pl.col("core_type")).alias("kind"),
        ).sort("start_ns", "stream", nulls_last=True, maintain_order=True)
        host = _db_host_events(con, tables)
        steps = (
            query(con, "SELECT id, startNs, endNs FROM STEP_TIME", HOST_STEP_SCHEMA)
            if "STEP_TIME" in tables
            else host_step_ranges(host)
        ).sort("host_start_ns")
        memory_events, allocations = _db_memory(con, tables)
        device_name = rank = None
        if "NPU_INFO" in tables:
            device_name = con.execute("SELECT name FROM NPU_INFO LIMIT 1").fetchone()
        if "RANK_DEVICE_MAP" in tables:
            rank = con.execute("SELECT rankId FROM RANK_DEVICE_MAP LIMIT 1").fetchone()
    except sqlite3.Error as exc:
        raise TraceError(
            path, f"cannot query the DB export ({exc})", "re-export with text output (export_type text)"
        ) from None
    finally:
        con.close()
    rank_value = rank[0] if rank and isinstance(rank[0], int) and rank[0] >= 0 else None
    return {
        "tasks": tasks,
        "host_events": host,
        "host_steps": steps,
        "device_name": device_name[0] if device_name and device_name[0] else None,
        "rank": rank_value,
        "memory_events": memory_events,
        "memory_allocations": allocations,
    }


def _db_memory(con: sqlite3.Connection, tables: set[str]) -> tuple[pl.DataFrame | None, pl.DataFrame | None]:
    """MEMORY_RECORD -> memory_events and OP_MEMORY -> memory_allocations (the DB export's
    memory_record.csv / operator_memory.csv: bytes and ns already; component and operator names
    via STRING_IDS; device npu:<deviceId>), with NPU_MODULE_MEM's modules that hold memory
    (npu_module_mem.csv: names via ENUM_MODULE, `module <NAME>` series); None for a table the
    export lacks."""
    events = allocations = None
    if {"MEMORY_RECORD", "STRING_IDS"} <= tables:
        events = query(
            con,
            "SELECT s.value, m.timestamp, m.totalAllocated, m.totalReserved, m.totalActive, m.deviceId "
            "FROM MEMORY_RECORD m LEFT JOIN STRING_IDS s ON s.id = m.component ORDER BY m.timestamp",
            {
                "component": pl.String,
                "ts_ns": pl.Int64,
                "total_allocated_bytes": pl.Int64,
                "total_reserved_bytes": pl.Int64,
                "total_active_bytes": pl.Int64,
                "device": pl.Int64,
            },
        ).with_columns(pl.lit("npu").alias("device_type"))
    if {"NPU_MODULE_MEM", "ENUM_MODULE"} <= tables:
        modules = query(
            con,
            "SELECT e.name, m.timestampNs, m.totalReserved, m.deviceId "
            "FROM NPU_MODULE_MEM m LEFT JOIN ENUM_MODULE e ON e.id = m.moduleId ORDER BY m.timestampNs",
            {"component": pl.String, "ts_ns": pl.Int64, "total_reserved_bytes": pl.Int64, "device": pl.Int64},
        ).with_columns(
            (MODULE_PREFIX + pl.col("component").fill_null("?")).alias("component"), pl.lit("npu").alias("device_type")
        )
        modules = holding_modules(modules)
        events = modules if events is None else pl.concat([events, modules], how="diagonal_relaxed")
    if {"OP_MEMORY", "STRING_IDS"} <= tables:
        allocations = query(
            con,
            "SELECT s.value, o.size, o.allocationTime, o.releaseTime, o.deviceId "
            "FROM OP_MEMORY o LEFT JOIN STRING_IDS s ON s.id = o.name",
            {"op": pl.String, "size_bytes": pl.Int64, "alloc_ns": pl.Int64, "release_ns": pl.Int64, "device": pl.Int64},
        ).with_columns(pl.lit("npu").alias("device_type"))
    return events, allocations


def _db_compute_tasks(con: sqlite3.Connection, has_pmu: bool) -> pl.DataFrame:
    """COMPUTE_TASK_INFO x TASK (+ TASK_PMU_INFO aic_mac_time / aiv_vec_time, µs) -> task rows."""
    sql = """
        SELECT c.globalTaskId, n.value, t.startNs, t.endNs, t.streamId, t.deviceId, o.value, k.value,
               s.value, t.connectionId, dt.value, os.value
        FROM COMPUTE_TASK_INFO c JOIN TASK t ON t.globalTaskId = c.globalTaskId
        LEFT JOIN STRING_IDS n ON n.id = c.name
        LEFT JOIN STRING_IDS o ON o.id = c.opType
        LEFT JOIN STRING_IDS k ON k.id = c.taskType
        LEFT JOIN STRING_IDS s ON s.id = c.inputShapes
        LEFT JOIN STRING_IDS dt ON dt.id = c.inputDataTypes
        LEFT JOIN STRING_IDS os ON os.id = c.outputShapes"""
    df = query(
        con,
        sql,
        {
            "global_task_id": pl.Int64,
            "name": pl.String,
            "start_ns": pl.Int64,
            "end_ns": pl.Int64,
            "stream": pl.Int64,
            "device": pl.Int64,
            "op_type": pl.String,
            "core_type": pl.String,
            "input_shapes": pl.String,
            "correlation": pl.Int64,
            "input_types": pl.String,
            "output_shapes": pl.String,
        },
    )
    df = df.with_columns(
        (pl.col("end_ns") - pl.col("start_ns")).alias("dur_ns"),
        *(pl.col(c).str.strip_chars('"') for c in ("input_shapes", "input_types", "output_shapes")),
    )
    if has_pmu:
        pmu = query(
            con,
            """SELECT p.globalTaskId, k.value, p.value FROM TASK_PMU_INFO p
               JOIN STRING_IDS k ON k.id = p.name WHERE k.value IN ('aic_mac_time', 'aiv_vec_time')""",
            {"global_task_id": pl.Int64, "metric": pl.String, "value": pl.String},
        )
        pmu = pmu.group_by("global_task_id").agg(
            us_text_to_ns(pl.col("value").filter(pl.col("metric") == "aic_mac_time").first()).alias("aic_mac_ns"),
            us_text_to_ns(pl.col("value").filter(pl.col("metric") == "aiv_vec_time").first()).alias("aiv_vec_ns"),
        )
        df = df.join(pmu, on="global_task_id", how="left")
    return df.drop("global_task_id")


def _db_comm_ops(con: sqlite3.Connection) -> pl.DataFrame:
    """COMMUNICATION_OP -> task rows (core_type HCCL, stream null)."""
    sql = """
        SELECT n.value, o.startNs, o.endNs, t.value, o.connectionId
        FROM COMMUNICATION_OP o
        LEFT JOIN STRING_IDS n ON n.id = o.opName
        LEFT JOIN STRING_IDS t ON t.id = o.opType"""
    df = query(
        con,
        sql,
        {"name": pl.String, "start_ns": pl.Int64, "end_ns": pl.Int64, "op_type": pl.String, "correlation": pl.Int64},
    )
    return df.with_columns(
        (pl.col("end_ns") - pl.col("start_ns")).alias("dur_ns"),
        pl.lit("HCCL").alias("core_type"),
        pl.lit(None, dtype=pl.Int64).alias("stream"),
    )


def _db_launches(con: sqlite3.Connection) -> pl.DataFrame:
    """CANN_API connectionId -> launch_ns (API start)."""
    df = query(con, "SELECT connectionId, startNs FROM CANN_API", {"correlation": pl.Int64, "launch_ns": pl.Int64})
    return df.drop_nulls("correlation").group_by("correlation").agg(pl.col("launch_ns").min())


def _db_host_events(con: sqlite3.Connection, tables: set[str]) -> pl.DataFrame:
    """PYTORCH_API + CANN_API -> host_events columns."""
    enum = dict(con.execute("SELECT id, name FROM ENUM_API_TYPE").fetchall()) if "ENUM_API_TYPE" in tables else {}
    schema = {
        "start_ns": pl.Int64,
        "end_ns": pl.Int64,
        "global_tid": pl.Int64,
        "correlation": pl.Int64,
        "name": pl.String,
        "api_type": pl.Int64,
    }
    type_name = pl.col("api_type").replace_strict(enum, default=None, return_dtype=pl.String)
    parts = []
    if {"PYTORCH_API", "STRING_IDS"} <= tables:
        torch = query(
            con,
            """SELECT p.startNs, p.endNs, p.globalTid, NULL, s.value, p.type
               FROM PYTORCH_API p LEFT JOIN STRING_IDS s ON s.id = p.name""",
            schema,
        )
        parts.append(
            torch.with_columns(
                type_name.alias("cat"),
                pl.when(pl.col("name").str.contains(STEP_NAME).fill_null(False))
                .then(pl.lit("annotation"))
                .otherwise(type_name.replace_strict(DB_PYTORCH_API_KINDS, default="other"))
                .alias("kind"),
            )
        )
    if {"CANN_API", "STRING_IDS"} <= tables:
        cann = query(
            con,
            """SELECT a.startNs, a.endNs, a.globalTid, a.connectionId, s.value, a.type
               FROM CANN_API a LEFT JOIN STRING_IDS s ON s.id = a.name""",
            schema,
        )
        parts.append(cann.with_columns(type_name.alias("cat"), pl.lit("runtime").alias("kind")))
    if not parts:
        return pl.DataFrame(schema={"name": pl.String, "start_ns": pl.Int64, "end_ns": pl.Int64})
    host = pl.concat(parts, how="diagonal_relaxed")
    return host.select(
        (pl.col("global_tid") // (1 << 32)).alias("pid"),
        (pl.col("global_tid") % (1 << 32)).alias("tid"),
        "name",
        "cat",
        "kind",
        "start_ns",
        "end_ns",
        (pl.col("end_ns") - pl.col("start_ns")).alias("dur_ns"),
        "correlation",
    ).sort("start_ns")
