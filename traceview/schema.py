"""The canonical model of a profile: the frames every parser fills and every analysis reads.

One profile (one rank or thousands) is held as a few polars DataFrames, each with one row per
thing and the columns below. Timestamps are Int64 nanoseconds on the rank's own clock; missing
values are null (never -1). Column names carry their unit (`_ns`, `_bytes`, ...).

`docs/schema.md` is generated from this module (`python -m traceview.schema > docs/schema.md`),
so the tables there and the dtypes here cannot drift apart.
"""

from __future__ import annotations

import functools

import polars as pl

#: Kinds of device task. COMP = kernel + memset, COMM = communication, MEM = memcpy (docs/metrics.md).
TASK_KINDS = ("kernel", "memset", "memcpy", "communication")

#: Kinds of host event.
HOST_KINDS = ("operator", "annotation", "python", "runtime", "other")

# Each table: column -> (dtype, description). Order is the column order of the frame.
DEVICE_TASKS: dict[str, tuple[pl.DataType, str]] = {
    "rank": (pl.Int64, "Rank the task ran on (null when the trace does not say)."),
    "device": (pl.Int64, "Device index on the host (GPU ordinal / NPU device id); null if unknown."),
    "stream": (pl.Int64, "Stream (GPU) or Stream ID (Ascend) the task was queued on."),
    "name": (pl.String, "Kernel / op name as recorded (untrusted text)."),
    "kind": (pl.String, "kernel, memset, memcpy or communication (see TASK_KINDS)."),
    "start_ns": (pl.Int64, "Start on the rank's clock, ns."),
    "end_ns": (pl.Int64, "End on the rank's clock, ns (start_ns + dur_ns)."),
    "dur_ns": (pl.Int64, "Duration, ns (>= 0)."),
    "correlation": (pl.Int64, "Launch correlation id linking to host_events.correlation; null if none."),
    "external_id": (pl.Int64, "Kineto 'External id' of the launching operator; null if none."),
    "step": (pl.Int64, "Step (ProfilerStep#N / Ascend Step Id) the task belongs to; null if outside steps."),
    "op_type": (pl.String, "Ascend op `Type` (e.g. MatMulV2); null for GPU traces."),
    "core_type": (pl.String, "Ascend `Accelerator Core` (AI_CORE, AI_VECTOR_CORE, HCCL, ...); null for GPU."),
    "input_shapes": (
        pl.String,
        "Input shapes of the op, one ';'-separated entry per input in order, a tensor's dims joined by ',' "
        '("8192,4096;4096,4096"; an input without dims, e.g. a scalar, is an empty entry; a tensor-list input '
        "gives one entry per tensor). Ascend: `Input Shapes` as written; MindSpore: the `input_<i>` shapes. Kineto: the `Input Dims` of the cpu_op "
        "with the kernel's External id, when the profile was recorded with record_shapes=True; null otherwise "
        "(and for memcpy/memset).",
    ),
    "input_types": (
        pl.String,
        "Ascend: the op's `Input Data Types`, one ';'-separated entry per input (FLOAT;FLOAT16;DT_BF16); null for "
        "GPU traces (a Kineto operator's dtypes are in op_inputs).",
    ),
    "output_shapes": (pl.String, "Ascend: the op's `Output Shapes`, as input_shapes writes them; null for GPU traces."),
    "grid": (pl.String, "GPU launch grid as 'x,y,z'; null if not recorded."),
    "block": (pl.String, "GPU launch block as 'x,y,z'; null if not recorded."),
    "bytes": (pl.Int64, "Bytes moved (memcpy/memset), when recorded."),
    "aic_mac_ns": (pl.Int64, "Ascend cube (matrix) unit busy time, ns (`aic_mac_time(us)`); null if absent."),
    "aiv_vec_ns": (pl.Int64, "Ascend vector unit busy time, ns (`aiv_vec_time(us)`); null if absent."),
    "collective": (
        pl.String,
        "Communication tasks: canonical collective (allreduce, allgather, reduce_scatter, alltoall, broadcast, "
        "reduce, gather, scatter, send, recv, sendrecv, barrier, coalesced; else the recorded name, lower-cased), "
        "from the Kineto 'Collective name' arg or the task name (Ascend hcom_*); null otherwise.",
    ),
    "process_group": (
        pl.String,
        "Communication tasks: process group (Kineto 'Process Group Name'; Ascend communicator group from "
        "communication.json); null if not recorded.",
    ),
    "group_size": (
        pl.Int64,
        "Communication tasks: ranks in the process group (Kineto 'Group size'); null if not recorded.",
    ),
    "msg_bytes": (
        pl.Int64,
        "Communication tasks: message size in bytes = max(In msg nelems, Out msg nelems) x dtype size "
        "(the nccl-tests size S); null if not recorded.",
    ),
    "scope": (
        pl.String,
        "The op's framework scope path when the trace records one (MindSpore `fullname` / `op_full_name`, e.g. "
        "'Gradients/Default/network-WithLossCell/.../Conv2D-op1'); null otherwise.",
    ),
}

HOST_EVENTS: dict[str, tuple[pl.DataType, str]] = {
    "rank": (pl.Int64, "Rank of the process that recorded the event."),
    "pid": (pl.Int64, "Process id; null if the trace wrote a non-numeric pid."),
    "tid": (pl.Int64, "Thread id; null if the trace wrote a non-numeric tid."),
    "name": (pl.String, "Operator / function / API name (untrusted text)."),
    "cat": (pl.String, "Category as written by the profiler (cpu_op, cuda_runtime, ...)."),
    "kind": (pl.String, "operator, annotation, python, runtime or other (see HOST_KINDS)."),
    "start_ns": (pl.Int64, "Start on the rank's clock, ns."),
    "end_ns": (pl.Int64, "End on the rank's clock, ns."),
    "dur_ns": (pl.Int64, "Duration, ns."),
    "correlation": (pl.Int64, "Launch correlation id (runtime/driver calls); null otherwise."),
    "external_id": (pl.Int64, "Kineto 'External id'; null if none."),
}

DEVICE_ANNOTATIONS: dict[str, tuple[pl.DataType, str]] = {
    "rank": (pl.Int64, "Rank."),
    "device": (pl.Int64, "Device index; null if unknown."),
    "stream": (pl.Int64, "Stream the annotation was recorded on; null if unknown."),
    "name": (pl.String, "Annotation name, e.g. ProfilerStep#3 (Kineto cat gpu_user_annotation)."),
    "start_ns": (pl.Int64, "Start, ns."),
    "end_ns": (pl.Int64, "End, ns."),
}

STEPS: dict[str, tuple[pl.DataType, str]] = {
    "rank": (pl.Int64, "Rank."),
    "step": (pl.Int64, "Step number N of ProfilerStep#N (Ascend: Step Id)."),
    "host_start_ns": (pl.Int64, "Start of the host ProfilerStep#N range, ns; null if not recorded."),
    "host_end_ns": (pl.Int64, "End of the host ProfilerStep#N range, ns; null if not recorded."),
    "device_start_ns": (pl.Int64, "Start of the step's device window, ns; null if no device task."),
    "device_end_ns": (pl.Int64, "End of the step's device window, ns; null if no device task."),
    "window_rule": (
        pl.String,
        "How the device window was found: gpu_annotation (GPU-side ProfilerStep#N), correlation "
        "(device tasks launched inside the host step), step_id (Ascend Step Id), none.",
    ),
}

RANKS: dict[str, tuple[pl.DataType, str]] = {
    "rank": (pl.Int64, "Rank (Kineto distributedInfo.rank, Ascend profiler_info rank_id); null if unknown."),
    "world_size": (pl.Int64, "World size when recorded; null if unknown."),
    "format": (
        pl.String,
        "kineto, ascend, mindspore, msprof (a CANN msprof_*.db), nsys (an Nsight Systems SQLite export), "
        "rocprof (rocprofv3 JSON or CSV output) or snapshot (a PyTorch CUDA memory snapshot).",
    ),
    "source": (pl.String, "Path of the file or folder the rank was read from."),
    "device_name": (pl.String, "Device model (deviceProperties name); null if not recorded."),
    "device_type": (pl.String, "gpu, npu, mtia, cpu (no device tasks) or null."),
    "device_memory_bytes": (
        pl.Int64,
        "Memory of the rank's device, bytes (Kineto deviceProperties `totalGlobalMem` of the device its tasks "
        "ran on, or of every listed device when all have the same); null if not recorded.",
    ),
    "graph_capture": (
        pl.Boolean,
        "The trace captures CUDA/HIP graphs and replays none (stream-capture calls, no graph launch: "
        "task_kinds.toml [graphs]): the capture of the graphs a run replays, not the run. Beside the "
        "execution trace of the same rank it is that rank's companion, not a rank (Trace.companions).",
    ),
}

#: The memory allocator's records: Kineto `[memory]` instant events (torch.profiler(profile_memory=True)),
#: torch_npu memory_record.csv rows.
MEMORY_EVENTS: dict[str, tuple[pl.DataType, str]] = {
    "rank": (pl.Int64, "Rank."),
    "device_type": (
        pl.String,
        "Memory's device: cpu, cuda, hip, npu, xpu, mps, mtia, ... (Kineto `Device Type` code; Ascend `NPU:0` -> npu); "
        "'type N' for a code traceview does not know.",
    ),
    "device": (pl.Int64, "Device index (Kineto `Device Id`, Ascend `NPU:<id>`); null for host memory."),
    "component": (
        pl.String,
        "Ascend memory_record Component (PTA: torch_npu's caching allocator, GE: the graph engine, PTA+GE: both, "
        "APP: the whole process, reserved only); `module <NAME>` for a CANN module of npu_module_mem.csv (reserved "
        "only); `cudaMalloc` for an Nsight export's CUDA memory usage events (the device memory the process "
        "allocated, counted as reserved from the capture start); null for Kineto (PyTorch's caching allocator).",
    ),
    "ts_ns": (pl.Int64, "When the allocator recorded it, on the rank's clock, ns."),
    "pid": (pl.Int64, "Process of the allocating thread (Kineto); null if not recorded."),
    "tid": (pl.Int64, "Allocating thread (Kineto); null if not recorded."),
    "bytes": (
        pl.Int64,
        "Change of allocated memory, bytes: > 0 allocation, < 0 release (Kineto `Bytes`); null when the source "
        "records totals only (Ascend memory_record).",
    ),
    "addr": (pl.Int64, "Address of the block (Kineto `Addr`); null if not recorded."),
    "total_allocated_bytes": (
        pl.Int64,
        "Memory allocated on the device after this event, bytes (Kineto `Total Allocated`; Ascend "
        "`Total Allocated(MB)` x 2^20); null if not recorded (traces before PyTorch 1.10).",
    ),
    "total_reserved_bytes": (
        pl.Int64,
        "Memory the allocator holds from the device (cached), bytes (`Total Reserved`); null if not recorded.",
    ),
    "total_active_bytes": (
        pl.Int64,
        "Ascend `Total Active(MB)` x 2^20 (allocated, plus blocks released but still in use by a stream); "
        "null if not recorded.",
    ),
}

#: One row per memory block: its allocation, its release and the operator that asked for it.
MEMORY_ALLOCATIONS: dict[str, tuple[pl.DataType, str]] = {
    "rank": (pl.Int64, "Rank."),
    "device_type": (pl.String, "As in memory_events."),
    "device": (pl.Int64, "As in memory_events."),
    "op": (
        pl.String,
        "Operator that allocated the block: Ascend operator_memory.csv `Name`; Kineto: the innermost cpu_op "
        "running on the allocating thread at the allocation; memory snapshot: the innermost frame of its stack, "
        "'name (file:line)' (untrusted text); null if none.",
    ),
    "top_op": (
        pl.String,
        "The outermost cpu_op running on the allocating thread at the allocation (Kineto: aten::linear for an "
        "aten::empty inside it); memory snapshot: the innermost frame of user code (outside PyTorch and the "
        "Python library); null when not known (Ascend rows carry no thread).",
    ),
    "size_bytes": (pl.Int64, "Size of the block, bytes (Ascend `Size(KB)` x 1024)."),
    "alloc_ns": (pl.Int64, "Allocation time, ns."),
    "release_ns": (pl.Int64, "Release time, ns; null when the block was still allocated at the end of the trace."),
    "addr": (pl.Int64, "Address of the block; null if not recorded."),
}

#: Ascend per-step ground truth as torch_npu wrote it (step_trace_time.csv), kept for comparison only.
ASCEND_STEP_TRACE: dict[str, tuple[pl.DataType, str]] = {
    "rank": (pl.Int64, "Rank."),
    "step": (pl.Int64, "Step; null when torch_npu wrote an empty Step cell (whole trace)."),
    "computing_us": (pl.Float64, "Computing, µs, as written by torch_npu."),
    "communication_not_overlapped_us": (pl.Float64, "Communication(Not Overlapped), µs."),
    "overlapped_us": (pl.Float64, "Overlapped, µs."),
    "communication_us": (pl.Float64, "Communication, µs."),
    "free_us": (pl.Float64, "Free, µs."),
    "stage_us": (pl.Float64, "Stage, µs."),
    "bubble_us": (pl.Float64, "Bubble, µs."),
    "communication_not_overlapped_exclude_receive_us": (
        pl.Float64,
        "Communication(Not Overlapped and Exclude Receive), µs.",
    ),
    "preparing_us": (pl.Float64, "Preparing, µs; null when the column is absent."),
}

#: Ascend communication.json: one row per communication op and step, times as torch_npu wrote them.
ASCEND_COMMUNICATION: dict[str, tuple[pl.DataType, str]] = {
    "rank": (pl.Int64, "Rank."),
    "step": (pl.Int64, "Step parsed from the 'stepN' key; null if not numeric."),
    "group": (pl.String, "'collective' or 'p2p' (the JSON level under the step), when present."),
    "op_name": (pl.String, "Communication op name, e.g. hcom_allReduce__123_0_1 (the part before '@')."),
    "comm_group": (pl.String, "Communicator group: the '@<group>' suffix of the JSON key; null if none."),
    "start_ns": (pl.Int64, "Start Timestamp(us) converted to ns."),
    "elapse_ms": (pl.Float64, "Elapse Time(ms)."),
    "transit_ms": (pl.Float64, "Transit Time(ms)."),
    "wait_ms": (pl.Float64, "Wait Time(ms)."),
    "synchronization_ms": (pl.Float64, "Synchronization Time(ms)."),
    "idle_ms": (pl.Float64, "Idle Time(ms)."),
}

OP_INPUTS: dict[str, tuple[pl.DataType, str]] = {
    "rank": (pl.Int64, "Rank."),
    "external_id": (pl.Int64, "Kineto 'External id' of the operator call (host_events.external_id)."),
    "name": (pl.String, "Operator name (one listed in traceview/rules/op_flops.toml)."),
    "input_shapes": (pl.String, "Its `Input Dims`, as device_tasks.input_shapes writes them ('141,512;512,512;')."),
    "input_types": (
        pl.String,
        "Its `Input type`, one ';'-separated entry per input ('c10::BFloat16;c10::BFloat16;Scalar').",
    ),
    "concrete_inputs": (
        pl.String,
        "Its `Concrete Inputs` (the values of scalar and list arguments; empty for a tensor), one ';'-separated "
        "entry per input (';;;[16, 16];[0, 0];[1, 1];False;[0, 0];1' for a convolution).",
    ),
}

TABLES: dict[str, dict[str, tuple[pl.DataType, str]]] = {
    "device_tasks": DEVICE_TASKS,
    "host_events": HOST_EVENTS,
    "device_annotations": DEVICE_ANNOTATIONS,
    "steps": STEPS,
    "ranks": RANKS,
    "ascend_step_trace": ASCEND_STEP_TRACE,
    "ascend_communication": ASCEND_COMMUNICATION,
    "memory_events": MEMORY_EVENTS,
    "memory_allocations": MEMORY_ALLOCATIONS,
    "op_inputs": OP_INPUTS,
}


@functools.cache
def polars_schema(table: str) -> pl.Schema:
    """The polars schema (column -> dtype) of one canonical table (built once; do not modify it)."""
    return pl.Schema({col: dtype for col, (dtype, _) in TABLES[table].items()})


@functools.cache
def _empty(table: str) -> pl.DataFrame:
    return pl.DataFrame(schema=polars_schema(table))


def empty(table: str) -> pl.DataFrame:
    """An empty frame of one canonical table (polars frames are immutable: one is shared)."""
    return _empty(table)


def conform(df: pl.DataFrame, table: str) -> pl.DataFrame:
    """Return `df` with exactly the columns of `table`, in order, cast to their dtypes.

    Columns the parser did not produce are added as nulls; extra columns are dropped. Casts are
    strict: a parser that produces a wrong type is a bug, not bad input. A frame that already
    conforms is returned as it is.
    """
    schema = polars_schema(table)
    if df.schema == schema:
        return df
    exprs = []
    for col, dtype in schema.items():
        if col in df.columns:
            exprs.append(pl.col(col).cast(dtype))
        else:
            exprs.append(pl.lit(None, dtype=dtype).alias(col))
    return df.select(exprs)


def markdown() -> str:
    """The schema as Markdown tables (the content of docs/schema.md)."""
    lines = [
        "# traceview canonical schema",
        "",
        "Generated by `python -m traceview.schema > docs/schema.md` from `traceview/schema.py`; do not edit.",
        "",
        "All timestamps are Int64 nanoseconds on the rank's own clock. Missing values are null.",
        "A `Trace` (from `traceview.load`) holds one frame per table, all ranks concatenated.",
        "",
    ]
    for table, cols in TABLES.items():
        lines += [f"## `{table}`", "", "| column | dtype | meaning |", "|---|---|---|"]
        for col, (dtype, doc) in cols.items():
            lines.append(f"| `{col}` | {dtype} | {doc} |")
        lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":  # pragma: no cover - doc generator
    print(markdown(), end="")
