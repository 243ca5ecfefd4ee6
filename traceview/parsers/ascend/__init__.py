"""Ascend (torch_npu / MindSpore 2.x) rank folders -> canonical frames: `parse_ascend_rank`.

A rank is a `*_ascend_pt` / `*_ascend_ms` folder holding `ASCEND_PROFILER_OUTPUT/` (and
`profiler_info_<rank>.json`, `profiler_metadata.json` beside it), or a loose folder that directly
holds `kernel_details.csv` and/or `trace_view.json` (`parsers.detect.is_ascend_rank_dir` says which
folders are ranks). Which file feeds which canonical table, and the module that reads it:

    file                                  canonical table (column)                  module
    ------------------------------------  ----------------------------------------  -----------------
    kernel_details.csv                    device_tasks                              kernel_details.py
    trace_view.json                       host_events; steps (host ranges);         trace_view.py
                                          device_tasks correlation (launch link);
                                          device_tasks when kernel_details.csv is
                                          absent (Ascend Hardware + HCCL lanes)
    ascend_pytorch_profiler_<rank>.db     device_tasks, host_events, steps,         db.py
      (only without kernel_details.csv      ranks (device_name; rank fallback),
       and trace_view.json)                 memory_events, memory_allocations
    step_trace_time.csv                   ascend_step_trace                         reference.py
    communication.json                    ascend_communication                      reference.py
    analysis.db (DB-only export)          ascend_step_trace, ascend_communication   reference.py
    memory_record.csv                     memory_events                             memory.py
    operator_memory.csv                   memory_allocations                        memory.py
    profiler_info_<rank>.json             ranks (rank)                              files.py
    profiler_metadata.json                ranks (world_size)                        files.py

Shared by the readers: files.py finds the files; text.py reads CSV cells and JSON/SQLite numbers
as exact text (times are decimal µs that float64 cannot hold); kinds.py is the ordered task-kind
rule table (kernel / memset / memcpy / communication); steps.py turns host ProfilerStep#N ranges
and the tasks into the steps table (window_rule "step_id" when kernel_details gave a Step Id,
"correlation" when a task's step comes from its launch time inside the host range).
ascend_step_trace / ascend_communication are torch_npu's own numbers, kept for comparison only.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from traceview.errors import Warnings
from traceview.parsers.ascend.db import read_profiler_db
from traceview.parsers.ascend.files import RankFiles, locate_files, read_rank, read_world_size
from traceview.parsers.ascend.kernel_details import read_kernel_details
from traceview.parsers.ascend.kinds import TASK_KIND_RULES, task_kind
from traceview.parsers.ascend.memory import read_memory_record, read_npu_module_mem, read_operator_memory
from traceview.parsers.ascend.reference import (
    read_analysis_communication,
    read_analysis_step_trace,
    read_communication_json,
    read_overlap_analysis,
    read_step_trace_time,
)
from traceview.parsers.ascend.steps import build_steps, empty_host_steps, fill_steps
from traceview.parsers.ascend.trace_view import attach_trace_tasks, read_trace_view, trace_events_frame
from traceview.parsers.base import ParsedRank, drop_bad_times
from traceview.parsers.detect import is_ascend_rank_dir
from traceview.parsers.jsonio import gc_paused


def parse_msprof_db(path: Path) -> ParsedRank:
    """One CANN `msprof_*.db` (or a MindSpore / torch_npu database given as a file): the tables the
    DB export shares (`read_profiler_db`) into canonical frames, msprof's OVERLAP_ANALYSIS totals
    as the whole-trace row of ascend_step_trace (`read_overlap_analysis`), one rank per file."""
    path = Path(path)
    warnings = Warnings(path)
    with gc_paused():
        db = read_profiler_db(path, warnings)
        frames = {"host_events": drop_bad_times(db["host_events"], "host events", warnings)}
        for table in ("memory_events", "memory_allocations"):
            if db[table] is not None:
                frames[table] = db[table]
        tasks = drop_bad_times(db["tasks"], "device tasks", warnings)
        tasks, step_rule = fill_steps(tasks, db["host_steps"], "correlation", warnings)
        frames["device_tasks"] = tasks.drop("launch_ns", strict=False)
        frames["steps"] = build_steps(db["host_steps"], tasks, step_rule)
        overlap = read_overlap_analysis(path, warnings)
        if overlap is not None:
            frames["ascend_step_trace"] = overlap
    meta = {
        "rank": db["rank"],
        "world_size": None,
        "format": "msprof",
        "source": str(path),
        "device_name": db["device_name"],
        "device_type": "npu",
    }
    return ParsedRank.build(frames, meta, warnings.messages())


def parse_ascend_rank(path: Path) -> ParsedRank:
    """Read one Ascend rank folder into canonical frames (see the module docstring for the mapping)."""
    path = Path(path)
    with gc_paused():  # trace_view.json / the DB build one Python object per event
        return _parse(path)


def _parse(path: Path) -> ParsedRank:
    files = locate_files(path)
    warnings = Warnings(path)
    frames: dict[str, pl.DataFrame] = {}
    device_name = db_rank = None
    text_export = bool(files.kernel_details or files.trace_view)

    if text_export:
        trace = read_trace_view(files.trace_view, warnings) if files.trace_view else None
        if files.kernel_details:
            tasks, rule = read_kernel_details(files.kernel_details, warnings), "step_id"
            if trace is not None:
                tasks = attach_trace_tasks(tasks, trace["tasks"])
        else:
            tasks, rule = trace["tasks"], "correlation"
        host_steps = trace["host_steps"] if trace is not None else empty_host_steps()
        if trace is not None:
            frames["host_events"] = trace["host_events"]
    else:
        db = read_profiler_db(files.db, warnings)
        tasks, host_steps, rule = db["tasks"], db["host_steps"], "correlation"
        frames["host_events"] = db["host_events"]
        device_name, db_rank = db["device_name"], db["rank"]
        for table in ("memory_events", "memory_allocations"):
            if db[table] is not None:
                frames[table] = db[table]

    tasks = drop_bad_times(tasks, "device tasks", warnings)
    if "host_events" in frames:
        frames["host_events"] = drop_bad_times(frames["host_events"], "host events", warnings)
    tasks, step_rule = fill_steps(tasks, host_steps, rule, warnings)
    frames["device_tasks"] = tasks.drop("launch_ns", strict=False)
    frames["steps"] = build_steps(host_steps, tasks, step_rule)

    if files.step_trace:
        frames["ascend_step_trace"] = read_step_trace_time(files.step_trace, warnings)
    elif files.analysis_db and not text_export:
        frames["ascend_step_trace"] = read_analysis_step_trace(files.analysis_db, warnings)
    if files.communication:
        frames["ascend_communication"] = read_communication_json(files.communication, warnings)
    elif files.analysis_db and not text_export:
        frames["ascend_communication"] = read_analysis_communication(files.analysis_db, warnings)

    memory = [
        frame
        for f, read in ((files.memory_record, read_memory_record), (files.npu_module_mem, read_npu_module_mem))
        if f and (frame := read(f, warnings)) is not None
    ]
    if memory:
        frames["memory_events"] = pl.concat(memory, how="vertical") if len(memory) > 1 else memory[0]
    if files.operator_memory:
        frames["memory_allocations"] = read_operator_memory(files.operator_memory, warnings)

    rank = read_rank(files.profiler_info, warnings)
    meta = {
        "rank": rank if rank is not None else db_rank,
        "world_size": read_world_size(files.profiler_metadata, warnings),
        "format": "ascend",
        "source": str(path),
        "device_name": device_name,
        "device_type": "npu",
    }
    return ParsedRank.build(frames, meta, warnings.messages())


__all__ = [
    "TASK_KIND_RULES",
    "RankFiles",
    "is_ascend_rank_dir",
    "locate_files",
    "parse_ascend_rank",
    "parse_msprof_db",
    "read_communication_json",
    "read_kernel_details",
    "read_profiler_db",
    "read_step_trace_time",
    "read_trace_view",
    "task_kind",
    "trace_events_frame",
]
