"""Kineto events to frames: one chunk's complete events, as columns (`Columns`, from either
decode), become the frames of its device tasks, host events, GPU annotations and collective ops
(`chunk_frames`).

The columns come from the typed decode (`parsers.kineto_decode`: msgspec Structs, no dict per
event) or, for chunks outside its types, from the dict decode (`parsers.kineto_dicts`: orjson's
dicts); both give the same columns for the same events. Everything after that is two polars
collects per chunk (`chunk_frames`); the few args read per row (grid/block of kernels, collective args,
`Input Dims` of cpu_ops) are read through `Columns.args` for those rows only. Timestamps: `ts`/`dur`
are µs numbers, converted to Int64 ns by rounding (exact for integer µs and for 3-decimal µs below
~9e12 µs).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import orjson
import polars as pl

from traceview import rules as rule_tables
from traceview.errors import Warnings
from traceview.parsers import kinds
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

#: The args of the allocator's `[memory]` instant events (torch.profiler(profile_memory=True)); the
#: chunk's `memory` frame holds them as Int64 columns of these names.
MEMORY_EVENT = "[memory]"
INSTANT_PHASES = ("i", "I")
MEMORY_ARGS = pl.Schema(
    {
        "Device Type": pl.Int64,
        "Device Id": pl.Int64,
        "Addr": pl.Int64,
        "Bytes": pl.Int64,
        "Total Allocated": pl.Int64,
        "Total Reserved": pl.Int64,
    }
)

#: Every key the parser reads from an event (`args` holds the rest) and every arg it reads from
#: `args`: what the fuzzers (bench/fuzz_mutators.py, tests/integration/test_properties.py) set to odd values.
EVENT_KEYS_READ = (*EVENT_FIELDS, "args")
#: The list args read as text for the operators the roofline covers (`op_inputs`).
ITEM_ARGS = ("Input type", "Concrete Inputs")
ARG_KEYS_READ = (*ARG_FIELDS, *COMM_ARGS, "grid", "block", "Input Dims", *ITEM_ARGS, *MEMORY_ARGS)


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


MISSING_TS = "complete events with a missing or non-numeric 'ts' dropped"
MISSING_DUR = "complete events with a missing or non-numeric 'dur' dropped"
NEGATIVE_DUR = "complete events with a negative 'dur' dropped"
UNNAMED = "complete events without a name kept as '(unnamed)'"
MTIA = "MTIA device events (mtia_ccp_events) not analysed yet: host side only"


class ArgReader(Protocol):
    """The args of a chunk's complete events, read for the rows at `positions` (`_a`), in order."""

    def dims(self, positions: list[int], key: str, rendered: dict) -> pl.Series:
        """Launch grid/block (`key`) as 'x,y,z' text (`dims_text`), a String Series; `rendered` may
        memoise the texts."""
        ...

    def scalars(self, positions: list[int], key: str) -> list:
        """The value of `key` if it is text or a number (not a bool), else None (`scalar`)."""
        ...

    def shapes(self, positions: list[int], rendered: dict) -> list:
        """`Input Dims` as Ascend's `Input Shapes` text (`shapes_text`); `rendered` memoises the
        text per distinct dims value across chunks."""
        ...

    def items(self, positions: list[int], key: str, rendered: dict) -> list:
        """A list arg (`Input type`, `Concrete Inputs`) as `items_text`, None where the arg is not
        a list; `rendered` memoises the texts."""
        ...


@dataclass
class Columns:
    """One chunk's complete ('X') events as columns, as either decode gives them.

    `x`: one row per complete event, in file order: `_i` (the event's index in the chunk), cat,
    name (String), pid, tid (Int64, or String read by `int_of`), ts, dur (Float64 µs) and the
    ARG_FIELDS columns (stream Int64 or String). `args`: the rest of each row's args. `events`:
    entries in the chunk (the offset of the next chunk's `_i`). `memory`: the `[memory]` instant
    events: `_i`, pid, tid (as in `x`), ts (Float64 µs) and the MEMORY_ARGS columns; None if none."""

    x: pl.DataFrame
    args: ArgReader
    events: int
    memory: pl.DataFrame | None = None


def int64(v) -> int | None:
    """`v` when it is an integer (not a bool) that fits Int64, else None."""
    return v if isinstance(v, int) and not isinstance(v, bool) and -(2**63) <= v < 2**63 else None


def chunk_frames(cols: Columns, warn: Warnings, rendered: dict) -> dict[str, pl.DataFrame]:
    """One chunk's complete events split into the frames the rank is built from:
    `tasks` (device tasks with kind, grid/block and collective args), `host` (host events),
    `annotations` (GPU-side user annotations), `collective_ops` (host ops that may carry collective
    metadata, with it), `op_shapes` (external_id, input_shapes of the first `cpu_op` per External
    id) and `op_inputs` (those of the operators the roofline covers, with their input_types and
    concrete_inputs: `traceview.rules.op_flops_names`); `_i` = the event's index in the chunk. Two polars collects: the kept rows (converted once)
    with every count, then all five tables in one `collect_all`; then only the rows that need more
    (kernels, collective ops, cpu_ops) have args read. `rendered` caches shape and launch-dimension
    texts across chunks."""
    x = cols.x.lazy().with_row_index("_a")  # `_a`: the row's position in `cols.args`
    x = x.with_columns(us_float_to_ns(pl.col("ts")).alias("start_ns"), us_float_to_ns(pl.col("dur")).alias("dur_ns"))
    timed = pl.col("start_ns").is_not_null()
    kept = timed & (pl.col("dur_ns") >= 0)
    cat_lc = pl.col("cat").str.to_lowercase().fill_null("")
    counts = x.select(
        (~timed).sum().alias(MISSING_TS),
        (timed & pl.col("dur_ns").is_null()).sum().alias(MISSING_DUR),
        (timed & (pl.col("dur_ns") < 0)).sum().alias(NEGATIVE_DUR),
        (kept & pl.col("name").is_null()).sum().alias(UNNAMED),
        (kept & cat_lc.str.starts_with("mtia_ccp")).sum().alias(MTIA),
    )
    schema = cols.x.schema
    x = x.filter(kept).with_columns(
        cat_lc.alias("cat_lc"),
        pl.col("name").fill_null("(unnamed)"),
        pl.coalesce("External id", "external id").alias("external_id"),
        (pl.col("start_ns") + pl.col("dur_ns")).alias("end_ns"),
        *(int_of(c) if schema[c] == pl.String else pl.col(c) for c in ("pid", "tid", "stream")),
    )
    counts, x = pl.collect_all([counts, x])
    x = x.lazy()
    device_kind = pl.col("cat_lc").replace_strict(kinds.DEVICE_CATEGORIES, default=None)
    is_device = device_kind.is_not_null()
    is_annotation = pl.col("cat_lc").is_in(list(kinds.DEVICE_ANNOTATION_CATEGORIES))
    host = x.filter(~is_device & ~is_annotation & ~pl.col("cat_lc").is_in(list(kinds.IGNORED_CATEGORIES)))
    host = host.with_columns(pl.col("cat_lc").replace_strict(kinds.HOST_CATEGORIES, default="other").alias("kind"))
    ops = (  # the cpu_ops (2021: `Operator`) whose `Input Dims` become kernels' input shapes
        host.filter(pl.col("cat_lc").is_in(("cpu_op", "operator")) & pl.col("external_id").is_not_null())
        .select("_a", "external_id", "name")
        .unique("external_id", keep="first", maintain_order=True)
    )
    tasks, host, annotations, collective_ops, ops = pl.collect_all(
        [
            _tasks(x.filter(is_device), device_kind),
            host.select(HOST_COLUMNS),
            x.filter(is_annotation)
            .with_columns(pl.col("tid").alias("stream"), pl.col("pid").alias("device"))
            .select(ANNOTATION_COLUMNS),
            host.filter(COLLECTIVE_OP).select("_i", "_a", "pid", "tid", "name", "start_ns", "end_ns", "external_id"),
            ops,
        ]
    )
    for what, n in counts.row(0, named=True).items():
        warn.add(what, n)
    shapes = pl.Series("input_shapes", cols.args.shapes(ops["_a"].to_list(), rendered), dtype=pl.String)
    listed = ops.with_columns(shapes).filter(pl.col("name").is_in(rule_tables.op_flops_names()))
    listed = listed.filter(pl.col("input_shapes").is_not_null())
    positions = listed["_a"].to_list()
    kernels, comm = _rows(tasks["_kernel"]), _rows(tasks["_comm"])
    return {
        "tasks": tasks.with_columns(
            _placed("grid", tasks.height, kernels, cols.args.dims(kernels[1], "grid", rendered)),
            _placed("block", tasks.height, kernels, cols.args.dims(kernels[1], "block", rendered)),
            *(_placed(c.name, tasks.height, comm, c) for c in _comm_columns(cols.args, comm[1])),
        ).drop("_kernel", "_comm"),
        "host": host,
        "annotations": annotations,
        "collective_ops": collective_ops.with_columns(*_comm_columns(cols.args, collective_ops["_a"].to_list())).drop(
            "_a"
        ),
        "op_shapes": ops.select("external_id").with_columns(shapes),
        "op_inputs": listed.select("external_id", "name", "input_shapes").with_columns(
            pl.Series("input_types", cols.args.items(positions, "Input type", rendered), dtype=pl.String),
            pl.Series("concrete_inputs", cols.args.items(positions, "Concrete Inputs", rendered), dtype=pl.String),
        ),
        "memory": _memory_frame(cols.memory, warn),
    }


MEMORY_NO_TS = "memory events with a missing or non-numeric 'ts' dropped"
#: The chunk's `memory` frame: `_i`, pid, tid, ts_ns and the MEMORY_ARGS columns.
MEMORY_FRAME = pl.Schema({"_i": pl.UInt32, "pid": pl.Int64, "tid": pl.Int64, "ts_ns": pl.Int64, **MEMORY_ARGS})


def _memory_frame(memory: pl.DataFrame | None, warn: Warnings) -> pl.DataFrame:
    """A chunk's `[memory]` events (`Columns.memory`) as MEMORY_FRAME: ts in ns, pid/tid Int64;
    events without a numeric ts dropped (counted)."""
    if memory is None:
        return pl.DataFrame(schema=MEMORY_FRAME)
    schema = memory.schema
    out = memory.with_columns(
        us_float_to_ns(pl.col("ts")).alias("ts_ns"),
        *(int_of(c) if schema[c] == pl.String else pl.col(c) for c in ("pid", "tid")),
    )
    warn.add(MEMORY_NO_TS, out["ts_ns"].null_count())
    return out.drop_nulls("ts_ns").select(pl.col(c).cast(t) for c, t in MEMORY_FRAME.items())


def _tasks(tasks: pl.LazyFrame, device_kind: pl.Expr) -> pl.LazyFrame:
    """Device tasks: kind, stream (the `stream` arg, else the tid), device (the `device` arg, else
    the pid), and the row positions whose args are read: `_kernel` (grid/block) of kernels and
    `_comm` (collective args) of communication kernels (null elsewhere)."""
    is_kernel = pl.col("cat_lc") == "kernel"
    return (
        tasks.with_columns(
            kinds.device_kind(device_kind, pl.col("name")).alias("kind"),
            pl.coalesce("stream", "tid").alias("stream"),
            pl.coalesce("device", "pid").alias("device"),
        )
        .with_columns(  # a kernel of kind communication: its name matched the communication patterns
            pl.when(is_kernel).then(pl.col("_a")).alias("_kernel"),
            pl.when(is_kernel & (pl.col("kind") == "communication")).then(pl.col("_a")).alias("_comm"),
        )
        .drop("_a", "pid", "tid", "cat", "ts", "dur", "External id", "external id")
    )


def _rows(positions: pl.Series) -> tuple[pl.Series, list[int]]:
    """(the rows where `positions` is not null, those positions)."""
    return positions.is_not_null().arg_true(), positions.drop_nulls().to_list()


def _placed(name: str, height: int, rows: tuple[pl.Series, list[int]], values: pl.Series) -> pl.Series:
    """A `height`-long column named `name`: `values` at `rows[0]`, null elsewhere."""
    return pl.repeat(None, height, dtype=values.dtype, eager=True).alias(name).scatter(rows[0], values)


def _comm_columns(args: ArgReader, positions: list[int]) -> list[pl.Series]:
    """One column per collective arg (COMM_ARGS, named by COMM_COLUMNS) for the rows `positions`:
    read as text, cast leniently to its dtype (a value that is not text or a number is null)."""
    return [
        pl.Series(COMM_COLUMNS[key], args.scalars(positions, key), dtype=pl.String, strict=False).cast(
            dtype, strict=False
        )
        for key, dtype in COMM_ARGS.items()
    ]


def scalar(value):
    """`value` if it is a string or a number (not a bool), else None."""
    return value if type(value) in (str, int, float) else None


def dims_text(value) -> str | None:
    """A launch grid/block list [x, y, z] as 'x,y,z' text; None if absent or not a list."""
    if type(value) is list and value:
        return ",".join(map(str, value))
    return None


def int_of(col: str) -> pl.Expr:
    """A pid/tid/stream column as Int64: plain integers, or the digits of 'stream 7'; else null."""
    return pl.col(col).str.extract(r"(-?\d+)\s*$", 1).cast(pl.Int64, strict=False)


def rendered_shapes(dims: list, rendered: dict) -> str:
    """`shapes_text(dims)`, memoised in `rendered` by the dims' JSON; a list nested too deeply to
    re-serialise (orjson's 255 levels) is rendered without the memo."""
    try:
        key = orjson.dumps(dims)
    except TypeError:
        return shapes_text(dims)
    if (t := rendered.get(key)) is None:
        t = rendered[key] = shapes_text(dims)
    return t


def items_text(items: list) -> str:
    """A list arg (["c10::BFloat16", "Scalar"], ["", "[16, 16]", "False"]) as one text: its items
    joined by ';' (text as written, with any ';' in it made ','; a number, bool or list as its
    JSON; null as the empty entry)."""
    out = []
    for v in items:
        if type(v) is str:
            out.append(v.replace(";", ","))
        elif v is None:
            out.append("")
        else:
            try:
                out.append(orjson.dumps(v).decode().replace(";", ","))
            except TypeError:  # nested deeper than orjson writes
                out.append("")
    return ";".join(out)


def rendered_items(items: list, rendered: dict) -> str:
    """`items_text(items)`, memoised in `rendered` by the items' JSON."""
    try:
        key = b"items:" + orjson.dumps(items)
    except TypeError:
        return items_text(items)
    if (t := rendered.get(key)) is None:
        t = rendered[key] = items_text(items)
    return t


def shapes_text(dims: list) -> str:
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


def with_input_shapes(tasks: pl.DataFrame, op_shapes: pl.DataFrame) -> pl.DataFrame:
    """Kernels' input_shapes: those of the launching op, the first `cpu_op` in the file with the
    kernel's External id (the link `traceview.analysis.classes.launch_ops` trusts wherever it
    exists); null for other events."""
    if op_shapes["input_shapes"].null_count() == op_shapes.height:  # recorded without shapes
        return tasks.with_columns(pl.lit(None, pl.String).alias("input_shapes"))
    shapes = op_shapes.unique("external_id", keep="first", maintain_order=True).drop_nulls("input_shapes")
    if shapes.is_empty():
        return tasks.with_columns(pl.lit(None, pl.String).alias("input_shapes"))
    is_kernel = pl.col("cat_lc") == "kernel"
    return tasks.join(shapes, on="external_id", how="left", maintain_order="left").with_columns(
        pl.when(is_kernel).then(pl.col("input_shapes")).alias("input_shapes")
    )
