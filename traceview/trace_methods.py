"""The `Trace` methods of the declared analyses, generated from their declarations by
`traceview analyses --write-methods` (tests/unit/test_registry.py checks that it is current): do not
edit by hand. Each method calls `Trace.run`; its parameters and defaults are the
declaration's (the analysis function's signature), written in one place."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import polars as pl


class AnalysisMethods:
    """The analyses a `Trace` offers (`traceview.registry.PUBLIC`), each through `run`."""

    def run(self, name: str, **params: Any) -> Any:
        """Analysis `name` with `params` (`Trace.run`)."""
        raise NotImplementedError

    def trace_breakdown(self) -> pl.DataFrame:
        """Decomposition of each rank's whole trace (window: first device task start to last end).

        Declared by `traceview.analysis.breakdown.trace_breakdown`.
        """
        return self.run('trace_breakdown')

    def bubbles(self) -> pl.DataFrame:
        """Pipeline bubble per rank and step (definition and rationale in the module docstring).

        Declared by `traceview.analysis.bubbles.gpu_bubbles`.
        """
        return self.run('bubbles')

    def step_breakdown(self) -> pl.DataFrame:
        """Decomposition per rank and step (window rules in the module docstring).

        Declared by `traceview.analysis.breakdown.step_breakdown`.
        """
        return self.run('step_breakdown')

    def pipeline_stages(self) -> pl.DataFrame:
        """Pipeline stage of each rank, when the trace allows inferring it.

        Declared by `traceview.analysis.bubbles.pipeline_stages`.
        """
        return self.run('pipeline_stages')

    def classified_tasks(self) -> pl.DataFrame:
        """device_tasks with compute_class, compute_group and launch_op columns, by the trace's
        compute-class rules (a user's first: `traceview.ruleset`). See `classify`.

        Declared by `traceview.analysis.classes.classified_tasks`.
        """
        return self.run('classified_tasks')

    def compute_classes(self, by: Sequence[str] = ('rank',)) -> pl.DataFrame:
        """Device time per compute class, per group-by key (default: per rank).

        Declared by `traceview.analysis.classes.class_summary`.
        """
        return self.run('compute_classes', by=by)

    def top_kernels(
        self,
        n: int = 10,
        *,
        by: Sequence[str] = ('rank',),
        ranks: Sequence[int] | None = None,
    ) -> pl.DataFrame:
        """The `n` task names (with their class) that took the most device time, per group-by key,
        over the tasks of `ranks` (all ranks when None).

        Declared by `traceview.analysis.classes.top_kernels`.
        """
        return self.run('top_kernels', n=n, by=by, ranks=ranks)

    def unclassified_share(self) -> pl.DataFrame:
        """Per rank: how much device time no rule classified.

        Declared by `traceview.analysis.classes.unclassified_share`.
        """
        return self.run('unclassified_share')

    def collectives(self) -> pl.DataFrame:
        """One row per collective instance and rank, matched across ranks: transfer (min duration
        over ranks), wait, start skew, bandwidths. When the ranks' clocks disagree
        (`clock_offsets`), start skew is computed on aligned clocks and the trace's warnings name
        the offsets. See `match_collectives`.

        Declared by `traceview.analysis.collectives.aligned_collectives`.
        """
        return self.run('collectives')

    def stragglers(self, *, include_p2p: bool = False) -> pl.DataFrame:
        """Per rank: how long it waited in collectives, how late it arrived, and which rank is the
        straggler.

        Declared by `traceview.analysis.collectives.stragglers`.
        """
        return self.run('stragglers', include_p2p=include_p2p)

    def step_skew(self) -> pl.DataFrame:
        """Per step: how unequal the ranks' step durations are.

        Declared by `traceview.analysis.collectives.step_skew`.
        """
        return self.run('step_skew')

    def launch_calls(self) -> pl.DataFrame:
        """Per rank and correlation id: the launch call's start and end (ns), shared by the idle and
        delay analyses; which runtime calls are synchronous: the trace's `[[phases.synchronous]]`
        patterns. See `gaps.launch_calls`.

        Declared by `traceview.analysis.launches.launch_call_frame`.
        """
        return self.run('launch_calls')

    def stream_idle(self, kernel_wait_threshold_us: float = 30.0, *, by_step: bool = False) -> pl.DataFrame:
        """Idle time of each stream and its causes (HolisticTraceAnalysis' idle-time breakdown).

        Declared by `traceview.analysis.gaps.stream_idle`.
        """
        return self.run('stream_idle', kernel_wait_threshold_us=kernel_wait_threshold_us, by_step=by_step)

    def host_phases(self) -> pl.DataFrame:
        """The host phase spans (forward, backward, optimizer: the host ranges the trace's phase
        rules mark, per rank): rank, phase, start_ns, end_ns. See `host_spans`.

        Declared by `traceview.analysis.phases.host_phases`.
        """
        return self.run('host_phases')

    def task_phases(self) -> pl.DataFrame:
        """Every device task's phase (forward, backward, optimizer, other; through its launch), in
        the order of device_tasks: rank, stream, name, start_ns, end_ns, phase. See `task_phases`.

        Declared by `traceview.analysis.phases.task_phase_frame`.
        """
        return self.run('task_phases')

    def iteration_breakdown(self) -> pl.DataFrame:
        """Per rank and step: the whole iteration (wall time, iterations tiling the run) and where
        it went: computing, exposed communication and memcpy in it, data loading, host overhead
        (runtime and framework), other idle (µs), adding up to iteration_us, by the trace's phase
        rules (what the host spans mean). See `iteration_breakdown`.

        Declared by `traceview.analysis.iteration.iteration_of`.
        """
        return self.run('iteration_breakdown')

    def throughput(self, **kwargs: Any) -> pl.DataFrame:
        """Tokens/s per device, model TFLOP/s per device and MFU per step. Keyword arguments as
        `throughput` (tokens_per_step or seq_len + global_batch; params or flops_per_token;
        recompute; peak_tflops; devices). Defaults: devices = the recorded world size (else the
        ranks loaded), device_name = the first rank's device, the peak from the trace's device peak
        table.

        Declared by `traceview.analysis.throughput.throughput_of`.
        """
        return self.run('throughput', **kwargs)

    def memory(self) -> pl.DataFrame:
        """Per memory series and record, in time order: rank, device_type, device, component, ts_ns,
        allocated_bytes, reserved_bytes, active_bytes (Ascend's Total Active; else null) and basis
        ("recorded" or "relative", see the module docstring; null for a series that records neither
        allocated nor changes, such as Ascend's APP component).

        Declared by `traceview.analysis.memory.memory_timeline`.
        """
        return self.run('memory')

    def memory_peaks(self) -> pl.DataFrame:
        """Per memory series, for the whole trace (step null) and for each step: rank, device_type,
        device, component, step, records, peak_allocated_bytes, peak_ns, peak_reserved_bytes, basis,
        device_memory_bytes, peak_device_frac (module docstring). A step's values include what the
        series held as it started (its last record before the window, placed at the window's start:
        a step that only frees memory peaks at its start); `records` counts those inside the window.
        A step before a series' first record has no row. Sorted by series, whole trace first, then
        steps.

        Declared by `traceview.analysis.memory.memory_peaks`.
        """
        return self.run('memory_peaks')

    def op_calls(self) -> pl.DataFrame:
        """One row per operator call the roofline covers: its kernels, device time (their union),
        FLOPs and bytes: the host operators op_flops.toml lists (`op_calls`), then the Ascend device
        operators device_op_flops.toml lists (`device_op_calls`); both tables come with the trace's
        rules.

        Declared by `traceview.analysis.roofline.all_op_calls`.
        """
        return self.run('op_calls')

    def device_limits(self) -> pl.DataFrame:
        """Per rank and dtype, the device's limits from the device peak table (the trace's:
        `device_peaks.toml`, a user's `[[device_peaks.rule]]` entries first; called as a function,
        `peaks`, None: the shipped one; the first entry matching the device name that gives
        `tflops`): matrix_tflops = its dense peak for the dtype (bf16, fp16, fp8, tf32, fp32, fp64
        as the table lists them; fp32 work is measured against the fp32 rate, not tf32),
        vector_tflops = its fp32 rate (elementwise work), memory_tbps (any dtype); per device (a
        package's figures / devices_per_package); device_entry names the table entry. A rank whose
        device matches an entry without dtypes has one row with dtype null; one matching no entry
        has no row.

        Declared by `traceview.analysis.roofline.device_limits`.
        """
        return self.run('device_limits')

    def facts(
        self,
        throughput: dict | None = None,
        *,
        details: bool = True,
        micro_batches: int | None = None,
    ) -> pl.DataFrame:
        """The facts the findings read: one row per rank with device tasks, plus a profile-wide row
        when `throughput` (keyword arguments of the throughput analysis) is given. `details=False`
        skips the costly idle-per-stream, launch-call and pipeline-stage analyses (their facts stay
        null); `micro_batches`: the run's micro-batch count, for the ideal bubble. Columns: `FACTS`;
        see `facts`.

        Declared by `traceview.analysis.facts.fact_frame`.
        """
        return self.run('facts', throughput=throughput, details=details, micro_batches=micro_batches)

    def findings(
        self,
        *,
        throughput: dict | None = None,
        details: bool = True,
        micro_batches: int | None = None,
    ) -> pl.DataFrame:
        """Advice from the numbers: one row per rule that fires on a rank (or profile-wide), with
        severity, the value and threshold, a message citing the numbers, and the advice, by the
        trace's findings rules (a user's changes and additions included: `traceview.ruleset`,
        docs/findings.md); `throughput`, `details` and `micro_batches` are the facts'
        (`fact_frame`). See `evaluate`.

        Declared by `traceview.analysis.findings.findings_of`.
        """
        return self.run('findings', throughput=throughput, details=details, micro_batches=micro_batches)

    def iteration_gaps(self) -> pl.DataFrame:
        """Host and device length of every step, and the device gap before it.

        Declared by `traceview.analysis.gaps.step_times`.
        """
        return self.run('iteration_gaps')

    def long_steps(self, factor: float = 1.2) -> pl.DataFrame:
        """Steps whose duration exceeds `factor` × the rank's median step duration, and why.

        Declared by `traceview.analysis.gaps.long_steps`.
        """
        return self.run('long_steps', factor=factor)

    def iteration_segments(self) -> pl.DataFrame:
        """Where each instant of every iteration went: rank, step, seg_start_ns, seg_end_ns and the
        segment's term and wall phase (the iteration_breakdown's attribution, instant by instant;
        the Perfetto export draws them). See `label_segments`.

        Declared by `traceview.analysis.iteration.segments_of`.
        """
        return self.run('iteration_segments')

    def headline(self, step: int | None = None) -> pl.DataFrame:
        """One row, over every rank's steps (or only step `step`): mean step and iteration time
        (µs), the exposed communication's share of the step time, each iteration term's share of the
        iteration time and the largest term. See `headline`.

        Declared by `traceview.analysis.iteration.headline_of`.
        """
        return self.run('headline', step=step)

    def kernel_short_names(self) -> pl.DataFrame:
        """Every distinct task name of the profile (all ranks) and its short distinct display name
        (`short_names`). Columns: name, short_name; sorted by name.

        Declared by `traceview.analysis.kernels.kernel_short_names`.
        """
        return self.run('kernel_short_names')

    def kernel_totals(self, n: int = 20) -> pl.DataFrame:
        """The `n` task names with the most device time over all ranks.

        Declared by `traceview.analysis.kernels.kernel_totals`.
        """
        return self.run('kernel_totals', n=n)

    def operators(self, n: int = 20) -> pl.DataFrame:
        """Host operators by name and input shapes, with the device time of the tasks they launched
        (all ranks), the `n` with the most device time.

        Declared by `traceview.analysis.kernels.operators`.
        """
        return self.run('operators', n=n)

    def launch_delays(self) -> pl.DataFrame:
        """Per rank: launch delay (task start − launch call end) statistics, µs, over the tasks of
        asynchronous launch calls; `synchronous` counts the tasks of synchronous calls (a
        `cudaMemcpy` returns once its copy is done), left out. See `gaps.launch_delay_stats`.

        Declared by `traceview.analysis.launches.launch_delays_of`.
        """
        return self.run('launch_delays')

    def memory_at_peak(self) -> pl.DataFrame:
        """Per device at its whole-trace peak, the series whose blocks memory_allocations holds (the
        first of BLOCK_COMPONENTS present with basis "recorded": PyTorch's allocator; torch_npu's
        PTA+GE, else PTA, as operator_memory.csv lists both allocators' blocks): rank, device_type,
        device, component, peak_ns, operator, live_bytes, blocks, share_frac (live_bytes / the peak
        allocated). `operator` is the block's top_op where known, else its op, else NO_OPERATOR. The
        peak's bytes no block explains are one last row: BEFORE_TRACE when the device has blocks
        (the allocations the trace did not see begin), UNATTRIBUTED when it has none (nothing to say
        what held the peak); no such row when nothing is left. Sorted by series, then live_bytes
        descending, the remainder last.

        Declared by `traceview.analysis.memory.memory_at_peak`.
        """
        return self.run('memory_at_peak')

    def lane_memory(self, ranks: Sequence[int] | None = None) -> pl.DataFrame:
        """The records (`memory` rows) of the series each rank's timeline lane shows
        (`lane_series`), of `ranks` only when given: what the memory figure draws.

        Declared by `traceview.analysis.memory.lane_memory`.
        """
        return self.run('lane_memory', ranks=ranks)

    def expected_ops(self, config: Any) -> pl.DataFrame:
        """The analytical model's operations for a transformer `config` (a ModelConfig, a dict or a
        TOML file: `traceview.analysis.model_config`) on this profile's device (per layer and pass,
        communication, optimizer) with FLOPs, bytes, time at the roofline and time per step. See
        `expected.expected_ops`.

        Declared by `traceview.analysis.model_vs_trace.model_ops`.
        """
        return self.run('expected_ops', config=config)

    def expected(self, config: Any) -> pl.DataFrame:
        """The analytical model's step for a transformer `config` (a ModelConfig, a dict or a TOML
        file) on this profile's device, term by term (compute, memory, optimizer, tp/pp/dp
        communication, bubble, step, matrix FLOPs) beside the measured terms of the busiest rank
        (`expected_vs_measured`; the input frames come as functions, read only with a config). See
        docs/roofline.md.

        Declared by `traceview.analysis.model_vs_trace.model_beside_measured`.
        """
        return self.run('expected', config=config)

    def device_phases(self) -> pl.DataFrame:
        """Per rank, over the whole trace: device time by phase (forward, backward, optimizer,
        other; µs), each busy instant once. Needs no steps (MindSpore timelines, inference). See
        `device_totals`.

        Declared by `traceview.analysis.phases.device_phases`.
        """
        return self.run('device_phases')

    def op_roofline(self, *, by_step: bool = False) -> pl.DataFrame:
        """Per rank, operator, input dims, dtype, algorithm, input types and concrete inputs
        (ROOFLINE_SCHEMA: calls that differ in a stride or a second input's dtype do different work,
        and a Winograd convolution other work than a direct one, so they are rows of their own),
        longest device time first: count of calls, gflop and bytes per call (their mean),
        device_time_us (all calls), achieved TFLOP/s and TB/s (all calls' FLOPs and bytes over their
        device time); against `limits` (`device_limits`: the rank's memory bandwidth and vector
        rate, and its matrix peak for the row's dtype) the peak used, peak_frac, expected_us (all
        calls) = max(flop / peak, bytes / bandwidth), roofline_frac = expected_us / device_time_us
        and the bound, each null unless both terms are known. `by_step`: one row per step too (a
        `step` column after rank; calls outside every step have step null).

        Declared by `traceview.analysis.roofline.op_roofline`.
        """
        return self.run('op_roofline', by_step=by_step)

    def flops_anatomy(self) -> pl.DataFrame:
        """Per rank and family (gemm, sdpa, conv, ..., and NOT_COVERED): the family's share of the
        traced FLOPs next to its share of device time (ANATOMY_SCHEMA), the ml-engineering guide's
        anatomy. device_time_us: the device time of the family's calls that are not nested (so no
        task counts twice); NOT_COVERED: the rank's device task time (kernels, copies, memsets,
        communication, summed) outside them; device_time_frac: of that total.

        Declared by `traceview.analysis.traced_flops.flops_anatomy`.
        """
        return self.run('flops_anatomy')

    def traced_flops(self) -> pl.DataFrame:
        """Per rank and step: the model FLOPs summed from the operators' recorded shapes, TFLOP/s
        per device over the step time, and the MFU they give against the device's peak for the dtype
        carrying most matrix FLOPs (no --params needed). A profile recorded without shapes has no
        calls, and its step times are not computed. See `traced_flops`.

        Declared by `traceview.analysis.traced_flops.traced_flops_of`.
        """
        return self.run('traced_flops')

    def what_if(self, peak_frac: float = 0.7, *, micro_batches: int | None = None) -> pl.DataFrame:
        """The scenarios of the module docstring (SCHEMA rows; a scenario whose inputs the profile
        lacks is left out): `iterations` = iteration_breakdown, `facts` = the facts frame (for the
        pipeline; or a function giving it, called only when `micro_batches` asks for the pipeline),
        `calls` = roofline.op_calls, `limits` = roofline.device_limits.

        Declared by `traceview.analysis.what_if.what_if`.
        """
        return self.run('what_if', peak_frac=peak_frac, micro_batches=micro_batches)
