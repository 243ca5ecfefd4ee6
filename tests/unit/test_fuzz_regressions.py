"""Regression inputs found by bench/fuzz_parsers.py (docs/fuzzing.md): each crashed or hung the
loader before its fix. Every input is a tiny trace written here; each must load (with its oddity
counted) or fail with a one-line TraceError, never another exception, and quickly."""

from __future__ import annotations

import json
import shutil
import sys
import time
from pathlib import Path

import pytest

import traceview as tv
from tests.conftest import ROOT
from traceview.errors import TraceError


def _doc(**header) -> dict:
    """A one-step Kineto rank: a host step, a launch and its kernel."""
    doc = {
        "schemaVersion": 1,
        "deviceProperties": [{"id": 0, "name": "NVIDIA H100 80GB HBM3"}],
        "distributedInfo": {"backend": "nccl", "rank": 0, "world_size": 1},
        "traceEvents": [
            {
                "ph": "X",
                "cat": "user_annotation",
                "name": "ProfilerStep#1",
                "pid": 1,
                "tid": 1,
                "ts": 100.0,
                "dur": 50.0,
                "args": {},
            },
            {
                "ph": "X",
                "cat": "cuda_runtime",
                "name": "cudaLaunchKernel",
                "pid": 1,
                "tid": 1,
                "ts": 101.0,
                "dur": 2.0,
                "args": {"correlation": 7},
            },
            {
                "ph": "X",
                "cat": "kernel",
                "name": "gemm_kernel",
                "pid": 0,
                "tid": 7,
                "ts": 110.5,
                "dur": 20.25,
                "args": {"correlation": 7, "stream": 7, "device": 0},
            },
        ],
    }
    doc.update(header)
    return doc


def _load(tmp_path: Path, text: str | bytes, name: str = "rank0.pt.trace.json"):
    path = tmp_path / name
    path.write_bytes(text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text)
    return tv.load(path, use_cache=False, jobs=1)


def _kernel_us(t) -> list[float]:
    return (t.device_tasks["dur_ns"] / 1000).to_list()


@pytest.mark.parametrize("props", [1.5, "x", [1, "a", None], [{"id": [0], "name": "A100"}], [{"id": 0, "name": 5}]])
def test_device_properties_of_any_type(tmp_path, props):
    """kineto._metadata: `deviceProperties` 1.5 raised TypeError ('float' object is not iterable);
    an unhashable id raised TypeError too."""
    t = _load(tmp_path, json.dumps(_doc(deviceProperties=props)))
    assert _kernel_us(t) == [20.25]
    t.step_breakdown(), t.trace_breakdown()


@pytest.mark.parametrize("rank", [2**63, -(2**63) - 1, 10**30, 1e300, True])
def test_rank_beyond_int64(tmp_path, rank):
    """kineto._metadata: distributedInfo.rank 2**63 broke the Int64 rank column
    (InvalidOperationError: conversion from u64 to i64 failed); now read as unknown."""
    t = _load(tmp_path, json.dumps(_doc(distributedInfo={"rank": rank, "world_size": rank})))
    assert t.ranks["rank"].to_list() == [0]
    t.step_breakdown(), t.trace_breakdown()


def test_deep_nesting_with_a_lone_surrogate_is_a_trace_error(tmp_path):
    """jsonio.loads: a lone surrogate sends the file to the stdlib parser, whose RecursionError on
    arrays nested deeper than the recursion limit (1,000 by default; pytest's plugins raise it)
    escaped."""
    depth = sys.getrecursionlimit() + 100
    doc = json.dumps(_doc()).replace('"gemm_kernel"', '"gemm\\ud800"', 1)
    doc = doc.replace('"tid": 7', '"tid": ' + "[" * depth + "1" + "]" * depth, 1)
    with pytest.raises(TraceError) as info:
        _load(tmp_path, doc)
    assert "nested too deeply" in str(info.value) and "\n" not in str(info.value)


def test_deep_nesting_in_an_event_field_loads_quickly(tmp_path):
    """kineto_events.chunk_frames: polars took minutes to reject a list nested 1,000 deep in `pid` (the fuzz's
    hang); such chunks now take the slow path directly and the value is read as missing."""
    deep = "[" * 1000 + "1" + "]" * 1000
    doc = json.dumps(_doc())
    doc = doc.replace('"ts": 101.0', '"ts": 101.0, "name2": 1', 1)
    doc = doc.replace(
        '"cat": "kernel", "name": "gemm_kernel", "pid": 0',
        '"cat": "kernel", "name": "gemm_kernel", "pid": 0, "args2": ' + deep,
        1,
    )
    doc = (
        doc[:-2]
        + ', {"ph": "X", "cat": "kernel", "name": "k2", "pid": '
        + deep
        + ', "tid": 7, "ts": 200, "dur": 1, "args": {"stream": '
        + deep
        + "}}]}"
    )
    start = time.perf_counter()
    t = _load(tmp_path, doc)
    assert time.perf_counter() - start < 20  # minutes before the fix; well under 1 s after
    assert 20.25 in _kernel_us(t)
    assert any("list or object" in w for w in t.warnings), t.warnings
    t.step_breakdown(), t.trace_breakdown()


def test_deep_nesting_in_ascend_trace_view_loads_quickly(tmp_path):
    """traceview.parsers.ascend.trace_view.trace_events_frame: the same polars slowness on trace_view.json."""
    folder = tmp_path / "rank0_ascend_pt"
    shutil.copytree(ROOT / "sample_traces/ascend_2rank/rank0_ascend_pt", folder)
    path = folder / "ASCEND_PROFILER_OUTPUT/trace_view.json"
    events = json.loads(path.read_text())
    events.append(
        {
            "ph": "X",
            "name": "deep",
            "pid": "__DEEP__",
            "tid": 1,
            "ts": "1.0",
            "dur": 1.0,
            "args": {"Task Type": "__DEEP__"},
        }
    )
    deep = "[" * 1000 + "1" + "]" * 1000
    path.write_text(json.dumps(events).replace('"__DEEP__"', deep))
    start = time.perf_counter()
    t = tv.load(folder, use_cache=False, jobs=1)
    assert time.perf_counter() - start < 20
    assert t.device_tasks.height > 0
    t.step_breakdown(), t.trace_breakdown()


@pytest.mark.parametrize(
    "field, value",
    [
        ("ts", "1" + "0" * 30),  # an integer beyond Int64 (i128 in polars) in ts
        ("dur", "-" + "9" * 25),
        ("pid", "1" + "0" * 30),
        ("tid", "1e999"),  # Infinity as a number token that overflows float64 (read by the stdlib)
    ],
)
def test_huge_numbers_in_event_fields(tmp_path, field, value):
    """kineto_events.chunk_frames slow path: 'could not append value: 1000...0 of type i128' escaped from polars."""
    doc = _doc()
    doc["traceEvents"].append(
        {"ph": "X", "cat": "kernel", "name": "k2", "pid": 0, "tid": 7, "ts": 300.0, "dur": 1.0, "args": {"stream": 7}}
    )
    text = _replace_last(json.dumps(doc), field, value)
    try:
        t = _load(tmp_path, text)
    except TraceError as exc:
        assert "\n" not in str(exc)
        return
    assert 20.25 in _kernel_us(t)
    t.step_breakdown(), t.trace_breakdown()


def _replace_last(text: str, field: str, value: str) -> str:
    """`text` with the value of `field` in its last event replaced by the raw token `value`."""
    head, last = text.rsplit('{"ph": "X"', 1)
    key = f'"{field}": '
    i = last.index(key) + len(key)
    j = i
    while last[j] not in ",}":
        j += 1
    return head + '{"ph": "X"' + last[:i] + value + last[j:]


@pytest.mark.parametrize(
    "key, token",
    [
        ("correlation", "-Infinity"),
        ("correlation", "NaN"),
        ("device", "1e300"),
        ("stream", "[[1]]"),
        ("device", '"x"'),
        ("bytes", "18446744073709551616"),
        ("correlation", '"12"'),
    ],
)
def test_odd_values_in_kernel_args(tmp_path, key, token):
    """kineto_events.chunk_frames: args with -inf / NaN / 1e300 in an Int64 column failed the args slow path
    (ComputeError: could not append value: -inf of type f64)."""
    doc = _doc()
    doc["traceEvents"].append(
        {
            "ph": "X",
            "cat": "kernel",
            "name": "k2",
            "pid": 0,
            "tid": 7,
            "ts": 300.0,
            "dur": 1.0,
            "args": {"stream": 7, "correlation": 9, "device": 0, "bytes": 4},
        }
    )
    text = json.dumps(doc)
    head, last = text.rsplit(f'"{key}": ', 1)
    rest = last[last.index(",") if "," in last.split("}")[0] else last.index("}") :]
    # a lone surrogate sends the file to the stdlib parser, which reads NaN/-Infinity tokens (as the fuzz case)
    t = _load(tmp_path, (head + f'"{key}": {token}' + rest).replace('"gemm_kernel"', '"gemm\\ud800"', 1))
    assert sorted(_kernel_us(t)) == [1.0, 20.25]
    t.step_breakdown(), t.trace_breakdown()


def test_a_collective_arg_that_is_a_list_is_null(tmp_path):
    """Found by the property test: a communication kernel whose `Collective name` arg is a list
    ([false, []]) raised polars' TypeError from the parser; the arg is now read as missing."""
    import orjson

    import traceview as tv

    path = tmp_path / "t.pt.trace.json"
    kernel = {
        "ph": "X",
        "cat": "kernel",
        "name": "ncclDevKernel_AllReduce_Sum_f32_RING_LL",
        "pid": 1,
        "tid": 7,
        "ts": 10,
        "dur": 5,
        "args": {"stream": 7, "Collective name": [False, []], "Group size": [1]},
    }
    path.write_bytes(orjson.dumps({"traceEvents": [kernel]}))
    tasks = tv.load(path, use_cache=False).device_tasks
    assert tasks["kind"].to_list() == ["communication"]
    assert tasks["group_size"].to_list() == [None]


def test_input_dims_nested_deeper_than_orjson_dumps(tmp_path):
    """kineto_events: a cpu_op's `Input Dims` nested 300 deep raised orjson's TypeError ('Recursion
    limit reached') from the memo key of the rendered shapes; now rendered without the memo."""
    doc = _doc()
    doc["traceEvents"][1]["args"]["External id"] = 5
    doc["traceEvents"][2]["args"]["External id"] = 5
    doc["traceEvents"].insert(
        1,
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 100.5, "dur": 2.0,
         "args": {"External id": 5, "Input Dims": "__DEEP__"}},
    )  # fmt: skip
    text = json.dumps(doc).replace('"__DEEP__"', "[" * 300 + "]" * 300)
    from traceview.parsers import kineto

    shapes = []
    for typed in (True, False):  # the typed decode and the dict decode
        saved, kineto.TYPED_DECODE = kineto.TYPED_DECODE, typed
        try:
            shapes.append(_load(tmp_path, text).device_tasks["input_shapes"].to_list())
        finally:
            kineto.TYPED_DECODE = saved
    assert shapes[0] == shapes[1] and shapes[0][0].startswith("[[")  # one tensor-list input, its lists as text


# --- other formats (bench/fuzz_mutators.py FORMAT_SEEDS) ---------------------------------------


def test_a_pickle_frame_longer_than_memory_is_a_trace_error(tmp_path):
    """A FRAME opcode announcing 2**64 - 1 bytes (a byte inserted into a snapshot) raised OverflowError."""
    path = tmp_path / "memory_snapshot.pickle"
    path.write_bytes(b"\x80\x04\x95" + b"\xff" * 8 + b"}.")
    with pytest.raises(TraceError, match="not a readable pickle"):
        tv.load(path, use_cache=False)


def test_a_library_message_spanning_lines_is_folded_to_one():
    """SQLite quotes a damaged schema line by line; the TraceError quoting it stays one line."""
    err = TraceError("x.sqlite", 'malformed database schema (T) - unrecognized token: "`a INT,\n    b INT\n)"', "a\nb")
    assert "\n" not in str(err) and 'token: "`a INT, b INT )"' in str(err) and str(err).endswith("(a b)")
    assert len(TraceError("x", "y" * 5000).problem) == 2000


def test_text_that_is_not_utf8_in_an_nsys_export_is_replaced(tmp_path):
    """A bit flip inside a StringIds value made the whole export unreadable ('Could not decode to UTF-8')."""
    import sqlite3

    path = tmp_path / "flipped.sqlite"
    db = sqlite3.connect(path)
    db.executescript(
        """
        CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT);
        CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INT, end INT, deviceId INT, streamId INT,
            correlationId INT, demangledName INT);
        INSERT INTO StringIds VALUES (1, CAST(X'67656d6dff' AS TEXT));
        INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (100, 200, 0, 7, 1, 1);
        """
    )
    db.commit()
    db.close()
    t = tv.load(path, use_cache=False)
    assert t.device_tasks["name"].to_list() == ["gemm\ufffd"]


def test_a_schema_with_bytes_that_are_not_utf8_is_a_trace_error(tmp_path):
    """Found by the fuzzer's second round (a bit flip in an Nsight export's schema text): SQLite's
    error message quotes the damaged schema, and Python's sqlite3 failed decoding it
    (UnicodeDecodeError, an internal error) instead of reporting a damaged database."""
    import gzip

    from tests.conftest import DATA

    raw = bytearray(gzip.decompress((DATA / "nsys" / "saxpy-mpi-cuda_nsys_perlmutter0.sqlite.gz").read_bytes()))
    entry = b"CUPTI_ACTIVITY_KIND_CUDA_EVENT\x1cCREATE TABLE"  # its schema entry in sqlite_master
    raw[raw.index(entry) + len(entry) - 5] = 0xD4  # CREATE \xd4ABLE: the fuzzer's bit flip
    path = tmp_path / "damaged.sqlite"
    path.write_bytes(bytes(raw))
    with pytest.raises(TraceError) as err:
        tv.load(path, use_cache=False)
    assert "not UTF-8" in str(err.value) and "\n" not in str(err.value)
