"""kernel_details.csv -> device_tasks (one row per CSV row).

Every value is read as text, stripped of whitespace/tabs (torch_npu writes
`1736408883704643.212\\t`), `N/A` / empty -> null (`text.read_text_csv`). `Start Time(us)` and
`Duration(us)` are converted to Int64 ns exactly from the decimal text
(`timeconv.us_text_to_ns`), end = start + duration. `Step Id` -> step, `Stream ID` -> stream,
`Name` -> name, `Type` -> op_type, `Accelerator Core` -> core_type, `Input Shapes` ->
input_shapes (the doubled quotes removed), `aic_mac_time(us)` / `aiv_vec_time(us)` -> aic_mac_ns /
aiv_vec_ns. `Model ID` (4294967295 = none) and the PMU columns are not used. Rows whose start or
duration is not a number, or whose duration is negative, are dropped and counted in the warnings.
kind: the first rule of `kinds.TASK_KIND_RULES` that matches. correlation and launch_ns are null
here; `trace_view.attach_trace_tasks` fills them when trace_view.json is there.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from traceview.errors import TraceError, Warnings
from traceview.parsers.ascend.files import KERNEL_DETAILS
from traceview.parsers.ascend.kinds import task_kind
from traceview.parsers.ascend.text import column, find_columns, read_text_csv
from traceview.parsers.csvio import csv_header
from traceview.parsers.timeconv import us_text_to_ns

#: kernel_details.csv columns: canonical field -> accepted headers, normalised (lower case, no
#: spaces): torch_npu has written "Start Time(us)" and "Start Time (us)"; msprof op_summary uses
#: "Task Start Time(us)" / "Op Name" / "OP Type" / "Task Type".
KERNEL_COLUMNS: dict[str, tuple[str, ...]] = {
    "name": ("name", "opname"),
    "start": ("starttime(us)", "taskstarttime(us)", "start(us)", "starttime"),
    "duration": ("duration(us)", "taskduration(us)", "duration"),
    "step": ("stepid", "step"),
    "stream": ("streamid",),
    "op_type": ("type", "optype"),
    "core_type": ("acceleratorcore", "tasktype"),
    "input_shapes": ("inputshapes",),
    "input_types": ("inputdatatypes",),
    "output_shapes": ("outputshapes",),
    "device": ("deviceid", "device_id"),
    "aic_mac": ("aic_mac_time(us)",),
    "aiv_vec": ("aiv_vec_time(us)",),
}
#: Fields without which the file is unusable: field -> the header named in the error.
KERNEL_REQUIRED = {"name": "Name", "start": "Start Time(us)", "duration": "Duration(us)"}


def read_kernel_details(path: Path, warnings: Warnings) -> pl.DataFrame:
    """kernel_details.csv -> device_tasks columns (+ launch_ns), one row per CSV row with a valid time.

    start_ns / dur_ns: Int64 ns from the exact decimal µs text; end_ns = start_ns + dur_ns.
    Raises TraceError if Name / Start Time(us) / Duration(us) is missing.
    """
    df = read_text_csv(path, KERNEL_COLUMNS)
    cols = find_columns(df, KERNEL_COLUMNS)
    for field, header in KERNEL_REQUIRED.items():
        if field not in cols:
            raise TraceError(
                path,
                f"required column '{header}' is missing (columns: {', '.join(csv_header(path)[:12])})",
                "re-export with torch_npu's profiler (kernel_details.csv needs Name, Start Time(us), Duration(us))",
            )
    tasks = df.select(
        column(cols, "name").alias("name"),
        us_text_to_ns(column(cols, "start")).alias("start_ns"),
        us_text_to_ns(column(cols, "duration")).alias("dur_ns"),
        column(cols, "step").cast(pl.Int64, strict=False).alias("step"),
        column(cols, "stream").cast(pl.Int64, strict=False).alias("stream"),
        column(cols, "device").cast(pl.Int64, strict=False).alias("device"),
        column(cols, "op_type").alias("op_type"),
        column(cols, "core_type").alias("core_type"),
        column(cols, "input_shapes").str.strip_chars('"').alias("input_shapes"),
        column(cols, "input_types").str.strip_chars('"').alias("input_types"),
        column(cols, "output_shapes").str.strip_chars('"').alias("output_shapes"),
        us_text_to_ns(column(cols, "aic_mac")).alias("aic_mac_ns"),
        us_text_to_ns(column(cols, "aiv_vec")).alias("aiv_vec_ns"),
    )
    bad_time = tasks["start_ns"].is_null() | tasks["dur_ns"].is_null()
    warnings.add(f"{KERNEL_DETAILS} rows with a non-numeric start time or duration dropped", int(bad_time.sum()))
    tasks = tasks.filter(~bad_time)
    negative = tasks["dur_ns"] < 0
    warnings.add(f"{KERNEL_DETAILS} rows with a negative duration dropped", int(negative.sum()))
    tasks = tasks.filter(~negative)
    return tasks.with_columns(
        (pl.col("start_ns") + pl.col("dur_ns")).alias("end_ns"),
        task_kind(pl.col("name"), pl.col("op_type"), pl.col("core_type")).alias("kind"),
        pl.lit(None, dtype=pl.Int64).alias("correlation"),
        pl.lit(None, dtype=pl.Int64).alias("launch_ns"),
    )
