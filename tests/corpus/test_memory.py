"""Memory: the allocator's records to memory_events / memory_allocations (Kineto `[memory]` events,
torch_npu memory_record.csv and operator_memory.csv), and the analyses on them (timeline, peaks per
step and trace, what the peak holds), checked by hand on a tiny trace and against an independent
recomputation from the raw files of real profiles.

This file holds the topic's corpus tests; the others are in tests/unit/test_memory.py, tests/integration/test_memory.py.
"""

from __future__ import annotations

import bisect
import csv
import gzip
import json
from collections import defaultdict
from decimal import Decimal
from pathlib import Path

import polars as pl
import pytest

from tests.conftest import SHARED_TRACES, needs_shared
from tests.support.memory_shared import MiB, _load  # noqa: F401
from traceview.analysis.memory import BEFORE_TRACE

KINETO_WITH_MEMORY = [
    "tracelens/tests/traces/h100/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz",
    "tracelens/tests/traces/mi300/facebook_timesformer-base-finetuned-k400__1016002.json.gz",
    "hta/tests/data/df_index_resolver/df_index_resolver.json.gz",
    "kineto-tb_plugin/tb_plugin/samples/resnet50_num_workers_0/worker0.1623143566756.pt.trace.json.gz",
    "tracelens/tests/traces/inference/sglang_decode/capture_traces/bs_32_rank0.json.gz",
]


TYPE_NAMES = {0: "cpu", 1: "cuda", 6: "hip"}


def _raw_events(path: Path) -> list[dict]:
    with gzip.open(path) as f:
        return json.load(f)["traceEvents"]


def _ns(us) -> int:
    return int((Decimal(str(us)) * 1000).to_integral_value())


def _reference(events: list[dict]):
    """Per (device_type, device): peak allocated, reserved, records, the first peak time, and the
    bytes of blocks live at it by their outermost cpu_op; per step the peak. Plain Python."""
    memory = sorted(
        (e for e in events if e.get("name") == "[memory]" and e.get("ph") == "i"), key=lambda e: _ns(e["ts"])
    )
    steps = [
        (int(e["name"].split("#")[1]), _ns(e["ts"]), _ns(e["ts"]) + _ns(e["dur"]))
        for e in events
        if e.get("ph") == "X"
        and e.get("cat") != "gpu_user_annotation"
        and str(e.get("name", "")).startswith("ProfilerStep#")
    ]
    series = defaultdict(list)
    for e in memory:
        a = e["args"]
        device = a["Device Id"] if a["Device Type"] != 0 and a["Device Id"] >= 0 else None
        series[(TYPE_NAMES[a["Device Type"]], device)].append(e)
    out = {}
    for key, evs in series.items():
        if "Total Allocated" in evs[0]["args"]:
            allocated = [e["args"]["Total Allocated"] for e in evs]
        else:
            allocated, run = [], 0
            for e in evs:
                run += e["args"]["Bytes"]
                allocated.append(run)
        peak = max(allocated)
        peak_ns = min(_ns(e["ts"]) for e, v in zip(evs, allocated) if v == peak)
        per_step = {}
        for step, start, end in steps:  # what the series held as the step began counts for it
            held = [v for e, v in zip(evs, allocated) if _ns(e["ts"]) < start][-1:]
            inside = [v for e, v in zip(evs, allocated) if start <= _ns(e["ts"]) < end]
            if held or inside:
                per_step[step] = max(held + inside)
        reserved = [e["args"].get("Total Reserved") for e in evs]
        out[key] = {
            "records": len(evs),
            "peak": peak,
            "peak_ns": peak_ns,
            "reserved": max(reserved) if None not in reserved else None,
            "steps": per_step,
        }
    return out


def _live_at(events: list[dict], device_type: int, device: int, at_ns: int) -> dict[str, int]:
    """Bytes of the blocks live at `at_ns`, by the outermost cpu_op on the allocating thread."""
    memory = sorted(
        (
            e
            for e in events
            if e.get("name") == "[memory]"
            and e["args"]["Device Type"] == device_type
            and e["args"]["Device Id"] == device
            and "Addr" in e["args"]
        ),
        key=lambda e: _ns(e["ts"]),
    )
    ops = defaultdict(list)
    for e in events:
        if e.get("ph") == "X" and e.get("cat") == "cpu_op" and e.get("dur", 0) > 0:
            ops[(e["pid"], e["tid"])].append((_ns(e["ts"]), _ns(e["ts"]) + _ns(e["dur"]), e["name"]))
    for spans in ops.values():
        spans.sort(key=lambda s: (s[0], -s[1]))
    open_blocks: dict[int, tuple[int, int, int]] = {}
    blocks = []
    for e in memory:
        a, ts = e["args"], _ns(e["ts"])
        if a["Addr"] in open_blocks:
            blocks.append((*open_blocks.pop(a["Addr"]), ts))
        if a["Bytes"] > 0:
            open_blocks[a["Addr"]] = (ts, a["Bytes"], (e["pid"], e["tid"]))
    blocks += [(*b, None) for b in open_blocks.values()]
    held: dict[str, int] = defaultdict(int)
    for ts, size, thread, release in blocks:
        if ts <= at_ns and (release is None or release > at_ns):
            spans = ops.get(thread, [])
            i = bisect.bisect_right([s[0] for s in spans], ts)
            outer = next((name for start, end, name in spans[:i] if start <= ts < end), None)
            held[outer] += size
    return dict(held)


@needs_shared
@pytest.mark.parametrize("name", KINETO_WITH_MEMORY)
def test_kineto_peaks_equal_a_recount_of_the_raw_events(name):
    path = SHARED_TRACES / name
    events = _raw_events(path)
    want = _reference(events)
    peaks = _load(path).memory_peaks()
    whole = peaks.filter(pl.col("step").is_null())
    assert whole.height == len(want)
    for row in whole.to_dicts():
        ref = want[(row["device_type"], row["device"])]
        assert (row["records"], row["peak_allocated_bytes"], row["peak_ns"], row["peak_reserved_bytes"]) == (
            ref["records"],
            ref["peak"],
            ref["peak_ns"],
            ref["reserved"],
        ), row
        match = pl.col("device_type").eq(row["device_type"]) & pl.col("device").eq_missing(row["device"])
        stepped = peaks.filter(match & pl.col("step").is_not_null())
        assert dict(stepped.select("step", "peak_allocated_bytes").iter_rows()) == ref["steps"]


@needs_shared
@pytest.mark.parametrize("name", KINETO_WITH_MEMORY[:3])
def test_kineto_memory_at_the_peak_equals_a_replay_of_the_raw_events(name):
    path = SHARED_TRACES / name
    events = _raw_events(path)
    held = _load(path).memory_at_peak().filter(pl.col("device").is_not_null())
    assert held.height
    for (device_type, device, peak_ns), rows in held.group_by("device_type", "device", "peak_ns"):
        code = {v: k for k, v in TYPE_NAMES.items()}[device_type]
        want = _live_at(events, code, device, peak_ns)
        got = dict(rows.filter(pl.col("operator") != BEFORE_TRACE).select("operator", "live_bytes").iter_rows())
        assert got == {k: v for k, v in want.items() if v}


ASCEND_WITH_MEMORY = [
    "msinsight/test/data/pytorch/text/level1/rank0_ascend_pt",
    "msinsight/test/data/pytorch/text/level0/rank1_ascend_pt",
    "msinsight/server/src/test/test_data/test_rank_0",
]


def _csv_rows(path: Path) -> list[dict]:
    with open(path, newline="") as f:
        return [{k: (v or "").strip() for k, v in row.items()} for row in csv.DictReader(f)]


@needs_shared
@pytest.mark.parametrize("name", ASCEND_WITH_MEMORY)
def test_ascend_peaks_and_blocks_equal_a_recount_of_the_csv_files(name):
    out = next((SHARED_TRACES / name).rglob("memory_record.csv")).parent
    t = _load(SHARED_TRACES / name)
    peaks = t.memory_peaks().filter(pl.col("step").is_null())
    records = _csv_rows(out / "memory_record.csv")
    for component in {r["Component"] for r in records}:
        rows = [r for r in records if r["Component"] == component]
        allocated = [Decimal(r["Total Allocated(MB)"]) * MiB for r in rows if r["Total Allocated(MB)"]]
        reserved = [Decimal(r["Total Reserved(MB)"]) * MiB for r in rows if r["Total Reserved(MB)"]]
        got = peaks.filter(pl.col("component") == component).row(0, named=True)
        assert got["records"] == len(rows)
        assert got["peak_allocated_bytes"] == (int(max(allocated)) if allocated else None)
        assert got["peak_reserved_bytes"] == (int(max(reserved)) if reserved else None)
    pta = peaks.filter(pl.col("component") == "PTA+GE").row(0, named=True)  # the series the blocks belong to
    live = defaultdict(int)
    for r in _csv_rows(out / "operator_memory.csv"):
        alloc = _ns(r["Allocation Time(us)"])
        release = _ns(r["Release Time(us)"]) if r["Release Time(us)"] else None
        if alloc <= pta["peak_ns"] and (release is None or release > pta["peak_ns"]):
            live[r["Name"]] += int(Decimal(r["Size(KB)"]) * 1024)
    held = t.memory_at_peak().filter(pl.col("operator") != BEFORE_TRACE)
    assert dict(held.select("operator", "live_bytes").iter_rows()) == dict(live)
    # npu_module_mem.csv: each CANN module that holds memory is a `module <NAME>` series
    modules = defaultdict(list)
    for r in _csv_rows(out / "npu_module_mem.csv"):
        modules[r["Component"]].append(Decimal(r["Total Reserved(MB)"]) * MiB)
    want = {f"module {m}": (len(v), int(max(v))) for m, v in modules.items() if max(v) > 0}
    got = peaks.filter(pl.col("component").str.starts_with("module "))
    assert {r[0]: (r[1], r[2]) for r in got.select("component", "records", "peak_reserved_bytes").iter_rows()} == want
    assert got["peak_allocated_bytes"].null_count() == got.height and len(want) >= 3


ASCEND_DB = "msinsight/test/data/pytorch/db/level2/rank0_ascend_pt"


@needs_shared
def test_ascend_db_export_memory_equals_a_query_of_its_tables():
    import sqlite3

    path = SHARED_TRACES / ASCEND_DB
    db = sqlite3.connect(f"file:{next(path.rglob('ascend_pytorch_profiler_*.db'))}?mode=ro", uri=True)
    want = dict(
        db.execute(
            "SELECT s.value, MAX(m.totalAllocated) FROM MEMORY_RECORD m JOIN STRING_IDS s ON s.id = m.component "
            "GROUP BY s.value"
        ).fetchall()
    )
    t = _load(path)
    peaks = t.memory_peaks().filter(pl.col("step").is_null())
    modules = peaks.filter(pl.col("component").str.starts_with("module "))
    assert (
        dict(peaks.join(modules, on="component", how="anti").select("component", "peak_allocated_bytes").iter_rows())
        == want
    )
    held_by_module = db.execute(
        "SELECT 'module ' || e.name, MAX(m.totalReserved) FROM NPU_MODULE_MEM m JOIN ENUM_MODULE e ON e.id = m.moduleId "
        "GROUP BY e.name HAVING MAX(m.totalReserved) > 0"
    ).fetchall()
    assert dict(modules.select("component", "peak_reserved_bytes").iter_rows()) == dict(held_by_module)
    pta = peaks.filter(pl.col("component") == "PTA+GE").row(0, named=True)  # the series the blocks belong to
    live = defaultdict(int)
    for name, size, alloc, release in db.execute(
        "SELECT s.value, o.size, o.allocationTime, o.releaseTime FROM OP_MEMORY o JOIN STRING_IDS s ON s.id = o.name"
    ):
        if alloc <= pta["peak_ns"] and (release is None or release > pta["peak_ns"]):
            live[name] += size
    held = t.memory_at_peak().filter(pl.col("operator") != BEFORE_TRACE)
    assert dict(held.select("operator", "live_bytes").iter_rows()) == dict(live)


@needs_shared
def test_a_damaged_npu_module_mem_leaves_the_rank_loaded(tmp_path):
    """npu_module_mem.csv is extra: an empty one is a warning, not a fatal rank; a module without a
    name is `module ?` (a null component is Kineto's allocator and would take the memory lane)."""
    import shutil

    rank = tmp_path / "r_ascend_pt"
    shutil.copytree(SHARED_TRACES / ASCEND_WITH_MEMORY[0], rank)
    module_mem = rank / "ASCEND_PROFILER_OUTPUT" / "npu_module_mem.csv"
    text = module_mem.read_text().splitlines()
    module_mem.write_text("")
    t = _load(rank)
    assert len(t.warnings) == 1 and "npu_module_mem.csv not read" in t.warnings[0]
    assert not t.memory_peaks()["component"].str.starts_with("module ").any()
    module_mem.write_text(
        "\n".join([text[0], text[1].replace("SLOG", ""), *[r.replace("HCCL", "") for r in text[2:]]]) + "\n"
    )
    components = set(_load(rank).memory_peaks()["component"])
    assert "module ?" in components and None not in components and "module HCCL" not in components
