"""The typed Kineto decode (`parsers.kineto_decode`. The integration tests; the topic's description and
its other tests: tests/unit/test_kineto_decode.py, tests/corpus/test_kineto_decode.py.
"""

from __future__ import annotations

import json

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.kineto_decode_shared import (  # noqa: F401
    SAMPLE_FILES,
    _assert_same,
    _assert_same_chunk,
    _both,
    _cpu_op,
    _event,
    _kernel,
    _parse,
)
from traceview.parsers.kineto_events import ARG_KEYS_READ, EVENT_KEYS_READ


@pytest.mark.parametrize("path", SAMPLE_FILES, ids=lambda p: p.name)
def test_typed_equals_dicts_on_samples(path, monkeypatch):
    _assert_same(path, monkeypatch)
    _assert_same(path, monkeypatch, chunk_bytes=16 << 10)  # many chunks, cut between events


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


@settings(max_examples=300, deadline=None)
@given(_chunks())
def test_odd_values_decode_the_same_both_ways(chunk):
    _assert_same_chunk(chunk)
