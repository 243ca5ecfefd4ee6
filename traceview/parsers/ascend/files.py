"""Where the files of one Ascend rank are, and the rank id / world size recorded beside them.

Layout (torch_npu `tensorboard_trace_handler`, MindSpore 2.x likewise):
    <worker>_<pid>_<time>_ascend_pt/          the rank folder (`*_ascend_ms` for MindSpore)
        profiler_info_<rank>.json             -> rank (`rank_id`; the file-name number when
                                                 rank_id is absent or -1)
        profiler_metadata.json                -> world_size when it records one (any `world_size`
                                                 key, any nesting), else null
        ASCEND_PROFILER_OUTPUT/               kernel_details.csv, trace_view.json,
                                              step_trace_time.csv, communication.json,
                                              ascend_pytorch_profiler_<rank>.db (MindSpore:
                                              ascend_mindspore_profiler_<rank>.db), analysis.db,
                                              memory_record.csv, operator_memory.csv,
                                              npu_module_mem.csv
A loose folder holding the output files directly, or ASCEND_PROFILER_OUTPUT/ itself, is read the
same way. Which folders count as ranks is `parsers.detect.is_ascend_rank_dir` (discovery's rule).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from traceview.errors import TraceError, Warnings
from traceview.parsers.detect import ASCEND_OUTPUT_DIR as OUTPUT_DIR
from traceview.parsers.detect import ascend_db_files

KERNEL_DETAILS = "kernel_details.csv"
TRACE_VIEW = "trace_view.json"
STEP_TRACE_TIME = "step_trace_time.csv"
COMMUNICATION = "communication.json"
ANALYSIS_DB = "analysis.db"
MEMORY_RECORD = "memory_record.csv"
OPERATOR_MEMORY = "operator_memory.csv"
NPU_MODULE_MEM = "npu_module_mem.csv"


@dataclass
class RankFiles:
    """The files of one Ascend rank; None where the export did not write one."""

    root: Path
    output: Path
    kernel_details: Path | None
    trace_view: Path | None
    step_trace: Path | None
    communication: Path | None
    db: Path | None
    analysis_db: Path | None
    profiler_info: list[Path]
    profiler_metadata: Path | None
    memory_record: Path | None = None
    operator_memory: Path | None = None
    npu_module_mem: Path | None = None


def _file(folder: Path, name: str) -> Path | None:
    path = folder / name
    return path if path.is_file() else None


def _db_file(folder: Path) -> Path | None:
    found = ascend_db_files(folder)
    return found[0] if found else None


def locate_files(path: Path) -> RankFiles:
    """Find the files of the rank at `path` (a rank folder, its ASCEND_PROFILER_OUTPUT, or a
    loose folder of output files). Raises TraceError when none of the data files is there."""
    path = Path(path)
    if not path.is_dir():
        raise TraceError(path, "not a folder", "give the *_ascend_pt rank folder")
    if (path / OUTPUT_DIR).is_dir():
        root, output = path, path / OUTPUT_DIR
    elif path.name == OUTPUT_DIR:
        root, output = path.parent, path
    else:
        root, output = path, path
    files = RankFiles(
        root=root,
        output=output,
        kernel_details=_file(output, KERNEL_DETAILS),
        trace_view=_file(output, TRACE_VIEW),
        step_trace=_file(output, STEP_TRACE_TIME),
        communication=_file(output, COMMUNICATION),
        db=_db_file(output),
        analysis_db=_file(output, ANALYSIS_DB),
        memory_record=_file(output, MEMORY_RECORD),
        operator_memory=_file(output, OPERATOR_MEMORY),
        npu_module_mem=_file(output, NPU_MODULE_MEM),
        profiler_info=sorted(p for p in root.glob("profiler_info*.json") if p.is_file()),
        profiler_metadata=_file(root, "profiler_metadata.json"),
    )
    if not (files.kernel_details or files.trace_view or files.db):
        raise TraceError(
            output,
            "no kernel_details.csv, trace_view.json, ascend_pytorch_profiler_*.db or ascend_mindspore_profiler_*.db found",
            "give a torch_npu *_ascend_pt folder whose analysis finished (it writes ASCEND_PROFILER_OUTPUT/)",
        )
    return files


def _load_json(path: Path, warnings: Warnings) -> object:
    try:
        return json.loads(path.read_text(encoding="utf-8", errors="replace"))
    except (OSError, json.JSONDecodeError) as exc:
        warnings.add(f"{path.name} unreadable ({type(exc).__name__}); its fields left null")
        return None


def read_rank(info_files: list[Path], warnings: Warnings) -> int | None:
    """Rank from profiler_info_<rank>.json: `rank_id` when >= 0, else the number in the file name."""
    ranks = set()
    for path in info_files:
        doc = _load_json(path, warnings)
        rank_id = doc.get("rank_id") if isinstance(doc, dict) else None
        if isinstance(rank_id, int) and not isinstance(rank_id, bool) and rank_id >= 0:
            ranks.add(rank_id)
            continue
        m = re.search(r"profiler_info_(\d+)\.json$", path.name)
        if m:
            ranks.add(int(m.group(1)))
    if len(ranks) > 1:
        warnings.add(f"several profiler_info files with different ranks {sorted(ranks)}; using the smallest")
    return min(ranks) if ranks else None


def _find_key(doc: object, key: str) -> object:
    """First value of `key` (case-insensitive) anywhere in a nested JSON document, else None."""
    if isinstance(doc, dict):
        for k, v in doc.items():
            if isinstance(k, str) and k.lower() == key:
                return v
        for v in doc.values():
            found = _find_key(v, key)
            if found is not None:
                return found
    elif isinstance(doc, list):
        for v in doc:
            found = _find_key(v, key)
            if found is not None:
                return found
    return None


def read_world_size(path: Path | None, warnings: Warnings) -> int | None:
    """world_size recorded in profiler_metadata.json (any nesting), else None."""
    if path is None:
        return None
    doc = _load_json(path, warnings)
    value = _find_key(doc, "world_size")
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value)
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None
