"""The typed Kineto decode (`parsers.kineto_decode`: msgspec Structs to columns) against the dict
decode (`parsers.kineto_dicts`: orjson's dicts to columns), which it must equal frame for frame and
warning for warning; and the typed decode must take every chunk of real traces (a silent fall back
to dicts would keep every result and lose the speed).

This file holds the topic's corpus tests; the others are in tests/unit/test_kineto_decode.py, tests/integration/test_kineto_decode.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import SHARED_TRACES, needs_shared
from tests.support.kineto_decode_shared import _assert_same, _parse, _untyped_chunks  # noqa: F401


def _kineto_corpus() -> list[Path]:
    if not SHARED_TRACES.is_dir():
        return []
    from traceview.parsers.detect import classify_file

    files = sorted(p for p in SHARED_TRACES.rglob("*.json*") if p.is_file())
    return [p for p in files if (s := classify_file(p)) is not None and s.format == "kineto"]


@needs_shared
@pytest.mark.parametrize("path", _kineto_corpus(), ids=lambda p: str(p.relative_to(SHARED_TRACES)))
def test_typed_equals_dicts_on_real_traces(path, monkeypatch):
    _assert_same(path, monkeypatch)


@needs_shared
def test_typed_decode_takes_every_chunk_of_real_traces():
    refused = {str(p.relative_to(SHARED_TRACES)): r for p in _kineto_corpus() if (r := _untyped_chunks(p))}
    assert refused == {}
