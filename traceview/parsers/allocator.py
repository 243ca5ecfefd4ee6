"""Kineto's allocator records (`[memory]` instant events) to the canonical memory frames.

torch.profiler(profile_memory=True) writes one instant event per allocation and release of the
caching allocator, on the thread that asked for it: `Bytes` (> 0 allocated, < 0 released), `Addr`,
`Device Type` / `Device Id`, and since PyTorch 1.10 `Total Allocated` / `Total Reserved` after the
event. `kineto_memory` turns them into `memory_events` (one row each) and `memory_allocations` (one
row per block: an allocation paired with the next event at the same address, and the operators
running on the thread when it was made). Definitions of the columns: `traceview.schema`.
"""

from __future__ import annotations

import polars as pl

from traceview import schema
from traceview.op_stack import running_ops

#: c10::DeviceType codes (torch/c10/core/DeviceType.h) -> the device_type text of memory_events.
DEVICE_TYPES = {
    0: "cpu",
    1: "cuda",
    2: "mkldnn",
    3: "opengl",
    4: "opencl",
    5: "ideep",
    6: "hip",
    7: "fpga",
    8: "maia",
    9: "xla",
    10: "vulkan",
    11: "metal",
    12: "xpu",
    13: "mps",
    14: "meta",
    15: "hpu",
    16: "ve",
    17: "lazy",
    18: "ipu",
    19: "mtia",
    20: "privateuse1",
}


def kineto_memory(memory: pl.DataFrame, host: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(memory_events, memory_allocations) of a rank from its `[memory]` events (`memory`: the
    parser's MEMORY_FRAME rows, in file order) and its host events (for the operators).

    A block's allocation is an event with `Bytes` > 0; its release is the next event at the same
    (device type, device, address): a release, or a new allocation there, which proves the block
    was gone (null when there is none: still allocated at the end of the trace). `op` / `top_op`:
    the innermost / outermost cpu_op running on the allocating thread at the allocation (an op
    runs over [start, end); zero-length ops run over nothing)."""
    if memory.is_empty():
        return schema.empty("memory_events"), schema.empty("memory_allocations")
    code = pl.col("Device Type")
    device_type = (
        code.replace_strict(DEVICE_TYPES, default=None, return_dtype=pl.String)
        .fill_null(pl.format("type {}", code))
        .fill_null("unknown")
    )
    events = memory.sort("ts_ns", "_i").select(
        device_type.alias("device_type"),
        pl.when((code != 0) & (pl.col("Device Id") >= 0)).then(pl.col("Device Id")).alias("device"),
        pl.lit(None, pl.String).alias("component"),
        "ts_ns",
        "pid",
        "tid",
        pl.col("Bytes").alias("bytes"),
        pl.col("Addr").alias("addr"),
        pl.col("Total Allocated").alias("total_allocated_bytes"),
        pl.col("Total Reserved").alias("total_reserved_bytes"),
        pl.lit(None, pl.Int64).alias("total_active_bytes"),
    )
    block = ["device_type", "device", "addr"]
    blocks = (
        events.filter(pl.col("addr").is_not_null() & pl.col("bytes").is_not_null())
        .with_row_index("_e")
        .sort([*block, "ts_ns", "_e"], nulls_last=True)
        .with_columns(pl.col("ts_ns").shift(-1).over(block).alias("release_ns"))
        .filter(pl.col("bytes") > 0)
        .sort("_e")
    )
    ops = enclosing_ops(blocks.select("pid", "tid", "ts_ns"), host)
    allocations = pl.concat([blocks, ops], how="horizontal").select(
        "device_type",
        "device",
        "op",
        "top_op",
        pl.col("bytes").alias("size_bytes"),
        pl.col("ts_ns").alias("alloc_ns"),
        "release_ns",
        "addr",
    )
    return events, allocations


def enclosing_ops(points: pl.DataFrame, host: pl.DataFrame) -> pl.DataFrame:
    """Per row of `points` (pid, tid, ts_ns), in order: `op`, the innermost host operator (kind
    "operator") of that thread running at ts_ns, and `top_op`, the outermost; null where none
    (`traceview.op_stack.running_ops`)."""
    ops = host.filter(pl.col("kind") == "operator").select("pid", "tid", "start_ns", "end_ns", "name")
    found = running_ops(points, ops).with_row_index("_p")
    names = ops.select("name").with_row_index("_i")
    for col, out in (("inner", "op"), ("outer", "top_op")):
        found = found.join(names.rename({"_i": col, "name": out}), on=col, how="left")
    return found.sort("_p").select("op", "top_op")
