"""One bad event is dropped and counted, not the whole file refused (issue 30).

A NaN or Infinity literal (Python's json writes them; JSON has none, so orjson rejects them) or an
`args` value nested 5,000 deep (past orjson's 1,024 levels) in one event made the whole Kineto
file fail with `invalid JSON at byte N`. The streaming reader now drops that event, counts it, and
reads the others exactly; damage to the structure itself (a stray byte, a cut file) is still one
error line. A key given twice (`"ts": 1, "ts": 2`) is read as its last value, as every JSON parser
does, and now counted in a warning.

This file holds the topic's unit tests; the others are in tests/integration/test_invalid_events.py.
"""

from __future__ import annotations

import orjson
import polars as pl
import pytest

import traceview as tv
from tests.support.invalid_events_shared import _kernels, _write, clean  # noqa: F401
from traceview.errors import TraceError
from traceview.parsers import jsonio
from traceview.parsers.kineto import INVALID_EVENTS
from traceview.parsers.kineto_decode import DUPLICATE_KEYS

BAD_VALUES = {
    "nan": b"NaN",
    "infinity": b"Infinity",
    "minus_infinity": b"-Infinity",
    "deep": b"[" * 5000 + b"]" * 5000,
    "deep_object": b'{"a":' * 1100 + b"1" + b"}" * 1100,
}


def _without(doc, indices):
    gone = set(indices)
    return dict(doc, traceEvents=[e for i, e in enumerate(doc["traceEvents"]) if i not in gone])


def _tasks(t) -> pl.DataFrame:
    return t.device_tasks.select("name", "start_ns", "end_ns", "stream", "correlation")


@pytest.mark.parametrize("value", sorted(BAD_VALUES))
@pytest.mark.parametrize("where", ["first", "middle", "last"])
def test_one_bad_event_is_dropped_and_counted(tmp_path, clean, value, where):
    kernels = _kernels(clean)
    index = {"first": kernels[0], "middle": kernels[len(kernels) // 2], "last": kernels[-1]}[where]
    path = _write(tmp_path, clean, {index: BAD_VALUES[value]})
    t = tv.load(path, use_cache=False)
    if value.startswith("deep") and not t.warnings:
        # msgspec follows nesting as deep as the interpreter's recursion limit lets it, and skips a
        # value in a key never read: under a raised limit (hypothesis raises it in this process)
        # the event is read whole, exactly, which is right too
        want = tv.load(_write(tmp_path, clean, {}, "want.pt.trace.json"), use_cache=False)
        assert _tasks(t).equals(_tasks(want))
        return
    want = tv.load(_write(tmp_path, _without(clean, [index]), {}, "want.pt.trace.json"), use_cache=False)
    assert _tasks(t).equals(_tasks(want))
    assert [w.split(": ", 1)[1] for w in t.warnings] == [f"1 {INVALID_EVENTS}"]


@pytest.mark.parametrize("chunk", [4096, 65536])
def test_bad_events_across_small_chunks(tmp_path, clean, monkeypatch, chunk):
    """Many bad events, in chunks of every size relative to them: each dropped once, the rest exact."""
    monkeypatch.setattr(jsonio, "CHUNK_BYTES", chunk)
    kernels = _kernels(clean)[::7]
    spliced = {i: BAD_VALUES[sorted(BAD_VALUES)[n % len(BAD_VALUES)]] for n, i in enumerate(kernels)}
    t = tv.load(_write(tmp_path, clean, spliced), use_cache=False)
    want = tv.load(_write(tmp_path, _without(clean, kernels), {}, "want.pt.trace.json"), use_cache=False)
    assert _tasks(t).equals(_tasks(want))
    assert t.warnings == [f"{tmp_path / 'rank0.pt.trace.json'}: {len(kernels):,} {INVALID_EVENTS}"]


@pytest.mark.parametrize("damage", [b"1x", b'"unterminated', b"{"])
def test_damage_to_the_structure_is_still_one_error_line(tmp_path, clean, damage):
    kernels = _kernels(clean)
    path = _write(tmp_path, clean, {kernels[len(kernels) // 2]: damage})
    with pytest.raises(TraceError) as err:
        tv.load(path, use_cache=False)
    assert "invalid JSON at byte" in str(err.value) or "truncated JSON" in str(err.value)
    assert "\n" not in str(err.value)


def test_a_key_given_twice_is_read_as_its_last_value_and_counted(tmp_path, clean):
    index = _kernels(clean)[3]
    event = clean["traceEvents"][index]
    raw = orjson.dumps(event)
    twice = raw.replace(b'"ts":', b'"ts":1.5,"ts":', 1)
    path = tmp_path / "rank0.pt.trace.json"
    path.write_bytes(orjson.dumps(clean).replace(raw, twice, 1))
    t = tv.load(path, use_cache=False)
    assert [w.split(": ", 1)[1] for w in t.warnings] == [f"1 {DUPLICATE_KEYS}"]
    want = tv.load(_write(tmp_path, clean, {}, "want.pt.trace.json"), use_cache=False)
    assert _tasks(t).equals(_tasks(want))  # the last ts, the one the event had
