"""MindSpore timelines (`*timeline_display_<rank>.json`) -> canonical frames.

The file is a bare JSON array of Chrome-trace X events written by the MindSpore profiler (1.x-2.x
old layout): `ts` / `dur` are float µs (relative to the first op, or epoch µs on GPU), `pid` is a
lane group and `tid` the stream. `args` of an op carries `type` (the op type, e.g. MatMul) and
`fullname` / `op_full_name` (the scope path, kept as `scope`) and `input_<i>` descriptors.

Which events are device ops. MindSpore writes beside each timeline a `*timeline_summary_<rank>.json`
with `op_exe_times` (number of op executions) and `num_of_streams`. Both are reproduced by:
    ops = every X event except those of the scope-name lanes (`NON_OP_PIDS`: pid 10000, whose
    events are named `stream_<N>_parallel_<k>` and span a stream's busy periods, not an op;
    also any process labelled "Scope Name" / "Steps" when the file has process_name metadata);
    streams = the distinct `tid`s of the ops.
On `run_1/.../timeline_display_1.json`: 2,817 ops on 11 streams (pid 1; the 11 x 322 pid-10000
events excluded); on `run_2/.../ascend_timeline_display_1.json`: 112 ops on 2 streams (107 ops on
stream 519 of pid 1 plus 5 on tid 0 of pid 9000, the AICPU/data lane: InitData, GetNext), exactly
the summaries' op_exe_times / num_of_streams. (`num_of_ops` is the number of distinct op names
on run_1, 199; run_2's summary, 213, does not describe its display file, nor do the summaries of
the hand-trimmed `profiler/*_timeline_display_0.json` samples with 2-3 events.)

Mapping: ops on a numeric tid -> device_tasks (stream = tid; op_type = the op of a GPU kernel's
`op_full_name`, else args.type, else the name before "-op"; input_shapes = the `input_<i>` shapes
joined by ";"; grid / block = a GPU kernel's grid_dim / block_dim). Ops on a non-numeric lane (the
GPU timeline's "Ops" lane: one range per framework op, enclosing that op's kernels on the numeric
stream lanes) -> device_annotations, so kernels are not counted twice. kind from `TASK_KIND_RULES`
on op_type/name: collectives (AllReduce, AllGather, ReduceScatter, Broadcast, Send, Receive,
AllToAll, hcom_*, NCCL kernels) -> communication; MemSet -> memset; memcpy -> memcpy; else kernel.
Times are converted exactly from each float's shortest decimal text. No steps, host events or
world size are recorded; rank is the number in the file name; device_type is gpu for `gpu_*`
files, else npu.
"""

from __future__ import annotations

import re
from pathlib import Path

import polars as pl

from traceview.errors import TraceError, Warnings
from traceview.parsers import jsonio
from traceview.parsers.base import ParsedRank
from traceview.parsers.kinds import format_rules, rule_kind
from traceview.parsers.timeconv import texts, us_text_to_ns

TIMELINE_NAME = re.compile(r"(?:^|_)timeline_display_(\d+)\.json$")

#: Lanes that are not ops: pid 10000 holds MindSpore's scope-name / stream-parallel ranges.
NON_OP_PIDS: tuple[str, ...] = ("10000",)
#: Process names (from process_name metadata, when present) of lanes that are not ops.
NON_OP_PROCESSES: tuple[str, ...] = ("Scope Name", "Steps")

#: Ordered task-kind rules (first match wins; no match -> "kernel"): (column, regex, kind), the
#: `mindspore` rules of traceview/rules/task_kinds.toml.
TASK_KIND_RULES: tuple[tuple[str, str, str], ...] = format_rules("mindspore")


def _input_shapes(args: dict) -> str | None:
    """`input_<i>` shapes of one op joined by ';' in input order, or None when there is none."""
    shapes = []
    i = 0
    while isinstance(desc := args.get(f"input_{i}"), dict):
        shapes.append(str(desc.get("shape", "")))
        i += 1
    return ";".join(shapes) if shapes else None


def events_frame(events: list) -> pl.DataFrame:
    """Timeline events -> one row per event: ph, name, pid, tid (String), ts_ns, dur_ns (Int64 ns),
    op_type, op_full_name, grid, block (GPU kernels), input_shapes, arg_name (metadata name)."""
    events = [e for e in events if isinstance(e, dict)]
    args = [a if isinstance(a := e.get("args"), dict) else {} for e in events]
    raw = {
        "ph": texts([e.get("ph") for e in events]),
        "name": texts([e.get("name") for e in events]),
        "pid": texts([e.get("pid") for e in events]),
        "tid": texts([e.get("tid") for e in events]),
        "ts": texts([e.get("ts") for e in events]),
        "dur": texts([e.get("dur") for e in events]),
        "op_type": texts([a.get("type") for a in args]),
        "op_full_name": texts([a.get("op_full_name") for a in args]),
        "fullname": texts([a.get("fullname") for a in args]),
        "grid": texts([a.get("grid_dim") for a in args]),
        "block": texts([a.get("block_dim") for a in args]),
        "input_shapes": [_input_shapes(a) for a in args],
        "arg_name": texts([a.get("name") for a in args]),
    }
    df = pl.DataFrame(raw, schema=dict.fromkeys(raw, pl.String))
    return df.with_columns(
        us_text_to_ns(pl.col("ts")).alias("ts_ns"),
        us_text_to_ns(pl.col("dur")).alias("dur_ns"),
    ).drop("ts", "dur")


def task_kind(name: pl.Expr, op_type: pl.Expr, rules=None) -> pl.Expr:
    """Kind of a MindSpore op from the ordered `rules` (first match wins, else kernel; default: the
    rules in force, `kinds.format_rules("mindspore")`)."""
    return rule_kind({"name": name, "op_type": op_type}, format_rules("mindspore") if rules is None else rules)


def op_events(ev: pl.DataFrame) -> pl.DataFrame:
    """The device-op X events (see the module docstring for the rule), with end_ns."""
    names = (
        ev.filter((pl.col("ph") == "M") & (pl.col("name") == "process_name"))
        .group_by("pid")
        .agg(pl.col("arg_name").first().alias("process_name"))
    )
    x = ev.filter(pl.col("ph") == "X").join(names, on="pid", how="left")
    keep = ~pl.col("pid").is_in(NON_OP_PIDS).fill_null(False) & ~pl.col("process_name").is_in(
        NON_OP_PROCESSES
    ).fill_null(False)
    return x.filter(keep).with_columns((pl.col("ts_ns") + pl.col("dur_ns")).alias("end_ns"))


def parse_mindspore_timeline(path: Path) -> ParsedRank:
    """Read one MindSpore `*timeline_display_<rank>.json` into canonical frames."""
    path = Path(path)
    warnings = Warnings(path)
    with jsonio.gc_paused():  # one dict per event: the cyclic GC's passes would find nothing to free
        doc = jsonio.loads(jsonio.read_bytes(path), path, warnings)
        if isinstance(doc, dict):
            doc = doc.get("traceEvents")
        if not isinstance(doc, list):
            raise TraceError(
                path, "expected a JSON array of timeline events", "give a MindSpore *timeline_display_*.json"
            )
        ops = op_events(events_frame(doc))
        del doc
    bad = ops["ts_ns"].is_null() | ops["dur_ns"].is_null()
    warnings.add("ops with a non-numeric ts or dur dropped", int(bad.sum()))
    ops = ops.filter(~bad)
    negative = ops["dur_ns"] < 0
    warnings.add("ops with a negative duration dropped", int(negative.sum()))
    ops = ops.filter(~negative)

    stream = pl.col("tid").str.strip_chars().cast(pl.Int64, strict=False)
    # GPU kernels carry the launch API in args.type and their op in op_full_name (".../ApplyMomentum-op55").
    kernel_op = pl.col("op_full_name").str.extract(r"([^/]+?)(?:-op\d+)?$", 1)
    op_type = pl.coalesce(kernel_op, pl.col("op_type"), pl.col("name").str.replace(r"-op\d+$", ""))
    on_stream = ops.filter(stream.is_not_null())
    tasks = on_stream.select(
        stream.alias("stream"),
        "name",
        task_kind(pl.col("name"), op_type).alias("kind"),
        pl.col("ts_ns").alias("start_ns"),
        "end_ns",
        "dur_ns",
        op_type.alias("op_type"),
        "input_shapes",
        "grid",
        "block",
        pl.coalesce("fullname", "op_full_name").alias("scope"),
    ).sort("start_ns", "stream", maintain_order=True)
    annotations = (
        ops.filter(stream.is_null()).select("name", pl.col("ts_ns").alias("start_ns"), "end_ns").sort("start_ns")
    )

    m = TIMELINE_NAME.search(path.name)
    meta = {
        "rank": int(m.group(1)) if m else None,
        "world_size": None,
        "format": "mindspore",
        "source": str(path),
        "device_name": None,
        "device_type": "gpu" if path.name.startswith("gpu_") else "npu",
    }
    frames = {"device_tasks": tasks, "device_annotations": annotations}
    return ParsedRank.build(frames, meta, warnings.messages())
