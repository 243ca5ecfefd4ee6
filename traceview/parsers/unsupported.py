"""Profiles traceview recognises but does not read yet: a one-line error naming what the file is
and what to do, instead of "invalid JSON at byte 0".

Recognised by content first (wrappers rename files), then by name: SQLite databases (by their
tables: CANN msprof and MindSpore databases, rocprofv3's rocpd), JAX / TensorFlow XPlane
protobufs, Perfetto protobuf traces (rocprofv3's `--output-format pftrace` too), and Nsight
Systems reports (to be exported to SQLite, which traceview reads: `parsers/nsys.py`).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from traceview.parsers.jsonio import peek_bytes
from traceview.parsers.sqlite_ro import SQLITE_MAGIC, file_tables

READ = (
    "traceview reads torch.profiler's Chrome trace JSON, torch_npu / MindSpore Ascend rank folders, CANN msprof "
    "databases, Nsight Systems SQLite exports, rocprofv3 JSON / CSV output and PyTorch memory snapshots "
    "(docs/formats.md)"
)
NSYS_REPORT = "export it first: nsys export --type sqlite REPORT.nsys-rep (traceview reads the .sqlite)"

#: (a table whose presence names the database, what it is, what to do)
SQLITE_KINDS = (
    (
        "rocpd_kernel_dispatch",
        "a rocprofv3 rocpd database",
        "not read yet: re-run rocprofv3 with --output-format json or csv, which traceview reads",
    ),
    (
        "TASK",
        "an Ascend profiler database without its task tables (COMPUTE_TASK_INFO, STRING_IDS)",
        "re-export it, or give the *_ascend_pt / *_ascend_ms rank folder exported as text",
    ),
)
#: file name ending -> (what it is, what to do)
NAME_KINDS = (
    (".xplane.pb", "a JAX / TensorFlow XPlane protobuf", "not read: " + READ),
    (".pftrace", "a Perfetto protobuf trace", "not read: " + READ),
    (".perfetto-trace", "a Perfetto protobuf trace", "not read: " + READ),
    (".nsys-rep", "an Nsight Systems report", NSYS_REPORT),
    (".qdrep", "an Nsight Systems report", NSYS_REPORT),
)


def unsupported_kind(path: Path) -> tuple[str, str] | None:
    """(what the file is, what to do) for a profile kind traceview recognises but does not read,
    else None. Reads at most the first 64 KiB, and a SQLite file's table names (read-only)."""
    head = peek_bytes(path, 64 * 1024)
    if head.startswith(SQLITE_MAGIC):
        return _sqlite_kind(path)
    name = path.name.lower()
    for suffix, what, fix in NAME_KINDS:
        if name.endswith(suffix) or name.endswith(suffix + ".gz"):
            return what, fix
    return None


def sqlite_tables(path: Path) -> set[str]:
    """The table and view names of a SQLite file, opened read-only (empty when it cannot be read)."""
    try:
        return file_tables(path)
    except sqlite3.Error:
        return set()


def _sqlite_kind(path: Path) -> tuple[str, str]:
    try:
        tables = file_tables(path)
    except sqlite3.Error as exc:
        return f"a SQLite database that cannot be read ({exc}: cut short or damaged)", "copy it again or re-export it"
    for table, what, fix in SQLITE_KINDS:
        if table in tables:
            return what, fix
    return (
        "a SQLite database traceview does not know",
        READ + " (torch_npu's ascend_pytorch_profiler_*.db inside its rank folder)",
    )
