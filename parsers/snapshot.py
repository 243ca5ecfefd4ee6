"""PyTorch CUDA memory snapshots (`torch.cuda.memory._dump_snapshot("x.pickle")`) -> memory frames.

A snapshot is a pickled dict (the schema of `torch.cuda.memory._snapshot`):
    segments: [{device, address, total_size, blocks: [{address, size, state, frames}], ...}]
        the allocator's state when the snapshot was taken: its segments (reserved memory) and their
        blocks (state "active_allocated", "active_pending_free" or "inactive");
    device_traces: [[{action, addr, size, stream, frames, time_us}, ...] per device]
        the history recorded since `_record_memory_history()`: alloc, free_requested,
        free_completed, segment_alloc, segment_free, segment_map, segment_unmap, oom, snapshot;
        `time_us` since PyTorch 2.1 (without it, an entry's number stands for its time);
    frames: [{filename, line, name}, ...], innermost first.

Pickle can run any code while loading, so the file is read with an unpickler that constructs no
object at all beyond the containers and scalars pickle builds itself (dict, list, tuple, str,
bytes, int, float, bool, None): any class or function reference (a GLOBAL / STACK_GLOBAL opcode,
a persistent id, an out-of-band buffer) ends the read with a one-line error, before anything runs.
Before that, `parsers.pickle_scan.check` reads its opcodes (building nothing) and refuses a pickle
bomb: a memo slot, a length or containers that would take far more memory than the file's size
(or than is available), or dict keys whose hashes can be made equal.

Into the canonical frames (`traceview.schema`), per device d (device_type "cuda", device d):
- memory_events: one row per entry that changes allocated or reserved memory. allocated after an
  entry = the allocated bytes at the snapshot (Σ size of its blocks that are not "inactive") − the
  changes of the later entries (alloc +size, free_completed −size); reserved likewise from the
  segments' total_size and segment_alloc / segment_map (+) and segment_free / segment_unmap (−).
  So the history ends exactly at the snapshot's state, and its peak is the allocator's.
- memory_allocations: one row per alloc entry, released by the next free_completed at its address
  (or a new alloc there, which proves it was gone; null: still allocated at the snapshot).
A snapshot without a history (recorded without `_record_memory_history`) gives one record per
device at time 0 with its state, and its live blocks as allocations at time 0; a device with
state but no history entries (while others have some) gets its state as one record at the
history's start. `op`: the innermost frame ("name (file:line)");
  `top_op`: the innermost frame outside PyTorch and the Python standard library, the user code
  that asked for it (null when the stack has none).
"""

from __future__ import annotations

import pickle
from pathlib import Path

import polars as pl

from traceview import schema
from traceview.errors import TraceError, Warnings
from traceview.parsers import memory, pickle_scan
from traceview.parsers.base import ParsedRank
from traceview.parsers.kineto_events import int64

PICKLE_SUFFIXES = (".pickle", ".pkl")
FIX = "pass a snapshot written by torch.cuda.memory._dump_snapshot"
NO_TIME = "memory history entries carry no time_us (PyTorch before 2.1): each entry's number stands for its time, in ns"
ALLOCATED = {"alloc": 1, "free_completed": -1}
RESERVED = {"segment_alloc": 1, "segment_map": 1, "segment_free": -1, "segment_unmap": -1}
#: Frames from these paths are the framework's, not the user's (`top_op` skips them).
LIBRARY_PATHS = ("/torch/", "/site-packages/", "/dist-packages/", "/lib/python3", "<frozen ")


STATE_ONLY = "snapshot without a memory history: the allocator's state when it was taken, at time 0"


def _state_only(segments: list, ends: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(one record per device with its state at time 0, its live blocks allocated at time 0)."""
    events = ends.select(
        pl.lit("cuda").alias("device_type"),
        "device",
        pl.lit(0, pl.Int64).alias("ts_ns"),
        pl.col("_end_a").alias("total_allocated_bytes"),
        pl.col("_end_r").alias("total_reserved_bytes"),
    )
    blocks = [
        (seg["device"], *_labels(b.get("frames")), int64(b.get("size")), int64(b.get("address")))
        for seg in segments
        if isinstance(seg, dict) and int64(seg.get("device")) is not None
        for b in (seg.get("blocks") if isinstance(seg.get("blocks"), list) else [])
        if isinstance(b, dict) and b.get("state") != "inactive"
    ]
    allocations = pl.DataFrame(
        blocks,
        schema={"device": pl.Int64, "op": pl.String, "top_op": pl.String, "size_bytes": pl.Int64, "addr": pl.Int64},
        orient="row",
    ).with_columns(pl.lit("cuda").alias("device_type"), pl.lit(0, pl.Int64).alias("alloc_ns"))
    return events, allocations


class _Refused(pickle.UnpicklingError):
    """The pickle asked for something beyond plain data."""


class _NoObjects(pickle.Unpickler):
    """An unpickler that builds plain data only: every reference to a class or function fails."""

    def find_class(self, module, name):
        raise _Refused(f"it refers to {module}.{name}")

    def persistent_load(self, pid):
        raise _Refused("it holds a persistent reference")


class _Chunks:
    """The bytes of a pickle as a file for the unpickler, which asks for them a frame or 128 KiB at a
    time (`peek`): a signal (Ctrl-C, SIGTERM) is taken at each ask, not only after the whole load."""

    def __init__(self, data: bytes):
        self._data = data
        self._at = 0

    def read(self, n: int = -1) -> bytes:
        end = len(self._data) if n is None or n < 0 else self._at + n
        out = self._data[self._at : end]
        self._at += len(out)
        return out

    def readinto(self, buffer) -> int:
        out = self.read(len(buffer))
        buffer[: len(out)] = out
        return len(out)

    def readline(self) -> bytes:
        end = self._data.find(b"\n", self._at)
        return self.read(-1 if end < 0 else end + 1 - self._at)

    def peek(self, n: int = 0) -> bytes:
        return self._data[self._at : self._at + max(n, 1)]


def load_plain(path: Path):
    """The pickled data of `path`, constructing nothing but containers and scalars, after
    `pickle_scan.check` (TraceError naming what the pickle asked for otherwise, or why it is a
    bomb)."""
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise TraceError(path, f"cannot read it: {exc.strerror or exc}") from None
    try:
        pickle_scan.check(data, memory.available())
    except pickle_scan.Refused as exc:
        raise TraceError(path, exc.problem, exc.fix or FIX) from None
    try:
        return _NoObjects(_Chunks(data)).load()
    except _Refused as exc:
        raise TraceError(
            path, f"not a plain-data pickle, refused without running it: {exc}", FIX + " (plain dicts and lists)"
        ) from None
    except (
        pickle.UnpicklingError,
        EOFError,
        ValueError,
        TypeError,
        IndexError,
        KeyError,
        AttributeError,
        OverflowError,
        MemoryError,
        RecursionError,
    ) as exc:
        raise TraceError(path, f"not a readable pickle ({type(exc).__name__}: {exc})"[:300], FIX) from None


def _plain(value) -> str:
    """A frame field as text: only text and integers are formatted (anything else, "?")."""
    return value if type(value) is str else str(value) if type(value) is int else "?"


def _frame_text(frame) -> str | None:
    if not isinstance(frame, dict):
        return None
    return f"{_plain(frame.get('name'))} ({_plain(frame.get('filename'))}:{_plain(frame.get('line'))})"


def _labels(frames) -> tuple[str | None, str | None]:
    """(innermost frame, innermost frame of user code) of a stack, as text."""
    if not isinstance(frames, list) or not frames:
        return None, None
    user = next(
        (
            f
            for f in frames
            if isinstance(f, dict)
            and type(f.get("filename")) is str
            and f["filename"].endswith(".py")
            and not any(p in f["filename"] for p in LIBRARY_PATHS)
        ),
        None,
    )
    return _frame_text(frames[0]), _frame_text(user)


def parse_snapshot(path: Path) -> ParsedRank:
    """The memory frames of one snapshot file (module docstring); TraceError if it is not one."""
    path = Path(path)
    doc = load_plain(path)
    if not isinstance(doc, dict) or not isinstance(doc.get("segments"), list):
        keys = ", ".join(map(_plain, list(doc)[:5])) if isinstance(doc, dict) else type(doc).__name__
        raise TraceError(path, f"not a PyTorch memory snapshot: no 'segments' list ({keys})", FIX)
    warn = Warnings(path)
    traces = doc.get("device_traces") if isinstance(doc.get("device_traces"), list) else []
    end_allocated: dict[int, int] = {}
    end_reserved: dict[int, int] = {}
    for seg in doc["segments"]:
        if not isinstance(seg, dict) or int64(seg.get("device")) is None:
            continue
        d = seg["device"]
        end_reserved[d] = end_reserved.get(d, 0) + (int64(seg.get("total_size")) or 0)
        for block in seg.get("blocks") if isinstance(seg.get("blocks"), list) else []:
            if isinstance(block, dict) and block.get("state") != "inactive":
                end_allocated[d] = end_allocated.get(d, 0) + (int64(block.get("size")) or 0)
    rows = []
    timed = True
    for d, entries in enumerate(traces):
        for k, e in enumerate(entries if isinstance(entries, list) else []):
            if not isinstance(e, dict):
                continue
            action = e.get("action")
            size = int64(e.get("size")) or 0
            t = e.get("time_us")
            timed &= type(t) is int
            op, top = _labels(e.get("frames")) if action == "alloc" else (None, None)
            rows.append((d, k, t if type(t) is int else None, action, int64(e.get("addr")), size, op, top))
    frame = pl.DataFrame(
        rows,
        schema={
            "device": pl.Int64,
            "k": pl.Int64,
            "time_us": pl.Int64,
            "action": pl.String,
            "addr": pl.Int64,
            "size": pl.Int64,
            "op": pl.String,
            "top_op": pl.String,
        },
        orient="row",
    )
    if not timed and frame.height:
        warn.add(NO_TIME, frame.height)
    ts = (pl.col("time_us") * 1000) if timed else pl.col("k")
    delta = pl.col("action").replace_strict(ALLOCATED, default=0, return_dtype=pl.Int64) * pl.col("size")
    delta_r = pl.col("action").replace_strict(RESERVED, default=0, return_dtype=pl.Int64) * pl.col("size")
    ends = pl.DataFrame(
        {
            "device": list({*end_allocated, *end_reserved, *range(len(traces))}),
        },
        schema={"device": pl.Int64},
    ).with_columns(
        pl.col("device").replace_strict(end_allocated, default=0, return_dtype=pl.Int64).alias("_end_a"),
        pl.col("device").replace_strict(end_reserved, default=0, return_dtype=pl.Int64).alias("_end_r"),
    )
    frame = (
        frame.with_columns(ts.alias("ts_ns"), delta.alias("_da"), delta_r.alias("_dr"))
        .join(ends, on="device", how="left")
        .with_columns(  # after entry i: the snapshot's value minus the changes after i
            (pl.col("_end_a") - pl.col("_da").sum().over("device") + pl.col("_da").cum_sum().over("device")).alias(
                "total_allocated_bytes"
            ),
            (pl.col("_end_r") - pl.col("_dr").sum().over("device") + pl.col("_dr").cum_sum().over("device")).alias(
                "total_reserved_bytes"
            ),
        )
    )
    events = frame.filter((pl.col("_da") != 0) | (pl.col("_dr") != 0)).select(
        pl.lit("cuda").alias("device_type"),
        "device",
        "ts_ns",
        pl.col("_da").alias("bytes"),
        "addr",
        "total_allocated_bytes",
        "total_reserved_bytes",
    )
    ends_of_blocks = (
        frame.filter(pl.col("action").is_in(["alloc", "free_completed"]))
        .sort("device", "addr", "k")
        .with_columns(pl.col("ts_ns").shift(-1).over("device", "addr").alias("release_ns"))
        .filter(pl.col("action") == "alloc")
        .sort("device", "k")
    )
    allocations = ends_of_blocks.select(
        pl.lit("cuda").alias("device_type"),
        "device",
        "op",
        "top_op",
        pl.col("size").alias("size_bytes"),
        pl.col("ts_ns").alias("alloc_ns"),
        "release_ns",
        "addr",
    )
    if events.is_empty() and (end_allocated or end_reserved):
        warn.add(STATE_ONLY, 1)
        events, allocations = _state_only(doc["segments"], ends)
    else:  # a device with state but no history: its state, from the history's start
        quiet = ends.join(events.select("device").unique(), on="device", how="anti")
        if quiet.height:
            start = int(events["ts_ns"].min()) if events.height else 0
            state, _ = _state_only([], quiet)
            events = pl.concat([events, state.with_columns(pl.lit(start, pl.Int64).alias("ts_ns"))], how="diagonal")
    meta = {
        "rank": None,
        "world_size": None,
        "format": "snapshot",
        "source": str(path),
        "device_name": None,
        "device_type": "gpu",
        "device_memory_bytes": None,
    }
    return ParsedRank.build(
        {
            "memory_events": schema.conform(events, "memory_events"),
            "memory_allocations": schema.conform(allocations, "memory_allocations"),
        },
        meta,
        warn.messages(),
    )
