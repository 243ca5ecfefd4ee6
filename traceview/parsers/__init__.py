"""Ingestion: turn profiler output files into traceview's canonical frames (one rank at a time).

`parse_source(Source)` dispatches to the parser of the source's format; `detect.discover(path)`
finds the sources under a path.
"""

from __future__ import annotations

from importlib import import_module
from pathlib import Path

from traceview.parsers.base import ParsedRank, RankGroup
from traceview.parsers.detect import Source, discover

#: format -> "module:function" of its parser (imported on first use).
PARSERS = {
    "kineto": "traceview.parsers.kineto:parse_kineto",
    "ascend": "traceview.parsers.ascend:parse_ascend_rank",
    "mindspore": "traceview.parsers.mindspore:parse_mindspore_timeline",
    "nsys": "traceview.parsers.nsys:parse_nsys",  # an Nsight Systems SQLite export
    "rocprof": "traceview.parsers.rocprof:parse_rocprof",  # rocprofv3 JSON, or a CSV kernel trace and siblings
    "msprof": "traceview.parsers.ascend:parse_msprof_db",  # a CANN msprof_*.db (or another Ascend DB file)
    "snapshot": "traceview.parsers.snapshot:parse_snapshot",  # a PyTorch CUDA memory snapshot (given alone)
    "partial": "traceview.parsers.detect:parse_partial",  # a profile still being written: always a failure
    "irregular": "traceview.parsers.detect:parse_irregular",  # a FIFO, device or socket: never opened
    "unreadable": "traceview.parsers.detect:parse_unreadable",  # a folder that cannot be listed
}


#: Formats whose parser can spread one large file over several processes (`jobs`).
PARALLEL_FORMATS = frozenset({"kineto"})


def parse_source(source: Source, jobs: int = 1) -> ParsedRank:
    """Parse one rank source with the parser of its format (`jobs` > 1: the parser may use that
    many processes for one large file; formats in PARALLEL_FORMATS), with the source's task-kind
    rules in force."""
    if source.path.is_dir():
        _only_regular_files(source.path)
    from traceview.parsers import kinds

    module, func = PARSERS[source.format].split(":")
    parse = getattr(import_module(module), func)
    with kinds.using(source.task_kinds):
        return parse(source.path, jobs=jobs) if jobs > 1 and source.format in PARALLEL_FORMATS else parse(source.path)


def _only_regular_files(folder: Path) -> None:
    """TraceError naming the first entry of a rank folder (or its ASCEND_PROFILER_OUTPUT/) that is
    neither a folder nor a regular file: a parser that opened a FIFO there would wait forever."""
    from traceview.parsers.detect import ASCEND_OUTPUT_DIR, is_regular, parse_irregular

    for here in (folder, folder / ASCEND_OUTPUT_DIR):
        try:
            entries = sorted(here.iterdir()) if here.is_dir() else []
        except OSError:
            continue
        for entry in entries:
            if not entry.is_dir() and not is_regular(entry):
                parse_irregular(entry)


__all__ = ["PARSERS", "ParsedRank", "RankGroup", "Source", "discover", "parse_source"]
