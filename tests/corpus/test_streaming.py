"""The streaming Kineto reader. The corpus tests; the topic's description and its other tests:
tests/integration/test_streaming.py.
"""

from __future__ import annotations

from tests.conftest import SHARED_TRACES, needs_shared
from tests.support.streaming_shared import _assert_same, _whole  # noqa: F401
from traceview.parsers import jsonio, kineto


@needs_shared
def test_parallel_parse_equals_whole_document(monkeypatch):
    """Chunks decoded by two worker processes, taken back in file order."""
    path = SHARED_TRACES / "hta/tests/data/df_index_resolver/df_index_resolver.json.gz"
    monkeypatch.setattr(jsonio, "CHUNK_BYTES", 1 << 20)
    monkeypatch.setattr(kineto, "PARALLEL_FILE_BYTES", 0)
    calls = []
    real = kineto._streamed_parallel
    monkeypatch.setattr(kineto, "_streamed_parallel", lambda *a: calls.append(1) or real(*a))
    _assert_same(kineto.parse_kineto(path, jobs=2), _whole(path))
    assert calls == [1]
