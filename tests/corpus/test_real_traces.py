"""Every real profile listed in ../shared/traces/INDEX.md loads, and its numbers match counts made
here independently (orjson / csv, not traceview's parsers)."""

from __future__ import annotations

import csv
import gzip
import re
from pathlib import Path

import orjson
import pytest

import traceview as tv
from tests.conftest import SHARED_TRACES, needs_shared
from tests.support.corpus import ASCEND_DIRS, KINETO, MINDSPORE

pytestmark = needs_shared

DEVICE_CATEGORIES = {"kernel", "gpu_memcpy", "gpu_memset", "memcpy", "memset"}


def _json(path: Path):
    raw = path.read_bytes()
    return orjson.loads(gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw)


def _is_num(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _independent_kineto_counts(doc) -> dict:
    """Device tasks = complete events of kernel/memcpy/memset categories with numeric ts and dur >= 0."""
    counts = {"device_tasks": 0, "memcpy": 0, "memset": 0}
    for e in doc["traceEvents"]:
        cat = str(e.get("cat", "")).lower()
        if e.get("ph") != "X" or cat not in DEVICE_CATEGORIES:
            continue
        if not (_is_num(e.get("ts")) and _is_num(e.get("dur")) and e["dur"] >= 0):
            continue
        counts["device_tasks"] += 1
        if "memcpy" in cat:
            counts["memcpy"] += 1
        elif "memset" in cat:
            counts["memset"] += 1
    return counts


def test_index_lists_the_corpus():
    assert len(KINETO) >= 50 and len(ASCEND_DIRS) >= 6 and len(MINDSPORE) >= 4


@pytest.mark.parametrize("rel", KINETO)
def test_kineto_trace_loads_with_independent_counts(rel):
    path = SHARED_TRACES / rel
    doc = _json(path)
    trace = tv.load(path)
    info = trace.info().row(0, named=True)
    expected = _independent_kineto_counts(doc)
    assert info["device_tasks"] == expected["device_tasks"]
    assert info["memcpy"] == expected["memcpy"]
    assert info["memset"] == expected["memset"]
    dist = doc.get("distributedInfo") or {}
    if isinstance(dist.get("rank"), int):
        assert info["rank"] == dist["rank"]
        assert info["world_size"] == dist.get("world_size")
    props = doc.get("deviceProperties") or doc.get("computeProperties") or []
    names = {p.get("name") for p in props if isinstance(p, dict) and p.get("name")}
    if names and expected["device_tasks"]:
        assert info["device_name"] in names
    elif not names:
        assert info["device_name"] is None  # an empty name is missing, not ""
    assert trace.failures == []
    # every task has a non-negative duration and end = start + dur
    t = trace.device_tasks
    assert (t["end_ns"] - t["start_ns"] == t["dur_ns"]).all() and (t["dur_ns"] >= 0).all()


def _kernel_details(rank_dir: Path) -> Path | None:
    hits = list(rank_dir.glob("ASCEND_PROFILER_OUTPUT/kernel_details.csv")) + list(rank_dir.glob("kernel_details.csv"))
    return hits[0] if hits else None


@pytest.mark.parametrize("rel", ASCEND_DIRS)
def test_ascend_rank_folder_loads(rel):
    rank_dir = SHARED_TRACES / rel
    trace = tv.load(rank_dir)
    info = trace.info().row(0, named=True)
    assert info["format"] == "ascend"
    details = _kernel_details(rank_dir)
    if details is not None:
        with details.open(newline="", encoding="utf-8") as fh:
            rows = list(csv.DictReader(fh))
        assert info["device_tasks"] == len(rows)
        assert info["steps"] == len({r["Step Id"].strip() for r in rows if r.get("Step Id", "").strip()})
    else:
        assert info["device_tasks"] > 0
    m = re.search(r"rank_?(\d+)", rel)
    if m:
        assert info["rank"] == int(m.group(1))


@pytest.mark.parametrize("rel", MINDSPORE)
def test_mindspore_timeline_loads(rel):
    trace = tv.load(SHARED_TRACES / rel)
    info = trace.info().row(0, named=True)
    assert info["format"] == "mindspore"
    assert info["device_tasks"] > 0


def test_whole_corpus_folder_loads_as_many_ranks():
    """Pointing at a mixed folder finds Kineto files and Ascend rank folders side by side."""
    trace = tv.load(SHARED_TRACES / "msinsight" / "test" / "data" / "pytorch" / "text")
    assert sorted(trace.ranks["format"].to_list()) == ["ascend"] * 4
    assert trace.ranks["rank"].n_unique() == 4
