"""The typed Kineto decode (`parsers.kineto_decode`. The unit tests; the topic's description and its
other tests: tests/integration/test_kineto_decode.py, tests/corpus/test_kineto_decode.py.
"""

from __future__ import annotations

import json

import msgspec
import pytest

from tests.support.kineto_decode_shared import (  # noqa: F401
    SAMPLE_FILES,
    _assert_same_chunk,
    _both,
    _cpu_op,
    _event,
    _kernel,
    _untyped_chunks,
)
from traceview.parsers.kineto_decode import Args, Event
from traceview.parsers.kineto_events import ARG_KEYS_READ, EVENT_KEYS_READ

#: Hand-written traces whose values are outside the typed decode's types on purpose.
UNTYPED_ON_PURPOSE = {"kineto_malformed.json"}


@pytest.mark.parametrize("path", [p for p in SAMPLE_FILES if p.name not in UNTYPED_ON_PURPOSE], ids=lambda p: p.name)
def test_typed_decode_takes_every_chunk_of_the_samples(path):
    assert _untyped_chunks(path) == []


def test_the_structs_declare_exactly_the_keys_read():
    """The fuzzers mutate EVENT_KEYS_READ / ARG_KEYS_READ: the Structs must read those and no more."""
    assert [f.encode_name for f in msgspec.structs.fields(Event)] == list(EVENT_KEYS_READ)
    assert sorted(f.encode_name for f in msgspec.structs.fields(Args)) == sorted(ARG_KEYS_READ)


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
