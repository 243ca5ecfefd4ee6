"""AMD rocprofv3 output (ROCprofiler-SDK) -> canonical frames, through `parsers.activity`.

Two outputs of one tracer, read into the same columns:
- JSON (`rocprofv3 --output-format json`, `<pid>_results.json`, found by its top key
  `"rocprofiler-sdk-tool"`, one element per process): `buffer_records.kernel_dispatch`,
  `memory_copy`, `hip_api`, `marker_api`, `rccl_api`; names from `kernel_symbols` (indexed by
  kernel id), `strings.buffer_records[kind].operations[operation]` (API and copy names) and
  `strings.marker_api` (roctx messages by correlation id); `agents` for the GPU names;
- CSV (`--output-format csv`, the default before ROCm 7.0): `<prefix>kernel_trace.csv` is the
  source, with its siblings of the same prefix when present: `agent_info.csv`,
  `hip_api_trace.csv`, `memory_copy_trace.csv`, `marker_api_trace.csv`. Columns are read by name
  (both the 6.2 and the later layouts); an agent id written as text (`Agent 4`) reads its number.

Times are the tracer's nanoseconds. Mapped as:
- kernels: device tasks (kind by the task-kind rules: RCCL kernels are communication), stream =
  the HSA queue, grid and block = Grid_Size and Workgroup_Size x,y,z;
- copies: device tasks `Memcpy HtoD` / `DtoH` / `DtoD` / `HtoH`, bytes when recorded (JSON), on
  the GPU side of the copy;
- HIP and RCCL API calls: host events (cat hip_runtime, kind runtime) linked to what they
  launched by the correlation id;
- roctx ranges: host annotations; a range named like a step is that step (`parsers.activity`);
  zero-length records (roctxMark) are skipped;
- device = the GPU's index among the GPU agents in node order (agent_info / agents); without
  agent information, the agent id as written.

What rocprofv3 output lacks: PyTorch operator names (unless roctx ranges carry them), the rank
(null: numbered by the loader), memory.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from traceview.errors import TraceError, Warnings
from traceview.parsers import kinds
from traceview.parsers.activity import activity_rank, task_columns, used_devices
from traceview.parsers.base import ParsedRank
from traceview.parsers.csvio import csv_header, read_text_columns
from traceview.parsers.jsonio import gc_paused, loads, read_bytes
from traceview.parsers.kineto_events import int64

#: The top key of a rocprofv3 JSON output.
JSON_KEY = b'"rocprofiler-sdk-tool"'
#: The file name ending of the CSV output's kernel trace (the source of a CSV profile).
KERNEL_TRACE = "kernel_trace.csv"
#: Sibling files of a kernel trace (same prefix): role -> name ending.
SIBLINGS = {
    "agents": "agent_info.csv",
    "api": "hip_api_trace.csv",
    "copies": "memory_copy_trace.csv",
    "markers": "marker_api_trace.csv",
}
#: The columns that make a CSV a rocprofv3 kernel trace.
KERNEL_TRACE_COLUMNS = ("Kernel_Name", "Start_Timestamp", "End_Timestamp")
#: rocprofv3 copy direction (after `MEMORY_COPY_`) -> the Kineto-style memcpy name.
COPY_DIRECTIONS = {
    "HOST_TO_DEVICE": "HtoD",
    "DEVICE_TO_HOST": "DtoH",
    "DEVICE_TO_DEVICE": "DtoD",
    "HOST_TO_HOST": "HtoH",
}
#: ROCprofiler agent type of a GPU (rocprofiler_agent_type_t).
GPU_AGENT_TYPE = 2
FIX = "re-run rocprofv3 with --kernel-trace and --output-format json or csv"
NO_KERNELS = "rocprofv3 output with no kernel dispatch or memory copy: profile with rocprofv3 --kernel-trace"

#: The raw columns of each record kind (what both readers produce).
KERNEL_SCHEMA = {
    "start_ns": pl.Int64,
    "end_ns": pl.Int64,
    "agent": pl.Int64,
    "stream": pl.Int64,
    "correlation": pl.Int64,
    "name": pl.String,
    "gx": pl.Int64,
    "gy": pl.Int64,
    "gz": pl.Int64,
    "bx": pl.Int64,
    "by": pl.Int64,
    "bz": pl.Int64,
}
COPY_SCHEMA = {
    "start_ns": pl.Int64,
    "end_ns": pl.Int64,
    "src_agent": pl.Int64,
    "dst_agent": pl.Int64,
    "correlation": pl.Int64,
    "direction": pl.String,
    "bytes": pl.Int64,
}
HOST_SCHEMA = {
    "pid": pl.Int64,
    "tid": pl.Int64,
    "name": pl.String,
    "start_ns": pl.Int64,
    "end_ns": pl.Int64,
    "correlation": pl.Int64,
}
AGENT_SCHEMA = {"agent": pl.Int64, "gpu": pl.Boolean, "name": pl.String}


def is_kernel_trace(path: Path, head: bytes) -> bool:
    """Whether a file is a rocprofv3 CSV kernel trace: named `*kernel_trace.csv`, its header
    holding the kernel trace's columns."""
    first = head.split(b"\n", 1)[0]
    return path.name.endswith(KERNEL_TRACE) and all(f'"{c}"'.encode() in first for c in KERNEL_TRACE_COLUMNS)


def is_rocprof_json(head: bytes) -> bool:
    """Whether the first bytes of a file are a rocprofv3 JSON output."""
    return head.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"{") and JSON_KEY in head


def sibling_files(kernel_trace: Path) -> dict[str, Path]:
    """The sibling files of a CSV kernel trace that exist (role -> path)."""
    prefix = kernel_trace.name[: -len(KERNEL_TRACE)]
    found = {}
    for role, ending in SIBLINGS.items():
        candidate = kernel_trace.with_name(prefix + ending)
        if candidate.is_file():
            found[role] = candidate
    return found


def parse_rocprof(path: Path) -> ParsedRank:
    """The canonical frames of one rocprofv3 output: a JSON file or a CSV kernel trace with its
    siblings (module docstring)."""
    path = Path(path)
    warn = Warnings(path)
    if path.name.endswith(KERNEL_TRACE):
        kernels, copies, api, markers, agents = _read_csv(path, warn)
    else:
        kernels, copies, api, markers, agents = _read_json(path, warn)
    gpus = agents.filter(pl.col("gpu")).sort("agent")
    device_of = dict(zip(gpus["agent"].to_list(), range(gpus.height)))

    def device(col: str) -> pl.Expr:
        if not device_of:
            return pl.col(col)
        return pl.col(col).replace_strict(device_of, default=None, return_dtype=pl.Int64)

    name = pl.col("name").fill_null("(unnamed)")
    direction = pl.col("direction").str.strip_prefix("MEMORY_COPY_")
    copy_side = pl.when(direction.str.starts_with("HOST_TO_")).then(device("dst_agent")).otherwise(device("src_agent"))
    copy_name = direction.replace_strict(COPY_DIRECTIONS, default=direction, return_dtype=pl.String).fill_null("?")
    tasks = [
        task_columns(
            kernels.with_columns(device("agent").alias("device")),
            kinds.device_kind(pl.lit("kernel"), name),
            name,
            pl.format("{},{},{}", "gx", "gy", "gz"),
            pl.format("{},{},{}", "bx", "by", "bz"),
            pl.lit(None, pl.Int64),
        ),
        task_columns(
            copies.with_columns(copy_side.alias("device"), pl.lit(None, pl.Int64).alias("stream")),
            pl.lit("memcpy"),
            pl.format("Memcpy {}", copy_name),
            pl.lit(None, pl.String),
            pl.lit(None, pl.String),
            pl.col("bytes"),
        ),
    ]
    calls = api.height
    api = api.unique(maintain_order=True)  # every column: one API call recorded twice
    warn.add(DUPLICATE_CALLS, calls - api.height)
    host = [
        api.select(
            "pid", "tid", name.alias("name"), pl.lit("hip_runtime").alias("cat"), pl.lit("runtime").alias("kind"),
            "start_ns", "end_ns", "correlation",
        ),
        markers.filter(pl.col("end_ns") > pl.col("start_ns")).select(
            "pid", "tid", name.alias("name"), pl.lit("roctx").alias("cat"), pl.lit("annotation").alias("kind"),
            "start_ns", "end_ns", pl.lit(None, pl.Int64).alias("correlation"),
        ),
    ]  # fmt: skip
    used = used_devices(tasks)
    names = gpus["name"].to_list()
    device_name = names[used[0]] if used and device_of and used[0] < len(names) else (names[0] if names else None)
    meta = {
        "rank": None,
        "world_size": None,
        "format": "rocprof",
        "source": str(path),
        "device_name": device_name,
        "device_memory_bytes": None,
    }
    return activity_rank(path, warn, tasks, host, meta, NO_KERNELS)


# --- CSV --------------------------------------------------------------------------------------------


def _read_table(path: Path, names) -> pl.DataFrame:
    """The columns `names` of a rocprofv3 CSV that it has (the first of a repeated name), as text;
    only those are read (`csvio.csv_header` first): a file with thousands of other columns costs
    what these do."""
    try:
        header = csv_header(path)
    except TraceError as exc:
        raise TraceError(path, f"cannot read this CSV: {exc.problem}", FIX) from None
    first: dict[str, int] = {}
    for i, name in enumerate(header):
        first.setdefault(name, i)
    wanted = sorted(first[n] for n in set(names) if n in first)
    if not wanted:
        return pl.DataFrame()
    try:
        return read_text_columns(path, header, wanted)
    except TraceError as exc:
        raise TraceError(path, f"cannot read this CSV: {exc.problem}", FIX) from None


#: CSV column of each raw column (output name -> rocprofv3 column), per file role; the raw
#: schemas above give each column's type (Int64: the number in the cell, null when none).
KERNEL_CSV = {
    "start_ns": "Start_Timestamp",
    "end_ns": "End_Timestamp",
    "agent": "Agent_Id",
    "stream": "Queue_Id",
    "correlation": "Correlation_Id",
    "name": "Kernel_Name",
    **{f"g{a}": f"Grid_Size_{a.upper()}" for a in "xyz"},
    **{f"b{a}": f"Workgroup_Size_{a.upper()}" for a in "xyz"},
}
COPY_CSV = {
    "start_ns": "Start_Timestamp",
    "end_ns": "End_Timestamp",
    "src_agent": "Source_Agent_Id",
    "dst_agent": "Destination_Agent_Id",
    "correlation": "Correlation_Id",
    "direction": "Direction",
    "bytes": "Bytes",
}
HOST_CSV = {
    "pid": "Process_Id",
    "tid": "Thread_Id",
    "name": "Function",
    "start_ns": "Start_Timestamp",
    "end_ns": "End_Timestamp",
    "correlation": "Correlation_Id",
}


#: The agent_info.csv columns read.
AGENT_CSV = ("Agent_Type", "Product_Name", "Name", "Logical_Node_Id", "Node_Id")
#: The columns without which a sibling file is not what its name says: it is not read, with a
#: warning (NOT_SIBLING), and the rank loads without it.
SIBLING_KEYS = {
    "agents": ("Agent_Type",),
    "api": ("Function", "Correlation_Id", "Start_Timestamp", "End_Timestamp"),
    "markers": ("Function", "Start_Timestamp", "End_Timestamp"),
    "copies": ("Start_Timestamp", "End_Timestamp", "Correlation_Id"),
}
#: An API call is recorded once, under its own correlation id: an exact copy is a damaged or
#: merged output, and would make its launch look like two.
DUPLICATE_CALLS = "rocprofv3 API records written twice (every field equal): the copies dropped"
NOT_SIBLING = "sibling file(s) that are not the rocprofv3 table their name says, not read"

#: Raw columns whose cells may name their number (`Agent 4`: later rocprofv3 versions).
NAMED_IDS = ("agent", "src_agent", "dst_agent")
NOT_INTEGER = "rocprofv3 values that are not plain integers read as missing (a time in 5.3E+15 form, 1,234)"
NO_TIMES = "rocprofv3 records without a start and end time dropped"


def _columns(
    frame: pl.DataFrame, columns: dict[str, str], schema: dict[str, pl.DataType], warn: Warnings
) -> pl.DataFrame:
    """The raw columns of a CSV read as text: an integer from a cell that is one (an agent id from
    `Agent 4` too), never guessed from part of a cell (`5.3E+15` is not 5: it reads as missing,
    counted); text as it is; null where the file lacks the column. Records without a start and
    end time are dropped (counted)."""

    def one(out: str, column: str) -> pl.Expr:
        if column not in frame.columns:
            return pl.lit(None, schema[out]).alias(out)
        if schema[out] == pl.String:
            return pl.col(column).alias(out)
        cell = pl.col(column).str.strip_chars()
        if out in NAMED_IDS:
            cell = cell.str.extract(r"^(?:[A-Za-z_ ]*?)(-?\d+)$", 1)
        return cell.cast(pl.Int64, strict=False).alias(out)

    present = [(out, col) for out, col in columns.items() if col in frame.columns and schema[out] != pl.String]
    bad = frame.select(
        pl.sum_horizontal(
            (pl.col(col).str.strip_chars().str.len_chars() > 0) & one(out, col).is_null() for out, col in present
        ).sum()
        if present
        else pl.lit(0)
    ).item()
    warn.add(NOT_INTEGER, bad or 0)
    out = frame.select(one(out, col) for out, col in columns.items())
    timed = pl.col("start_ns").is_not_null() & pl.col("end_ns").is_not_null()
    warn.add(NO_TIMES, out.height - out.filter(timed).height)
    return out.filter(timed)


def _read_csv(path: Path, warn: Warnings):
    """The raw frames of a CSV kernel trace and its siblings."""
    kernels_csv = _read_table(path, KERNEL_CSV.values())
    missing = [c for c in KERNEL_TRACE_COLUMNS if c not in kernels_csv.columns]
    if missing:
        raise TraceError(path, f"not a rocprofv3 kernel trace (no {', '.join(missing)} column)", FIX)
    siblings = sibling_files(path)

    def table(role: str, names) -> pl.DataFrame | None:
        """A sibling's columns `names`, or None (and a warning) when it lacks its role's key
        columns (SIBLING_KEYS: an agent_info.csv holding a kernel trace is no agent list)."""
        if role not in siblings:
            return None
        frame = _read_table(siblings[role], names)
        lacking = [c for c in SIBLING_KEYS[role] if c not in frame.columns]
        if lacking:
            warn.add(f"{NOT_SIBLING}: {siblings[role].name} (no {', '.join(lacking)} column)")
            return None
        return frame

    def sibling(role: str, columns: dict[str, str], schema: dict) -> pl.DataFrame:
        frame = table(role, columns.values())
        return pl.DataFrame(schema=schema) if frame is None else _columns(frame, columns, schema, warn)

    agents = pl.DataFrame(schema=AGENT_SCHEMA)
    if (a := table("agents", AGENT_CSV)) is not None:
        text = {
            c: pl.col(c) if c in a.columns else pl.lit(None, pl.String) for c in ("Agent_Type", "Product_Name", "Name")
        }
        node = "Logical_Node_Id" if "Logical_Node_Id" in a.columns else "Node_Id"
        agents = a.select(
            (
                pl.col(node).str.extract(r"(\d+)", 1).cast(pl.Int64, strict=False)
                if node in a.columns
                else pl.lit(None, pl.Int64)
            ).alias("agent"),
            (text["Agent_Type"] == "GPU").alias("gpu"),
            pl.coalesce(text["Product_Name"], text["Name"]).alias("name"),
        ).filter(pl.col("agent").is_not_null() & pl.col("gpu").is_not_null())
    return (
        _columns(kernels_csv, KERNEL_CSV, KERNEL_SCHEMA, warn),
        sibling("copies", COPY_CSV, COPY_SCHEMA),
        sibling("api", HOST_CSV, HOST_SCHEMA),
        sibling("markers", HOST_CSV, HOST_SCHEMA),
        agents,
    )


# --- JSON -------------------------------------------------------------------------------------------


def _records(node, key: str) -> list[dict]:
    value = node.get(key) if isinstance(node, dict) else None
    return [r for r in value if isinstance(r, dict)] if isinstance(value, list) else []


def _get(record: dict, *keys):
    """record[k1][k2]... as an int (None when absent, not an integer, or beyond Int64: a uint64
    handle above 2^63 cannot be a column value)."""
    for key in keys:
        record = record.get(key) if isinstance(record, dict) else None
    return int64(record)


def _operation_names(strings: dict) -> dict[tuple[int, int], str]:
    """(record kind, operation) -> name, from `strings.buffer_records`."""
    names = {}
    for kind, entry in enumerate(_records(strings, "buffer_records")):
        operations = entry.get("operations")
        if isinstance(operations, list):
            for op, name in enumerate(operations):
                if isinstance(name, str):
                    names[(kind, op)] = name
    return names


def _read_json(path: Path, warn: Warnings):
    """The raw frames of a rocprofv3 JSON output (every process in it)."""
    with gc_paused():
        doc = loads(read_bytes(path), path, warn)
    processes = doc.get("rocprofiler-sdk-tool") if isinstance(doc, dict) else None
    if not isinstance(processes, list):
        raise TraceError(path, 'not a rocprofv3 JSON output (no "rocprofiler-sdk-tool" list)', FIX)
    rows: dict[str, list[dict]] = {"kernels": [], "copies": [], "api": [], "markers": [], "agents": []}
    for process in processes:
        if isinstance(process, dict):
            _read_process(process, rows)
    return (
        pl.DataFrame(rows["kernels"], schema=KERNEL_SCHEMA, orient="row"),
        pl.DataFrame(rows["copies"], schema=COPY_SCHEMA, orient="row"),
        pl.DataFrame(rows["api"], schema=HOST_SCHEMA, orient="row"),
        pl.DataFrame(rows["markers"], schema=HOST_SCHEMA, orient="row"),
        pl.DataFrame(rows["agents"], schema=AGENT_SCHEMA, orient="row").unique("agent", keep="first"),
    )


def _read_process(process: dict, rows: dict[str, list]) -> None:
    """Append one process element's records to `rows` (dicts in the raw schemas)."""
    pid = _get(process, "metadata", "pid")
    strings = process.get("strings") if isinstance(process.get("strings"), dict) else {}
    operation = _operation_names(strings)
    messages = {
        int64(m.get("key")): m.get("value") for m in _records(strings, "marker_api") if isinstance(m.get("value"), str)
    }
    symbols = {}
    for index, symbol in enumerate(
        process.get("kernel_symbols") if isinstance(process.get("kernel_symbols"), list) else []
    ):
        if isinstance(symbol, dict):
            name = symbol.get("formatted_kernel_name") or symbol.get("kernel_name")
            symbols[_get(symbol, "kernel_id") or index] = name if isinstance(name, str) else None
    for agent in _records(process, "agents"):
        handle = _get(agent, "id", "handle")
        if handle is not None:
            name = agent.get("product_name") or agent.get("name") or None
            gpu = _get(agent, "type") == GPU_AGENT_TYPE
            rows["agents"].append({"agent": handle, "gpu": gpu, "name": name if isinstance(name, str) else None})
    buffers = process.get("buffer_records") if isinstance(process.get("buffer_records"), dict) else {}
    timed = (_get, "start_timestamp"), (_get, "end_timestamp")
    for r in _records(buffers, "kernel_dispatch"):
        info = r.get("dispatch_info") if isinstance(r.get("dispatch_info"), dict) else {}
        start, end = (f(r, k) for f, k in timed)
        if start is None or end is None:
            continue
        rows["kernels"].append(
            {
                "start_ns": start,
                "end_ns": end,
                "agent": _get(info, "agent_id", "handle"),
                "stream": _get(info, "queue_id", "handle"),
                "correlation": _get(r, "correlation_id", "internal"),
                "name": symbols.get(_get(info, "kernel_id")),
                **{f"g{a}": _get(info, "grid_size", a) for a in "xyz"},
                **{f"b{a}": _get(info, "workgroup_size", a) for a in "xyz"},
            }
        )
    for r in _records(buffers, "memory_copy"):
        start, end = (f(r, k) for f, k in timed)
        if start is None or end is None:
            continue
        rows["copies"].append(
            {
                "start_ns": start,
                "end_ns": end,
                "src_agent": _get(r, "src_agent_id", "handle"),
                "dst_agent": _get(r, "dst_agent_id", "handle"),
                "correlation": _get(r, "correlation_id", "internal"),
                "direction": operation.get((_get(r, "kind"), _get(r, "operation"))),
                "bytes": _get(r, "bytes"),
            }
        )
    for key, role in (("hip_api", "api"), ("rccl_api", "api"), ("marker_api", "markers")):
        for r in _records(buffers, key):
            start, end = (f(r, k) for f, k in timed)
            if start is None or end is None:
                continue
            correlation = _get(r, "correlation_id", "internal")
            name = (messages.get(correlation) if role == "markers" else None) or operation.get(
                (_get(r, "kind"), _get(r, "operation"))
            )
            rows[role].append(
                {
                    "pid": pid,
                    "tid": _get(r, "thread_id"),
                    "name": name,
                    "start_ns": start,
                    "end_ns": end,
                    "correlation": correlation,
                }
            )
