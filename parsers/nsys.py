"""NVIDIA Nsight Systems SQLite exports (`nsys export --type sqlite report.nsys-rep`) -> canonical frames.

Tables read (those the export holds; any may be absent), times in ns on the session's clock:
    CUPTI_ACTIVITY_KIND_KERNEL   device tasks: kernels (name: demangledName via StringIds; NCCL
                                 kernels become communication by the task-kind rules), grid, block
    CUPTI_ACTIVITY_KIND_MEMCPY   device tasks: memcpy ("Memcpy HtoD", ... by copyKind), bytes
    CUPTI_ACTIVITY_KIND_MEMSET   device tasks: memset, bytes
    CUPTI_ACTIVITY_KIND_RUNTIME  host events: CUDA runtime calls (cat cuda_runtime, kind runtime),
                                 with the correlationId that links each launch to its device task
    NVTX_EVENTS                  host events: NVTX push/pop and start/end ranges (cat nvtx, kind
                                 annotation; marks without an end are skipped); a range named like a
                                 step (STEP_RANGE: `ProfilerStep#3`, `step 3`, `iteration 3`) is
                                 the host range of that step
    TARGET_INFO_GPU              the device name and memory (`totalMemory`)
    StringIds                    the text behind every *Id column
The thread of a host event: pid = globalTid >> 24 & 0xFFFFFF, tid = globalTid & 0xFFFFFF (the
export's encoding). Steps follow the Kineto rules (`parsers.steps.kineto_steps`): device tasks
launched inside a step's host range belong to it (window rule "correlation").

What an export lacks: PyTorch operator names (unless NVTX ranges carry them, as
`torch.autograd.profiler.emit_nvtx` writes), the rank (null: numbered by the loader), memory.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import polars as pl

from traceview.errors import TraceError, Warnings
from traceview.parsers import kinds, steps
from traceview.parsers.base import ParsedRank
from traceview.parsers.sqlite_ro import connect_ro, table_names

#: The tables that make a SQLite file an Nsight Systems export (any one of them).
NSYS_TABLES = ("CUPTI_ACTIVITY_KIND_KERNEL", "TARGET_INFO_SESSION_START_TIME")
#: An NVTX range naming a step (case-insensitive): its number is the step.
STEP_RANGE = r"(?i)^\s*(?:ProfilerStep#|step[\s_#:-]*|iteration[\s_#:-]*|iter[\s_#:-]*)(\d+)\s*$"
#: copyKind (CUpti_ActivityMemcpyKind) -> the Kineto-style memcpy name.
COPY_KINDS = {
    1: "HtoD",
    2: "DtoH",
    3: "HtoA",
    4: "AtoH",
    5: "AtoA",
    6: "AtoD",
    7: "DtoA",
    8: "DtoD",
    9: "HtoH",
    10: "PtoP",
}
#: NVTX eventType values of ranges (push/pop, start/end); marks (34) have no end.
NVTX_RANGES = (59, 60)
FIX = "re-export it with nsys export --type sqlite"
#: Output columns holding text (the rest are integers: times, ids, sizes).
TEXT_COLUMNS = ("value", "text", "name")
NO_CUDA = "export(s) with no CUDA kernel, memcpy or memset: profile with nsys --trace=cuda to see the device"


def is_nsys_export(tables: set[str]) -> bool:
    """Whether a SQLite file with these tables is an Nsight Systems export."""
    return any(t in tables for t in NSYS_TABLES)


def _table(db: sqlite3.Connection, tables: set[str], name: str, columns: dict[str, str]) -> pl.DataFrame | None:
    """Columns of `name` (SQL expressions -> output names) when the table exists, else None;
    a column the table lacks reads as NULL."""
    if name not in tables:
        return None
    have = {row[1] for row in db.execute(f'PRAGMA table_info("{name}")')}
    select = ", ".join(f"{expr if col in have else 'NULL'} AS {out}" for out, (col, expr) in columns.items())
    rows = db.execute(f'SELECT {select} FROM "{name}"').fetchall()
    if not rows:
        return None
    types = {out: pl.String if out in TEXT_COLUMNS else pl.Int64 for out in columns}
    return pl.DataFrame(rows, schema=types, orient="row", strict=False)


def _cols(*names: str) -> dict[str, tuple[str, str]]:
    return {n: (n, n) for n in names}


def _thread(col: str) -> list[pl.Expr]:
    g = pl.col(col).cast(pl.Int64)
    return [((g // (1 << 24)) % (1 << 24)).alias("pid"), (g % (1 << 24)).alias("tid")]


def _tasks(frame: pl.DataFrame, kind: pl.Expr, name: pl.Expr, grid: pl.Expr, block: pl.Expr, size: pl.Expr):
    """Device task columns of one CUPTI activity table."""
    return frame.select(
        "start_ns",
        "end_ns",
        "device",
        "stream",
        "correlation",
        kind.alias("kind"),
        name.alias("name"),
        grid.alias("grid"),
        block.alias("block"),
        size.cast(pl.Int64).alias("bytes"),
    )


def parse_nsys(path: Path) -> ParsedRank:
    """The canonical frames of one Nsight Systems SQLite export (module docstring)."""
    path = Path(path)
    warn = Warnings(path)
    db = connect_ro(path, FIX)
    try:
        tables = table_names(db)
        if not is_nsys_export(tables):
            raise TraceError(path, "not an Nsight Systems export (no CUPTI_ACTIVITY_KIND_KERNEL table)", FIX)
        try:
            frames = _read(db, tables)
        except sqlite3.DatabaseError as exc:
            raise TraceError(path, f"cannot read the SQLite export: {exc}", FIX) from None
    finally:
        db.close()
    strings, kernels, copies, sets, runtime, nvtx, gpus = frames
    name_of = dict(zip(strings["id"].to_list(), strings["value"].to_list())) if strings is not None else {}

    def text(col: str) -> pl.Expr:
        return pl.col(col).replace_strict(name_of, default=None, return_dtype=pl.String)

    name = text("name_id").fill_null("(unnamed)")
    copy_kind = pl.col("copy_kind").replace_strict(COPY_KINDS, default=None, return_dtype=pl.String)
    no_text = pl.lit(None, pl.String)
    tasks = [
        _tasks(frame, kind, task_name, grid, block, size)
        for frame, kind, task_name, grid, block, size in (
            (
                kernels,
                kinds.device_kind(pl.lit("kernel"), name),
                name,
                pl.format("{},{},{}", "gx", "gy", "gz"),
                pl.format("{},{},{}", "bx", "by", "bz"),
                pl.lit(None, pl.Int64),
            ),
            (
                copies,
                pl.lit("memcpy"),
                pl.format("Memcpy {}", copy_kind.fill_null("?")),
                no_text,
                no_text,
                pl.col("bytes"),
            ),
            (sets, pl.lit("memset"), pl.lit("Memset"), no_text, no_text, pl.col("bytes")),
        )
        if frame is not None
    ]
    device_tasks = (
        pl.concat([t.cast({"bytes": pl.Int64}) for t in tasks], how="vertical_relaxed")
        .with_columns((pl.col("end_ns") - pl.col("start_ns")).alias("dur_ns"))
        .sort("start_ns", maintain_order=True)
        if tasks
        else None
    )
    host = []
    if runtime is not None:
        host.append(
            runtime.select(
                *_thread("global_tid"),
                text("name_id").fill_null("(unnamed)").alias("name"),
                pl.lit("cuda_runtime").alias("cat"),
                pl.lit("runtime").alias("kind"),
                "start_ns",
                "end_ns",
                "correlation",
            )
        )
    if nvtx is not None:
        ranges = nvtx.filter(pl.col("event_type").is_in(NVTX_RANGES) & pl.col("end_ns").is_not_null())
        host.append(
            ranges.select(
                *_thread("global_tid"),
                pl.coalesce("text", text("text_id")).fill_null("(unnamed)").alias("name"),
                pl.lit("nvtx").alias("cat"),
                pl.lit("annotation").alias("kind"),
                "start_ns",
                "end_ns",
                pl.lit(None, pl.Int64).alias("correlation"),
            )
        )
    host_events = (
        pl.concat(host, how="vertical_relaxed")
        .with_columns((pl.col("end_ns") - pl.col("start_ns")).alias("dur_ns"))
        .sort("start_ns", maintain_order=True)
        if host
        else None
    )
    frames = {}
    if device_tasks is not None:
        frames["device_tasks"] = device_tasks
    if host_events is not None:
        frames["host_events"] = host_events
    if device_tasks is not None and host_events is not None:
        # an NVTX range named like a step is that step's host range (kineto_steps reads ProfilerStep#N)
        named = host_events.with_columns(
            pl.when(pl.col("kind") == "annotation")
            .then(pl.format("ProfilerStep#{}", pl.col("name").str.extract(STEP_RANGE, 1)))
            .alias("name")
        )
        step_frame, tasks_with_steps = steps.kineto_steps(
            device_tasks.with_columns(pl.lit(None, pl.Int64).alias("step")),
            named,
            pl.DataFrame(schema={"name": pl.String, "start_ns": pl.Int64, "end_ns": pl.Int64}),
            warn,
        )
        frames["device_tasks"], frames["steps"] = tasks_with_steps, step_frame
    if device_tasks is None:
        warn.add(NO_CUDA, 1)
    used = device_tasks["device"].drop_nulls().unique().sort().to_list() if device_tasks is not None else []
    gpu = gpus.filter(pl.col("id").is_in(used)) if gpus is not None and used else gpus
    gpu_row = gpu.row(0, named=True) if gpu is not None and gpu.height else {}
    meta = {
        "rank": None,
        "world_size": None,
        "format": "nsys",
        "source": str(path),
        "device_name": gpu_row.get("name"),
        "device_type": "gpu" if device_tasks is not None and device_tasks.height else "cpu",
        "device_memory_bytes": gpu_row.get("total_memory"),
    }
    return ParsedRank.build(frames, meta, warn.messages())


def _read(db: sqlite3.Connection, tables: set[str]):
    """The raw tables (polars frames, None where absent): strings, kernels, memcpy, memset,
    runtime calls, NVTX events, GPUs."""
    timed = {"start_ns": ("start", "start"), "end_ns": ("end", '"end"')}
    task = {
        **timed,
        "device": ("deviceId", "deviceId"),
        "stream": ("streamId", "streamId"),
        "correlation": ("correlationId", "correlationId"),
    }
    strings = _table(db, tables, "StringIds", _cols("id", "value"))
    kernels = _table(
        db,
        tables,
        "CUPTI_ACTIVITY_KIND_KERNEL",
        {
            **task,
            "name_id": ("demangledName", "demangledName"),
            "gx": ("gridX", "gridX"),
            "gy": ("gridY", "gridY"),
            "gz": ("gridZ", "gridZ"),
            "bx": ("blockX", "blockX"),
            "by": ("blockY", "blockY"),
            "bz": ("blockZ", "blockZ"),
        },
    )
    copies = _table(
        db,
        tables,
        "CUPTI_ACTIVITY_KIND_MEMCPY",
        {**task, "bytes": ("bytes", "bytes"), "copy_kind": ("copyKind", "copyKind")},
    )
    sets = _table(db, tables, "CUPTI_ACTIVITY_KIND_MEMSET", {**task, "bytes": ("bytes", "bytes")})
    runtime = _table(
        db,
        tables,
        "CUPTI_ACTIVITY_KIND_RUNTIME",
        {
            **timed,
            "global_tid": ("globalTid", "globalTid"),
            "correlation": ("correlationId", "correlationId"),
            "name_id": ("nameId", "nameId"),
        },
    )
    nvtx = _table(
        db,
        tables,
        "NVTX_EVENTS",
        {
            **timed,
            "event_type": ("eventType", "eventType"),
            "text": ("text", "text"),
            "text_id": ("textId", "textId"),
            "global_tid": ("globalTid", "globalTid"),
        },
    )
    gpu = {"id": ("id", "id"), "name": ("name", "name"), "total_memory": ("totalMemory", "totalMemory")}
    gpus = _table(db, tables, "TARGET_INFO_GPU", gpu)
    return strings, kernels, copies, sets, runtime, nvtx, gpus
