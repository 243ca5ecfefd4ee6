"""What the split modules of test_invalid_events.py share (helpers and fixtures)."""

from __future__ import annotations

import gzip

import orjson
import pytest

from tests.conftest import SAMPLES


@pytest.fixture(scope="module")
def clean():
    src = sorted((SAMPLES / "dp4_nccl").glob("rank0.*.pt.trace.json.gz"))[0]
    return orjson.loads(gzip.decompress(src.read_bytes()))


def _kernels(doc) -> list[int]:
    return [i for i, e in enumerate(doc["traceEvents"]) if e.get("cat") == "kernel"]


def _write(tmp_path, doc, spliced: dict[int, bytes], name="rank0.pt.trace.json"):
    """`doc` written with the event at each index of `spliced` given an extra args key holding
    those raw bytes (which no JSON encoder writes)."""
    parts = []
    for i, event in enumerate(doc["traceEvents"]):
        raw = orjson.dumps(event)
        if i in spliced:
            assert raw.endswith(b"}}")  # a kernel: args is its last key
            raw = raw[:-2] + b',"bad":' + spliced[i] + b"}}"
        parts.append(raw)
    head = orjson.dumps({k: v for k, v in doc.items() if k != "traceEvents"})
    path = tmp_path / name
    path.write_bytes(head[:-1] + b',"traceEvents":[' + b",".join(parts) + b"]}")
    return path
