"""torch_npu's own numbers, kept for comparison: step_trace_time.csv and communication.json
(or, for a DB-only export, the same tables in analysis.db). Nothing here feeds the analyses.

step_trace_time.csv -> ascend_step_trace: floats in µs exactly as written; an empty Step cell
    (whole trace) -> null step; a missing column (Preparing in older versions) -> null.
communication.json -> ascend_communication: {"step<N>": {"collective"|"p2p": {"<op>@<group>":
    {"Communication Time Info": {...}, "Communication Bandwidth Info": {...}}}}}. One row per op;
    the roll-up entry "Total Op Info" is skipped; op_name is the key before "@" (the device-task
    name), comm_group the part after it (the communicator group; null without "@");
    `Start Timestamp(us)` is converted from its JSON text exactly. Some versions omit the
    collective/p2p level (group null).
msprof_*.db OVERLAP_ANALYSIS -> ascend_step_trace, one row per device with step null (whole
    trace): Σ of its intervals by type (0 computing, 1 communication, 2 communication not
    overlapped, 3 free), µs; only when its status_info row says the analysis finished; intervals
    with a missing time, an end before the start or a time beyond ±2**62 ns (whose lengths
    would wrap in the sum) are dropped, counted (`base.drop_bad_times`).
analysis.db StepTraceTime -> ascend_step_trace; CommAnalyzerTime -> ascend_communication
    (hccl_op_name -> op_name, group_name -> comm_group, type -> group, step 'step<N>' -> step).
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import polars as pl

from traceview import schema
from traceview.errors import TraceError, Warnings
from traceview.parsers import jsonio
from traceview.parsers.ascend.files import COMMUNICATION, STEP_TRACE_TIME
from traceview.parsers.ascend.text import column, find_columns, read_text_csv
from traceview.parsers.base import drop_bad_times
from traceview.parsers.sqlite_columns import INT, NUMBER, TEXT, Column, select
from traceview.parsers.sqlite_ro import open_database
from traceview.parsers.timeconv import texts, us_text_to_ns

#: step_trace_time.csv: canonical column -> normalised header.
STEP_TRACE_COLUMNS: dict[str, str] = {
    "step": "step",
    "computing_us": "computing",
    "communication_not_overlapped_us": "communication(notoverlapped)",
    "overlapped_us": "overlapped",
    "communication_us": "communication",
    "free_us": "free",
    "stage_us": "stage",
    "bubble_us": "bubble",
    "communication_not_overlapped_exclude_receive_us": "communication(notoverlappedandexcludereceive)",
    "preparing_us": "preparing",
}

#: communication.json "Communication Time Info" key -> canonical column.
COMMUNICATION_TIME_KEYS: dict[str, str] = {
    "Elapse Time(ms)": "elapse_ms",
    "Transit Time(ms)": "transit_ms",
    "Wait Time(ms)": "wait_ms",
    "Synchronization Time(ms)": "synchronization_ms",
    "Idle Time(ms)": "idle_ms",
}

#: communication rows, all text: step key, collective/p2p level, op key, group, start, times.
_COMM_ROW = ["step_key", "group", "op_key", "comm_group", "start", *COMMUNICATION_TIME_KEYS.values()]


def read_step_trace_time(path: Path, warnings: Warnings) -> pl.DataFrame:
    """step_trace_time.csv -> ascend_step_trace (µs floats as written; empty Step -> null)."""
    spec = {k: (v,) for k, v in STEP_TRACE_COLUMNS.items()}
    df = read_text_csv(path, spec)
    cols = find_columns(df, spec)
    missing = [c for c in STEP_TRACE_COLUMNS if c not in cols and c not in ("step", "preparing_us")]
    warnings.add(f"{STEP_TRACE_TIME} columns missing (left null): {', '.join(missing)}", 1 if missing else 0)
    exprs = []
    for field in STEP_TRACE_COLUMNS:
        dtype = pl.Int64 if field == "step" else pl.Float64
        exprs.append(column(cols, field).cast(dtype, strict=False).alias(field))
    out = df.select(exprs)
    unparsed = sum(int((df[cols[c]].is_not_null() & out[c].is_null()).sum()) for c in STEP_TRACE_COLUMNS if c in cols)
    warnings.add(f"{STEP_TRACE_TIME} non-numeric values left null", unparsed)
    return out


def _comm_rows(step_key: str, group: str | None, ops: dict) -> list[dict]:
    """Rows of one step/group of communication.json (the "Total Op Info" roll-up skipped)."""
    rows = []
    for op_key, info in ops.items():
        if not isinstance(info, dict) or op_key == "Total Op Info":
            continue
        time_info = info.get("Communication Time Info")
        if not isinstance(time_info, dict):
            continue
        values = texts([time_info.get("Start Timestamp(us)"), *(time_info.get(k) for k in COMMUNICATION_TIME_KEYS)])
        row = {"step_key": step_key, "group": group, "op_key": op_key, "comm_group": None}
        rows.append(row | dict(zip(["start", *COMMUNICATION_TIME_KEYS.values()], values)))
    return rows


def read_communication_json(path: Path, warnings: Warnings) -> pl.DataFrame:
    """communication.json -> ascend_communication (one row per op and step; times as written)."""
    try:
        doc = json.loads(jsonio.read_bytes(path).decode("utf-8", errors="replace"), parse_float=str)
    except json.JSONDecodeError as exc:
        raise TraceError(path, f"invalid JSON at byte {exc.pos:,}: {exc.msg}", "re-export the profile") from None
    rows: list[dict] = []
    if isinstance(doc, dict):
        for step_key, groups in doc.items():
            if not isinstance(groups, dict):
                continue
            for group, ops in groups.items():
                if isinstance(ops, dict) and "Communication Time Info" in ops:  # no group level
                    rows += _comm_rows(step_key, None, {group: ops})
                elif isinstance(ops, dict):
                    rows += _comm_rows(step_key, group, ops)
    else:
        warnings.add(f"{COMMUNICATION} is not a JSON object: ignored")
    return communication_frame(rows, warnings)


def communication_frame(rows: list[dict], warnings: Warnings) -> pl.DataFrame:
    """Rows of text values (keys `_COMM_ROW`) -> ascend_communication columns.

    op_name = op_key before the first "@"; comm_group = the row's comm_group, else the op_key
    after the first "@" (null when there is none or it is empty)."""
    df = pl.DataFrame({c: [r.get(c) for r in rows] for c in _COMM_ROW}, schema=dict.fromkeys(_COMM_ROW, pl.String))
    suffix = pl.col("op_key").str.extract(r"^[^@]*@(.*)$", 1)
    out = df.select(
        pl.col("step_key").str.extract(r"(\d+)$", 1).cast(pl.Int64, strict=False).alias("step"),
        "group",
        pl.col("op_key").str.split("@").list.first().alias("op_name"),
        pl.coalesce("comm_group", suffix).replace("", None).alias("comm_group"),
        us_text_to_ns(pl.col("start")).alias("start_ns"),
        *(pl.col(c).cast(pl.Float64, strict=False) for c in COMMUNICATION_TIME_KEYS.values()),
    )
    unparsed = df["start"].is_not_null() & out["start_ns"].is_null()
    warnings.add(f"{COMMUNICATION} ops without a numeric Start Timestamp(us)", int(unparsed.sum()))
    return out


def _analysis_query(
    path: Path, table: str, columns: dict[str, tuple[str, pl.DataType]], warnings: Warnings
) -> pl.DataFrame | None:
    """`columns` (name -> (column of `table`, dtype: String or Float64)) of an analysis.db table;
    a column the table lacks (older versions) is null; numbers are read as their exact text
    (`sqlite_columns.NUMBER`), then cast (non-numeric values left null, counted). None, with a
    warning, when the table is not there (or is a view)."""
    try:
        with open_database(path, warnings=warnings) as db:
            if table not in db.tables([table]):
                warnings.add(f"{path.name}: no {table} table; ground truth not loaded")
                return None
            present = db.columns(table)
            select_columns = [
                Column(name, f'"{db_col}"' if db_col in present else "NULL", NUMBER, table)
                for name, (db_col, _) in columns.items()
            ]
            df = select(db, select_columns, f'FROM "{table}"', warnings)
    except sqlite3.Error as exc:
        warnings.add(f"{path.name}: {exc}; ground truth not loaded")
        return None
    floats = [name for name, (_, dtype) in columns.items() if dtype == pl.Float64]
    out = df.with_columns(pl.col(c).cast(pl.Float64, strict=False) for c in floats)
    unparsed = sum(int((df[c].is_not_null() & out[c].is_null()).sum()) for c in floats)
    warnings.add(f"{path.name} {table} non-numeric values left null", unparsed)
    return out


#: analysis.db StepTraceTime column of each ascend_step_trace column.
ANALYSIS_STEP_TRACE_COLUMNS: dict[str, str] = {
    "step": "step",
    "computing_us": "computing",
    "communication_not_overlapped_us": "communication_not_overlapped",
    "overlapped_us": "overlapped",
    "communication_us": "communication",
    "free_us": "free",
    "stage_us": "stage",
    "bubble_us": "bubble",
    "communication_not_overlapped_exclude_receive_us": "communication_not_overlapped_and_exclude_receive",
    "preparing_us": "preparing",
}

#: analysis.db CommAnalyzerTime column of each communication row field (all read as text).
ANALYSIS_COMMUNICATION_COLUMNS: dict[str, str] = {
    "op_key": "hccl_op_name",
    "comm_group": "group_name",
    "start": "start_timestamp",
    "elapse_ms": "elapse_time",
    "transit_ms": "transit_time",
    "wait_ms": "wait_time",
    "synchronization_ms": "synchronization_time",
    "idle_ms": "idle_time",
    "step_key": "step",
    "group": "type",
}


def read_analysis_step_trace(path: Path, warnings: Warnings) -> pl.DataFrame | None:
    """analysis.db StepTraceTime -> ascend_step_trace (µs as stored)."""
    columns = {
        name: (db_col, pl.String if name == "step" else pl.Float64)
        for name, db_col in ANALYSIS_STEP_TRACE_COLUMNS.items()
    }
    df = _analysis_query(path, "StepTraceTime", columns, warnings)
    if df is None:
        return None
    return df.with_columns(pl.col("step").str.strip_chars().cast(pl.Int64, strict=False))


def read_analysis_communication(path: Path, warnings: Warnings) -> pl.DataFrame | None:
    """analysis.db CommAnalyzerTime -> ascend_communication."""
    columns = {name: (db_col, pl.String) for name, db_col in ANALYSIS_COMMUNICATION_COLUMNS.items()}
    df = _analysis_query(path, "CommAnalyzerTime", columns, warnings)
    if df is None:
        return None
    return communication_frame(df.to_dicts(), warnings)


#: OVERLAP_ANALYSIS type -> ascend_step_trace column.
OVERLAP_TYPES = {0: "computing_us", 1: "communication_us", 2: "communication_not_overlapped_us", 3: "free_us"}


def read_overlap_analysis(path: Path, warnings: Warnings) -> pl.DataFrame | None:
    """msprof's OVERLAP_ANALYSIS (see the module docstring) as ascend_step_trace rows, or None when
    the DB has none or its analysis did not finish. `rank` is the device id (the loader fills the
    rank's own when the DB records one device)."""
    try:
        with open_database(path, warnings=warnings) as db:
            tables = db.tables(["OVERLAP_ANALYSIS", "status_info"])
            if "OVERLAP_ANALYSIS" not in tables:
                return None
            if "status_info" in tables:
                done = select(
                    db,
                    [Column("value", "value", TEXT, "status_info")],
                    "FROM status_info WHERE key = 'OVERLAP_ANALYSIS' LIMIT 1",
                    warnings,
                )
                if done.height and done["value"][0] != "FINISH":
                    return None
            intervals = select(
                db,
                [
                    Column("device", "deviceId", INT, "OVERLAP_ANALYSIS"),
                    Column("type", "type", INT, "OVERLAP_ANALYSIS"),
                    Column("start_ns", "startNs", INT, "OVERLAP_ANALYSIS", time=True),
                    Column("end_ns", "endNs", INT, "OVERLAP_ANALYSIS", time=True),
                ],
                "FROM OVERLAP_ANALYSIS",
                warnings,
            )
    except sqlite3.Error as exc:
        warnings.add(f"OVERLAP_ANALYSIS not readable ({exc}): no reference numbers", 1)
        return None
    intervals = drop_bad_times(intervals, "rows of OVERLAP_ANALYSIS", warnings)
    rows = intervals.group_by("device", "type", maintain_order=True).agg(
        (pl.col("end_ns") - pl.col("start_ns")).sum().alias("ns")
    )
    if rows.is_empty():
        return None
    wide = rows.with_columns(
        pl.col("type").replace_strict(OVERLAP_TYPES, default=None, return_dtype=pl.String).alias("column")
    ).drop_nulls("column")
    out = wide.pivot("column", index="device", values="ns", aggregate_function="sum")
    present = [c for c in OVERLAP_TYPES.values() if c in out.columns]
    return schema.conform(
        out.select(
            pl.lit(None, pl.Int64).alias("rank"),
            pl.lit(None, pl.Int64).alias("step"),
            *(pl.col(c).fill_null(0).cast(pl.Float64) / 1000.0 for c in present),
            *(pl.lit(0.0).alias(c) for c in OVERLAP_TYPES.values() if c not in present),
        ),
        "ascend_step_trace",
    )
