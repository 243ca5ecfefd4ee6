"""Kineto / torch.profiler Chrome-trace JSON (plain or .gz), every schema variant since 2021.

Handles: `export_chrome_trace` files and `tensorboard_trace_handler` `*.pt.trace.json[.gz]`
files; capitalised categories of 2021 traces (Kernel/Memcpy/Memset/Runtime/Operator); kernel
args `external id` (2021) or `External id`; `deviceProperties` or `computeProperties`; integer
or float microsecond timestamps; ROCm traces (hip* runtime calls); traces without
`distributedInfo`; CPU-only traces; MTIA traces (host side only).

Collective metadata (`Collective name`, `Process Group Name`, `Group size`, `In/Out msg nelems`,
`dtype`; recent PyTorch writes them on `record_param_comms` and copies them onto NCCL kernels) fills
the collective / process_group / group_size / msg_bytes columns of communication tasks, from the
kernel's own args or else from the host op that launched it (see `_finish_comm`). Profiles recorded
with record_shapes=True give kernels the `input_shapes` of their launching cpu_op (`Input Dims` in
Ascend's `Input Shapes` text form; see `_kernel_input_shapes`).

How it stays fast: orjson parses the document, polars builds the columns of all events in one
call (only the fields we use), and everything after that is polars expressions. The only
per-event Python work is collecting the `args` dicts of complete (`ph: X`) events; keys are read
from the args of kernels, collective ops and the cpu_ops that launched kernels only.

Timestamps: `ts`/`dur` are µs numbers; converted to Int64 ns by rounding (exact for integer µs and
for 3-decimal µs below ~9e12 µs, which covers every trace we know of).
"""

from __future__ import annotations

import math
from pathlib import Path

import orjson
import polars as pl

from traceview.errors import TraceError, Warnings
from traceview.parsers import kinds, steps
from traceview.parsers.base import ParsedRank, collective_of
from traceview.parsers.jsonio import ChromeEvents, StreamUnsupported, gc_paused, loads, nested_too_deep, read_bytes
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

#: A file at least this large (uncompressed) is decoded by several processes when `jobs` > 1.
PARALLEL_FILE_BYTES = 256 << 20


def parse_kineto(path: Path, jobs: int = 1) -> ParsedRank:
    """Parse one Kineto trace file into the canonical frames of its rank.

    The events are streamed (`parsers.jsonio.ChromeEvents`): a chunk's events are decoded and
    turned into columns, then dropped, so the whole file is never held as bytes or dicts. With
    `jobs` > 1 and a file of at least PARALLEL_FILE_BYTES, the chunks are decoded by `jobs`
    worker processes. Fallbacks, each with the same result: parallel -> one process streaming
    -> the whole document at once (which also reports a broken file precisely).
    """
    path = Path(path)
    readers = [_streamed, _whole]
    if jobs > 1 and _uncompressed_size(path) >= PARALLEL_FILE_BYTES:
        readers.insert(0, lambda p, w: _streamed_parallel(p, w, jobs))
    with gc_paused():
        for read in readers:
            warn = Warnings(path)
            try:
                doc, frames = read(path, warn)
                break
            except StreamUnsupported:
                continue
        return _build(path, doc, frames, warn)


def _uncompressed_size(path: Path) -> int:
    from traceview.parsers.memory import uncompressed_size

    try:
        return uncompressed_size(path)
    except OSError:
        return 0


def _streamed(path: Path, warn: Warnings) -> tuple[dict, dict[str, pl.DataFrame]]:
    """Read chunk by chunk in this process."""
    stream = ChromeEvents(path)
    rendered: dict = {}
    frames = _joined((_chunk(events, warn, rendered), len(events)) for events in stream)
    return stream.doc, frames  # doc is complete only once the events are read


def _whole(path: Path, warn: Warnings) -> tuple[dict, dict[str, pl.DataFrame]]:
    """Read the document in one piece (any layout; precise errors for broken files)."""
    doc, events = _whole_document(path, warn)
    return doc, _joined([(_chunk(events, warn, {}), len(events))])


def _streamed_parallel(path: Path, warn: Warnings, jobs: int) -> tuple[dict, dict[str, pl.DataFrame]]:
    """Decode the chunks in `jobs` spawn processes (at most 2 x jobs chunks in flight, results
    taken in file order); StreamUnsupported if a piece does not decode (a wrong cut) or the
    workers cannot run (cannot start, or killed)."""
    from collections import deque
    from concurrent.futures.process import BrokenProcessPool
    from contextlib import closing

    from traceview import subprocesses

    stream = ChromeEvents(path)

    def parts():
        with subprocesses.finish(subprocesses.pool(jobs)) as pool:
            pending: deque = deque()
            for piece in stream.pieces():
                if isinstance(piece, list):  # the last events, decoded here
                    while pending:
                        yield _merged(subprocesses.result(pending.popleft()), warn)
                    yield _chunk(piece, warn, {}), len(piece)
                    return
                pending.append(pool.submit(_piece_frame, piece))
                while len(pending) > 2 * jobs:
                    yield _merged(subprocesses.result(pending.popleft()), warn)

    try:
        with closing(parts()) as pieces:  # stopped early: the workers are stopped at once
            frames = _joined(pieces)
    except (BrokenProcessPool, OSError) as exc:
        raise StreamUnsupported(f"parallel decoding failed: {exc}") from None
    return stream.doc, frames  # doc is complete only once the events are read


def _merged(result, warn: Warnings) -> tuple[dict[str, pl.DataFrame], int]:
    if result is None:
        raise StreamUnsupported("a piece did not decode")
    frames, n, counts = result
    for what, count in counts.items():
        warn.add(what, count)
    return frames, n


_WORKER_RENDERED: dict = {}


def _piece_frame(piece: bytes):
    """Worker process: decode one piece; (its `_chunk` frames, events, warning counts) or None if
    the piece is not a JSON array (its cut fell inside an event)."""
    with gc_paused():
        try:
            events = orjson.loads(piece)
        except orjson.JSONDecodeError:
            return None
        del piece
        warn = Warnings("")
        return _chunk(events, warn, _WORKER_RENDERED), len(events), dict(warn._counts)


def _whole_document(path: Path, warn: Warnings) -> tuple[dict, list]:
    """The document (without its events) and its events, read in one piece; TraceError if it is
    not a Chrome trace."""
    doc = loads(read_bytes(path), path, warn)
    if isinstance(doc, dict):
        if "traceEvents" not in doc:
            keys = ", ".join(list(doc)[:5])
            raise TraceError(
                path,
                f"JSON is not a Chrome trace: no 'traceEvents' key (top-level keys: {keys})",
                NOT_A_TRACE_FIX,
            )
        events = doc.pop("traceEvents")
    elif isinstance(doc, list):
        events, doc = doc, {}
    else:
        raise TraceError(
            path, f"JSON is a {type(doc).__name__}, not a Chrome trace object or event list", NOT_A_TRACE_FIX
        )
    if not isinstance(events, list):
        raise TraceError(path, "'traceEvents' is not a list of events", NOT_A_TRACE_FIX)
    return doc, events


def _joined(parts) -> dict[str, pl.DataFrame]:
    """The frames of all chunks, from (`_chunk` frames, events in the chunk) per chunk in file
    order (there is at least one: the streams end with the last, maybe empty, chunk). `_i`
    becomes the event's index in the file; tasks and host events are sorted by (start, `_i`);
    kernels get their input shapes (their launching op may sit in another chunk)."""
    lists: dict[str, list] = {}
    offset = 0
    for frames, n in parts:
        for name, df in frames.items():
            if offset and "_i" in df.columns:
                df = df.with_columns(pl.col("_i") + offset)
            lists.setdefault(name, []).append(df)
        offset += n
    out = {name: pl.concat(dfs, how="diagonal_relaxed") if len(dfs) > 1 else dfs[0] for name, dfs in lists.items()}
    for name in ("tasks", "host", "collective_ops"):
        out[name] = out[name].sort("start_ns", "_i")
    out["tasks"] = _with_input_shapes(out["tasks"], out.pop("op_shapes"))
    return out


def _build(path: Path, doc: dict, frames: dict[str, pl.DataFrame], warn: Warnings) -> ParsedRank:
    """Canonical frames of the rank from the joined chunk frames; TraceError when the event list
    held entries but none of them was an event object (`[1, 2, 3]`)."""
    skipped = warn.count(NOT_OBJECTS)
    if skipped and not any(frames[name].height for name in ("tasks", "host", "annotations")):
        raise TraceError(
            path,
            f"holds no trace events: the {skipped:,} entries of its event list are not JSON objects",
            NOT_A_TRACE_FIX,
        )
    device_tasks = _finish_comm(frames["tasks"], frames["host"], frames["collective_ops"])
    host_events, annotations = frames["host"], frames["annotations"]
    frames.clear()
    step_frame, device_tasks = steps.kineto_steps(device_tasks, host_events, annotations, warn)
    meta = _metadata(doc, path, device_tasks, host_events, warn)
    return ParsedRank.build(
        {
            "device_tasks": device_tasks,
            "host_events": host_events,
            "device_annotations": annotations,
            "steps": step_frame,
        },
        meta,
        warn.messages(),
    )


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
            isinstance(v, bool) or _int64(v) is not None or isinstance(v, float) and math.isfinite(v) and abs(v) < 2**63
        ):
            continue
        else:  # an integer beyond Int64, inf, nan or text in an integer column
            v = _int_text(v) if isinstance(v, str) else None
        out = out if out is not None else dict(event)
        out[k] = v
    return event if out is None else out


def _int_text(v: str) -> int | None:
    try:
        return _int64(int(v.strip()))
    except ValueError:
        return None


def _int64(v) -> int | None:
    """`v` when it is an integer (not a bool) that fits Int64, else None."""
    return v if isinstance(v, int) and not isinstance(v, bool) and -(2**63) <= v < 2**63 else None


def _chunk(events: list, warn: Warnings, rendered: dict) -> dict[str, pl.DataFrame]:
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
    its dtype, named by `names`)."""
    found = [a if type(a := args[p]) is dict else _EMPTY for p in rows["_a"].to_list()]
    return rows.with_columns(
        pl.Series(names[key], [a.get(key) for a in found], dtype=pl.String, strict=False).cast(dtype, strict=False)
        for key, dtype in fields.items()
    )


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


def _with_input_shapes(tasks: pl.DataFrame, op_shapes: pl.DataFrame) -> pl.DataFrame:
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


#: Collective metadata args (recent PyTorch: on `record_param_comms` and copied onto NCCL kernels).
COMM_ARGS = pl.Schema(
    {
        "Collective name": pl.String,
        "Process Group Name": pl.String,
        "Group size": pl.Int64,
        "In msg nelems": pl.Int64,
        "Out msg nelems": pl.Int64,
        "dtype": pl.String,
    }
)
#: Canonical column of each collective arg (`_`-prefixed ones are intermediate).
COMM_COLUMNS = {
    "Collective name": "_collective_raw",
    "Process Group Name": "process_group",
    "Group size": "group_size",
    "In msg nelems": "_in_nelems",
    "Out msg nelems": "_out_nelems",
    "dtype": "_dtype",
}
#: Bytes per element of the c10 scalar type names written in the `dtype` arg (lower-cased).
DTYPE_BYTES: dict[str, int] = {
    "double": 8,
    "float": 4,
    "half": 2,
    "bfloat16": 2,
    "long": 8,
    "int": 4,
    "short": 2,
    "char": 1,
    "byte": 1,
    "bool": 1,
    "complexdouble": 16,
    "complexfloat": 8,
    "complexhalf": 4,
    "uint16": 2,
    "uint32": 4,
    "uint64": 8,
    "qint8": 1,
    "quint8": 1,
    "qint32": 4,
    "quint4x2": 1,
    "float8_e4m3fn": 1,
    "float8_e5m2": 1,
    "float8_e4m3fnuz": 1,
    "float8_e5m2fnuz": 1,
    "float8_e8m0fnu": 1,
}
#: Host ops that carry (or may carry) collective metadata.
COLLECTIVE_OP = (pl.col("name") == "record_param_comms") | pl.col("name").str.starts_with("nccl:")


def _finish_comm(tasks: pl.DataFrame, host: pl.DataFrame, collective_ops: pl.DataFrame) -> pl.DataFrame:
    """Fill collective / process_group / group_size / msg_bytes of communication tasks.

    From the kernel's own args when present; else from the launching collective op: first the
    ops with a `Collective name` (record_param_comms), then, for what is still missing, `nccl:*`
    annotations (collective from their name, e.g. `nccl:all_to_all`; nothing else). An op launches a
    kernel when it has the kernel's External id, or else when it is the innermost such op that
    contains the kernel's launch (the runtime call with the same correlation) on the same thread.
    msg_bytes = max(In msg nelems, Out msg nelems) x bytes per element of `dtype` (nccl-tests' S).
    `collective_ops`: the host ops matching COLLECTIVE_OP with their collective args, sorted as host.
    """
    is_comm = pl.col("kind") == "communication"
    if tasks.filter(is_comm & pl.col("_collective_raw").is_null()).height:
        unnamed = pl.col("_collective_raw").is_null() & (pl.col("name") != "record_param_comms")
        named = collective_ops.filter(unnamed)
        for ops in (
            collective_ops.filter(pl.col("_collective_raw").is_not_null()),
            named.with_columns(pl.col("name").str.strip_prefix("nccl:").alias("_collective_raw")),
        ):
            if ops.height:
                tasks = _fill_from_ops(tasks, host, ops)
    size = (
        pl.col("_dtype")
        .str.strip_prefix("c10::")
        .str.to_lowercase()
        .replace_strict(DTYPE_BYTES, default=None, return_dtype=pl.Int64)
    )
    comm = pl.when(is_comm)
    return tasks.with_columns(
        comm.then(collective_of(pl.col("_collective_raw"), True)).alias("collective"),
        comm.then(pl.col("process_group")).alias("process_group"),
        comm.then(pl.col("group_size")).alias("group_size"),
        comm.then(pl.max_horizontal("_in_nelems", "_out_nelems") * size).alias("msg_bytes"),
    )


def _fill_from_ops(tasks: pl.DataFrame, host: pl.DataFrame, ops: pl.DataFrame) -> pl.DataFrame:
    """Collective columns of communication tasks that have none, from the op that launched them."""
    meta = list(COMM_COLUMNS.values())
    tasks = tasks.with_row_index("_t")
    need = tasks.filter((pl.col("kind") == "communication") & pl.col("_collective_raw").is_null()).select(
        "_t", "external_id", "correlation"
    )
    by_ext = ops.drop_nulls("external_id").unique("external_id", keep="last", maintain_order=True)
    found = need.join(by_ext.select("external_id", *meta), on="external_id", how="inner").select("_t", *meta)
    launches = (
        host.filter((pl.col("kind") == "runtime") & pl.col("correlation").is_not_null())
        .unique("correlation", keep="first")
        .select("correlation", "pid", "tid", pl.col("start_ns").alias("_launch_ns"))
    )
    probe = (
        need.join(found.select("_t"), on="_t", how="anti")
        .join(launches, on="correlation", how="inner")
        .drop_nulls(["pid", "tid"])
        .sort("pid", "tid", "_launch_ns")
    )
    if probe.height:
        right = (
            ops.drop_nulls(["pid", "tid"])
            .select("pid", "tid", "start_ns", pl.col("end_ns").alias("_op_end"), *meta)
            .sort("pid", "tid", "start_ns")
        )
        enclosing = (
            probe.join_asof(
                right,
                left_on="_launch_ns",
                right_on="start_ns",
                by=["pid", "tid"],
                strategy="backward",
                check_sortedness=False,
            )
            .filter(pl.col("_op_end") >= pl.col("_launch_ns"))
            .select("_t", *meta)
        )
        found = pl.concat([found, enclosing], how="vertical_relaxed")
    fill = found.rename({c: f"{c}_op" for c in meta})
    return (
        tasks.join(fill, on="_t", how="left", maintain_order="left")
        .with_columns(
            pl.when(pl.col("_collective_raw").is_null()).then(pl.col(f"{c}_op")).otherwise(pl.col(c)).alias(c)
            for c in meta
        )
        .drop("_t", *(f"{c}_op" for c in meta))
    )


def _metadata(doc: dict, path: Path, tasks: pl.DataFrame, host: pl.DataFrame, warn: Warnings) -> dict:
    """Rank, world size and device of the trace (None where the trace does not say)."""
    dist = doc.get("distributedInfo") if isinstance(doc.get("distributedInfo"), dict) else {}
    rank = dist.get("rank")
    world = dist.get("world_size")
    props = doc.get("deviceProperties") or doc.get("computeProperties") or []
    props = [p for p in props if isinstance(p, dict)] if isinstance(props, list) else []  # fuzz: any JSON value
    names = [p.get("name") for p in props if isinstance(p.get("name"), str) and p.get("name")]
    device_name = None
    if names:
        used = tasks["device"].drop_nulls().unique().to_list()
        by_id = {
            p.get("id"): p.get("name") for p in props if isinstance(p.get("id"), int) and isinstance(p.get("name"), str)
        }
        device_name = next((by_id[d] for d in used if by_id.get(d)), names[0])
    if tasks.height:
        device_type = "gpu"
    elif host["cat"].str.to_lowercase().str.starts_with("mtia").any() if host.height else False:
        device_type = "mtia"
    else:
        device_type = "cpu"
    return {  # the header is any JSON: a rank of 2**63 broke the Int64 rank column (fuzz)
        "rank": _int64(rank),
        "world_size": _int64(world),
        "format": "kineto",
        "source": str(path),
        "device_name": device_name,
        "device_type": device_type,
    }
