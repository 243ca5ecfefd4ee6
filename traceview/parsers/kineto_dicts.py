"""The dict decode of Kineto events: orjson's dicts to `Columns` (`dict_columns`).

Every chunk the typed decode (`parsers.kineto_decode`) does not take comes here: entries that are
not objects, values of unexpected types (a `ts` as text, a list where a number belongs, a bool),
integers beyond Int64, invalid UTF-8 (after `jsonio.loads` replaced it), and the whole-document
read. polars builds the columns of all events in one call (`pl.DataFrame` of the dicts, only the
fields read); when that fails, a per-field slow path reads each value leniently and counts what it
had to read as missing (`_scalar_fields`).
"""

from __future__ import annotations

import math

import polars as pl

from traceview.errors import Warnings
from traceview.parsers.jsonio import nested_too_deep
from traceview.parsers.kineto_events import (
    ARG_FIELDS,
    BEGIN_END_PHASE,
    CHROME_PHASES,
    EVENT_FIELDS,
    INSTANT_PHASES,
    MEMORY_ARGS,
    MEMORY_EVENT,
    NOT_OBJECTS,
    UNKNOWN_PHASE,
    Columns,
    dims_text,
    int64,
    rendered_items,
    rendered_shapes,
    scalar,
)

NESTED_VALUES = "event fields holding a list or object where a number or text belongs read as missing"

_EMPTY: dict = {}


def dict_columns(events: list, warn: Warnings) -> Columns:
    """The columns of a chunk of decoded events (any JSON values); counts entries that are not
    objects, missing or unknown phases, 'B'/'E' events and nested values read as missing."""
    n = len(events)
    deep = nested_too_deep(events)
    try:
        if deep:
            raise ValueError("nested too deeply")
        df = pl.DataFrame(events, schema=EVENT_FIELDS, strict=False, infer_schema_length=None)
    except (TypeError, ValueError, pl.exceptions.PolarsError):
        # Slow path for broken traces: drop non-objects, read ts/dur as text and convert leniently.
        good = [e for e in events if isinstance(e, dict)]
        warn.add(NOT_OBJECTS, len(events) - len(good))
        events = [_scalar_fields(e, EVENT_FIELDS, warn) for e in good]
        lenient = pl.Schema({**EVENT_FIELDS, "ts": pl.String, "dur": pl.String})
        df = pl.DataFrame(events, schema=lenient, strict=False, infer_schema_length=None).with_columns(
            pl.col("ts", "dur").str.strip_chars().cast(pl.Float64, strict=False)
        )
    df = df.with_row_index("_i")
    phase = pl.col("ph")
    unknown, begin_end = df.select(
        (phase.is_null() | ~phase.is_in(CHROME_PHASES)).sum().alias("unknown"),
        phase.is_in(["B", "E"]).sum().alias("begin_end"),
    ).row(0)
    warn.add(UNKNOWN_PHASE, unknown)
    warn.add(BEGIN_END_PHASE, begin_end)
    x = df.filter(phase == "X").drop("ph")
    memory = _memory_columns(df.filter(phase.is_in(INSTANT_PHASES) & (pl.col("name") == MEMORY_EVENT)), events, warn)
    del df
    # Flows, counters, instants and metadata ('s', 'f', 'C', 'i', 'M') carry nothing the canonical
    # model holds: ranks, devices and correlations come from the X events and the document header.
    args = [events[i].get("args") for i in x["_i"].to_list()]
    try:
        if deep:
            raise ValueError("nested too deeply")
        arg_frame = pl.DataFrame([a or _EMPTY for a in args], schema=ARG_FIELDS, strict=False, infer_schema_length=None)
    except (TypeError, ValueError, pl.exceptions.PolarsError):
        args = [a if isinstance(a, dict) else _EMPTY for a in args]
        args = [_scalar_fields(a, ARG_FIELDS, warn) if a is not _EMPTY else a for a in args]
        arg_frame = pl.DataFrame(args, schema=ARG_FIELDS, strict=False, infer_schema_length=None)
    return Columns(pl.concat([x, arg_frame], how="horizontal"), DictArgs(args), n, memory)


def _memory_columns(rows: pl.DataFrame, events: list, warn: Warnings) -> pl.DataFrame | None:
    """The `[memory]` instant events `rows` (of `events`) with their MEMORY_ARGS (None if none)."""
    if rows.is_empty():
        return None
    args = [a if isinstance(a := events[i].get("args"), dict) else _EMPTY for i in rows["_i"].to_list()]
    try:
        frame = pl.DataFrame(args, schema=MEMORY_ARGS, strict=False, infer_schema_length=None)
    except (TypeError, ValueError, pl.exceptions.PolarsError):
        args = [_scalar_fields(a, MEMORY_ARGS, warn) if a is not _EMPTY else a for a in args]
        frame = pl.DataFrame(args, schema=MEMORY_ARGS, strict=False, infer_schema_length=None)
    return pl.concat([rows.select("_i", "pid", "tid", "ts"), frame], how="horizontal")


def _scalar_fields(event: dict, fields: pl.Schema, warn: Warnings) -> dict:
    """`event` with the lists/objects in `fields` (scalar columns) replaced by None (counted), the
    other values of String columns as text and integers beyond Int64 as None (polars cannot append
    them: found by bench/fuzz_parsers.py)."""
    out = None
    for k, dtype in fields.items():
        v = event.get(k)
        if v is None or (isinstance(v, str) and dtype == pl.String):
            continue
        if isinstance(v, (list, dict)):
            warn.add(NESTED_VALUES)
            v = None
        elif dtype == pl.String:
            v = str(v)
        elif (
            isinstance(v, bool) or int64(v) is not None or isinstance(v, float) and math.isfinite(v) and abs(v) < 2**63
        ):
            continue
        else:  # an integer beyond Int64, inf, nan or text in an integer column
            v = _int_text(v) if isinstance(v, str) else None
        out = out if out is not None else dict(event)
        out[k] = v
    return event if out is None else out


def _int_text(v: str) -> int | None:
    try:
        return int64(int(v.strip()))
    except ValueError:
        return None


class DictArgs:
    """`ArgReader` of the args as decoded (any JSON value; anything but an object reads as `{}`)."""

    def __init__(self, args: list):
        self._args = args

    def _get(self, positions: list[int], key: str) -> list:
        args = self._args
        return [a.get(key) if type(a := args[p]) is dict else None for p in positions]

    def dims(self, positions: list[int], key: str, rendered: dict) -> pl.Series:
        return pl.Series([dims_text(v) for v in self._get(positions, key)], dtype=pl.String)

    def scalars(self, positions: list[int], key: str) -> list:
        return [scalar(v) for v in self._get(positions, key)]

    def shapes(self, positions: list[int], rendered: dict) -> list:
        return [rendered_shapes(d, rendered) if type(d) is list else None for d in self._get(positions, "Input Dims")]

    def items(self, positions: list[int], key: str, rendered: dict) -> list:
        return [rendered_items(v, rendered) if type(v) is list else None for v in self._get(positions, key)]
