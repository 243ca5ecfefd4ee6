"""The rows of one rank's section of the summary document (`traceview.summary_doc`), declared as
msgspec Structs: its step and whole-trace terms, compute classes, top kernels, device phases,
stream idle, launch delays, long steps, memory series and roofline."""

from __future__ import annotations

import msgspec
from msgspec import UNSET, UnsetType


class Row(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """A declared row: every key named, none other accepted."""


class MemoryStepRow(Row):
    """The peak of one step of a memory series (bytes; `ranks[].memory[].steps[]`)."""

    peak_allocated_bytes: int | None
    peak_reserved_bytes: int | None
    step: int


class AtPeakRow(Row):
    """An operator's live bytes at the series' peak (`ranks[].memory[].at_peak[]`)."""

    blocks: int | None
    live_bytes: int
    operator: str
    share_frac: float | None


class TracedFlopsRow(Row):
    """Traced FLOPs, TFLOP/s and MFU of one step of a rank (`ranks[].roofline.steps[]`)."""

    calls: int
    flops_coverage_frac: float | None
    matrix_flops: float | None
    peak_dtype: str | None
    peak_tflops: float | None
    step: int
    step_time_us: float | None
    traced_flops: float | None
    traced_mfu_frac: float | None
    traced_note: str | None
    traced_tflops_per_device: float | None


class AnatomyRow(Row):
    """One operator family's share of the traced FLOPs and device time
    (`ranks[].roofline.anatomy[]`)."""

    device_time_frac: float | None
    device_time_us: float | None
    family: str
    flops: float | None
    flops_frac: float | None


class RooflineRow(Row):
    """One operator (dims, dtype, algorithm) against its roofline
    (`ranks[].roofline.operators[]`)."""

    achieved_tbps: float | None
    achieved_tflops_per_s: float | None
    algorithm: str | None
    bound: str | None
    bytes: float | None
    concrete_inputs: str | None
    count: int
    device_time_us: float | None
    dtype: str | None
    expected_us: float | None
    family: str
    gflop: float | None
    input_dims: str | None
    input_types: str | None
    intensity_flop_per_byte: float | None
    memory_tbps: float | None
    op: str
    peak_frac: float | None
    peak_tflops: float | None
    roofline_frac: float | None


class TraceTerms(Row):
    """The step terms (µs) over the rank's whole trace (first to last device task;
    `ranks[].trace`)."""

    bubble_us: float | None
    busy_us: float | None
    communication_not_overlapped_exclude_receive_us: float | None
    communication_not_overlapped_frac: float | None
    communication_not_overlapped_us: float | None
    communication_us: float | None
    computing_not_overlapped_us: float | None
    computing_us: float | None
    duration_us: float | None
    exposed_memcpy_us: float | None
    free_us: float | None
    idle_us: float | None
    overlapped_us: float | None
    pipeline_bubble_us: float | None
    preparing_us: float | None
    stage_us: float | None
    start_us: float | None


class StepRow(TraceTerms):
    """One step of a rank: the step terms (`TraceTerms`) in its device window, the gap before it, and
    its iteration (terms and phases, µs; `ranks[].steps[]`)."""

    data_loading_us: float | None
    device_backward_us: float | None
    device_forward_us: float | None
    device_optimizer_us: float | None
    device_other_us: float | None
    gap_before_us: float | None
    host_framework_us: float | None
    host_overhead_us: float | None
    host_runtime_us: float | None
    iteration_computing_us: float | None
    iteration_exposed_comm_us: float | None
    iteration_exposed_memcpy_us: float | None
    iteration_rule: str | None
    iteration_us: float | None
    other_idle_us: float | None
    step: int
    wall_backward_us: float | None
    wall_forward_us: float | None
    wall_optimizer_us: float | None
    wall_other_us: float | None


class ClassRow(Row):
    """Device time of one compute class on a rank (`ranks[].compute_classes[]`)."""

    class_: str = msgspec.field(name="class")
    count: int
    group: str
    share: float | None
    time_us: float | None


class RankKernelRow(Row):
    """One of a rank's top kernels by device time (`ranks[].top_kernels[]`)."""

    class_: str = msgspec.field(name="class")
    count: int
    mean_us: float | None
    name: str
    share: float | None
    short_name: str
    total_us: float | None


class StreamIdleRow(Row):
    """Idle time of one stream of a rank and what it waited for (`ranks[].stream_idle[]`)."""

    busy_us: float | None
    host_wait_frac: float | None
    host_wait_us: float | None
    idle_frac: float | None
    idle_us: float | None
    kernel_wait_frac: float | None
    kernel_wait_us: float | None
    other_frac: float | None
    other_us: float | None
    span_us: float | None
    stream: int | None
    tasks: int


class LongStepRow(Row):
    """A step slower than the rank's median, and why (`ranks[].long_steps[]`)."""

    communication_not_overlapped_delta_us: float | None
    computing_delta_us: float | None
    duration_us: float | None
    exposed_memcpy_delta_us: float | None
    idle_free_delta_us: float | None
    median_duration_us: float | None
    slowdown_ratio: float | None
    step: int
    why: str
    why_delta_us: float | None


class MemoryRow(Row):
    """One memory series of a rank (a device and component): its peak, per step, and what was live
    at the peak (`ranks[].memory[]`)."""

    at_peak: list[AtPeakRow]
    basis: str | None
    component: str | None
    device: int | None
    device_memory_bytes: int | None
    device_type: str
    peak_allocated_bytes: int | None
    peak_device_frac: float | None
    peak_ns: int | None
    peak_reserved_bytes: int | None
    peak_step: int | None
    steps: list[MemoryStepRow]


class DevicePhases(Row):
    """A rank's device time by phase over the whole trace (µs; `ranks[].device_phases`)."""

    device_backward_us: float | None
    device_forward_us: float | None
    device_optimizer_us: float | None
    device_other_us: float | None


class LaunchDelay(Row):
    """Launch delay statistics of a rank (µs; `ranks[].launch_delay`)."""

    count: int
    max_us: float | None
    mean_us: float | None
    p50_us: float | None
    p90_us: float | None
    p99_us: float | None
    synchronous: int


class RooflineSection(Row):
    """The roofline of a rank recorded with shapes: traced FLOPs per step, the FLOP anatomy, the
    operators (`ranks[].roofline`)."""

    anatomy: list[AnatomyRow]
    operators: list[RooflineRow]
    steps: list[TracedFlopsRow]


class RankSection(Row):
    """One rank: its device, step window rule, whole-trace terms and every per-rank table
    (`ranks[]`)."""

    compute_classes: list[ClassRow]
    device: str | None
    device_phases: DevicePhases | None
    format: str
    launch_delay: LaunchDelay | None
    long_steps: list[LongStepRow]
    memory: list[MemoryRow]
    pipeline_stage: int | None
    pipeline_stages: int | None
    rank: int
    steps: list[StepRow]
    stream_idle: list[StreamIdleRow]
    top_kernels: list[RankKernelRow]
    trace: TraceTerms | None
    unclassified_share: float | None
    window_rule: str | None
    roofline: RooflineSection | None | UnsetType = UNSET
