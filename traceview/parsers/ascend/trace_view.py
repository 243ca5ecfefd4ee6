"""trace_view.json -> host events, host step ranges, and device tasks when kernel_details.csv is absent.

The file is a bare JSON array of Chrome-trace events; `ts` is decimal µs text, `dur` a µs number;
both are converted to Int64 ns exactly from their decimal text (`timeconv.us_text_to_ns`).
- host_events: X events of the host processes (process_labels CPU: "Python" with cat cpu_op /
  python_function / enqueue / dequeue, and the "CANN" AscendCL API lane). kind: cpu_op ->
  operator (but `ProfilerStep#N` -> annotation, as Kineto's user_annotation), python_function ->
  python, enqueue/dequeue and the CANN lane -> runtime, else other. correlation = the CANN
  event's `connection_id` (the id the device task of that launch carries).
- host steps: `ProfilerStep#N` X events give host_start_ns / host_end_ns (`steps.host_step_ranges`).
- device tasks, from two processes (used as the task set only when kernel_details.csv is absent):
    * "Ascend Hardware" (tid = stream): one X event per hardware task. It holds the op-level
      tasks that kernel_details lists (Task Type AI_CORE, AI_VECTOR_CORE, MIX_AIV, DSA_SQE, ...)
      and also tasks kernel_details leaves out: MEMCPY_ASYNC copies, EVENT_RECORD/EVENT_WAIT
      stream syncs, PROFILING_ENABLE/DISABLE markers, and the HCCL sub-tasks (Notify Wait,
      Write Value, SDMA) on the communication stream. Those are skipped (`SKIPPED_HARDWARE_TASKS`)
      so that every export gives the same task set as kernel_details.csv, and so the numbers
      match torch_npu's step_trace_time.csv (whose Stage/Preparing start at the first
      kernel_details task, not at an earlier MEMCPY_ASYNC).
    * "HCCL": thread "Group <g> Communication" holds one X event per communication op
      (`hcom_allReduce__586_0_1`, args connection_id / alg_type / count). These are exactly the
      kernel_details rows with Accelerator Core HCCL (same name; start equal within 1 ns, the
      duration given to more digits). Threads "Plane <k>" hold the op's hardware sub-tasks
      (Reduce_Inline, Memcpy, Notify_Wait, ...; the same tasks as the Ascend Hardware
      communication-stream entries). Only the Group lanes become device tasks (kind
      communication, stream null as in kernel_details), so nothing is counted twice. Older
      exports without an HCCL process put `hcom_*` ops directly on Ascend Hardware; those are
      communication too.
  On the real samples this reproduces kernel_details.csv row for row (191 = 187 compute + 4 HCCL).
  When kernel_details.csv is present, `attach_trace_tasks` gives its rows `correlation` (the
  hardware task's connection_id) and launch_ns from the matching trace_view task (same name,
  start within `MATCH_TOLERANCE_NS`).
- Launch time of a device task: the `s` end of its HostToDevice flow (bound to the task by
  pid/tid/ts), else the CANN API event with the same connection_id.

How it stays fast on trace_view.json files of hundreds of MB: orjson parses the document (with
the cyclic GC paused by the caller), polars reads the top-level fields of all events in one call,
and the only per-event Python work is collecting the `args` dicts of the X and M events. A
malformed document (a field holding an object, an entry that is not an object) falls back to a
slower per-field path and the oddity is counted in the warnings.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from traceview.errors import TraceError, Warnings
from traceview.parsers import jsonio
from traceview.parsers.ascend.files import TRACE_VIEW
from traceview.parsers.ascend.kinds import task_kind
from traceview.parsers.ascend.steps import host_step_ranges
from traceview.parsers.base import drop_bad_times
from traceview.parsers.steps import STEP_NAME
from traceview.parsers.timeconv import texts, us_text_to_ns

#: A kernel_details row and a trace_view task are the same task when names are equal and starts
#: differ by at most this (the two files round the same time differently by up to 1 ns).
MATCH_TOLERANCE_NS = 1000

#: trace_view "Ascend Hardware" tasks that are not kernel_details ops (matched against the event
#: name and its args "Task Type", case-insensitive, whole string).
SKIPPED_HARDWARE_TASKS: tuple[str, ...] = (
    r"memcpy_async",
    r"pcie_dma_sqe",
    r"sdma_sqe",
    r"event_record(_sqe)?",
    r"event_wait(_sqe)?",
    r"notify[ _]wait(_sqe)?",
    r"notify[ _]record(_sqe)?",
    r"write[ _]value(_sqe)?",
    r"sdma",
    r"place_holder_sqe",
    r"profiling_(enable|disable)",
    r"capture_(record|wait)",
)

#: trace_view process names of device-side lanes (never host events).
DEVICE_PROCESSES = (
    "Ascend Hardware",
    "HCCL",
    "Overlap Analysis",
    "AI Core Freq",
    "HBM",
    "LLC",
    "NPU MEM",
    "Stars Soc Info",
    "Acc PMU",
    "QoS",
)

#: Host X-event category -> kind (a ProfilerStep#N name overrides it with "annotation").
HOST_CATEGORIES: dict[str, str] = {
    "cpu_op": "operator",
    "user_annotation": "annotation",
    "python_function": "python",
    "enqueue": "runtime",
    "dequeue": "runtime",
}
#: Host processes whose events are runtime API calls whatever their category.
RUNTIME_PROCESSES = ("CANN",)

#: Top-level event fields, read for every event in one polars call. `ts` (decimal µs text) and
#: `dur` (a µs number, which polars writes as its shortest decimal text) are converted from text,
#: exactly, with digits past the ns rounded half up: `dur` 22.5995 µs is 22600 ns, where float
#: arithmetic (`us_float_to_ns`) gives 22599 because the float is 22.59949999... . ids stay text
#: (an int or a string in torch_npu's flows).
EVENT_SCHEMA = pl.Schema(
    {
        "ph": pl.String,
        "name": pl.String,
        "cat": pl.String,
        "pid": pl.String,
        "tid": pl.String,
        "id": pl.String,
        "ts": pl.String,
        "dur": pl.String,
    }
)
#: Flow category linking a device task to its launch (flow start on the host, end on the task).
LAUNCH_FLOW = "HostToDevice"
#: `args` fields of X and M events: args key -> column (text).
ARG_FIELDS: dict[str, str] = {
    "connection_id": "connection_id",
    "Task Type": "task_type",
    "name": "arg_name",
    "labels": "arg_labels",
}
_ARG_SCHEMA = pl.Schema(dict.fromkeys(ARG_FIELDS, pl.String))
_EMPTY: dict = {}


def read_trace_view(path: Path, warnings: Warnings) -> dict[str, pl.DataFrame]:
    """trace_view.json -> {"tasks", "host_events", "host_steps"} (see the module docstring).

    Run it with the cyclic GC paused (`jsonio.gc_paused`): it builds one dict per event."""
    doc = jsonio.loads(jsonio.read_bytes(path), path, warnings)
    if isinstance(doc, dict):
        doc = doc.get("traceEvents")
    if not isinstance(doc, list):
        raise TraceError(path, "expected a JSON array of trace events", "re-export the profile")
    ev = trace_events_frame(doc, warnings)
    del doc  # the frame holds what is used; free the parsed document before the joins
    ev = ev.join(_process_table(ev), on="pid", how="left").join(_thread_table(ev), on=["pid", "tid"], how="left")
    x = ev.filter(pl.col("ph") == "X")
    bad = x["ts_ns"].is_null() | x["dur_ns"].is_null()
    warnings.add(f"{TRACE_VIEW} complete events with a non-numeric ts or dur dropped", int(bad.sum()))
    x = x.filter(~bad).with_columns((pl.col("ts_ns") + pl.col("dur_ns")).alias("end_ns"))

    launches = _launch_table(ev, x)
    host = drop_bad_times(_host_events(x), "host events", warnings)  # before they make the steps
    return {
        "tasks": _trace_tasks(x, launches),
        "host_events": host,
        "host_steps": host_step_ranges(host),
    }


def trace_events_frame(events: list, warnings: Warnings) -> pl.DataFrame:
    """Chrome-trace events -> one row per X, M and HostToDevice flow (s, f) event, in file order
    (counters, instants and the other flows carry nothing the canonical model holds).

    Columns: ph, name, cat, pid, tid, id (String), ts_ns, dur_ns (Int64 ns), and from `args` (X and
    M events only; null otherwise): connection_id, task_type, arg_name, arg_labels (args.name /
    args.labels of metadata events).
    """
    deep = jsonio.nested_too_deep(events)
    try:
        if deep:
            raise ValueError("nested too deeply")
        df = pl.DataFrame(events, schema=EVENT_SCHEMA, strict=False, infer_schema_length=None)
    except (TypeError, ValueError, OverflowError, pl.exceptions.PolarsError):
        events, df = _lenient_events(events, warnings)
    df = (
        df.with_row_index("_i")
        .filter(pl.col("ph").is_in(["X", "M"]) | (pl.col("ph").is_in(["s", "f"]) & (pl.col("cat") == LAUNCH_FLOW)))
        .with_columns(us_text_to_ns(pl.col("ts")).alias("ts_ns"), us_text_to_ns(pl.col("dur")).alias("dur_ns"))
        .drop("ts", "dur")
    )
    rows = df.filter(pl.col("ph").is_in(["X", "M"]))["_i"].to_list()
    args = [a if isinstance(a := events[i].get("args"), dict) else _EMPTY for i in rows]
    arg_frame = _args_frame(args, warnings, deep).rename(ARG_FIELDS)
    arg_frame = arg_frame.with_columns(pl.Series("_i", rows, dtype=pl.UInt32))
    return df.join(arg_frame, on="_i", how="left", maintain_order="left").drop("_i")


def _scalar_texts(values: list, warnings: Warnings) -> list:
    """`texts` of JSON scalars; an object or array becomes null (counted in the warnings)."""
    nested = [isinstance(v, (dict, list)) for v in values]
    warnings.add(f"{TRACE_VIEW} event fields holding an object or array read as null", sum(nested))
    return texts([None if n else v for v, n in zip(values, nested)])


def _lenient_events(events: list, warnings: Warnings) -> tuple[list, pl.DataFrame]:
    """Slow path for malformed documents: non-objects dropped, every field read as text.

    Returns (the kept events, their frame of the EVENT_SCHEMA fields)."""
    good = [e for e in events if isinstance(e, dict)]
    warnings.add(f"{TRACE_VIEW} entries that are not JSON objects skipped", len(events) - len(good))
    columns = {f: _scalar_texts([e.get(f) for e in good], warnings) for f in EVENT_SCHEMA}
    return good, pl.DataFrame(columns, schema=EVENT_SCHEMA)


def _args_frame(args: list[dict], warnings: Warnings, deep: bool = False) -> pl.DataFrame:
    """The ARG_FIELDS of each args dict as text (one polars call; per field for malformed args)."""
    try:
        if deep:
            raise ValueError("nested too deeply")
        return pl.DataFrame(args, schema=_ARG_SCHEMA, strict=False, infer_schema_length=None)
    except (TypeError, ValueError, OverflowError, pl.exceptions.PolarsError):
        columns = {key: _scalar_texts([a.get(key) for a in args], warnings) for key in ARG_FIELDS}
        return pl.DataFrame(columns, schema=_ARG_SCHEMA)


def _process_table(ev: pl.DataFrame) -> pl.DataFrame:
    """pid -> process_name, process_label from the M (metadata) events."""
    meta = ev.filter(pl.col("ph") == "M")
    names = (
        meta.filter(pl.col("name") == "process_name")
        .group_by("pid")
        .agg(pl.col("arg_name").first().alias("process_name"))
    )
    labels = (
        meta.filter(pl.col("name") == "process_labels")
        .group_by("pid")
        .agg(pl.col("arg_labels").first().alias("process_label"))
    )
    return names.join(labels, on="pid", how="full", coalesce=True)


def _thread_table(ev: pl.DataFrame) -> pl.DataFrame:
    """(pid, tid) -> thread_name from the M events."""
    return (
        ev.filter((pl.col("ph") == "M") & (pl.col("name") == "thread_name"))
        .group_by("pid", "tid")
        .agg(pl.col("arg_name").first().alias("thread_name"))
    )


def _is_device_process() -> pl.Expr:
    """True for events of NPU-side processes (label NPU or a known device lane name)."""
    npu_label = (pl.col("process_label") == "NPU").fill_null(False)
    return npu_label | pl.col("process_name").is_in(DEVICE_PROCESSES).fill_null(False)


def _host_events(x: pl.DataFrame) -> pl.DataFrame:
    """Host X events (processes not on the NPU) -> host_events columns."""
    host = x.filter(~_is_device_process())
    runtime = pl.col("process_name").is_in(RUNTIME_PROCESSES).fill_null(False)
    kind = (
        pl.when(pl.col("name").str.contains(STEP_NAME).fill_null(False))
        .then(pl.lit("annotation"))
        .when(runtime)
        .then(pl.lit("runtime"))
        .otherwise(pl.col("cat").str.to_lowercase().replace_strict(HOST_CATEGORIES, default="other"))
    )
    return host.select(
        pl.col("pid").cast(pl.Int64, strict=False),
        pl.col("tid").cast(pl.Int64, strict=False),
        "name",
        pl.when(pl.col("cat").is_null() & runtime).then(pl.col("process_name")).otherwise(pl.col("cat")).alias("cat"),
        kind.alias("kind"),
        pl.col("ts_ns").alias("start_ns"),
        "end_ns",
        "dur_ns",
        pl.when(runtime).then(pl.col("connection_id").cast(pl.Int64, strict=False)).alias("correlation"),
    ).sort("start_ns", "pid", "tid", nulls_last=True, maintain_order=True)


def _launch_table(ev: pl.DataFrame, x: pl.DataFrame) -> dict[str, pl.DataFrame]:
    """How to find a device task's launch time on the host.

    "flow": (pid, tid, ts_ns) of a HostToDevice flow end -> launch_ns (its flow start's ts);
    "api": connection_id -> launch_ns (start of the CANN API event with that id).
    """
    flows = ev.filter(pl.col("cat") == LAUNCH_FLOW)
    starts = flows.filter(pl.col("ph") == "s").group_by("id").agg(pl.col("ts_ns").min().alias("launch_ns"))
    ends = (
        flows.filter(pl.col("ph") == "f")
        .select("pid", "tid", "ts_ns", "id")
        .unique(["pid", "tid", "ts_ns"], keep="first", maintain_order=True)
    )
    by_flow = ends.join(starts, on="id", how="inner").drop("id")
    by_api = (
        x.filter(
            pl.col("process_name").is_in(RUNTIME_PROCESSES).fill_null(False) & pl.col("connection_id").is_not_null()
        )
        .group_by("connection_id")
        .agg(pl.col("ts_ns").min().alias("launch_ns"))
    )
    return {"flow": by_flow, "api": by_api}


def _trace_tasks(x: pl.DataFrame, launches: dict[str, pl.DataFrame]) -> pl.DataFrame:
    """Device tasks from trace_view: Ascend Hardware op-level tasks + HCCL Group-lane ops."""
    skipped = "(?i)^(" + "|".join(SKIPPED_HARDWARE_TASKS) + ")$"
    is_hardware = pl.col("process_name") == "Ascend Hardware"
    is_skipped = pl.col("name").str.contains(skipped).fill_null(False) | pl.col("task_type").str.contains(
        skipped
    ).fill_null(False)
    is_hcom_name = pl.col("name").str.contains(r"(?i)^hcom_").fill_null(False)
    is_hccl_op = (pl.col("process_name") == "HCCL") & (
        pl.col("thread_name").str.contains(r"(?i)communication").fill_null(False) | is_hcom_name
    )
    sel = x.filter((is_hardware & (~is_skipped | is_hcom_name)) | is_hccl_op.fill_null(False))
    sel = sel.join(launches["flow"], on=["pid", "tid", "ts_ns"], how="left")
    sel = sel.join(launches["api"].rename({"launch_ns": "api_launch_ns"}), on="connection_id", how="left").with_columns(
        pl.coalesce("launch_ns", "api_launch_ns").alias("launch_ns")
    )
    hccl = pl.col("process_name") == "HCCL"
    tasks = sel.select(
        "name",
        pl.col("ts_ns").alias("start_ns"),
        "dur_ns",
        "end_ns",
        pl.lit(None, dtype=pl.Int64).alias("step"),
        pl.when(hccl).then(None).otherwise(pl.col("tid").cast(pl.Int64, strict=False)).alias("stream"),
        pl.lit(None, dtype=pl.Int64).alias("device"),
        pl.when(hccl | is_hcom_name)
        .then(pl.col("name").str.extract(r"^(hcom_[A-Za-z]+_)", 1))
        .otherwise(None)
        .alias("op_type"),
        pl.when(hccl).then(pl.lit("HCCL")).otherwise(pl.col("task_type")).alias("core_type"),
        pl.lit(None, dtype=pl.String).alias("input_shapes"),
        pl.lit(None, dtype=pl.Int64).alias("aic_mac_ns"),
        pl.lit(None, dtype=pl.Int64).alias("aiv_vec_ns"),
        pl.col("connection_id").cast(pl.Int64, strict=False).alias("correlation"),
        "launch_ns",
    )
    return tasks.with_columns(task_kind(pl.col("name"), pl.col("op_type"), pl.col("core_type")).alias("kind")).sort(
        "start_ns", "stream", "name", nulls_last=True, maintain_order=True
    )


def attach_trace_tasks(tasks: pl.DataFrame, trace_tasks: pl.DataFrame) -> pl.DataFrame:
    """kernel_details rows + correlation / launch_ns of the trace_view task with the same name
    starting within MATCH_TOLERANCE_NS (rows keep their order; unmatched rows keep nulls)."""
    if trace_tasks.is_empty() or tasks.is_empty():
        return tasks
    right = trace_tasks.select(
        "name",
        pl.col("start_ns").alias("_t"),
        pl.col("correlation").alias("_corr"),
        pl.col("launch_ns").alias("_launch"),
    ).sort("_t")
    left = tasks.with_row_index("_row").sort("start_ns")
    hit = left.join_asof(
        right,
        left_on="start_ns",
        right_on="_t",
        by="name",
        strategy="nearest",
        tolerance=MATCH_TOLERANCE_NS,
        check_sortedness=False,  # both sides are sorted by time above
    )
    return (
        hit.sort("_row")
        .with_columns(
            pl.coalesce("correlation", "_corr").alias("correlation"),
            pl.coalesce("launch_ns", "_launch").alias("launch_ns"),
        )
        .drop("_row", "_t", "_corr", "_launch")
    )
