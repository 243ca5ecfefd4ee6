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
(or than is available), or dict keys whose hashes can be made equal. After it, the walk through
the snapshot refuses a segment, block, block list, history or history entry that is the same
object as one read before (PyTorch never shares them; a pickle that does makes each reference a
full walk: 2,000 references to one history of 2,000 entries are 4 M entries from 100 kB), and
reads each stack (a frame list, shared where blocks and entries have the same stack) and each
frame once. A frame's name and file name are cut to FIELD_CHARS characters (counted).

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

import itertools
import pickle
from pathlib import Path

import polars as pl

from traceview import schema
from traceview.errors import TraceError, Warnings
from traceview.parsers import host_ram, pickle_scan
from traceview.parsers.base import ParsedRank
from traceview.parsers.kineto_events import int64

PICKLE_SUFFIXES = (".pickle", ".pkl")
FIX = "pass a snapshot written by torch.cuda.memory._dump_snapshot"
NO_TIME = "memory history entries carry no time_us (PyTorch before 2.1): each entry's number stands for its time, in ns"
ALLOCATED = {"alloc": 1, "free_completed": -1}
RESERVED = {"segment_alloc": 1, "segment_map": 1, "segment_free": -1, "segment_unmap": -1}
#: The actions that change allocated or reserved memory (any other is read as missing).
COUNTED = frozenset({*ALLOCATED, *RESERVED})
#: Frames from these paths are the framework's, not the user's (`top_op` skips them).
LIBRARY_PATHS = ("/torch/", "/site-packages/", "/dist-packages/", "/lib/python3", "<frozen ")
#: The most characters of a frame's name or file name kept in `op` / `top_op` (a longer one is cut,
#: with "…", and counted: FIELD_CUT); every allocation's row holds its text.
FIELD_CHARS = 500
FIELD_CUT = f"stack frame names or file names longer than {FIELD_CHARS} characters cut to {FIELD_CHARS}"
ODD_ACTION = "memory history entries whose action is not text read as changing nothing"
#: The most device histories read (PyTorch writes one per visible GPU).
MOST_DEVICES = 4096
#: The largest |time_us| read (292 years in µs): its time in ns fits Int64.
MOST_US = (2**63 - 1) // 1000
SHARED = (
    "is the same object as one read before: a snapshot written by PyTorch never shares its segments, blocks "
    "or history entries, and a pickle that does can make a small file a walk of billions of entries (a pickle bomb)"
)


STATE_ONLY = "snapshot without a memory history: the allocator's state when it was taken, at time 0"


def _state_only(segments: list, ends: pl.DataFrame, stacks: _Stacks) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(one record per device with its state at time 0, its live blocks allocated at time 0)."""
    events = ends.select(
        pl.lit("cuda").alias("device_type"),
        "device",
        pl.lit(0, pl.Int64).alias("ts_ns"),
        pl.col("_end_a").alias("total_allocated_bytes"),
        pl.col("_end_r").alias("total_reserved_bytes"),
    )
    blocks = [
        (seg["device"], *stacks.labels(b.get("frames")), int64(b.get("size")), int64(b.get("address")))
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
        pickle_scan.check(data, host_ram.available())
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
    """A field as text: only text and Int64 integers are formatted (anything else, "?")."""
    return value if type(value) is str else str(value) if int64(value) is not None else "?"


class _Stacks:
    """The labels of stacks, each frame list and each frame read once (by identity: PyTorch shares
    frames between stacks, and a stack between a block and the entry that allocated it), however
    many times the pickle refers to them; `cut`: frame fields cut to FIELD_CHARS."""

    def __init__(self):
        self._stacks: dict[int, tuple[str | None, str | None]] = {}
        self._frames: dict[int, tuple[str, bool] | None] = {}
        self.cut = 0

    def _field(self, value) -> str:
        text = _plain(value)
        if len(text) > FIELD_CHARS:
            self.cut += 1
            return text[: FIELD_CHARS - 1] + "…"
        return text

    def _frame(self, frame) -> tuple[str, bool] | None:
        """(the frame as "name (file:line)", whether it is user code), None if not a dict."""
        key = id(frame)
        if key not in self._frames:
            if not isinstance(frame, dict):
                self._frames[key] = None
            else:
                file = frame.get("filename")
                user = type(file) is str and file.endswith(".py") and not any(p in file for p in LIBRARY_PATHS)
                text = f"{self._field(frame.get('name'))} ({self._field(file)}:{self._field(frame.get('line'))})"
                self._frames[key] = (text, user)
        return self._frames[key]

    def labels(self, frames) -> tuple[str | None, str | None]:
        """(innermost frame, innermost frame of user code) of a stack, as text."""
        if not isinstance(frames, list) or not frames:
            return None, None
        key = id(frames)
        if key not in self._stacks:
            first = self._frame(frames[0])
            user = next((f[0] for f in map(self._frame, frames) if f is not None and f[1]), None)
            self._stacks[key] = (first[0] if first else None, user)
        return self._stacks[key]


def parse_snapshot(path: Path) -> ParsedRank:
    """The memory frames of one snapshot file (module docstring); TraceError if it is not one."""
    path = Path(path)
    doc = load_plain(path)
    if not isinstance(doc, dict) or not isinstance(doc.get("segments"), list):
        keys = ", ".join(map(_plain, itertools.islice(doc, 5))) if isinstance(doc, dict) else type(doc).__name__
        raise TraceError(path, f"not a PyTorch memory snapshot: no 'segments' list ({keys[:300]})", FIX)
    warn = Warnings(path)
    traces = doc.get("device_traces") if isinstance(doc.get("device_traces"), list) else []
    if len(traces) > MOST_DEVICES:
        raise TraceError(
            path,
            f"not a PyTorch memory snapshot: {len(traces):,} device histories (device_traces holds one per GPU; "
            f"more than {MOST_DEVICES:,} is a damaged file or a pickle bomb)",
            FIX,
        )
    seen: set[int] = set()  # the segments, blocks, histories and entries read (by identity)

    def once(record, what: str) -> None:
        if id(record) in seen:
            raise TraceError(path, f"{what} {SHARED}", FIX)
        seen.add(id(record))

    end_allocated: dict[int, int] = {}
    end_reserved: dict[int, int] = {}
    for i, seg in enumerate(doc["segments"]):
        if not isinstance(seg, dict) or int64(seg.get("device")) is None:
            continue
        once(seg, f"segment {i}")
        d = seg["device"]
        end_reserved[d] = end_reserved.get(d, 0) + (int64(seg.get("total_size")) or 0)
        blocks = seg.get("blocks")
        if not isinstance(blocks, list):
            continue
        once(blocks, f"the block list of segment {i}")
        for b, block in enumerate(blocks):
            if isinstance(block, dict):
                once(block, f"block {b} of segment {i}")
                if block.get("state") != "inactive":
                    end_allocated[d] = end_allocated.get(d, 0) + (int64(block.get("size")) or 0)
    stacks = _Stacks()
    rows = []
    timed = True
    odd = 0
    for d, entries in enumerate(traces):
        if not isinstance(entries, list):
            continue
        once(entries, f"the history of device {d}")
        for k, e in enumerate(entries):
            if not isinstance(e, dict):
                continue
            if id(e) in seen:
                once(e, f"entry {k} of the history of device {d}")
            seen.add(id(e))
            action = e.get("action")
            if type(action) is not str:
                odd += action is not None
                action = None
            elif action not in COUNTED:
                action = None
            size = int64(e.get("size")) or 0
            t = e.get("time_us")
            t = t if type(t) is int and -MOST_US <= t <= MOST_US else None
            timed &= t is not None
            op, top = stacks.labels(e.get("frames")) if action == "alloc" else (None, None)
            rows.append((d, k, t, action, int64(e.get("addr")), size, op, top))
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
        events, allocations = _state_only(doc["segments"], ends, stacks)
    else:  # a device with state but no history: its state, from the history's start
        quiet = ends.join(events.select("device").unique(), on="device", how="anti")
        if quiet.height:
            start = int(events["ts_ns"].min()) if events.height else 0
            state, _ = _state_only([], quiet, stacks)
            events = pl.concat([events, state.with_columns(pl.lit(start, pl.Int64).alias("ts_ns"))], how="diagonal")
    warn.add(FIELD_CUT, stacks.cut)
    warn.add(ODD_ACTION, odd)
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
