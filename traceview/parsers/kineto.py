"""Kineto / torch.profiler Chrome-trace JSON (plain or .gz), every schema variant since 2021.

Handles: `export_chrome_trace` files and `tensorboard_trace_handler` `*.pt.trace.json[.gz]`
files; capitalised categories of 2021 traces (Kernel/Memcpy/Memset/Runtime/Operator); kernel
args `external id` (2021) or `External id`; `deviceProperties` or `computeProperties`; integer
or float microsecond timestamps; ROCm traces (hip* runtime calls); traces without
`distributedInfo`; CPU-only traces; MTIA traces (host side only).

Collective metadata (`Collective name`, `Process Group Name`, `Group size`, `In/Out msg nelems`,
`dtype`; recent PyTorch writes them on `record_param_comms` and copies them onto NCCL kernels) fills
the collective / process_group / group_size / msg_bytes columns of communication tasks, from the
kernel's own args or else from the host op that launched it (see `finish_comm`). Profiles recorded
with record_shapes=True give kernels the `input_shapes` of their launching cpu_op (`Input Dims` in
Ascend's `Input Shapes` text form; see `_kernel_input_shapes`).

Reading: the events are streamed in chunks (`traceview.parsers.jsonio.ChromeEvents`), each decoded
into columns without a dict per event (`traceview.parsers.kineto_decode`; chunks outside its types,
and whole documents, by orjson into dicts: `traceview.parsers.kineto_dicts`) and turned into frames
by `traceview.parsers.kineto_events.chunk_frames`; collective metadata is filled by
`traceview.parsers.kineto_comm.finish_comm`.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from traceview.errors import TraceError, Warnings
from traceview.parsers import kinds, steps
from traceview.parsers.allocator import kineto_memory
from traceview.parsers.base import ParsedRank
from traceview.parsers.jsonio import ChromeEvents, NotJSON, StreamUnsupported, gc_paused, loads, read_bytes
from traceview.parsers.kineto_comm import finish_comm
from traceview.parsers.kineto_decode import chunk_decoder
from traceview.parsers.kineto_dicts import dict_columns
from traceview.parsers.kineto_events import NOT_A_TRACE_FIX, NOT_OBJECTS, chunk_frames, int64, with_input_shapes

#: The warning of a trace without device tasks (counted in host events): a CPU-only run, a GPU run
#: recorded without ProfilerActivity.CUDA, or a trace of another framework whose device lanes
#: traceview does not read (JAX / TensorFlow converted to Chrome JSON).
NO_DEVICE_TASKS = (
    "host events and no device tasks (no GPU kernel, memcpy or memset): only the host side is analysed; "
    "a GPU run needs ProfilerActivity.CUDA, and JAX / TensorFlow device lanes are not read"
)

#: The warning for events the stream dropped as invalid JSON (`jsonio.bad_event`).
INVALID_EVENTS = (
    "events that are not valid JSON dropped (a NaN or Infinity literal, or values nested over 1,024 levels)"
)
#: A file at least this large (uncompressed) is decoded by several processes when `jobs` > 1.
PARALLEL_FILE_BYTES = 256 << 20
#: Chunks are decoded typed (`kineto_decode`) first; False: every chunk to dicts (the reference the
#: typed decode is tested against, and the "before" of bench/bench_decode.py). Same frames either way.
TYPED_DECODE = True


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
    from traceview.parsers.host_ram import uncompressed_size

    try:
        return uncompressed_size(path)
    except OSError:
        return 0


def _streamed(path: Path, warn: Warnings) -> tuple[dict, dict[str, pl.DataFrame]]:
    """Read chunk by chunk in this process."""
    stream = ChromeEvents(path, decode=chunk_decoder(warn, {}, TYPED_DECODE))
    frames = _joined(stream)
    warn.add(INVALID_EVENTS, stream.dropped)
    return stream.doc, frames  # doc is complete only once the events are read


def _whole(path: Path, warn: Warnings) -> tuple[dict, dict[str, pl.DataFrame]]:
    """Read the document in one piece (any layout; precise errors for broken files)."""
    doc, events = _whole_document(path, warn)
    return doc, _joined([(chunk_frames(dict_columns(events, warn), warn, {}), len(events))])


def _streamed_parallel(path: Path, warn: Warnings, jobs: int) -> tuple[dict, dict[str, pl.DataFrame]]:
    """Decode the chunks in `jobs` spawn processes (at most 2 x jobs chunks in flight, results
    taken in file order); StreamUnsupported if a piece does not decode (a wrong cut) or the
    workers cannot run (cannot start, or killed)."""
    from collections import deque
    from concurrent.futures.process import BrokenProcessPool
    from contextlib import closing

    from traceview import subprocesses

    stream = ChromeEvents(path, decode=chunk_decoder(warn, {}, TYPED_DECODE))
    task_kinds = kinds.current()  # the user's task-kind rules, handed to each worker

    def parts():
        with subprocesses.finish(subprocesses.pool(jobs)) as pool:
            pending: deque = deque()
            for piece in stream.pieces():
                if not isinstance(piece, bytes):
                    # the last events, decoded here: more than one item when a bad event among
                    # them was dropped (`ChromeEvents._decode_tail`), every one kept
                    while pending:
                        yield _merged(subprocesses.result(pending.popleft()), warn)
                    yield piece
                    continue
                pending.append(pool.submit(_piece_frame, piece, task_kinds, TYPED_DECODE))
                while len(pending) > 2 * jobs:
                    yield _merged(subprocesses.result(pending.popleft()), warn)

    try:
        with closing(parts()) as pieces:  # stopped early: the workers are stopped at once
            frames = _joined(pieces)
    except (BrokenProcessPool, OSError) as exc:
        raise StreamUnsupported(f"parallel decoding failed: {exc}") from None
    warn.add(INVALID_EVENTS, stream.dropped)
    return stream.doc, frames  # doc is complete only once the events are read


def _merged(result, warn: Warnings) -> tuple[dict[str, pl.DataFrame], int]:
    if result is None:
        raise StreamUnsupported("a piece did not decode")
    frames, n, counts = result
    for what, count in counts.items():
        warn.add(what, count)
    return frames, n


_WORKER_RENDERED: dict = {}


def _piece_frame(piece: bytes, task_kinds: str = "", typed: bool = True):
    """Worker process: decode one piece with the user's task-kind rules `task_kinds`; (its
    `chunk_frames` frames, events, warning counts) or None if the piece is not a JSON array (its
    cut fell inside an event)."""
    with gc_paused(), kinds.using(task_kinds):
        warn = Warnings("")
        try:
            frames, n = chunk_decoder(warn, _WORKER_RENDERED, typed)(piece)
        except NotJSON:
            return None
        return frames, n, dict(warn._counts)


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
    """The frames of all chunks, from (`chunk_frames` frames, events in the chunk) per chunk in file
    order (there is at least one: the streams end with the last, maybe empty, chunk). `_i`
    becomes the event's index in the file; tasks and host events are sorted by (start, `_i`): the
    rows are in `_i` order already, so a stable sort by start alone; kernels get their input shapes
    (their launching op may sit in another chunk)."""
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
        out[name] = out[name].sort("start_ns", maintain_order=True)
    out["memory"] = out["memory"].sort("ts_ns", maintain_order=True)
    out["tasks"] = with_input_shapes(out["tasks"], out.pop("op_shapes"))
    out["op_inputs"] = out["op_inputs"].unique("external_id", keep="first", maintain_order=True)
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
    device_tasks = finish_comm(frames["tasks"], frames["host"], frames["collective_ops"])
    host_events, annotations, op_inputs = frames["host"], frames["annotations"], frames["op_inputs"]
    memory_events, allocations = kineto_memory(frames["memory"], host_events)
    frames.clear()
    step_frame, device_tasks = steps.kineto_steps(device_tasks, host_events, annotations, warn)
    meta = _metadata(doc, path, device_tasks, host_events, warn)
    if device_tasks.is_empty() and meta["device_type"] == "cpu" and host_events.height:
        warn.add(NO_DEVICE_TASKS, host_events.height)
    return ParsedRank.build(
        {
            "device_tasks": device_tasks,
            "host_events": host_events,
            "device_annotations": annotations,
            "steps": step_frame,
            "memory_events": memory_events,
            "memory_allocations": allocations,
            "op_inputs": op_inputs,
        },
        meta,
        warn.messages(),
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
    memory_by_id = {p.get("id"): int64(p.get("totalGlobalMem")) for p in props if isinstance(p.get("id"), int)}
    used = tasks["device"].drop_nulls().unique(maintain_order=True).to_list() if tasks.height else []
    device_memory = next((memory_by_id[d] for d in used if memory_by_id.get(d)), None)
    sizes = set(memory_by_id.values())
    if device_memory is None and len(sizes) == 1:  # ids that do not match (ROCm): one kind of device
        device_memory = sizes.pop()
    if tasks.height:
        device_type = "gpu"
    elif host["cat"].str.to_lowercase().str.starts_with("mtia").any() if host.height else False:
        device_type = "mtia"
    else:
        device_type = "cpu"
    return {  # the header is any JSON: a rank of 2**63 broke the Int64 rank column (fuzz)
        "rank": int64(rank),
        "world_size": int64(world),
        "format": "kineto",
        "source": str(path),
        "device_name": device_name,
        "device_type": device_type,
        "device_memory_bytes": device_memory,
    }
