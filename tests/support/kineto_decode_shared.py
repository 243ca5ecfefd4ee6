"""What the split modules of test_kineto_decode.py share (helpers and fixtures)."""

from __future__ import annotations

from pathlib import Path

import msgspec
from polars.testing import assert_frame_equal

from tests.conftest import DATA, SAMPLES
from traceview.errors import Warnings
from traceview.parsers import jsonio, kineto
from traceview.parsers.kineto_decode import Event, Untyped, chunk_decoder, typed_columns

SAMPLE_FILES = sorted(SAMPLES.glob("*/*.pt.trace.json.gz")) + sorted(DATA.glob("kineto_*.json"))


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
