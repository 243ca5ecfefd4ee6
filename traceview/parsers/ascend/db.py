"""The DB-only export (`ASCEND_PROFILER_OUTPUT/ascend_pytorch_profiler_<rank>.db`, SQLite, opened
read only) -> device tasks, host events and host step ranges.

Used when there is no kernel_details.csv and no trace_view.json. Text columns are ids into
STRING_IDS(id, value); times are Int64 ns already.
- device_tasks, compute: COMPUTE_TASK_INFO x TASK on globalTaskId: name = c.name,
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
- memory: MEMORY_RECORD, NPU_MODULE_MEM -> memory_events, OP_MEMORY -> memory_allocations
  (`db_memory`).
- meta: device_name = NPU_INFO.name (the DB records the model, e.g. Ascend910B); rank =
  RANK_DEVICE_MAP.rankId (used when there is no profiler_info file).
Every table is read by a plain scan, one query per table, and joined in polars: no SQL join,
whose plan (and cost: an N x M nested loop) the file's own planner statistics decide. Ids are
looked up in STRING_IDS and ENUM_MODULE, each read once (`db_ids.Names`; ENUM_API_TYPE, a
handful of rows, as a dict); a task's COMPUTE_TASK_INFO row is the first with its globalTaskId
(later ones counted).
Every table read is a stored table (`sqlite_ro.Database.tables`: a view or computed table named
like one is ignored, with a warning) and every column is typed (`sqlite_columns`): an id or time
that is not an integer (a TEXT holding exactly one is that integer: torch_npu declares
PYTORCH_API's times TEXT) and a STRING_IDS value that is not text are read as missing and counted
(over the rows joined, as a SQL join counted them); a row whose time is not an integer is dropped.
STEP_TIME rows with a missing time, an end before the start or a time beyond ±2**62 ns are
dropped and counted (`base.drop_bad_times`, as for device tasks and host events).
On the real level-2 sample the DB tasks give Stage = 124219.742 µs and Preparing = 17894.588 µs,
exactly analysis.db's StepTraceTime. (analysis.db itself, torch_npu's own numbers, is read by
`reference`.)
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import polars as pl

from traceview.errors import TraceError, Warnings
from traceview.parsers.ascend.db_ids import Names
from traceview.parsers.ascend.db_memory import read_db_memory
from traceview.parsers.ascend.kinds import task_kind
from traceview.parsers.ascend.steps import host_step_ranges
from traceview.parsers.base import drop_bad_times
from traceview.parsers.sqlite_columns import INT, KEY, NUMBER, TEXT, Column, query, select, settle
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
#: COMPUTE_TASK_INFO's STRING_IDS columns: task column -> stored column.
COMPUTE_NAMES = {
    "name": "name",
    "op_type": "opType",
    "core_type": "taskType",
    "input_shapes": "inputShapes",
    "input_types": "inputDataTypes",
    "output_shapes": "outputShapes",
}
#: The TASK_PMU_INFO metrics read (µs): metric -> task column.
PMU_METRICS = {"aic_mac_time": "aic_mac_ns", "aiv_vec_time": "aiv_vec_ns"}


def read_profiler_db(path: Path, warnings: Warnings) -> dict:
    """ascend_pytorch_profiler_<rank>.db -> {"tasks", "host_events", "host_steps", "device_name",
    "rank", "memory_events", "memory_allocations"}."""
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
    strings = Names.read(db, "STRING_IDS", warnings)
    parts = []
    if compute:
        parts.append(_db_compute_tasks(db, strings, "TASK_PMU_INFO" in tables, warnings))
    if comm:
        parts.append(_db_comm_ops(db, strings, warnings))
    tasks = pl.concat(parts, how="diagonal_relaxed")
    host, launches = _db_host_events(db, tables, strings, warnings)
    if launches is not None:
        tasks = tasks.join(launches, on="correlation", how="left", maintain_order="left")
    else:
        tasks = tasks.with_columns(pl.lit(None, dtype=pl.Int64).alias("launch_ns"))
    tasks = tasks.with_columns(
        pl.lit(None, dtype=pl.Int64).alias("step"),
        task_kind(pl.col("name"), pl.col("op_type"), pl.col("core_type")).alias("kind"),
    ).sort("start_ns", "stream", nulls_last=True, maintain_order=True)
    host = drop_bad_times(host, "host events", warnings)  # before its ProfilerStep ranges are taken
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
    memory_events, allocations = read_db_memory(db, tables, strings, warnings)
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


def _db_compute_tasks(db: Database, strings: Names, has_pmu: bool, warnings: Warnings) -> pl.DataFrame:
    """TASK x COMPUTE_TASK_INFO on globalTaskId (+ TASK_PMU_INFO aic_mac_time / aiv_vec_time, µs)
    -> task rows, in TASK's order. Bad values are counted over the rows joined, except the
    globalTaskIds (over all rows: a task whose id is not an integer is lost)."""
    info, task = "COMPUTE_TASK_INFO", "TASK"
    task_columns = [
        Column("global_task_id", "globalTaskId", INT, task),
        Column("start_ns", "startNs", INT, task, time=True),
        Column("end_ns", "endNs", INT, task, time=True),
        Column("stream", "streamId", INT, task),
        Column("device", "deviceId", INT, task),
        Column("correlation", "connectionId", INT, task),
    ]
    info_columns = [
        Column("global_task_id", "globalTaskId", INT, info),
        *(Column(f"{out}_id", stored, KEY, info) for out, stored in COMPUTE_NAMES.items()),
    ]
    key = {"only": {"global_task_id"}}
    tasks = settle(query(db, task_columns, f"FROM {task}", "_bad_t"), task_columns, warnings, "_bad_t", **key)
    infos = settle(query(db, info_columns, f"FROM {info}", "_bad_c"), info_columns, warnings, "_bad_c", **key)
    first = infos["global_task_id"].is_first_distinct() | infos["global_task_id"].is_null()
    warnings.add(
        f"rows of {info} that repeat an earlier row's globalTaskId ignored (the first is used)",
        infos.height - first.sum(),
    )
    df = tasks.join(infos.filter(first), on="global_task_id", how="inner", maintain_order="left")
    df = strings.look_up(df, {f"{out}_id": out for out in COMPUTE_NAMES}, warnings)
    df = settle(settle(df, info_columns, warnings, "_bad_c"), task_columns, warnings, "_bad_t")
    df = df.select(
        "global_task_id",
        "name",
        "start_ns",
        "end_ns",
        "stream",
        "device",
        "op_type",
        "core_type",
        "input_shapes",
        "correlation",
        "input_types",
        "output_shapes",
        (pl.col("end_ns") - pl.col("start_ns")).alias("dur_ns"),
    ).with_columns(pl.col(c).str.strip_chars('"') for c in ("input_shapes", "input_types", "output_shapes"))
    metric_ids = strings.ids.filter(strings.texts.is_in(list(PMU_METRICS)))
    if has_pmu and metric_ids.len():
        pmu = "TASK_PMU_INFO"
        columns = [
            Column("global_task_id", "globalTaskId", INT, pmu),
            Column("metric_id", "name", KEY, pmu),
            Column("value", "value", NUMBER, pmu),
        ]
        # only the two metrics' rows, and those whose name is not an integer (to count them)
        ids = ", ".join(str(i) for i in metric_ids.to_list())
        where = f"WHERE name IN ({ids}) OR typeof(name) NOT IN ('integer', 'null')"
        rows = strings.look_up(query(db, columns, f"FROM {pmu} {where}"), {"metric_id": "metric"}, warnings)
        rows = settle(rows, columns, warnings)
        by_task = rows.group_by("global_task_id").agg(
            us_text_to_ns(pl.col("value").filter(pl.col("metric") == metric).first()).alias(out)
            for metric, out in PMU_METRICS.items()
        )
        df = df.join(by_task, on="global_task_id", how="left", maintain_order="left")
    elif has_pmu:
        df = df.with_columns(pl.lit(None, pl.Int64).alias(out) for out in PMU_METRICS.values())
    return df.drop("global_task_id")


def _db_comm_ops(db: Database, strings: Names, warnings: Warnings) -> pl.DataFrame:
    """COMMUNICATION_OP -> task rows (core_type HCCL, stream null)."""
    op = "COMMUNICATION_OP"
    columns = [
        Column("start_ns", "startNs", INT, op, time=True),
        Column("end_ns", "endNs", INT, op, time=True),
        Column("correlation", "connectionId", INT, op),
        Column("name_id", "opName", KEY, op),
        Column("op_type_id", "opType", KEY, op),
    ]
    df = strings.look_up(query(db, columns, f"FROM {op}"), {"name_id": "name", "op_type_id": "op_type"}, warnings)
    return settle(df, columns, warnings).select(
        "name",
        "start_ns",
        "end_ns",
        "op_type",
        "correlation",
        (pl.col("end_ns") - pl.col("start_ns")).alias("dur_ns"),
        pl.lit("HCCL").alias("core_type"),
        pl.lit(None, dtype=pl.Int64).alias("stream"),
    )


def _db_host_events(
    db: Database, tables: set[str], strings: Names, warnings: Warnings
) -> tuple[pl.DataFrame, pl.DataFrame | None]:
    """PYTORCH_API + CANN_API -> (host_events columns, CANN_API connectionId -> launch_ns, the
    earliest API start; None without CANN_API)."""
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

    def api(table: str, correlation: str | None) -> tuple[pl.DataFrame, pl.DataFrame]:
        columns = [
            Column("start_ns", "startNs", INT, table, time=True),
            Column("end_ns", "endNs", INT, table, time=True),
            Column("global_tid", "globalTid", INT, table),
            Column("correlation", correlation or "NULL", INT, table),
            Column("api_type", "type", INT, table),
            Column("name_id", "name", KEY, table),
        ]
        rows = strings.look_up(query(db, columns, f"FROM {table}"), {"name_id": "name"}, warnings)
        # (a launch is the start of any row whose start is an integer, whatever its other values)
        launches = (
            rows.drop_nulls("correlation").group_by("correlation").agg(pl.col("start_ns").min().alias("launch_ns"))
        )
        return settle(rows, columns, warnings).drop("name_id"), launches

    parts, launches = [], None
    if "PYTORCH_API" in tables:
        rows = api("PYTORCH_API", None)[0]
        parts.append(
            rows.with_columns(
                type_name.alias("cat"),
                pl.when(pl.col("name").str.contains(STEP_NAME).fill_null(False))
                .then(pl.lit("annotation"))
                .otherwise(type_name.replace_strict(DB_PYTORCH_API_KINDS, default="other"))
                .alias("kind"),
            )
        )
    if "CANN_API" in tables:
        rows, launches = api("CANN_API", "connectionId")
        parts.append(rows.with_columns(type_name.alias("cat"), pl.lit("runtime").alias("kind")))
    if not parts:
        return pl.DataFrame(schema={"name": pl.String, "start_ns": pl.Int64, "end_ns": pl.Int64}), launches
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
    ).sort("start_ns"), launches
