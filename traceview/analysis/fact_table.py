"""The facts the findings read, defined: column -> (dtype, definition), in column order.

`traceview.analysis.facts.facts` computes them (one row per rank, plus a profile-wide row when
throughput was given); docs/findings.md has the same table (a test keeps the two equal).
"""

from __future__ import annotations

import polars as pl

#: The facts frame: column -> (dtype, definition). Order is the column order.
FACTS: dict[str, tuple[pl.DataType, str]] = {
    "rank": (pl.Int64, "Rank; null on the profile-wide row."),
    "window": (
        pl.String,
        "What was measured: 'steps' (the rank's step windows) or 'trace' (no steps: the whole trace).",
    ),
    "steps": (pl.Int64, "Steps measured (1 for window 'trace')."),
    "step_ms": (pl.Float64, "Mean step length (step breakdown duration), ms."),
    "computing_ms": (pl.Float64, "Computing abs(U(COMP)) per step, ms."),
    "comm_ms": (pl.Float64, "Communication abs(U(COMM)) per step, ms."),
    "exposed_comm_ms": (
        pl.Float64,
        "Exposed communication per step, ms: communication_not_overlapped, abs(U(COMM) − U(COMP)) (the summary's "
        "'exposed comm').",
    ),
    "exposed_comm_frac": (pl.Float64, "Σ exposed communication / Σ step length over the steps."),
    "exposed_comm_excl_p2p_ms": (
        pl.Float64,
        "Exposed communication excluding the pipeline's point-to-point transfers per step, ms, which the bubble "
        "facts cover: on ranks with receive ops torch_npu's communication_not_overlapped_exclude_receive (exposed "
        "communication − bubble); on other pipeline ranks exposed communication − the exposed P2P time "
        "(bubbles.gpu_bubbles); elsewhere the exposed communication.",
    ),
    "exposed_comm_excl_p2p_frac": (
        pl.Float64,
        "Σ exposed communication excluding pipeline transfers / Σ step length over the steps.",
    ),
    "comm_overlap_frac": (pl.Float64, "Σ overlapped / Σ communication (HTA's overlap %); null without communication."),
    "exposed_memcpy_ms": (pl.Float64, "Exposed memcpy abs(U(MEM) − U(COMP) − U(COMM)) per step, ms."),
    "exposed_memcpy_frac": (pl.Float64, "Σ exposed memcpy / Σ step length."),
    "memcpy_pageable_frac": (
        pl.Float64,
        "Share of memcpy time whose Kineto name says pageable host memory ('(Pageable -> Device)'); null "
        "without memcpy or without Kineto memcpy names.",
    ),
    "device_idle_ms": (pl.Float64, "Device idle per step (window − abs(U(busy)), the breakdown's idle), ms."),
    "device_idle_frac": (pl.Float64, "Σ device idle / Σ step length."),
    "iteration_ms": (
        pl.Float64,
        "Mean iteration (the whole step, host included, iterations tiling the run: traceview.analysis.iteration), ms.",
    ),
    "data_loading_ms": (pl.Float64, "Data loading with the device idle, per iteration, ms; null without host events."),
    "data_loading_frac": (pl.Float64, "Σ data loading / Σ iteration; null without host events."),
    "host_overhead_frac": (
        pl.Float64,
        "Σ host overhead (runtime calls and framework code with the device idle) / Σ iteration; null without host events.",
    ),
    "host_wait_frac": (
        pl.Float64,
        "Share of the idle time of the streams that run compute (kernels, memsets) that is host_wait (HTA's "
        "rule: the next task's launch started after the previous task ended). Whole trace; null without "
        "idle or when idle per stream was not computed (summary without details).",
    ),
    "launch_us": (
        pl.Float64,
        "Mean duration of the calls that launched the rank's kernels, each call once, graph launches left "
        "out (one replays a whole graph), µs; null without such calls.",
    ),
    "kernels_per_step": (pl.Float64, "Kernels (kind 'kernel': no communication, memcpy, memset) per step."),
    "tiny_kernels_per_step": (pl.Float64, "Kernels shorter than 10 µs per step."),
    "tiny_kernel_frac": (pl.Float64, "Tiny kernels / kernels (a count share); null without kernels."),
    "tiny_kernel_ms": (pl.Float64, "Device time of the tiny kernels per step (sum of durations), ms."),
    "bubble_ms": (
        pl.Float64,
        "Pipeline bubble per step, ms: the step breakdown's bubble_us on ranks with receive ops (torch_npu's rule), "
        "else its pipeline_bubble_us (the estimate); null on non-pipeline ranks.",
    ),
    "bubble_frac": (
        pl.Float64,
        "Σ bubble / Σ pipeline step: the share of the pipeline step the rank waits in receives (receive ops: "
        "pipeline step = stage + bubble) or computes nothing (the estimate: pipeline step = the longest compute "
        "span of the pipeline group); null on non-pipeline ranks.",
    ),
    "pipeline_stages": (pl.Int64, "Stages p of the rank's pipeline, when inferred (see pipeline_stages)."),
    "equivalent_micro_batches": (
        pl.Float64,
        "The micro-batch count m for which an ideal 1F1B schedule has this bubble: (p − 1)(1 − bubble_frac) / "
        "bubble_frac.",
    ),
    "ideal_bubble_frac": (pl.Float64, "(p − 1)/(m + p − 1) when the micro-batch count m was given."),
    "bubble_excess_frac": (pl.Float64, "bubble_frac − ideal_bubble_frac."),
    "gemm_ms": (pl.Float64, "GEMM-class (compute_class 'gemm') device time per step, ms."),
    "gemm_shaped_frac": (pl.Float64, "Share of GEMM time whose input shapes are known (see gemm_dims)."),
    "gemm_unaligned_frac": (
        pl.Float64,
        "Share of the shaped GEMM time whose M, N or K is not a multiple of 8 (see gemm_dims); null without "
        "shaped GEMMs.",
    ),
    "gemm_unaligned_ms": (pl.Float64, "Device time of those unaligned GEMMs per step, ms."),
    "gemm_unaligned_mnk": (
        pl.String,
        "'M=.., N=.., K=..' of the unaligned GEMM (shapes and operator) with the most time.",
    ),
    "gemm_unaligned_shapes": (pl.String, "Its input shapes (input_shapes text)."),
    "gemm_unaligned_op": (pl.String, "Its launching operator (launch_op); null when unknown."),
    "gemm_aligned_roofline_frac": (
        pl.Float64,
        "Of the GEMM operators with recorded shapes and a roofline (analysis.roofline.op_roofline over the calls of "
        "the measured steps), those whose M, N and K are multiples of 8: Σ roofline time / Σ device time (1.0: at "
        "their roofline).",
    ),
    "gemm_unaligned_roofline_frac": (pl.Float64, "The same over those whose M, N or K is not."),
    "gemm_unaligned_cost_ms": (
        pl.Float64,
        "What the unaligned GEMMs would save per step at the aligned ones' share of their roofline: "
        "max(0, Σ device time − Σ roofline time / gemm_aligned_roofline_frac) / steps, ms; null without both kinds.",
    ),
    "is_straggler": (pl.Boolean, "The rank the others wait for in collectives (stragglers)."),
    "others_wait_ms": (
        pl.Float64,
        "Straggler only: mean over the other ranks of their collective wait per step (Σ wait / their steps), ms.",
    ),
    "straggler_cost_frac": (
        pl.Float64,
        "Straggler only: what waiting for it costs the others, mean over the other ranks of (their "
        "exposed_comm_excl_p2p_ms − the straggler's, floored at 0) / their step_ms. The straggler never waits, so its exposed communication "
        "is the transfer alone; the others' excess is waiting that compute did not hide.",
    ),
    "compute_ratio": (pl.Float64, "Straggler only: its computing_ms / the median computing_ms of the other ranks."),
    "worst_step": (pl.Int64, "The rank's longest step (window 'steps' only)."),
    "worst_step_ms": (pl.Float64, "Its length, ms."),
    "median_step_ms": (pl.Float64, "Median step length of the rank, ms."),
    "worst_step_ratio": (pl.Float64, "worst_step_ms / median_step_ms."),
    "worst_step_why": (pl.String, "The term that grew most in the worst step against the median step (long_steps)."),
    "mfu_frac": (pl.Float64, "Profile-wide row: mean MFU over the steps (throughput); null when not computed."),
    "model_tflops": (pl.Float64, "Profile-wide row: mean model TFLOP/s per device."),
    "peak_tflops": (pl.Float64, "Profile-wide row: the dense peak TFLOP/s per device used for MFU."),
    "memory_peak_frac": (
        pl.Float64,
        "The largest peak_device_frac of the rank's device memory series over the whole trace: peak reserved "
        "(peak allocated where reserved is not recorded) / the device's memory (analysis.memory); null without "
        "memory records or the device's memory.",
    ),
    "memory_peak_gib": (pl.Float64, "That series' peak reserved (else allocated) memory, GiB."),
    "memory_device_gib": (pl.Float64, "The device's memory, GiB (ranks.device_memory_bytes)."),
    "roofline_gap_ms": (
        pl.Float64,
        "Of the rank's operator rows (analysis.roofline.op_roofline over the calls of its measured steps) under "
        "30 % of their roofline, the one whose "
        "device time exceeds its roofline's expected time the most: that excess per step, ms; null without "
        "recorded shapes or the device's limits.",
    ),
    "roofline_gap_frac": (pl.Float64, "roofline_gap_ms / step_ms."),
    "roofline_gap_op": (pl.String, "That row's operator."),
    "roofline_gap_dims": (pl.String, "Its input dims (first 80 characters)."),
    "roofline_gap_dtype": (pl.String, "Its dtype."),
    "roofline_gap_roofline_frac": (pl.Float64, "Its expected time / device time."),
    "roofline_gap_bound": (pl.String, "compute or memory: the larger of its roofline's two terms."),
    "roofline_gap_tflops": (pl.Float64, "Its achieved TFLOP/s."),
    "roofline_gap_peak_frac": (pl.Float64, "Its achieved TFLOP/s / the device's peak for its dtype."),
    "device_type": (pl.String, "The rank's device: gpu, npu, mtia, cpu; null when unknown (analysis.platform)."),
    "ddp_seen": (pl.Boolean, "The host recorded DistributedDataParallel activity (analysis.platform)."),
    "fsdp_seen": (pl.Boolean, "The host recorded FullyShardedDataParallel activity (analysis.platform)."),
    "graph_launches_per_step": (
        pl.Float64,
        "CUDA/HIP graph launches (cudaGraphLaunch, hipGraphLaunch) per step (analysis.platform).",
    ),
    "graph_frac": (
        pl.Float64,
        "Device time of the tasks graph launches replayed / all device time of the rank (0 without graph launches; "
        "null without device tasks; analysis.platform).",
    ),
    "graph_capture": (
        pl.Boolean,
        "The rank's trace captures CUDA/HIP graphs and replays none: the program runs graphs, this trace "
        "recorded their capture (schema ranks.graph_capture; analysis.platform).",
    ),
}
