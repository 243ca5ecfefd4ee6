"""Kineto events to columns: one chunk of decoded Chrome-trace events becomes the frames of its
device tasks, host events, GPU annotations and collective ops (`chunk_frames`).

How it stays fast: polars builds the columns of all events of a chunk in one call (only the fields
we use), and everything after that is polars expressions. The only per-event Python work is
collecting the `args` dicts of complete (`ph: X`) events; keys are read from the args of kernels,
collective ops and the cpu_ops that launched kernels only. Timestamps: `ts`/`dur` are µs numbers,
converted to Int64 ns by rounding (exact for integer µs and for 3-decimal µs below ~9e12 µs).
"""

from __future__ import annotations

import math

import orjson
import polars as pl

from traceview.errors import Warnings
from traceview.parsers import kinds
from traceview.parsers.jsonio import nested_too_deep
from traceview.parsers.kineto_comm import COLLECTIVE_OP, COMM_ARGS, COMM_COLUMNS
from traceview.parsers.timeconv import us_float_to_ns

EVENT_FIELDS = pl.Schema(
    {
        "ph": pl.String,
        "cat": pl.String,
        "name": pl.String,
        "pid": pl.String,
        "tid": pl.String,
        "ts": pl.Float64,
        "dur": pl.Float64,
    }
)

ARG_FIELDS = pl.Schema(
    {
        "correlation": pl.Int64,
        "External id": pl.Int64,
        "external id": pl.Int64,
        "stream": pl.String,
        "device": pl.Int64,
        "bytes": pl.Int64,
    }
)

#: Every key the parser reads from an event (`args` holds the rest) and every arg it reads from
#: `args`: what the fuzzers (bench/fuzz_mutators.py, tests/test_properties.py) set to odd values.
EVENT_KEYS_READ = (*EVENT_FIELDS, "args")
ARG_KEYS_READ = (*ARG_FIELDS, *COMM_ARGS, "grid", "block", "Input Dims")


#: Every phase (`ph`) of the Chrome trace event format. Only complete events ('X') carry what the
#: canonical model holds; flows, instants, counters, async, object, sample and metadata events are
#: skipped silently; 'B'/'E' duration pairs (torch.profiler never writes them) and phases outside
#: this set, or no `ph` at all, are skipped and counted.
CHROME_PHASES = (
    "X",
    "B",
    "E",
    "i",
    "I",
    "C",
    "b",
    "n",
    "e",
    "s",
    "t",
    "f",
    "P",
    "N",
    "O",
    "D",
    "M",
    "V",
    "v",
    "R",
    "c",
    "(",
    ")",
    "S",
    "T",
    "F",
)
UNKNOWN_PHASE = "events with a missing or unknown 'ph' (phase) ignored"
BEGIN_END_PHASE = "duration events with ph 'B'/'E' ignored (only complete 'X' events are read)"
NOT_OBJECTS = "trace entries that are not JSON objects skipped"
NOT_A_TRACE_FIX = "pass a torch.profiler trace (export_chrome_trace or tensorboard_trace_handler output)"


#: Columns kept per table while parsing (the canonical schema's, plus `_i` and intermediates).
HOST_COLUMNS = ("_i", "pid", "tid", "name", "cat", "kind", "start_ns", "end_ns", "dur_ns", "correlation", "external_id")
ANNOTATION_COLUMNS = ("_i", "device", "stream", "name", "start_ns", "end_ns")


NESTED_VALUES = "event fields holding a list or object where a number or text belongs read as missing"


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


def int64(v) -> int | None:
    """`v` when it is an integer (not a bool) that fits Int64, else None."""
    return v if isinstance(v, int) and not isinstance(v, bool) and -(2**63) <= v < 2**63 else None


def chunk_frames(events: list, warn: Warnings, rendered: dict) -> dict[str, pl.DataFrame]:
    """One chunk's complete (X) events split into the frames the rank is built from:
    `tasks` (device tasks with kind, grid/block and collective args), `host` (host events),
    `annotations` (GPU-side user annotations), `collective_ops` (host ops that may carry collective
    metadata, with it) and `op_shapes` (`_op_shapes`); `_i` = the event's index in the chunk.
    Each event's args are read once into the few columns used; only the rows that need more
    (kernels, collective ops, cpu_ops) have their args dicts looked at again. `rendered` caches
    shape texts across chunks."""
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
    x = df.filter(phase == "X")
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
    # `_a`: the row's position in `args` (kept through the filters below).
    x = pl.concat([x, arg_frame], how="horizontal").with_row_index("_a")

    x = x.with_columns(us_float_to_ns(pl.col("ts")).alias("start_ns"), us_float_to_ns(pl.col("dur")).alias("dur_ns"))
    warn.add("complete events with a missing or non-numeric 'ts' dropped", x["start_ns"].null_count())
    x = x.filter(pl.col("start_ns").is_not_null())
    warn.add("complete events with a missing or non-numeric 'dur' dropped", x["dur_ns"].null_count())
    warn.add("complete events with a negative 'dur' dropped", x.filter(pl.col("dur_ns") < 0).height)
    x = x.filter(pl.col("dur_ns") >= 0)
    warn.add("complete events without a name kept as '(unnamed)'", x["name"].null_count())
    x = x.with_columns(
        pl.col("cat").str.to_lowercase().fill_null("").alias("cat_lc"),
        pl.col("name").fill_null("(unnamed)"),
        pl.coalesce("External id", "external id").alias("external_id"),
        (pl.col("start_ns") + pl.col("dur_ns")).alias("end_ns"),
        _int_of("pid").alias("pid"),
        _int_of("tid").alias("tid"),
        _int_of("stream").alias("stream"),
    )
    mtia = x.filter(pl.col("cat_lc").str.starts_with("mtia_ccp")).height
    warn.add("MTIA device events (mtia_ccp_events) not analysed yet: host side only", mtia)

    device_kind = pl.col("cat_lc").replace_strict(kinds.DEVICE_CATEGORIES, default=None)
    is_device = device_kind.is_not_null()
    is_annotation = pl.col("cat_lc").is_in(list(kinds.DEVICE_ANNOTATION_CATEGORIES))
    host = x.filter(~is_device & ~is_annotation & ~pl.col("cat_lc").is_in(list(kinds.IGNORED_CATEGORIES)))
    host = host.with_columns(pl.col("cat_lc").replace_strict(kinds.HOST_CATEGORIES, default="other").alias("kind"))
    collective_ops = host.filter(COLLECTIVE_OP).select(
        "_i", "_a", "pid", "tid", "name", "start_ns", "end_ns", "external_id"
    )
    return {
        "tasks": _tasks(x.filter(is_device), args),
        "host": host.select(HOST_COLUMNS),
        "annotations": x.filter(is_annotation)
        .with_columns(pl.col("tid").alias("stream"), pl.col("pid").alias("device"))
        .select(ANNOTATION_COLUMNS),
        "collective_ops": _with_args(collective_ops, args, COMM_ARGS, COMM_COLUMNS).drop("_a"),
        "op_shapes": _op_shapes(host, args, rendered),
    }


def _tasks(tasks: pl.DataFrame, args: list) -> pl.DataFrame:
    """Device tasks: kind, stream (the `stream` arg, else the tid), device (the `device` arg, else
    the pid), grid/block ('x,y,z' text) of kernels and the collective args of communication
    kernels (read from those rows' args only)."""
    device_kind = pl.col("cat_lc").replace_strict(kinds.DEVICE_CATEGORIES, default=None)
    tasks = tasks.with_columns(
        kinds.device_kind(device_kind, pl.col("name")).alias("kind"),
        pl.coalesce("stream", "tid").alias("stream"),
        pl.coalesce("device", "pid").alias("device"),
    ).drop("pid", "tid", "cat", "ph", "ts", "dur", "External id", "external id")
    kernels = tasks.filter(pl.col("cat_lc") == "kernel").select("_a")
    kernel_args = [a if type(a := args[p]) is dict else _EMPTY for p in kernels["_a"].to_list()]
    launch = kernels.with_columns(
        pl.Series("grid", [_dims(a.get("grid")) for a in kernel_args], dtype=pl.String),
        pl.Series("block", [_dims(a.get("block")) for a in kernel_args], dtype=pl.String),
    )
    comm = _with_args(
        tasks.filter((pl.col("cat_lc") == "kernel") & pl.col("name").str.contains(kinds.communication_regex())).select(
            "_a"
        ),
        args,
        COMM_ARGS,
        COMM_COLUMNS,
    )
    extra = launch.join(comm, on="_a", how="full", coalesce=True)
    return tasks.join(extra, on="_a", how="left", maintain_order="left").drop("_a")


def _with_args(rows: pl.DataFrame, args: list, fields: pl.Schema, names: dict[str, str]) -> pl.DataFrame:
    """`rows` (with `_a`) plus one column per arg in `fields` (read as text, cast leniently to
    its dtype, named by `names`; a value that is not a string or a number, e.g. a list, is null)."""
    found = [a if type(a := args[p]) is dict else _EMPTY for p in rows["_a"].to_list()]
    return rows.with_columns(
        pl.Series(names[key], [_scalar(a.get(key)) for a in found], dtype=pl.String, strict=False).cast(
            dtype, strict=False
        )
        for key, dtype in fields.items()
    )


def _scalar(value):
    """`value` if it is a string or a number (not a bool), else None."""
    return value if type(value) in (str, int, float) else None


_EMPTY: dict = {}


def _dims(value) -> str | None:
    """A launch grid/block list [x, y, z] as 'x,y,z' text; None if absent or not a list."""
    if type(value) is list and value:
        return ",".join(map(str, value))
    return None


def _int_of(col: str) -> pl.Expr:
    """A pid/tid/stream column as Int64: plain integers, or the digits of 'stream 7'; else null."""
    return pl.col(col).str.extract(r"(-?\d+)\s*$", 1).cast(pl.Int64, strict=False)


def _shapes_text(dims: list) -> str:
    """`Input Dims` ([[8192, 4096], [4096, 4096], []]) as Ascend's `Input Shapes` text
    ("8192,4096;4096,4096;"): one entry per input in order, joined by ';'; a tensor's dims joined
    by ','; an input without dims (a scalar, None, a 0-d tensor) is the empty entry; a tensor-list
    input ([[2, 3], [2, 3]]) contributes one entry per tensor."""
    out = []
    for d in dims:
        if type(d) is list and d and type(d[0]) is list:
            out.extend(",".join(map(str, t)) if type(t) is list else "" for t in d)
        else:
            out.append(",".join(map(str, d)) if type(d) is list else "")
    return ";".join(out)


def _op_shapes(host: pl.DataFrame, args: list, rendered: dict) -> pl.DataFrame:
    """external_id, input_shapes of the first `cpu_op` (2021: `Operator`) per External id in `host`
    (input_shapes null when it recorded no `Input Dims`: shapes are only there when the profile
    was recorded with record_shapes=True). One dict lookup per such op; each distinct dims list is
    rendered once (`_shapes_text`, memoised in `rendered`)."""
    ops = (
        host.filter(pl.col("cat_lc").is_in(("cpu_op", "operator")) & pl.col("external_id").is_not_null())
        .select("_a", "external_id")
        .unique("external_id", keep="first", maintain_order=True)
    )
    dims = [a.get("Input Dims") if type(a := args[p]) is dict else None for p in ops["_a"].to_list()]
    text = []
    for d in dims:
        if type(d) is not list:
            text.append(None)
            continue
        key = orjson.dumps(d)
        if (t := rendered.get(key)) is None:
            t = rendered[key] = _shapes_text(d)
        text.append(t)
    return ops.select("external_id").with_columns(pl.Series("input_shapes", text, dtype=pl.String))


def with_input_shapes(tasks: pl.DataFrame, op_shapes: pl.DataFrame) -> pl.DataFrame:
    """Kernels' input_shapes: those of the launching op, the first `cpu_op` in the file with the
    kernel's External id (the link `traceview.analysis.classes.launch_ops` trusts wherever it
    exists); null for other events."""
    shapes = op_shapes.unique("external_id", keep="first", maintain_order=True).drop_nulls("input_shapes")
    if shapes.is_empty():
        return tasks.with_columns(pl.lit(None, pl.String).alias("input_shapes"))
    is_kernel = pl.col("cat_lc") == "kernel"
    return tasks.join(shapes, on="external_id", how="left", maintain_order="left").with_columns(
        pl.when(is_kernel).then(pl.col("input_shapes")).alias("input_shapes")
    )
