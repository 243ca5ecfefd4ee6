"""Find the profiles under a path and tell their formats apart.

A path may be one file, one rank folder, or a folder holding many ranks, even of mixed formats.
The rules, in order:
- an Ascend rank folder (it holds `ASCEND_PROFILER_OUTPUT/`, or directly `kernel_details.csv` /
  `trace_view.json` / an `ascend_pytorch_profiler*.db` or MindSpore `ascend_mindspore_profiler*.db`)
  is one source of format `ascend`; nothing
  inside it is looked at again;
- `*timeline_display_*.json` files are MindSpore timelines (`mindspore`);
- rocprofv3 output: a JSON file whose top key is `"rocprofiler-sdk-tool"`, or a CSV
  `*kernel_trace.csv` (read with its siblings of the same prefix) is a `rocprof` source;
- SQLite files (`.sqlite`, `.db`, or a renamed `.json`) holding an Nsight Systems export's tables
  are `nsys` sources, and those holding the Ascend task tables (a CANN `msprof_*.db`, a MindSpore
  database) `msprof` sources, one per file;
- `*.pt.trace.json[.gz]` files, and other `.json[.gz]` files whose first 64 KiB hold a Chrome
  trace object (`"traceEvents"` / `"schemaVersion"`), are Kineto traces (`kineto`);
- such files with a temporary suffix (`.part`, `.tmp`, `.partial`) are `partial`: still being
  written, so reported as failed ranks (`parse_partial`) rather than read half-written or skipped;
- only regular files (or links to one) are read: a FIFO, a device (`/dev/zero` behind a link) or
  a socket named like a profile is `irregular`, a folder that cannot be listed `unreadable`, and
  both are reported as failed ranks (`parse_irregular`, `parse_unreadable`) while the others load.
Hidden folders and msprof `PROF_*` raw folders are skipped. A PyTorch memory snapshot
(`*.pickle`, `_dump_snapshot`) is a `snapshot` source when it is the path given, never found in
a folder (pickles next to traces are not ranks). A file (or a folder holding no
profile but such a file) of a kind traceview recognises without reading it (an Nsight Systems
report, a JAX XPlane protobuf, a rocprofv3 rocpd database: `parsers.unsupported`) is a one-line error naming it.
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

from traceview.errors import TraceError
from traceview.parsers.jsonio import peek_bytes
from traceview.parsers.nsys import is_nsys_export
from traceview.parsers.rocprof import KERNEL_TRACE, is_kernel_trace, is_rocprof_json, sibling_files
from traceview.parsers.sqlite_ro import SQLITE_MAGIC
from traceview.parsers.unsupported import sqlite_tables, unsupported_kind

ASCEND_OUTPUT_DIR = "ASCEND_PROFILER_OUTPUT"
ASCEND_LOOSE_FILES = ("kernel_details.csv", "trace_view.json")
MINDSPORE_TIMELINE = re.compile(r"timeline_display_.*\.json$")
KINETO_SUFFIXES = (".pt.trace.json", ".pt.trace.json.gz")
JSON_SUFFIXES = (".json", ".json.gz", ".gz")
SNIFF_BYTES = 64 * 1024
#: The tables of a CANN msprof_*.db (MindSpore and torch_npu databases share them): such a file,
#: found outside a torch_npu rank folder, is an `msprof` source.
ASCEND_DB_TABLES = frozenset({"TASK", "COMPUTE_TASK_INFO", "STRING_IDS"})
#: SQLite files looked into for an Nsight Systems export (`nsys export --type sqlite`).
SQLITE_SUFFIXES = (".sqlite", ".sqlite3", ".db")
#: A PyTorch memory snapshot (`torch.cuda.memory._dump_snapshot`), read when given as the path.
SNAPSHOT_SUFFIXES = (".pickle", ".pkl")
#: Temporary names of a file being written (by the profiler, a copy, a download).
PARTIAL_SUFFIXES = (".part", ".tmp", ".partial")
MAX_DEPTH = 8


@dataclass(frozen=True)
class Source:
    """One rank's input: its format, the file (kineto, mindspore) or folder (ascend) to read, and
    the user's task-kind rules to parse it with (`traceview.parsers.kinds.user_section` JSON; ""
    = the shipped rules only)."""

    format: str
    path: Path
    task_kinds: str = ""


#: The DB export (export_type db) of torch_npu and of MindSpore 2.x, in ASCEND_PROFILER_OUTPUT/ or a
#: loose folder: the same tables (parsers/ascend/db.py reads both).
ASCEND_DB_GLOBS = ("ascend_pytorch_profiler*.db", "ascend_mindspore_profiler*.db")
#: The name prefixes of those files.
ASCEND_DB_PREFIXES = tuple(g.split("*")[0] for g in ASCEND_DB_GLOBS)


def ascend_db_files(folder: Path) -> list[Path]:
    """The DB export files directly in `folder` (torch_npu's, then MindSpore's), sorted."""
    return sorted(p for glob in ASCEND_DB_GLOBS for p in folder.glob(glob) if p.is_file())


def is_regular(path: Path) -> bool:
    """Whether `path` is a regular file, following links (False when it cannot be stat'ed)."""
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False


def is_ascend_rank_dir(path: str | Path) -> bool:
    """True if `path` is an Ascend rank folder (torch_npu `*_ascend_pt`, MindSpore `*_ascend_ms`),
    its ASCEND_PROFILER_OUTPUT/ given directly, or a loose folder of Ascend output files: it holds
    ASCEND_PROFILER_OUTPUT/, or directly kernel_details.csv / trace_view.json / an
    ascend_pytorch_profiler*.db / ascend_mindspore_profiler*.db. Cheap (stats only); the one rule for discovery and parsers.ascend."""
    path = Path(path)
    try:
        if not path.is_dir():
            return False
        if (path / ASCEND_OUTPUT_DIR).is_dir():
            return True
        if any((path / name).exists() for name in ASCEND_LOOSE_FILES):
            return True
        return any(p.exists() for glob in ASCEND_DB_GLOBS for p in path.glob(glob))
    except OSError:  # cannot look inside: `discover` reports the folder as unreadable
        return False


def _sniff_json(path: Path) -> str | None:
    """'kineto' for a Chrome-trace object, 'rocprof' for a rocprofv3 JSON output, 'array' for a
    bare JSON array, else None."""
    head = peek_bytes(path, SNIFF_BYTES).lstrip(b"\xef\xbb\xbf \t\r\n")
    if head.startswith(b"{") and (b'"traceEvents"' in head or b'"schemaVersion"' in head):
        return "kineto"
    if is_rocprof_json(head):
        return "rocprof"
    if head.startswith(b"["):
        return "array"
    return None


def database_source(path: Path) -> Source | None:
    """The source a SQLite file stands for by its tables: an Nsight Systems export (`nsys`) or an
    Ascend task database (`msprof`); None for anything else (not SQLite, other tables)."""
    if not peek_bytes(path, 16).startswith(SQLITE_MAGIC):
        return None
    tables = sqlite_tables(path)
    if is_nsys_export(tables):
        return Source("nsys", path)
    if tables >= ASCEND_DB_TABLES:
        return Source("msprof", path)
    return None


def classify_file(path: Path) -> Source | None:
    """The source a single file stands for, or None if it is not a profile. A profile file with a
    temporary name (`rank1.pt.trace.json.part`, `.tmp`, `.partial`: still being written, or left by
    a write that died) is a `partial` source, which `parse_partial` reports as a failure."""
    name = path.name
    if not is_regular(path):
        if (
            name.endswith(KINETO_SUFFIXES + JSON_SUFFIXES)
            or MINDSPORE_TIMELINE.search(name)
            or name in ASCEND_LOOSE_FILES
        ):
            return Source("irregular", path)
        return None
    for suffix in PARTIAL_SUFFIXES:
        if name.endswith(suffix) and len(name) > len(suffix):
            stem = name[: -len(suffix)]
            if (
                stem.endswith(KINETO_SUFFIXES)
                or MINDSPORE_TIMELINE.search(stem)
                or (stem.endswith(JSON_SUFFIXES) and _sniff_json(path) == "kineto")
            ):
                return Source("partial", path)
            return None
    if name in ASCEND_LOOSE_FILES or (name.startswith(ASCEND_DB_PREFIXES) and name.endswith(".db")):
        folder = path.parent
        if folder.name == ASCEND_OUTPUT_DIR:
            folder = folder.parent
        return Source("ascend", folder)
    if MINDSPORE_TIMELINE.search(name):
        return Source("mindspore", path)
    if name.endswith(KINETO_SUFFIXES):
        return Source("kineto", path)
    if name.endswith(SQLITE_SUFFIXES + JSON_SUFFIXES) and (database := database_source(path)) is not None:
        return database
    if name.endswith(JSON_SUFFIXES):
        sniffed = _sniff_json(path)
        if sniffed == "kineto":
            return Source("kineto", path)
        if sniffed == "rocprof":
            return Source("rocprof", path)
    if name.endswith(KERNEL_TRACE) and is_kernel_trace(path, peek_bytes(path, 4096)):
        return Source("rocprof", path)
    return None


def discover(path: str | Path) -> list[Source]:
    """Every profile source under `path`, in a stable order. Raises TraceError if there is none."""
    path = Path(path)
    if not path.exists():
        raise TraceError(path, "no such file or folder", "check the path")
    if not path.is_dir() and not is_regular(path):
        parse_irregular(path)
    if path.is_file():
        source = classify_file(path)
        if source is not None:
            return [source]
        head = peek_bytes(path, 16)
        if not head and path.stat().st_size == 0:
            raise TraceError(path, "the file is empty", "re-export the profile")
        database = database_source(path)  # any name: an export renamed by a wrapper
        if database is not None:
            return [database]
        if path.name.endswith(KERNEL_TRACE):  # named like a rocprofv3 CSV kernel trace: its parser says what is off
            return [Source("rocprof", path)]
        if path.name.lower().endswith(SNAPSHOT_SUFFIXES) and head.startswith(b"\x80"):
            return [Source("snapshot", path)]  # a pickle: read only when given by name, never found in a folder
        kind = unsupported_kind(path)
        if kind is not None:
            raise TraceError(path, f"this is {kind[0]}", kind[1])
        # Not recognisable by name or header: let the Kineto parser say precisely what is wrong.
        return [Source("kineto", path)]
    if path.name == ASCEND_OUTPUT_DIR:
        path = path.parent
    if is_ascend_rank_dir(path):
        return [Source("ascend", path)]

    sources: list[Source] = []
    root_depth = len(path.parts)

    def unreadable(error: OSError) -> None:
        if error.filename is not None and Path(error.filename) != path:
            sources.append(Source("unreadable", Path(error.filename)))
        elif error.filename is not None:
            raise TraceError(path, f"cannot list this folder: {error.strerror or error}", "check its permissions")

    for dirpath, dirnames, filenames in os.walk(path, onerror=unreadable):
        here = Path(dirpath)
        keep = []
        for d in sorted(dirnames):
            sub = here / d
            if d.startswith(".") or d.startswith("PROF_"):
                continue
            if not os.access(sub, os.R_OK | os.X_OK):
                sources.append(Source("unreadable", sub))
                continue
            if is_ascend_rank_dir(sub) or d == ASCEND_OUTPUT_DIR and is_ascend_rank_dir(here):
                sources.append(Source("ascend", sub))
                continue
            if len(sub.parts) - root_depth < MAX_DEPTH:
                keep.append(d)
        dirnames[:] = keep
        for f in sorted(filenames):
            source = classify_file(here / f)
            if source is not None and source.format != "ascend":
                sources.append(source)
    if not sources:
        known = _first_unsupported(path)
        if known is not None:
            where, (what, fix) = known
            raise TraceError(path, f"no profiles traceview reads in this folder; {where.name} is {what}", fix)
        raise TraceError(
            path,
            "no profiles found in this folder",
            "expected *.pt.trace.json[.gz] Kineto traces, *_ascend_pt rank folders with "
            "ASCEND_PROFILER_OUTPUT/, or MindSpore *timeline_display_*.json files",
        )
    return sorted(set(sources), key=lambda s: (str(s.path), s.format))


#: How many files a folder without profiles has looked at for a kind traceview recognises.
UNSUPPORTED_LOOKS = 200


def _first_unsupported(path: Path) -> tuple[Path, tuple[str, str]] | None:
    """The first file under `path` (sorted, hidden folders skipped) of a kind traceview recognises
    but does not read, with (what it is, what to do); None when the first UNSUPPORTED_LOOKS
    regular files hold none."""
    looked = 0
    for dirpath, dirnames, filenames in os.walk(path):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for f in sorted(filenames):
            file = Path(dirpath) / f
            if not is_regular(file):
                continue
            kind = unsupported_kind(file)
            if kind is not None:
                return file, kind
            looked += 1
            if looked >= UNSUPPORTED_LOOKS:
                return None
    return None


def input_files(source: Source) -> list[Path]:
    """The files a parser reads for `source` (whose change must invalidate its cache entry; the
    memory guard sizes the load by them)."""
    if source.format == "rocprof" and source.path.is_file():
        return sorted([source.path, *sibling_files(source.path).values()])
    if source.path.is_file():
        return [source.path]
    files = [p for p in source.path.iterdir() if p.is_file()]
    out_dir = source.path / ASCEND_OUTPUT_DIR
    if out_dir.is_dir():
        files += [p for p in out_dir.iterdir() if p.is_file()]
    return sorted(files)


def parse_irregular(path: Path):
    """The "parser" of an `irregular` source: a TraceError saying what the path is instead of a file."""
    try:
        mode = os.stat(path).st_mode
        what = (
            "a FIFO (named pipe)"
            if stat.S_ISFIFO(mode)
            else "a device"
            if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
            else "a socket"
            if stat.S_ISSOCK(mode)
            else "not a regular file"
        )
    except OSError as exc:
        what = f"not readable ({exc.strerror or exc})"
    if Path(path).is_symlink():
        what = f"a link to {what}" if not what.startswith("not") else f"a link that is {what}"
    raise TraceError(path, f"{what}: traceview reads only regular files", "point it at the profile files themselves")


def parse_unreadable(path: Path):
    """The "parser" of an `unreadable` source: the folder's listing error as a TraceError."""
    try:
        os.listdir(path)
        problem = "this folder could not be read while looking for profiles"
    except OSError as exc:
        problem = f"cannot list this folder: {exc.strerror or exc}"
    raise TraceError(path, problem, "check its permissions, or point traceview at the other folders")


def parse_partial(path: Path):
    """The "parser" of a `partial` source: a TraceError naming the file as still being written."""
    suffix = next((s for s in PARTIAL_SUFFIXES if Path(path).name.endswith(s)), ".part")
    raise TraceError(
        path,
        f"still being written: a profile with a temporary name ({suffix}) is not read",
        f"wait for the profiler to finish; if the file is complete, rename it without {suffix}",
    )
