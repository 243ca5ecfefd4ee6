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
  correlation = connectionId); pid/tid = globalTid >> 32 / globalTid & 0xffffffff. Host events
  no number can use (`base.drop_bad_times`) are dropped before the steps are built from them.
- host steps: STEP_TIME(id, startNs, endNs) = host ProfilerStep ranges (else the ProfilerStep#N
  host events); tasks get their step from the launch inside a step range (`steps.fill_steps`).
- memory: MEMORY_RECORD -> memory_events, OP_MEMORY -> memory_allocations (as the text export's
  memory_record.csv and operator_memory.csv; `_db_memory`).
- meta: device_name = NPU_INFO.name (the DB records the model, e.g. Ascend910B); rank =
  RANK_DEVICE_MAP.rankId (used when there is no profiler_info file).
Every table read is a stored table (`sqlite_ro.Database.tables`: a view or computed table named
like one is ignored, with a warning) and every column is typed (`sqlite_columns`): an id or time
that is not an integer (a TEXT holding exactly one is that integer: torch_npu declares
PYTORCH_API's times TEXT) and a STRING_IDS value that is not text are read as missing and counted;
a row whose time is not an integer is dropped. STEP_TIME rows with a missing time, an end before
the start or a time beyond ±2**62 ns are dropped and counted (`base.drop_bad_times`, as for device
tasks and host events; OP_MEMORY: `_db_memory`).
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
from traceview.parsers.ascend.steps import host_step_ranges
from traceview.parsers.base import drop_bad_times
from traceview.parsers.sqlite_columns import INT, KEY, NUMBER, TEXT, Column, select
from traceview.parsers.sqlite_ro import PENDING_WAL, Database, open_database, pending_wal
from traceview.parsers.steps import STEP_NAME
from traceview.parsers.timeconv import us_text_to_ns

#: ENUM_API_TYPE name of a PYTORCH_API row -> host kind.
DB_PYTORCH_API_KINDS: dict[str, str] = {"op": "operator", "queue": "runtime", "trace": "python", "mstx": "annotation"}
#: The tables read (only stored tables of these names are).
READ_TABLES = (
    "TASK",
    "COMPUTE_TASK_INFO",
    "STRING_IDS",
    "TASK_PMU_INFO",
    "COMMUNICATION_OP",
    "CANN_API",
    "ENUM_API_TYPE",
    "PYTORCH_API",
    "STEP_TIME",
    "NPU_INFO",
    "RANK_DEVICE_MAP",
    "MEMORY_RECORD",
    "NPU_MODULE_MEM",
    "ENUM_MODULE",
    "OP_MEMORY",
)
FIX = "re-export with text output (export_type text)"


def _name(out: str, alias: str, table: str = "STRING_IDS") -> Column:
    """The text of a STRING_IDS (or enum table) row joined as `alias`."""
    return Column(out, f"{alias}.{'name' if table.startswith('ENUM_') else 'value'}", TEXT, table)


def _join(alias: str, key: str, table: str = "STRING_IDS") -> str:
    """LEFT JOIN of a string / enum table on an id column (`_ids` counts ids that are not integers)."""
    return f"LEFT JOIN {table} {alias} ON {alias}.id = {key}"


def _ids(table: str, *exprs: str) -> list[Column]:
    """Id columns only checked (join keys): one that is not an integer is counted (what it names
    is missing: it matches no id)."""
    return [Column(None, e, KEY, table) for e in exprs]


def read_profiler_db(path: Path, warnings: Warnings) -> dict:
    """ascend_pytorch_profiler_<rank>.db -> {"tasks", "host_events", "host_steps", "device_name", "rank"}."""
    if pending_wal(path):
        warnings.add(PENDING_WAL)
    try:
        with open_database(path, warnings=warnings) as db:
            return _read(db, path, warnings)
    except sqlite3.Error as exc:
        raise TraceError(path, f"cannot query the DB export ({exc})", FIX) from None


def _read(db: Database, path: Path, warnings: Warnings) -> dict:
    tables = db.tables(READ_TABLES)
    compute = {"TASK", "COMPUTE_TASK_INFO", "STRING_IDS"} <= tables
    comm = {"COMMUNICATION_OP", "STRING_IDS"} <= tables
    if not compute and not comm:
        raise TraceError(
            path,
            f"this DB export has no TASK/COMPUTE_TASK_INFO/COMMUNICATION_OP tables with STRING_IDS "
            f"(unsupported DB layout{db.not_read()})",
            "re-export with torch_npu's text output (export_type text) to get kernel_details.csv",
        )
    parts = []
    if compute:
        parts.append(_db_compute_tasks(db, "TASK_PMU_INFO" in tables, warnings))
    if comm:
        parts.append(_db_comm_ops(db, warnings))
    tasks = pl.concat(parts, how="diagonal_relaxed")
    if "CANN_API" in tables:
        tasks = tasks.join(_db_launches(db, warnings), on="correlation", how="left")
    else:
        tasks = tasks.with_columns(pl.lit(None, dtype=pl.Int64).alias("launch_ns"))
    tasks = tasks.with_columns(
        pl.lit(None, dtype=pl.Int64).alias("step"),
        task_kind(pl.col("name"), pl.col("op_type"), pl.col("core_type")).alias("kind"),
    ).sort("start_ns", "stream", nulls_last=True, maintain_order=True)
    host = drop_bad_times(_db_host_events(db, tables, warnings), "host events", warnings)  # before its steps
    if "STEP_TIME" in tables:
        steps = select(
            db,
            [
                Column("step", "id", INT, "STEP_TIME"),
                Column("host_start_ns", "startNs", INT, "STEP_TIME", time=True),
                Column("host_end_ns", "endNs", INT, "STEP_TIME", time=True),
            ],
            "FROM STEP_TIME",
            warnings,
        )
        steps = drop_bad_times(steps, "rows of STEP_TIME", warnings, "host_start_ns", "host_end_ns")
    else:
        steps = host_step_ranges(host)
    memory_events, allocations = _db_memory(db, tables, warnings)
    device_name = rank = None
    if "NPU_INFO" in tables:
        names = select(db, [Column("name", "name", TEXT, "NPU_INFO")], "FROM NPU_INFO LIMIT 1", warnings)
        device_name = names["name"][0] if names.height else None
    if "RANK_DEVICE_MAP" in tables:
        ranks = select(db, [Column("rank", "rankId", INT, "RANK_DEVICE_MAP")], "FROM RANK_DEVICE_MAP LIMIT 1", warnings)
        rank = ranks["rank"][0] if ranks.height else None
    return {
        "tasks": tasks,
        "host_events": host,
        "host_steps": steps.sort("host_start_ns"),
        "device_name": device_name or None,
        "rank": rank if rank is not None and rank >= 0 else None,
        "memory_events": memory_events,
        "memory_allocations": allocations,
    }


def _db_memory(db: Database, tables: set[str], warnings: Warnings) -> tuple[pl.DataFrame | None, pl.DataFrame | None]:
    """MEMORY_RECORD -> memory_events and OP_MEMORY -> memory_allocations (the DB export's
    memory_record.csv / operator_memory.csv: bytes and ns already; component and operator names
    via STRING_IDS; device npu:<deviceId>), with NPU_MODULE_MEM's modules that hold memory
    (npu_module_mem.csv: names via ENUM_MODULE, `module <NAME>` series); None for a table the
    export lacks. OP_MEMORY rows without an allocation time, released before they were allocated
    or with a time beyond ±2**62 ns are dropped (counted; a missing release time is a block not
    released within the trace)."""
    events = allocations = None
    if {"MEMORY_RECORD", "STRING_IDS"} <= tables:
        record = "MEMORY_RECORD"
        events = (
            select(
                db,
                [
                    _name("component", "s"),
                    Column("ts_ns", "m.timestamp", INT, record, time=True),
                    Column("total_allocated_bytes", "m.totalAllocated", INT, record),
                    Column("total_reserved_bytes", "m.totalReserved", INT, record),
                    Column("total_active_bytes", "m.totalActive", INT, record),
                    Column("device", "m.deviceId", INT, record),
                    *_ids(record, "m.component"),
                ],
                f"FROM MEMORY_RECORD m {_join('s', 'm.component')}",
                warnings,
            )
            .sort("ts_ns", maintain_order=True)
            .with_columns(pl.lit("npu").alias("device_type"))
        )
    if {"NPU_MODULE_MEM", "ENUM_MODULE"} <= tables:
        module = "NPU_MODULE_MEM"
        modules = (
            select(
                db,
                [
                    _name("component", "e", "ENUM_MODULE"),
                    Column("ts_ns", "m.timestampNs", INT, module, time=True),
                    Column("total_reserved_bytes", "m.totalReserved", INT, module),
                    Column("device", "m.deviceId", INT, module),
                    *_ids(module, "m.moduleId"),
                ],
                f"FROM NPU_MODULE_MEM m {_join('e', 'm.moduleId', 'ENUM_MODULE')}",
                warnings,
            )
            .sort("ts_ns", maintain_order=True)
            .with_columns(
                (MODULE_PREFIX + pl.col("component").fill_null("?")).alias("component"),
                pl.lit("npu").alias("device_type"),
            )
        )
        modules = holding_modules(modules)
        events = modules if events is None else pl.concat([events, modules], how="diagonal_relaxed")
    if {"OP_MEMORY", "STRING_IDS"} <= tables:
        op = "OP_MEMORY"
        allocations = select(
            db,
            [
                _name("op", "s"),
                Column("size_bytes", "o.size", INT, op),
                Column("alloc_ns", "o.allocationTime", INT, op, time=True),
                Column("release_ns", "o.releaseTime", INT, op, time=True),
                Column("device", "o.deviceId", INT, op),
                *_ids(op, "o.name"),
            ],
            f"FROM OP_MEMORY o {_join('s', 'o.name')}",
            warnings,
        ).with_columns(pl.lit("npu").alias("device_type"))
        allocations = drop_bad_times(allocations, f"rows of {op}", warnings, "alloc_ns", "release_ns", open_end=True)
    return events, allocations


def _db_compute_tasks(db: Database, has_pmu: bool, warnings: Warnings) -> pl.DataFrame:
    """COMPUTE_TASK_INFO x TASK (+ TASK_PMU_INFO aic_mac_time / aiv_vec_time, µs) -> task rows."""
    info = "COMPUTE_TASK_INFO"
    df = select(
        db,
        [
            Column("global_task_id", "c.globalTaskId", INT, info),
            _name("name", "n"),
            Column("start_ns", "t.startNs", INT, "TASK", time=True),
            Column("end_ns", "t.endNs", INT, "TASK", time=True),
            Column("stream", "t.streamId", INT, "TASK"),
            Column("device", "t.deviceId", INT, "TASK"),
            _name("op_type", "o"),
            _name("core_type", "k"),
            _name("input_shapes", "s"),
            Column("correlation", "t.connectionId", INT, "TASK"),
            _name("input_types", "dt"),
            _name("output_shapes", "os"),
            *_ids(info, "c.name", "c.opType", "c.taskType", "c.inputShapes", "c.inputDataTypes", "c.outputShapes"),
        ],
        f"""FROM COMPUTE_TASK_INFO c JOIN TASK t ON t.globalTaskId = c.globalTaskId
        {_join("n", "c.name")} {_join("o", "c.opType")} {_join("k", "c.taskType")}
        {_join("s", "c.inputShapes")} {_join("dt", "c.inputDataTypes")} {_join("os", "c.outputShapes")}""",
        warnings,
    )
    df = df.with_columns(
        (pl.col("end_ns") - pl.col("start_ns")).alias("dur_ns"),
        *(pl.col(c).str.strip_chars('"') for c in ("input_shapes", "input_types", "output_shapes")),
    )
    if has_pmu:
        pmu = select(
            db,
            [
                Column("global_task_id", "p.globalTaskId", INT, "TASK_PMU_INFO"),
                _name("metric", "k"),
                Column("value", "p.value", NUMBER, "TASK_PMU_INFO"),
                *_ids("TASK_PMU_INFO", "p.name"),
            ],
            "FROM TASK_PMU_INFO p JOIN STRING_IDS k ON k.id = p.name WHERE k.value IN ('aic_mac_time', 'aiv_vec_time')",
            warnings,
        )
        pmu = pmu.group_by("global_task_id").agg(
            us_text_to_ns(pl.col("value").filter(pl.col("metric") == "aic_mac_time").first()).alias("aic_mac_ns"),
            us_text_to_ns(pl.col("value").filter(pl.col("metric") == "aiv_vec_time").first()).alias("aiv_vec_ns"),
        )
        df = df.join(pmu, on="global_task_id", how="left")
    return df.drop("global_task_id")


def _db_comm_ops(db: Database, warnings: Warnings) -> pl.DataFrame:
    """COMMUNICATION_OP -> task rows (core_type HCCL, stream null)."""
    op = "COMMUNICATION_OP"
    df = select(
        db,
        [
            _name("name", "n"),
            Column("start_ns", "o.startNs", INT, op, time=True),
            Column("end_ns", "o.endNs", INT, op, time=True),
            _name("op_type", "t"),
            Column("correlation", "o.connectionId", INT, op),
            *_ids(op, "o.opName", "o.opType"),
        ],
        f"FROM COMMUNICATION_OP o {_join('n', 'o.opName')} {_join('t', 'o.opType')}",
        warnings,
    )
    return df.with_columns(
        (pl.col("end_ns") - pl.col("start_ns")).alias("dur_ns"),
        pl.lit("HCCL").alias("core_type"),
        pl.lit(None, dtype=pl.Int64).alias("stream"),
    )


def _db_launches(db: Database, warnings: Warnings) -> pl.DataFrame:
    """CANN_API connectionId -> launch_ns (API start)."""
    df = select(
        db,
        [
            Column("correlation", "connectionId", INT, "CANN_API"),
            Column("launch_ns", "startNs", INT, "CANN_API", time=True),
        ],
        "FROM CANN_API",
        Warnings(db.path),  # counted once, by _db_host_events, which reads the same rows
    )
    return df.drop_nulls("correlation").group_by("correlation").agg(pl.col("launch_ns").min())


def _db_host_events(db: Database, tables: set[str], warnings: Warnings) -> pl.DataFrame:
    """PYTORCH_API + CANN_API -> host_events columns."""
    enum = {}
    if "ENUM_API_TYPE" in tables:
        types = select(
            db,
            [Column("id", "id", INT, "ENUM_API_TYPE"), Column("name", "name", TEXT, "ENUM_API_TYPE")],
            "FROM ENUM_API_TYPE",
            warnings,
        ).drop_nulls("id")
        enum = dict(zip(types["id"].to_list(), types["name"].to_list()))
    type_name = pl.col("api_type").replace_strict(enum, default=None, return_dtype=pl.String)

    def api(table: str, correlation: str | None) -> pl.DataFrame:
        return select(
            db,
            [
                Column("start_ns", "a.startNs", INT, table, time=True),
                Column("end_ns", "a.endNs", INT, table, time=True),
                Column("global_tid", "a.globalTid", INT, table),
                Column("correlation", f"a.{correlation}" if correlation else "NULL", INT, table),
                _name("name", "s"),
                Column("api_type", "a.type", INT, table),
                *_ids(table, "a.name"),
            ],
            f"FROM {table} a {_join('s', 'a.name')}",
            warnings,
        )

    parts = []
    if {"PYTORCH_API", "STRING_IDS"} <= tables:
        parts.append(
            api("PYTORCH_API", None).with_columns(
                type_name.alias("cat"),
                pl.when(pl.col("name").str.contains(STEP_NAME).fill_null(False))
                .then(pl.lit("annotation"))
                .otherwise(type_name.replace_strict(DB_PYTORCH_API_KINDS, default="other"))
                .alias("kind"),
            )
        )
    if {"CANN_API", "STRING_IDS"} <= tables:
        parts.append(
            api("CANN_API", "connectionId").with_columns(type_name.alias("cat"), pl.lit("runtime").alias("kind"))
        )
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
