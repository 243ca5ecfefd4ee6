"""Kineto / torch.profiler Chrome-trace JSON (plain or .gz), every schema variant since 2021.

Handles: `export_chrome_trace` files and `tensorboard_trace_handler` `*.pt.trace.json[.gz]`
files; capitalised categories of 2021 traces (Kernel/Memcpy/Memset/Runtime/Operator); kernel
args `external id` (2021) or `External id`; `deviceProperties` or `computeProperties`; integer
or float microsecond timestamps; ROCm traces (hip* runtime calls); traces without
`distributedInfo`; CPU-only traces; MTIA traces (host side only).

How it stays fast: orjson parses the document, polars builds the columns of all events in one
call (only the fields we use), and everything after that is polars expressions. The only
per-event Python work is collecting the `args` dicts of complete (`ph: X`) events.

Timestamps: `ts`/`dur` are µs numbers; converted to Int64 ns by rounding (exact for integer µs and
for 3-decimal µs below ~9e12 µs, which covers every trace we know of).
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from parsers.base import ParsedRank
from parsers.jsonio import gc_paused, loads, read_bytes
from parsers.timeconv import us_float_to_ns
from traceview import kinds, steps
from traceview.errors import TraceError, Warnings

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


def parse_kineto(path: Path) -> ParsedRank:
    """Parse one Kineto trace file into the canonical frames of its rank."""
    path = Path(path)
    warn = Warnings(path)
    with gc_paused():
        return _parse(path, warn)


def _parse(path: Path, warn: Warnings) -> ParsedRank:
    doc = loads(read_bytes(path), path, warn)
    if isinstance(doc, dict):
        if "traceEvents" not in doc:
            keys = ", ".join(list(doc)[:5])
            raise TraceError(
                path,
                f"JSON is not a Chrome trace: no 'traceEvents' key (top-level keys: {keys})",
                "pass a torch.profiler trace (export_chrome_trace or tensorboard_trace_handler output)",
            )
        events = doc["traceEvents"]
    elif isinstance(doc, list):
        events, doc = doc, {}
    else:
        raise TraceError(path, f"JSON is a {type(doc).__name__}, not a Chrome trace object or event list")
    if not isinstance(events, list):
        raise TraceError(path, "'traceEvents' is not a list of events")

    frame = _event_frame(events, warn)
    device_tasks, host_events, annotations = _split(frame, warn)
    step_frame, device_tasks = steps.kineto_steps(device_tasks, host_events, annotations)
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


def _event_frame(events: list, warn: Warnings) -> pl.DataFrame:
    """Complete (X) events as a frame: ph/cat/name/pid/tid/ts/dur plus the args we use."""
    try:
        df = pl.DataFrame(events, schema=EVENT_FIELDS, strict=False, infer_schema_length=None)
    except (TypeError, ValueError, pl.exceptions.PolarsError):
        # Slow path for broken traces: drop non-objects, read ts/dur as text and convert leniently.
        good = [e for e in events if isinstance(e, dict)]
        warn.add("trace entries that are not JSON objects skipped", len(events) - len(good))
        events = good
        lenient = pl.Schema({**EVENT_FIELDS, "ts": pl.String, "dur": pl.String})
        df = pl.DataFrame(events, schema=lenient, strict=False, infer_schema_length=None).with_columns(
            pl.col("ts", "dur").str.strip_chars().cast(pl.Float64, strict=False)
        )
    df = df.with_row_index("_i")
    x = df.filter(pl.col("ph") == "X")
    # Flows, counters, instants and metadata ('s', 'f', 'C', 'i', 'M') carry nothing the canonical
    # model holds: ranks, devices and correlations come from the X events and the document header.
    rows = x["_i"].to_list()
    args = [events[i].get("args") for i in rows]
    try:
        arg_frame = pl.DataFrame([a or _EMPTY for a in args], schema=ARG_FIELDS, strict=False, infer_schema_length=None)
    except (TypeError, ValueError, pl.exceptions.PolarsError):
        args = [a if isinstance(a, dict) else _EMPTY for a in args]
        arg_frame = pl.DataFrame(args, schema=ARG_FIELDS, strict=False, infer_schema_length=None)
    x = pl.concat([x, arg_frame], how="horizontal")

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
    )
    return _with_launch_dims(x, args)


_EMPTY: dict = {}


def _int_of(col: str) -> pl.Expr:
    """A pid/tid/stream column as Int64: plain integers, or the digits of 'stream 7'; else null."""
    return pl.col(col).str.extract(r"(-?\d+)\s*$", 1).cast(pl.Int64, strict=False)


def _split(x: pl.DataFrame, warn: Warnings) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """Split complete events into device tasks, host events and GPU-side annotations."""
    device_kind = pl.col("cat_lc").replace_strict(kinds.DEVICE_CATEGORIES, default=None)
    is_device = device_kind.is_not_null()
    is_annotation = pl.col("cat_lc").is_in(list(kinds.DEVICE_ANNOTATION_CATEGORIES))

    tasks = (
        x.filter(is_device)
        .with_columns(
            kinds.device_kind(device_kind, pl.col("name")).alias("kind"),
            pl.coalesce(_int_of("stream"), _int_of("tid")).alias("stream"),
            pl.coalesce(pl.col("device"), _int_of("pid")).alias("device"),
        )
        .sort("start_ns", "_i")
    )

    annotations = x.filter(is_annotation).with_columns(
        _int_of("tid").alias("stream"), _int_of("pid").alias("device")
    )
    host = x.filter(~is_device & ~is_annotation & ~pl.col("cat_lc").is_in(list(kinds.IGNORED_CATEGORIES)))
    host = host.with_columns(
        pl.col("cat_lc").replace_strict(kinds.HOST_CATEGORIES, default="other").alias("kind"),
        _int_of("pid").alias("pid"),
        _int_of("tid").alias("tid"),
    ).sort("start_ns", "_i")
    mtia = x.filter(pl.col("cat_lc").str.starts_with("mtia_ccp")).height
    warn.add("MTIA device events (mtia_ccp_events) not analysed yet: host side only", mtia)
    return tasks, host, annotations


def _with_launch_dims(x: pl.DataFrame, args: list) -> pl.DataFrame:
    """Add grid/block ('x,y,z' text) of kernels, read from the args of kernel events only.

    `args` holds the args of the rows of `x`, in order.
    """
    pos = x.with_row_index("_pos").filter(pl.col("cat_lc") == "kernel")["_pos"].to_list()
    kernel_args = [args[p] if isinstance(args[p], dict) else _EMPTY for p in pos]

    def dims(key: str) -> pl.Series:
        values = pl.Series([a.get(key) for a in kernel_args], dtype=pl.List(pl.Int64), strict=False)
        return values.list.eval(pl.element().cast(pl.String)).list.join(",").replace("", None)

    launch = pl.DataFrame({"_pos": pl.Series(pos, dtype=pl.UInt32), "grid": dims("grid"), "block": dims("block")})
    return x.with_row_index("_pos").join(launch, on="_pos", how="left", maintain_order="left").drop("_pos")


def _metadata(doc: dict, path: Path, tasks: pl.DataFrame, host: pl.DataFrame, warn: Warnings) -> dict:
    """Rank, world size and device of the trace (None where the trace does not say)."""
    dist = doc.get("distributedInfo") if isinstance(doc.get("distributedInfo"), dict) else {}
    rank = dist.get("rank")
    world = dist.get("world_size")
    props = doc.get("deviceProperties") or doc.get("computeProperties") or []
    names = [p.get("name") for p in props if isinstance(p, dict) and p.get("name")]
    device_name = None
    if names:
        used = tasks["device"].drop_nulls().unique().to_list()
        by_id = {p.get("id"): p.get("name") for p in props if isinstance(p, dict)}
        device_name = next((by_id[d] for d in used if by_id.get(d)), names[0])
    if tasks.height:
        device_type = "gpu"
    elif host["cat_lc"].str.starts_with("mtia").any() if host.height else False:
        device_type = "mtia"
    else:
        device_type = "cpu"
    return {
        "rank": rank if isinstance(rank, int) else None,
        "world_size": world if isinstance(world, int) else None,
        "format": "kineto",
        "source": str(path),
        "device_name": device_name,
        "device_type": device_type,
    }
