"""The typed Kineto decode (`parsers.kineto_decode`: msgspec Structs to columns) against the dict
decode (`parsers.kineto_dicts`: orjson's dicts to columns), which it must equal frame for frame and
warning for warning; and the typed decode must take every chunk of real traces (a silent fall back
to dicts would keep every result and lose the speed)."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

from tests.conftest import DATA, SAMPLES, SHARED_TRACES, needs_shared
from traceview.errors import Warnings
from traceview.parsers import jsonio, kineto
from traceview.parsers.kineto_decode import Args, Event, Untyped, chunk_decoder, typed_columns
from traceview.parsers.kineto_events import ARG_KEYS_READ, EVENT_KEYS_READ

SAMPLE_FILES = sorted(SAMPLES.glob("*/*.pt.trace.json.gz")) + sorted(DATA.glob("kineto_*.json"))
#: Hand-written traces whose values are outside the typed decode's types on purpose.
UNTYPED_ON_PURPOSE = {"kineto_malformed.json"}


def _kineto_corpus() -> list[Path]:
    if not SHARED_TRACES.is_dir():
        return []
    from traceview.parsers.detect import classify_file

    files = sorted(p for p in SHARED_TRACES.rglob("*.json*") if p.is_file())
    return [p for p in files if (s := classify_file(p)) is not None and s.format == "kineto"]


def _parse(path: Path, typed: bool, monkeypatch, chunk_bytes: int | None = None):
    monkeypatch.setattr(kineto, "TYPED_DECODE", typed)
    if chunk_bytes:
        monkeypatch.setattr(jsonio, "CHUNK_BYTES", chunk_bytes)
    return kineto.parse_kineto(path)


def _assert_same(path: Path, monkeypatch, chunk_bytes: int | None = None) -> None:
    typed = _parse(path, True, monkeypatch, chunk_bytes)
    dicts = _parse(path, False, monkeypatch, chunk_bytes)
    assert typed.frames.keys() == dicts.frames.keys()
    for name in typed.frames:
        assert_frame_equal(typed.frames[name], dicts.frames[name])
    assert typed.warnings == dicts.warnings
    assert typed.meta == dicts.meta


@pytest.mark.integration
@pytest.mark.parametrize("path", SAMPLE_FILES, ids=lambda p: p.name)
def test_typed_equals_dicts_on_samples(path, monkeypatch):
    _assert_same(path, monkeypatch)
    _assert_same(path, monkeypatch, chunk_bytes=16 << 10)  # many chunks, cut between events


@needs_shared
@pytest.mark.corpus
@pytest.mark.parametrize("path", _kineto_corpus(), ids=lambda p: str(p.relative_to(SHARED_TRACES)))
def test_typed_equals_dicts_on_real_traces(path, monkeypatch):
    _assert_same(path, monkeypatch)


def _untyped_chunks(path: Path) -> list[str]:
    """The chunks of `path` the typed decode refuses (what msgspec says about each)."""
    refused = []

    def decode(view):
        data = bytes(view)
        try:
            typed_columns(data, Warnings(""))
        except Untyped:
            try:
                msgspec.json.decode(data, type=list[Event])
                refused.append("a value msgspec reads but the columns refuse")
            except (msgspec.DecodeError, UnicodeDecodeError, RecursionError) as exc:
                refused.append(str(exc))
        return jsonio.decode_dicts(view)

    for _ in jsonio.ChromeEvents(path, chunk_bytes=256 << 10, decode=decode):
        pass
    return refused


@pytest.mark.parametrize("path", [p for p in SAMPLE_FILES if p.name not in UNTYPED_ON_PURPOSE], ids=lambda p: p.name)
def test_typed_decode_takes_every_chunk_of_the_samples(path):
    assert _untyped_chunks(path) == []


@needs_shared
@pytest.mark.corpus
def test_typed_decode_takes_every_chunk_of_real_traces():
    refused = {str(p.relative_to(SHARED_TRACES)): r for p in _kineto_corpus() if (r := _untyped_chunks(p))}
    assert refused == {}


def test_the_structs_declare_exactly_the_keys_read():
    """The fuzzers mutate EVENT_KEYS_READ / ARG_KEYS_READ: the Structs must read those and no more."""
    assert [f.encode_name for f in msgspec.structs.fields(Event)] == list(EVENT_KEYS_READ)
    assert sorted(f.encode_name for f in msgspec.structs.fields(Args)) == sorted(ARG_KEYS_READ)


# ---------------------------------------------------------------------------------------------
# One chunk, both decodes: the same frames and warnings, or both say it is not JSON.


def _both(events_json: bytes):
    """(frames, events, warnings) of each decode of one chunk, or 'not JSON'."""
    out = []
    for typed in (True, False):
        warn = Warnings("")
        try:
            frames, n = chunk_decoder(warn, {}, typed)(events_json)
        except jsonio.NotJSON:
            out.append("not JSON")
            continue
        out.append((frames, n, warn.messages()))
    return out


def _assert_same_chunk(events_json: bytes) -> None:
    typed, dicts = _both(events_json)
    if typed == "not JSON" or dicts == "not JSON":
        assert typed == dicts
        return
    assert typed[1:] == dicts[1:]
    for name in dicts[0]:
        assert_frame_equal(typed[0][name], dicts[0][name])


def _event(cat: str, name: str, ids: int, ts: float, args: dict, over: dict) -> dict:
    """A complete event; `over` replaces or adds keys."""
    event = {"ph": "X", "cat": cat, "name": name, "pid": ids, "tid": ids or 7, "ts": ts, "dur": 20.25}
    return event | {"args": args} | over


def _kernel(**over) -> dict:
    args = {"correlation": 7, "stream": 7, "device": 0, "grid": [8, 1, 1], "block": [256, 1, 1]}
    return _event("kernel", "ncclDevKernel_AllReduce_Sum_f32_RING_LL", 0, 110.5, args, over)


def _cpu_op(**over) -> dict:
    return _event("cpu_op", "aten::mm", 1, 100.0, {"External id": 3, "Input Dims": [[8, 4], [4, 4], []]}, over)


@pytest.mark.parametrize(
    "events",
    [
        [_kernel(), _cpu_op(), {"ph": "f", "id": 1, "pid": 1, "tid": 1, "ts": 3, "cat": "ac2g", "name": "ac2g"}],
        [_kernel(pid="stream 7", tid="7"), _cpu_op(pid="Spans")],  # pid/tid as text
        [_kernel(ts=110, dur=20)],  # integer µs
        [_kernel(args={"stream": 7, "bytes": "256", "correlation": "12"})],  # digits as text (sglang traces)
        [_kernel(args={"stream": 7, "bytes": " 256"}), _kernel(args={"bytes": "1.5"})],  # text the two read differently
        [_kernel(args={"correlation": 2**63}), _kernel(args={"correlation": 2**64 + 1})],  # beyond Int64
        [_kernel(ts="110.5")],  # ts as text: the lenient path
        [_kernel(args={"grid": [8.0, 1, 1]}), _kernel(args={"grid": []}), _kernel(args={"grid": "grid(100,)"})],
        [_kernel(args={"grid": {"x": 1}}), _kernel(args={"block": 5})],
        [_kernel(args={"Collective name": "allreduce", "Group size": "8", "In msg nelems": 2**70})],
        [_kernel(ph="Q"), _kernel(ph=None), {"ph": "B", "name": "x"}, _kernel(ph=5)],  # phases
        [_cpu_op(args={"External id": 3, "Input Dims": [[[2, 3], [2, 3]], [], None, 5]})],
        [_cpu_op(args={"External id": 3, "Input Dims": "[" * 300 + "]" * 300})],  # deeper than orjson.dumps
        [_kernel(args=None), _kernel(args=[1]), 5, "x", None],  # not objects
        [_kernel(name="gemm\u00e9"), _kernel(cat="Kernel")],  # non-ASCII text, 2021 capitalised category
    ],
)
def test_one_chunk_decodes_the_same_both_ways(events):
    text = json.dumps(events, ensure_ascii=False).replace('"' + "[" * 300 + "]" * 300 + '"', "[" * 300 + "]" * 300)
    _assert_same_chunk(text.encode())


@pytest.mark.parametrize(
    "chunk",
    [
        b'[{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1, "dur": 1, "x": "\xff"}]',
        b'[{"ph": "X", "cat": "kernel", "name": "k\\ud800", "pid": 0, "tid": 7, "ts": 1, "dur": 1}]',
        b'[{"ph": "X", "name": "k", "ts": 1, "dur": 1, "args": {"grid": [1e999]}}]',
        b'[{"ph": "X", "name": "k", "ts": 1, "dur": 1}, {"ph": "X"',  # a cut inside an event
    ],
)
def test_what_orjson_rejects_is_not_json_for_both(chunk):
    assert _both(chunk) == ["not JSON", "not JSON"]


_ODD = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.sampled_from([0, 7, -1, 2**63 - 1, 2**63, -(2**63), 1.5, -0.0, 1e308, "7", "stream 3", "256", "-12", "1.5"]),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=6),
    st.lists(st.integers(-5, 300), max_size=4),
    st.lists(st.lists(st.integers(0, 9), max_size=3), max_size=3),
)
_BASES = [
    _kernel(),
    _cpu_op(),
    _kernel(cat="gpu_memcpy", name="Memcpy HtoD", args={"stream": 7, "bytes": 4096, "correlation": 9}),
    _kernel(cat="gpu_user_annotation", name="ProfilerStep#1", args={}),
    _kernel(cat="cuda_runtime", name="cudaLaunchKernel", pid=1, tid=1, args={"correlation": 7}),
    _cpu_op(name="record_param_comms", args={"External id": 4, "Collective name": "allreduce", "dtype": "Float"}),
    {"ph": "M", "name": "process_name", "pid": 0, "tid": 0, "args": {"name": "python"}},
    {  # an allocator record (profile_memory=True)
        "ph": "i",
        "s": "t",
        "name": "[memory]",
        "pid": 1,
        "tid": 1,
        "ts": 1005.5,
        "args": {
            "Device Type": 1,
            "Device Id": 0,
            "Addr": 4096,
            "Bytes": 512,
            "Total Allocated": 512,
            "Total Reserved": 2048,
        },
    },
]


@st.composite
def _chunks(draw) -> bytes:
    events = [orjson.loads(orjson.dumps(draw(st.sampled_from(_BASES)))) for _ in range(draw(st.integers(1, 6)))]
    for _ in range(draw(st.integers(0, 4))):
        e = events[draw(st.integers(0, len(events) - 1))]
        if draw(st.booleans()) and isinstance(e.get("args"), dict):
            e["args"][draw(st.sampled_from(ARG_KEYS_READ))] = draw(_ODD)
        else:
            e[draw(st.sampled_from(EVENT_KEYS_READ))] = draw(_ODD)
    return json.dumps(events).encode()


@pytest.mark.integration
@settings(max_examples=300, deadline=None)
@given(_chunks())
def test_odd_values_decode_the_same_both_ways(chunk):
    _assert_same_chunk(chunk)
