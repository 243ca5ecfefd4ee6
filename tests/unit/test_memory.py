"""Memory. The unit tests; the topic's description and its other tests:
tests/integration/test_memory.py, tests/corpus/test_memory.py.
"""

from __future__ import annotations

import json

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from tests.conftest import DATA, run_cli
from tests.support.memory_shared import MEMORY_TRACE, MiB, _load  # noqa: F401
from traceview.analysis.memory import BEFORE_TRACE
from traceview.parsers import kineto


def test_blocks_pair_allocations_with_the_next_event_at_their_address_and_name_their_operators():
    blocks = _load(MEMORY_TRACE).frame("memory_allocations").filter(pl.col("device_type") == "cuda")
    assert blocks.select("op", "top_op", "size_bytes", "alloc_ns", "release_ns").rows() == [
        ("aten::empty", "aten::linear", 100 * MiB, 1_016_000, 1_080_000),  # innermost of three nested ops
        ("aten::linear", "aten::linear", 50 * MiB, 1_045_000, None),  # its child had ended: never released
        ("aten::relu", "aten::relu", 10 * MiB, 1_060_000, 1_115_000),  # the zero-length op runs over nothing;
        ("aten::mul", "aten::mul", 20 * MiB, 1_115_000, None),  # released when its address was reused
        (None, None, 5 * MiB, 1_150_000, None),  # outside every operator
    ]


def test_peaks_per_step_and_trace_and_the_share_of_the_device():
    peaks = _load(MEMORY_TRACE).memory_peaks().filter(pl.col("device_type") == "cuda")
    rows = peaks.select("step", "records", "peak_allocated_bytes", "peak_ns", "peak_reserved_bytes").rows()
    assert rows == [
        (None, 6, 1160 * MiB, 1_060_000, 2048 * MiB),
        (1, 4, 1160 * MiB, 1_060_000, 2048 * MiB),
        (2, 2, 1085 * MiB, 1_150_000, 2048 * MiB),
    ]
    assert peaks["device_memory_bytes"].to_list() == [4096 * MiB] * 3
    assert peaks["peak_device_frac"].to_list() == [0.5] * 3  # reserved 2 GiB of a 4 GiB device
    host = _load(MEMORY_TRACE).memory_peaks().filter(pl.col("device_type") == "cpu")
    # whole trace, step 1, and step 2 (which starts holding the 8 bytes allocated in step 1)
    assert host["device"].to_list() == [None] * 3 and host["device_memory_bytes"].null_count() == 3


def test_a_step_that_only_frees_peaks_at_its_start(tmp_path):
    doc = json.loads(MEMORY_TRACE.read_text())
    doc["traceEvents"] = [e for e in doc["traceEvents"] if not (e["name"] == "[memory]" and e["ts"] > 1100)]
    free = {"Device Type": 1, "Device Id": 0, "Addr": 0xC00, "Bytes": -10 * MiB}
    doc["traceEvents"].append(
        {
            "ph": "i",
            "s": "t",
            "name": "[memory]",
            "pid": 10,
            "tid": 10,
            "ts": 1120.0,
            "args": {**free, "Total Allocated": 1050 * MiB, "Total Reserved": 2048 * MiB},
        }
    )
    path = tmp_path / "frees.json"
    path.write_text(json.dumps(doc))
    step2 = _load(path).memory_peaks().filter((pl.col("device_type") == "cuda") & (pl.col("step") == 2))
    assert step2.select("records", "peak_allocated_bytes", "peak_ns").row(0) == (1, 1060 * MiB, 1_100_000)


def test_operators_of_a_point_nest_and_never_name_one_that_has_ended():
    """The innermost and outermost operator running at each point of a thread; operators that
    overlap without nesting (a broken trace) never give a point an operator that has ended."""
    from traceview.parsers.allocator import enclosing_ops

    host = pl.DataFrame(
        {
            "pid": [1, 1, 1, 1],
            "tid": [1, 1, 1, 2],
            "kind": ["operator"] * 4,
            "name": ["A", "B", "C", "other"],
            "start_ns": [0, 10, 100, 0],
            "end_ns": [20, 30, 200, 1000],
        }
    )
    points = pl.DataFrame({"pid": [1, 1, 1, 1, 1], "tid": [1, 1, 1, 1, 1], "ts_ns": [5, 15, 25, 150, 300]})
    found = enclosing_ops(points, host).rows()
    assert found[0] == ("A", "A") and found[1] == ("B", "A") and found[3] == ("C", "C") and found[4] == (None, None)
    assert "A" not in found[2]  # A ended at 20; B (overlapping A, not inside it) is the one running


def test_what_the_peak_holds_by_outermost_operator_and_what_was_there_before():
    held = _load(MEMORY_TRACE).memory_at_peak().filter(pl.col("device_type") == "cuda")
    assert held.select("operator", "live_bytes", "blocks").rows() == [
        ("aten::linear", 150 * MiB, 2),  # aten::empty's block inside aten::linear, and linear's own
        ("aten::relu", 10 * MiB, 1),
        (BEFORE_TRACE, 1000 * MiB, None),  # 1160 MiB at the peak, 160 MiB of it allocated in the trace
    ]
    assert held["share_frac"].sum() == pytest.approx(1.0)


def test_timeline_relative_when_the_trace_records_changes_only(tmp_path):
    doc = json.loads(MEMORY_TRACE.read_text())
    for e in doc["traceEvents"]:
        if e["name"] == "[memory]":
            for key in ("Total Allocated", "Total Reserved", "Addr"):  # a trace before PyTorch 1.10
                del e["args"][key]
    path = tmp_path / "old.json"
    path.write_text(json.dumps(doc))
    t = _load(path)
    line = t.memory().filter(pl.col("device_type") == "cuda")
    assert line["allocated_bytes"].to_list() == [v * MiB for v in (100, 150, 160, 60, 80, 85)]
    assert set(line["basis"]) == {"relative"} and line["reserved_bytes"].null_count() == line.height
    assert t.frame("memory_allocations").is_empty()  # no address: no block to pair
    assert t.memory_at_peak().is_empty()  # a relative peak is not comparable to blocks


def test_typed_and_dict_decodes_give_the_same_memory_frames(monkeypatch):
    frames = {}
    for typed in (True, False):
        monkeypatch.setattr(kineto, "TYPED_DECODE", typed)
        frames[typed] = kineto.parse_kineto(MEMORY_TRACE).frames
    for table in ("memory_events", "memory_allocations"):
        assert frames[True][table].height
        assert_frame_equal(frames[True][table], frames[False][table])


def test_selected_steps_keep_their_memory(tmp_path):
    t = _load(MEMORY_TRACE)
    step2 = t.select_steps([2])
    # its records, and each series' last one before it (what step 2 starts with)
    assert sorted(step2.memory()["ts_ns"].to_list()) == [1_080_000, 1_090_000, 1_115_000, 1_150_000]
    rows = ("device_type", "records", "peak_allocated_bytes", "peak_ns", "peak_reserved_bytes")
    assert (
        step2.memory_peaks()
        .filter(pl.col("step") == 2)
        .select(rows)
        .equals(t.memory_peaks().filter(pl.col("step") == 2).select(rows))
    )
    whole = step2.memory_peaks().filter(pl.col("device_type").eq("cuda") & pl.col("step").is_null())
    assert whole["peak_allocated_bytes"].to_list() == [1085 * MiB]  # 1060 MiB carried in, then 1080, 1085
    # blocks live during step 2, wherever they were allocated (the 100 MiB one was released in step 1)
    sizes = sorted(step2.frame("memory_allocations")["size_bytes"].to_list())
    assert sizes == [8, 5 * MiB, 10 * MiB, 20 * MiB, 50 * MiB]


def test_summary_json_and_text_show_the_peak():
    out = run_cli("summary", str(MEMORY_TRACE), "--format", "json")
    assert out.returncode == 0, out.stderr
    (series,) = [m for m in json.loads(out.stdout)["ranks"][0]["memory"] if m["device_type"] == "cuda"]
    assert series["peak_allocated_bytes"] == 1160 * MiB and series["peak_step"] == 1
    assert [a["operator"] for a in series["at_peak"]] == ["aten::linear", "aten::relu", BEFORE_TRACE]
    text = run_cli("summary", str(MEMORY_TRACE)).stdout
    assert "memory cuda:0: peak allocated 1.13 GiB in step 1, reserved 2.00 GiB (50.0 % of 4.00 GiB)" in text
    assert "aten::linear 150.00 MiB (12.9 %)" in text


def test_a_profile_without_memory_has_empty_memory_frames():
    t = _load(DATA / "kineto_minimal.json")
    assert t.memory().is_empty() and t.memory_peaks().is_empty() and t.memory_at_peak().is_empty()


def test_the_finding_fires_when_the_peak_nears_the_device_memory(tmp_path):
    doc = json.loads(MEMORY_TRACE.read_text())
    doc["deviceProperties"][0]["totalGlobalMem"] = 2100 * MiB  # 2048 MiB reserved: 97.5 %
    path = tmp_path / "full.json"
    path.write_text(json.dumps(doc))
    found = _load(path).findings().filter(pl.col("rule") == "memory_near_capacity")
    assert found.select("rank", "severity").rows() == [(0, "critical")]
    assert "held 2.00 GiB on rank 0, 97.5% of the device's 2.05 GiB" in found["message"][0]
    assert _load(MEMORY_TRACE).findings().filter(pl.col("rule") == "memory_near_capacity").is_empty()  # 50 %
