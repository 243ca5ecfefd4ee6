"""The streaming Kineto reader: chunked decoding gives exactly the whole-document parse.

`parsers.jsonio.ChromeEvents` cuts the events array into chunks without a tokenizer (see its
docstring); these tests check the cut on every layout that breaks a naive cut (compact and
indented files, `},{` inside args and inside strings, traceEvents first or last, a top-level
array, BOM, gzip), that anything it cannot follow falls back to the whole-document reader, and
that serial and parallel chunked parses of real traces equal the whole-document parse frame by
frame.

This file holds the topic's integration tests; the others are in tests/corpus/test_streaming.py.
"""

from __future__ import annotations

import gzip
from pathlib import Path

import orjson
import pytest

from tests.conftest import SAMPLES, SHARED_TRACES
from tests.support.streaming_shared import _assert_same, _whole  # noqa: F401
from traceview.parsers import jsonio, kineto


def _events(n: int) -> list[dict]:
    out = []
    for i in range(n):
        out.append(
            {
                "ph": "X",
                "cat": "kernel",
                "name": f"k{i}",
                "pid": 0,
                "tid": 7,
                "ts": 10.0 * i,
                "dur": 5.0,
                "args": {"correlation": i, "stream": 7, "grid": [i, 1, 1]},
            }
        )
    return out


def _read(path: Path, chunk: int) -> tuple[list, dict]:
    stream = jsonio.ChromeEvents(path, chunk_bytes=chunk)
    events = [e for part in stream for e in part]
    return events, stream.doc


def _pretty(doc: dict) -> bytes:
    """Kineto's own layout: the header, then one event per line."""
    events = doc.get("traceEvents", [])
    head = orjson.dumps({k: v for k, v in doc.items() if k != "traceEvents"}, option=orjson.OPT_INDENT_2)[:-2]
    body = b",\n".join(b"  " + orjson.dumps(e) for e in events)
    return head + b',\n  "traceEvents": [\n' + body + b'\n  ],\n  "traceName": "x"\n}\n'


@pytest.mark.parametrize("chunk", [64, 300, 4096, 1 << 20])
@pytest.mark.parametrize("layout", ["compact", "pretty", "events_first", "array", "bom", "gzip"])
def test_chunks_equal_whole_document(tmp_path, layout, chunk):
    events = _events(200)
    doc = {"schemaVersion": 1, "distributedInfo": {"rank": 3}, "traceEvents": events, "displayTimeUnit": "ms"}
    path = tmp_path / "t.json"
    if layout == "compact":
        path.write_bytes(orjson.dumps(doc))
    elif layout == "pretty":
        path.write_bytes(_pretty(doc))
    elif layout == "events_first":
        path.write_bytes(orjson.dumps({"traceEvents": events, "schemaVersion": 1, "distributedInfo": {"rank": 3}}))
    elif layout == "array":
        path.write_bytes(b"  \n" + orjson.dumps(events))
    elif layout == "bom":
        path.write_bytes(jsonio.UTF8_BOM + orjson.dumps(doc))
    else:
        path = tmp_path / "t.json.gz"
        path.write_bytes(gzip.compress(_pretty(doc)))
    got, header = _read(path, chunk)
    assert got == events
    if layout == "array":
        assert header == {}
    else:
        assert header["distributedInfo"] == {"rank": 3} and "traceEvents" not in header
    if layout == "pretty":
        assert header["traceName"] == "x"  # a key after the events array


@pytest.mark.parametrize("chunk", [64, 500, 4096])
def test_cuts_inside_args_and_strings_are_skipped(tmp_path, chunk):
    """`},{` inside a nested list of objects or inside a name is not a cut between events."""
    events = _events(60)
    for i, e in enumerate(events):
        e["args"]["nested"] = [{"a": i}, {"b": [{"c": 1}, {"d": 2}]}]
        e["name"] = f"weird}},{{name {i} }} , {{"
    path = tmp_path / "t.json"
    path.write_bytes(orjson.dumps({"traceEvents": events}))
    assert _read(path, chunk)[0] == events


def test_key_text_inside_a_string_is_not_the_key(tmp_path):
    path = tmp_path / "t.json"
    path.write_bytes(b'{"a": "\\"traceEvents\\": [9]", "traceEvents": [{"ph": "X"}]}')
    assert _read(path, 64) == ([{"ph": "X"}], {"a": '"traceEvents": [9]'})


def test_empty_events_and_single_event(tmp_path):
    path = tmp_path / "t.json"
    path.write_bytes(b'{"traceEvents": [], "x": 1}')
    assert _read(path, 64) == ([], {"x": 1})
    path.write_bytes(b'{"traceEvents": [{"ph": "X"}]}')
    assert _read(path, 64)[0] == [{"ph": "X"}]


@pytest.mark.parametrize(
    "content",
    [
        b"",
        b'{"traceEvents": [{"ph": "X"}, {"ph": "X", "na',  # truncated
        b'{"other": 1}',  # no events array
        b'{"meta": {"traceEvents": [1]}, "traceEvents": []}',  # a nested traceEvents key first
        b'{"traceEvents": [{"ph": "X"}] "x": 1}',  # garbage after the array
        b'{"traceEvents": [{"name": "\xff\xfe"}]}',  # invalid UTF-8
        b"42",
    ],
)
def test_what_the_stream_cannot_follow_raises_stream_unsupported(tmp_path, content):
    path = tmp_path / "t.json"
    path.write_bytes(content)
    with pytest.raises(jsonio.StreamUnsupported):
        _read(path, 64)


def test_a_broken_file_still_gets_the_whole_document_error(tmp_path):
    """The fallback reports the precise problem (here: truncation), as before streaming."""
    path = tmp_path / "t.json"
    path.write_bytes(orjson.dumps({"traceEvents": _events(50)})[:-40])
    with pytest.raises(kineto.TraceError, match="truncated JSON"):
        kineto.parse_kineto(path)


def test_invalid_utf8_falls_back_with_its_warning(tmp_path):
    path = tmp_path / "t.json"
    events = orjson.dumps({"traceEvents": _events(5)}).replace(b'"k1"', b'"k\xff1"')
    path.write_bytes(events)
    parsed = kineto.parse_kineto(path)
    assert parsed.frames["device_tasks"].height == 5
    assert any("invalid UTF-8" in w for w in parsed.warnings)


def _kineto_files() -> list[Path]:
    files = sorted(SAMPLES.glob("*/*.pt.trace.json.gz"))
    if SHARED_TRACES.is_dir():
        picks = [
            "hta/tests/data/nccl_parser_config/nccl_data.json.gz",
            "hta/tests/data/df_index_resolver/df_index_resolver.json.gz",
            "hta/tests/data/timeline_analysis/sampled_rank-0.json.gz",
            "hta/tests/data/amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz",
            "kineto-tb_plugin/tb_plugin/samples/resnet50_num_workers_0/worker0.1623143566756.pt.trace.json.gz",
            "param/et_replay/tests/inputs/dlrm_kineto.tar.gz.extracted/dlrm_kineto/"
            "worker0_step_12.1694128201545.pt.trace.json",
            "tracelens/tests/traces/h100/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz",
            "tracelens/tests/traces/inference/sglang_decode/capture_traces/bs_32_rank0.json.gz",
        ]
        files += [SHARED_TRACES / p for p in picks]
    return files


@pytest.mark.parametrize("path", _kineto_files(), ids=lambda p: p.name[:40])
def test_streamed_parse_equals_whole_document(path, monkeypatch):
    """Small chunks (many cuts, inputs shapes' ops and kernels in different chunks) change nothing."""
    monkeypatch.setattr(jsonio, "CHUNK_BYTES", 64 << 10)
    _assert_same(kineto.parse_kineto(path), _whole(path))


def test_parallel_wrong_cut_falls_back_to_serial(tmp_path, monkeypatch):
    """A piece cut inside an event (a `},{` in nested args) fails to decode in its worker: the
    parse falls back to the checked serial stream and the result is unchanged."""
    events = _events(400)
    for e in events:
        e["args"]["nested"] = [{"a": 1}, {"b": 2}] * 20
    path = tmp_path / "t.json"
    path.write_bytes(orjson.dumps({"traceEvents": events}))
    monkeypatch.setattr(jsonio, "CHUNK_BYTES", 2000)
    monkeypatch.setattr(kineto, "PARALLEL_FILE_BYTES", 0)
    serial = []
    real = kineto._streamed
    monkeypatch.setattr(kineto, "_streamed", lambda *a: serial.append(1) or real(*a))
    parsed = kineto.parse_kineto(path, jobs=2)
    assert serial == [1]
    _assert_same(parsed, _whole(path))


def test_args_stay_with_their_event_when_earlier_events_are_dropped(tmp_path):
    """Events dropped for a bad ts/dur before a kernel must not shift the kernels' args
    (grid, collective metadata) onto the wrong rows."""
    events = [
        {"ph": "X", "cat": "cpu_op", "name": "bad ts", "pid": 1, "tid": 1, "ts": "x", "dur": 1},
        {"ph": "X", "cat": "cpu_op", "name": "bad dur", "pid": 1, "tid": 1, "ts": 1, "dur": -5},
        {
            "ph": "X",
            "cat": "kernel",
            "name": "k0",
            "pid": 0,
            "tid": 7,
            "ts": 10,
            "dur": 1,
            "args": {"grid": [1, 1, 1], "stream": 7},
        },
        {
            "ph": "X",
            "cat": "kernel",
            "name": "ncclKernel_AllReduce_RING_LL_Sum_float",
            "pid": 0,
            "tid": 7,
            "ts": 20,
            "dur": 1,
            "args": {"grid": [2, 1, 1], "stream": 7, "Collective name": "allreduce", "Group size": 8},
        },
        {
            "ph": "X",
            "cat": "kernel",
            "name": "k2",
            "pid": 0,
            "tid": 7,
            "ts": 30,
            "dur": 1,
            "args": {"grid": [3, 1, 1], "stream": 7},
        },
    ]
    path = tmp_path / "t.json"
    path.write_bytes(orjson.dumps({"traceEvents": events}))
    tasks = kineto.parse_kineto(path).frames["device_tasks"].sort("start_ns")
    assert tasks["name"].to_list()[0] == "k0"
    assert tasks["grid"].to_list() == ["1,1,1", "2,1,1", "3,1,1"]
    assert tasks["collective"].to_list() == [None, "allreduce", None]
    assert tasks["group_size"].to_list() == [None, 8, None]
