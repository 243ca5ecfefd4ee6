"""The typed decode of Kineto events: a chunk's JSON bytes to `Columns` without a dict per event.

msgspec decodes the chunk into `Event` Structs (gc=False) that declare only the keys the parser
reads (`EVENT_KEYS_READ`; `args` as an `Args` Struct of `ARG_KEYS_READ`); every other key is
skipped without being built; `ph` is one of the interned CHROME_PHASES (a `Literal`), and `Input
Dims` stays undecoded (`msgspec.Raw`) until a cpu_op row reads it. Each column is then one pass over
the complete events (`attrgetter`) into a typed polars Series. Measured in docs/benchmarks.md
("Kineto decode").

Same result as the dict decode (`parsers.kineto_dicts`), by construction: the Structs' types
admit only values that both decodes turn into the same columns (text; Int64 integers, or their
plain digits as text; numbers for ts/dur; int or text for pid/tid/stream; text or a number for the
collective args; a list of integers or text for grid/block; a known phase). Anything else in a read
field (an entry that is not an object, a bool, a list, `ts` as text, an integer beyond Int64, an
unknown phase, `Input Dims` that orjson rejects) raises `Untyped` and the chunk goes to the dict
decode, which has the lenient conversions and the warnings for those values. That also covers what
the dict decode's `jsonio.nested_too_deep` guards against: a nested value in a read scalar field is
a type error here, and the values of the keys never read are skipped, never built.

msgspec accepts some text orjson rejects. Invalid UTF-8 is checked here (the chunk goes to the dict
decode, and the file to `jsonio.loads`, which replaces it and says so). Two differences are kept,
both in values traceview never reads: a number that overflows float64 (`1e999`), and nesting of
1,024 levels or more where Python's recursion limit lets msgspec follow it (not under the default
limit of 1,000); orjson rejects the whole file for either, the typed decode skips the value.
"""

from __future__ import annotations

import json
import re
from operator import attrgetter
from typing import Literal

import msgspec
import orjson
import polars as pl

from traceview.errors import Warnings
from traceview.parsers.jsonio import decode_dicts
from traceview.parsers.kineto_dicts import dict_columns
from traceview.parsers.kineto_events import (
    BEGIN_END_PHASE,
    CHROME_PHASES,
    INSTANT_PHASES,
    MEMORY_ARGS,
    MEMORY_EVENT,
    UNKNOWN_PHASE,
    Columns,
    chunk_frames,
    items_text,
    shapes_text,
)

#: An integer both decodes keep as it is (orjson makes a float of one beyond 64 bits; msgspec does not).
_INT64 = (-(2**63), 2**63)
_DIGITS = re.compile(r"-?[0-9]{1,18}")
_NO_RAW = msgspec.Raw(b"")
_Number = int | float | str | None  # a collective arg: read as text, cast leniently
_Phase = Literal[CHROME_PHASES]  # decoded to the interned constant; another text is a type error


class Untyped(Exception):
    """A chunk holds something outside the typed decode's types: decode it to dicts instead."""


class Args(msgspec.Struct, gc=False, frozen=True):
    """The args keys read (ARG_FIELDS, COMM_ARGS, grid/block, and `Input Dims`, `Input type`,
    `Concrete Inputs` raw)."""

    correlation: int | str | None = None
    external_id: int | str | None = msgspec.field(default=None, name="External id")
    external_id_2021: int | str | None = msgspec.field(default=None, name="external id")
    stream: int | str | None = None
    device: int | str | None = None
    nbytes: int | str | None = msgspec.field(default=None, name="bytes")  # text in real traces: "256"
    collective: _Number = msgspec.field(default=None, name="Collective name")
    process_group: _Number = msgspec.field(default=None, name="Process Group Name")
    group_size: _Number = msgspec.field(default=None, name="Group size")
    in_nelems: _Number = msgspec.field(default=None, name="In msg nelems")
    out_nelems: _Number = msgspec.field(default=None, name="Out msg nelems")
    dtype: _Number = None
    grid: list[int] | str | None = None  # text on triton cpu_ops: "grid(100,)"
    block: list[int] | str | None = None
    input_dims: msgspec.Raw = msgspec.field(default=_NO_RAW, name="Input Dims")
    input_types: msgspec.Raw = msgspec.field(default=_NO_RAW, name="Input type")
    concrete_inputs: msgspec.Raw = msgspec.field(default=_NO_RAW, name="Concrete Inputs")
    # `[memory]` instant events (profile_memory=True): MEMORY_ARGS
    device_type: int | str | None = msgspec.field(default=None, name="Device Type")
    device_id: int | str | None = msgspec.field(default=None, name="Device Id")
    addr: int | str | None = msgspec.field(default=None, name="Addr")
    mem_bytes: int | str | None = msgspec.field(default=None, name="Bytes")
    total_allocated: int | str | None = msgspec.field(default=None, name="Total Allocated")
    total_reserved: int | str | None = msgspec.field(default=None, name="Total Reserved")


_NO_ARGS = Args()


class Event(msgspec.Struct, gc=False):
    """The event keys read (EVENT_FIELDS and args); ts/dur in µs (an integer is read as a float)."""

    ph: _Phase | None = None
    cat: str | None = None
    name: str | None = None
    pid: int | str | None = None
    tid: int | str | None = None
    ts: float | None = None
    dur: float | None = None
    args: Args = _NO_ARGS


#: JSON key -> Args attribute.
ARG_ATTRS = {f.encode_name: f.name for f in msgspec.structs.fields(Args)}
_DECODER = msgspec.json.Decoder(list[Event])
#: MEMORY_ARGS key -> Args attribute.
MEMORY_ATTRS = {key: ARG_ATTRS[key] for key in MEMORY_ARGS}
_INDEX = pl.DataFrame({"a": [0]}).with_row_index("i").schema["i"]  # polars' row index type (`_i` of dicts)
_PH = attrgetter("ph")
_ARGS = attrgetter("args")


def typed_columns(data: bytes, warn: Warnings) -> Columns:
    """The columns of one chunk (`data`: a JSON array of events); Untyped if any value read is
    outside the Structs' types (then nothing was counted in `warn`)."""
    if not data.isascii():
        try:
            data.decode()  # orjson rejects invalid UTF-8 anywhere; msgspec only in the fields it builds
        except UnicodeDecodeError:
            raise Untyped from None
    try:
        events = _DECODER.decode(data)
    except (msgspec.DecodeError, RecursionError):
        raise Untyped from None
    phases = list(map(_PH, events))
    index = [i for i, ph in enumerate(phases) if ph == "X"]
    x = list(map(events.__getitem__, index))
    args = list(map(_ARGS, x))
    columns = {
        "_i": pl.Series("_i", index, dtype=_INDEX),
        "cat": _column(x, "cat", pl.String),
        "name": _column(x, "name", pl.String),
        "pid": _int_or_text(x, "pid"),
        "tid": _int_or_text(x, "tid"),
        "ts": _column(x, "ts", pl.Float64),
        "dur": _column(x, "dur", pl.Float64),
        "correlation": _int_column(args, "correlation"),
        "External id": _int_column(args, "external_id"),
        "external id": _int_column(args, "external_id_2021"),
        "stream": _int_or_text(args, "stream"),
        "device": _int_column(args, "device"),
        "bytes": _int_column(args, "nbytes"),
    }
    warn.add(UNKNOWN_PHASE, phases.count(None))  # any other unknown phase was a type error
    warn.add(BEGIN_END_PHASE, phases.count("B") + phases.count("E"))
    return Columns(pl.DataFrame(columns), TypedArgs(args), len(events), _memory_columns(events, phases))


def _memory_columns(events: list, phases: list) -> pl.DataFrame | None:
    """The `[memory]` instant events of a chunk as MEMORY_COLUMNS (None when there is none)."""
    if not any(map(phases.count, INSTANT_PHASES)):  # counted in C: most chunks hold no instant event
        return None
    index = [i for i, ph in enumerate(phases) if ph in INSTANT_PHASES and events[i].name == MEMORY_EVENT]
    if not index:
        return None
    rows = list(map(events.__getitem__, index))
    args = list(map(_ARGS, rows))
    return pl.DataFrame(
        {
            "_i": pl.Series("_i", index, dtype=_INDEX),
            "pid": _int_or_text(rows, "pid"),
            "tid": _int_or_text(rows, "tid"),
            "ts": _column(rows, "ts", pl.Float64),
            **{key: _int_column(args, attr) for key, attr in MEMORY_ATTRS.items()},
        }
    )


def _column(rows: list, attr: str, dtype: pl.DataType) -> pl.Series:
    """The attribute `attr` of every row as a `dtype` Series; Untyped when a value does not fit."""
    try:
        return pl.Series(attr, list(map(attrgetter(attr), rows)), dtype=dtype)
    except (TypeError, OverflowError, pl.exceptions.PolarsError):
        raise Untyped from None


def _int_column(rows: list, attr: str) -> pl.Series:
    """An Int64 attribute: integers, or text of plain decimal digits (both dict paths read "256" as
    256; other text they read differently from each other: Untyped)."""
    values = list(map(attrgetter(attr), rows))
    try:
        return pl.Series(attr, values, dtype=pl.Int64)
    except (TypeError, OverflowError, pl.exceptions.PolarsError):
        pass
    if not all(type(v) is not str or _DIGITS.fullmatch(v) for v in values):
        raise Untyped
    try:
        return pl.Series(attr, [int(v) if type(v) is str else v for v in values], dtype=pl.Int64)
    except (TypeError, OverflowError, pl.exceptions.PolarsError):
        raise Untyped from None


def _int_or_text(rows: list, attr: str) -> pl.Series:
    """An int-or-text attribute (pid, tid, stream): Int64 when all are integers, else String (as
    the dict decode reads it, for `int_of`)."""
    values = list(map(attrgetter(attr), rows))
    try:
        return pl.Series(attr, values, dtype=pl.Int64)
    except (TypeError, OverflowError, pl.exceptions.PolarsError):
        pass
    ints = [v for v in values if type(v) is int]
    if ints and (min(ints) < _INT64[0] or max(ints) >= _INT64[1]):
        raise Untyped
    return pl.Series(attr, values, dtype=pl.String, strict=False)


def _json(raw: msgspec.Raw | bytes):
    """The value of a raw arg (None when absent); Untyped when orjson would not read it."""
    if not raw:
        return None
    try:
        return orjson.loads(memoryview(raw))
    except orjson.JSONDecodeError:
        raise Untyped from None


class TypedArgs:
    """`ArgReader` of the typed decode's `Args`."""

    def __init__(self, args: list):
        self._args = args

    def _values(self, positions: list[int], attr: str) -> list:
        return list(map(attrgetter(attr), map(self._args.__getitem__, positions)))

    def dims(self, positions: list[int], key: str, rendered: dict) -> pl.Series:
        text = []
        for v in self._values(positions, ARG_ATTRS[key]):
            if type(v) is not list or not v:  # as `dims_text`
                text.append(None)
                continue
            k = tuple(v)  # launch configurations repeat: each is joined once
            if (t := rendered.get(k)) is None:
                t = rendered[k] = ",".join(map(str, v))
            text.append(t)
        return pl.Series(text, dtype=pl.String)

    def scalars(self, positions: list[int], key: str) -> list:
        out = self._values(positions, ARG_ATTRS[key])
        if any(type(v) is int and not _INT64[0] <= v < _INT64[1] for v in out):
            raise Untyped
        return out

    def shapes(self, positions: list[int], rendered: dict) -> list:
        out: list = [None] * len(positions)
        raws = self._values(positions, "input_dims")
        if not any(raws):  # recorded without record_shapes=True
            return out
        for k, raw in enumerate(raws):
            if not raw:
                continue
            key = bytes(raw)
            if (t := rendered.get(key)) is None:
                d = _json(key)
                if type(d) is not list:
                    continue
                t = rendered[key] = shapes_text(d)
            out[k] = t
        return out

    def items(self, positions: list[int], key: str, rendered: dict) -> list:
        out: list = [None] * len(positions)
        for k, raw in enumerate(self._values(positions, ARG_ATTRS[key])):
            if not raw:
                continue
            raw_key = b"items:" + bytes(raw)
            if (t := rendered.get(raw_key)) is None:
                v = _json(bytes(raw))
                if type(v) is not list:
                    continue
                t = rendered[raw_key] = items_text(v)
            out[k] = t
        return out


def chunk_decoder(warn: Warnings, rendered: dict, typed: bool = True):
    """The `jsonio.ChromeEvents` decoder of Kineto chunks: bytes of `[ev, ..., ev]` ->
    (`chunk_frames` frames, events in the chunk); NotJSON if they are not JSON. Typed decode first
    (its counts are added to `warn` only once it succeeded), else the dict decode; `typed=False`:
    the dict decode only (the reference, and the benchmark's "before")."""

    def decode(view) -> tuple[dict[str, pl.DataFrame], int]:
        data = bytes(view)  # msgspec's Raw values keep their source alive: not the stream's buffer
        if typed:
            scratch = Warnings("")
            try:
                cols = typed_columns(data, scratch)
                frames = chunk_frames(cols, scratch, rendered)
            except Untyped:
                pass
            else:
                for what, n in scratch._counts.items():
                    warn.add(what, n)
                count_duplicate_keys(data, cols.events, warn)
                return frames, cols.events
        events = decode_dicts(data)
        count_duplicate_keys(data, len(events), warn)
        return chunk_frames(dict_columns(events, warn), warn, rendered), len(events)

    return decode


#: The warning for JSON objects holding a key twice (a JSON parser keeps the last value).
DUPLICATE_KEYS = "JSON objects with a key given twice: the last value read (checked where a 'ts' is given twice)"


def count_duplicate_keys(data: bytes, events: int, warn: Warnings) -> None:
    """Count in `warn` the objects of `data` (a JSON array of `events` events) that give a key
    twice, which every JSON parser reads silently as its last value. Kineto writes one `ts` per
    event, so the check costs one count of `"ts"` (~1 GB/s) unless the chunk holds more `"ts"`
    than events; only then is it read again, every object's keys compared (any key given twice
    there is counted; a `"ts"` text value or args key makes that happen without a duplicate:
    nothing is counted then). A key other than `ts` given twice in a chunk with no `ts` twice is
    not looked for: the warning says where it is checked."""
    if data.count(b'"ts"') <= events:
        return
    found = 0

    def pairs(items: list) -> dict:
        nonlocal found
        if len({k for k, _ in items}) != len(items):
            found += 1
        return dict(items)

    try:
        json.loads(data, object_pairs_hook=pairs)
    except (ValueError, RecursionError):
        return
    warn.add(DUPLICATE_KEYS, found)
