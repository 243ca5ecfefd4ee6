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
    CUDA_GPU_MEMORY_USAGE_EVENTS memory_events (`nsys --cuda-memory-usage=true`): each allocation
                                 (+bytes) and free (-bytes) of device memory (memKind Device,
                                 Array, Device Static; host and managed memory left out), series
                                 component `cudaMalloc`; total_reserved_bytes is their running sum
                                 per device from the capture's start (memory allocated before it
                                 is not in it, except what the capture frees: a sum that would go
                                 below zero is raised by that much from the start)
    TARGET_INFO_GPU              the device name and memory (`totalMemory`)
    StringIds                    the text behind every *Id column
The thread of a host event: pid = globalTid >> 24 & 0xFFFFFF, tid = globalTid & 0xFFFFFF (the
export's encoding). Steps follow the Kineto rules (`parsers.steps.kineto_steps`): device tasks
launched inside a step's host range belong to it (window rule "correlation").

Only stored tables are read (a view or computed table named like one is ignored, with a warning:
`sqlite_ro.Database.tables`), under the reading budgets of `sqlite_ro`; every column is typed
(`sqlite_columns`): a time that is not an integer drops its row, an id that is not one and a
StringIds value that is not text are read as missing, each counted per table and column.

What an export lacks: PyTorch operator names (unless NVTX ranges carry them, as
`torch.autograd.profiler.emit_nvtx` writes), the rank (null: numbered by the loader), PyTorch's
allocator (what it hands out inside the memory it reserved: no allocated bytes, no blocks by
operator).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import polars as pl

from traceview.errors import TraceError, Warnings
from traceview.parsers import kinds
from traceview.parsers.activity import activity_rank, task_columns, used_devices
from traceview.parsers.base import ParsedRank
from traceview.parsers.sqlite_columns import INT, TEXT, Column, select
from traceview.parsers.sqlite_ro import PENDING_WAL, Database, open_database, pending_wal

#: The tables that make a SQLite file an Nsight Systems export (any one of them).
NSYS_TABLES = ("CUPTI_ACTIVITY_KIND_KERNEL", "TARGET_INFO_SESSION_START_TIME")
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
#: CUDA_MEMOPR_MEMORY_KIND values of device memory (Device, Array, Device Static).
DEVICE_MEMORY_KINDS = (2, 3, 5)
#: The memory series of CUDA memory usage events.
CUDA_MALLOC = "cudaMalloc"
#: NVTX eventType values of ranges (push/pop, start/end); marks (34) have no end.
NVTX_RANGES = (59, 60)
FIX = "re-export it with nsys export --type sqlite"
#: Output columns holding text (the rest are integers: times, ids, sizes).
TEXT_COLUMNS = ("value", "text", "name")
#: Output columns holding a time: a row whose time is not an integer is dropped (counted).
TIME_COLUMNS = ("start_ns", "end_ns")
NO_CUDA = "export(s) with no CUDA kernel, memcpy or memset: profile with nsys --trace=cuda to see the device"


def is_nsys_export(tables: set[str]) -> bool:
    """Whether a SQLite file with these tables is an Nsight Systems export."""
    return any(t in tables for t in NSYS_TABLES)


def _table(db: Database, tables: set[str], warn: Warnings, name: str, columns: dict[str, str]) -> pl.DataFrame | None:
    """Columns of `name` (stored column -> output name; typed by `sqlite_columns`: TEXT_COLUMNS
    text, the rest integers, rows with a bad start/end dropped) when the table exists and has
    rows, else None; a column the table lacks reads as NULL."""
    if name not in tables:
        return None
    have = db.columns(name)
    frame = select(
        db,
        [
            Column(
                out,
                f'"{col}"' if col in have else "NULL",
                TEXT if out in TEXT_COLUMNS else INT,
                name,
                time=out in TIME_COLUMNS,
            )
            for out, col in columns.items()
        ],
        f'FROM "{name}"',
        warn,
    )
    return frame if frame.height else None


def _cols(*names: str) -> dict[str, str]:
    return {n: n for n in names}


def _thread(col: str) -> list[pl.Expr]:
    g = pl.col(col).cast(pl.Int64)
    return [((g // (1 << 24)) % (1 << 24)).alias("pid"), (g % (1 << 24)).alias("tid")]


def parse_nsys(path: Path) -> ParsedRank:
    """The canonical frames of one Nsight Systems SQLite export (module docstring)."""
    path = Path(path)
    warn = Warnings(path)
    if pending_wal(path):
        warn.add(PENDING_WAL)
    with open_database(path, FIX, warn) as db:
        tables = db.tables(READ_TABLES)
        if not is_nsys_export(tables):
            raise TraceError(
                path, f"not an Nsight Systems export (no CUPTI_ACTIVITY_KIND_KERNEL table{db.not_read()})", FIX
            )
        try:
            frames = _read(db, tables, warn)
        except sqlite3.DatabaseError as exc:
            raise TraceError(path, f"cannot read the SQLite export: {exc}", FIX) from None
    strings, kernels, copies, sets, runtime, nvtx, gpus, memory = frames
    name_of = dict(zip(strings["id"].to_list(), strings["value"].to_list())) if strings is not None else {}

    def text(col: str) -> pl.Expr:
        return pl.col(col).replace_strict(name_of, default=None, return_dtype=pl.String)

    name = text("name_id").fill_null("(unnamed)")
    copy_kind = pl.col("copy_kind").replace_strict(COPY_KINDS, default=None, return_dtype=pl.String)
    no_text = pl.lit(None, pl.String)
    tasks = [
        task_columns(frame, kind, task_name, grid, block, size)
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
    used = used_devices(tasks)
    gpu = gpus.filter(pl.col("id").is_in(used)) if gpus is not None and used else gpus
    gpu_row = gpu.row(0, named=True) if gpu is not None and gpu.height else {}
    meta = {
        "rank": None,
        "world_size": None,
        "format": "nsys",
        "source": str(path),
        "device_name": gpu_row.get("name"),
        "device_memory_bytes": gpu_row.get("total_memory"),
    }
    extra = {"memory_events": _memory_events(memory)} if memory is not None else {}
    return activity_rank(path, warn, tasks, host, meta, NO_CUDA, extra)


def _memory_events(memory: pl.DataFrame) -> pl.DataFrame:
    """CUDA_GPU_MEMORY_USAGE_EVENTS rows of device memory -> memory_events: the running sum per
    device of allocations (+bytes) and frees (-bytes) as total_reserved_bytes. `bytes` stays null:
    a change there would make the timeline count it as allocated (PyTorch's sense), which these
    driver allocations are not."""
    signed = pl.when(pl.col("operation") == 1).then(-pl.col("bytes")).otherwise(pl.col("bytes"))
    return (
        memory.filter(pl.col("mem_kind").is_in(DEVICE_MEMORY_KINDS) & pl.col("start_ns").is_not_null())
        .sort("start_ns", maintain_order=True)
        .select(
            pl.lit("cuda").alias("device_type"),
            "device",
            pl.lit(CUDA_MALLOC).alias("component"),
            pl.col("start_ns").alias("ts_ns"),
            pl.col("address").alias("addr"),
            signed.cum_sum().over("device").alias("total_reserved_bytes"),
        )
        .with_columns(  # frees of memory allocated before the capture: that much was held at its start
            pl.col("total_reserved_bytes") - pl.col("total_reserved_bytes").min().over("device").clip(upper_bound=0)
        )
    )


def _read(db: Database, tables: set[str], warn: Warnings):
    """The raw tables (polars frames, None where absent): strings, kernels, memcpy, memset,
    runtime calls, NVTX events, GPUs, CUDA memory usage events."""
    timed = {"start_ns": "start", "end_ns": "end"}
    task = {**timed, "device": "deviceId", "stream": "streamId", "correlation": "correlationId"}

    def table(name: str, columns: dict[str, str]) -> pl.DataFrame | None:
        return _table(db, tables, warn, name, columns)

    grid = {"gx": "gridX", "gy": "gridY", "gz": "gridZ", "bx": "blockX", "by": "blockY", "bz": "blockZ"}
    return (
        table("StringIds", _cols("id", "value")),
        table("CUPTI_ACTIVITY_KIND_KERNEL", {**task, "name_id": "demangledName", **grid}),
        table("CUPTI_ACTIVITY_KIND_MEMCPY", {**task, "bytes": "bytes", "copy_kind": "copyKind"}),
        table("CUPTI_ACTIVITY_KIND_MEMSET", {**task, "bytes": "bytes"}),
        table(
            "CUPTI_ACTIVITY_KIND_RUNTIME",
            {**timed, "global_tid": "globalTid", "correlation": "correlationId", "name_id": "nameId"},
        ),
        table(
            "NVTX_EVENTS",
            {**timed, "event_type": "eventType", "text": "text", "text_id": "textId", "global_tid": "globalTid"},
        ),
        table("TARGET_INFO_GPU", {"id": "id", "name": "name", "total_memory": "totalMemory"}),
        table(
            "CUDA_GPU_MEMORY_USAGE_EVENTS",
            {
                "start_ns": "start",
                "device": "deviceId",
                "address": "address",
                "bytes": "bytes",
                "mem_kind": "memKind",
                "operation": "memoryOperationType",
            },
        ),
    )


#: The tables `_read` reads (only stored tables of these names are: `Database.tables`).
READ_TABLES = (
    *NSYS_TABLES,
    "StringIds",
    "CUPTI_ACTIVITY_KIND_MEMCPY",
    "CUPTI_ACTIVITY_KIND_MEMSET",
    "CUPTI_ACTIVITY_KIND_RUNTIME",
    "NVTX_EVENTS",
    "TARGET_INFO_GPU",
    "CUDA_GPU_MEMORY_USAGE_EVENTS",
)
