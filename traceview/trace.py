"""`Trace`: one loaded profile, all ranks, as canonical polars frames."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import polars as pl

from traceview import notebook_views, schema

#: Columns of `Trace.companions`.
COMPANIONS_SCHEMA = {"rank": pl.Int64, "source": pl.String, "kind": pl.String, "device_tasks": pl.Int64}


class Trace:
    """A loaded profile (one or many ranks).

    Frames (all ranks concatenated, schema in `traceview.schema` / docs/schema.md):
    `ranks`, `device_tasks`, `host_events`, `device_annotations`, `steps`,
    `ascend_step_trace`, `ascend_communication`.
    `load_warnings`: one line per kind of recoverable oddity met while loading, naming the file;
    `warnings`: those plus the ones the analyses derive (see the property).
    `failures`: one line per rank source that could not be read (the others loaded).
    `rules_file`: the user's rules file the trace was loaded with (None: the shipped rules); its
    task kinds were applied when parsing, its compute classes, findings and device peaks are added
    to every analysis that reads those tables (`run`).
    """

    def __init__(
        self,
        source: str,
        ranks: pl.DataFrame,
        frames: dict[str, pl.DataFrame],
        warnings: list[str],
        failures: list[str],
    ):
        self.source = source
        self.ranks = ranks
        self._frames = frames
        self.load_warnings = warnings
        self.failures = failures
        #: the user's rules file (`traceview.load(rules=...)`) and the tables it extends
        self.rules_file: str | None = None
        self.rules_tables: frozenset[str] = frozenset()
        #: traces loaded beside a rank that describe it rather than being ranks themselves
        #: (`traceview.loader.companions`): rank, source, kind ("graph capture"), device_tasks
        self.companions: pl.DataFrame = pl.DataFrame(schema=COMPANIONS_SCHEMA)
        self._memo: dict = {}

    device_tasks = property(lambda self: self._frames["device_tasks"], doc="Device tasks of all ranks.")
    host_events = property(lambda self: self._frames["host_events"], doc="Host events of all ranks.")
    device_annotations = property(lambda self: self._frames["device_annotations"], doc="GPU-side annotations.")
    steps = property(lambda self: self._frames["steps"], doc="Steps of all ranks.")
    ascend_step_trace = property(lambda self: self._frames["ascend_step_trace"], doc="torch_npu step_trace_time.csv.")
    ascend_communication = property(
        lambda self: self._frames["ascend_communication"], doc="torch_npu communication.json."
    )

    def frame(self, table: str) -> pl.DataFrame:
        """A canonical table by name (see `traceview.schema.TABLES`)."""
        return self.ranks if table == "ranks" else self._frames[table]

    def select_steps(self, steps: Iterable[int] | str) -> Trace:
        """A new Trace holding only the steps `steps` (integers, or a SPEC such as "3-5,8"); the
        frames are filtered, never modified, and the new trace's analyses start afresh.

        Kept: the `steps` rows of those steps; device tasks assigned to them (their `step` column) or
        overlapping their device windows (so that `step_breakdown` of a chosen step equals the whole
        trace's: the gpu_annotation rule clips every task overlapping the window); host events that
        start inside their host ProfilerStep windows (the device window where there is no host one),
        plus the launch calls of the kept device tasks; device annotations starting inside their
        device windows; `ascend_step_trace` / `ascend_communication` rows of those steps; memory events
        recorded inside their host windows, with each series' last record before each window (what
        the step starts with), and the memory blocks allocated during them or live across them (so
        the peak of a chosen step equals its step row in `memory_peaks`, except for traces that record
        only changes, whose running sum restarts at the first kept record). `ranks`,
        `warnings` (plus one for steps asked for but absent) and `failures` are kept. TraceError
        when none of the steps is in the trace. See `traceview.step_selection.select_steps`."""
        from traceview.step_selection import select_steps

        return select_steps(self, steps)

    @property
    def plot(self):
        """Plotly figures of this trace (`traceview.dashboards.plots.TracePlots`): `t.plot.step_breakdown()`,
        `.step_time()`, `.heatmap()`, `.compute_classes()`, `.kernels()`, `.timeline()`. Each returns
        a `plotly.graph_objects.Figure` and never shows it. plotly is imported on first use only.

        This and `_repr_html_` are the model's one hand-off to the views: `traceview.dashboards.notebook`,
        which the package installs in `traceview.notebook_views` (the model imports no view)."""
        return notebook_views.views().plots(self)

    # ---- analyses: rows of `traceview.registry` (definitions in each function's docstring) ----

    def run(self, name: str, **params) -> pl.DataFrame:
        """Analysis `name` of the registry (`traceview.registry.REGISTRY`) with `params`, computed
        once per distinct parameters (lists and dicts work as parameters: the memo key is
        `registry.memo_key`), the trace's rules file added to the rule parameters. The methods below call this; it is also how a view iterates them."""
        from traceview import registry

        entry = registry.REGISTRY[name]
        params = entry.with_user_rules(params, self.rules_file, self.rules_tables)
        key = registry.memo_key(name, params)
        if key not in self._memo:
            self._memo[key] = entry.run(self, **entry.bind(params))
        return self._memo[key]

    def memoised(self, key: str | tuple, compute):
        """`compute()` once per `key` for this trace: for what a view derives from the analyses
        (a plot's summary, the timeline's data); kept apart from the analyses' memo keys."""
        key = ("view", key)
        if key not in self._memo:
            self._memo[key] = compute()
        return self._memo[key]

    @property
    def warnings(self) -> list[str]:
        """One line per kind of recoverable oddity: those of the load (`load_warnings`, naming the
        file) and those the analyses derive (`registry.Analysis.notes`: the ranks' clocks
        disagreeing), the same whatever was called before. Reading it on a multi-rank trace with
        communication matches the collectives (memoised)."""
        from traceview import registry

        derived = [line for a in registry.REGISTRY.values() if a.notes for line in a.notes(self)]
        return [*self.load_warnings, *(line for line in derived if line not in self.load_warnings)]

    def step_breakdown(self) -> pl.DataFrame:
        """Per rank and step: computing, communication, overlapped, exposed communication, exposed
        memcpy, free, idle, busy, stage, bubble, preparing, duration (µs) and the window rule.
        See `traceview.analysis.breakdown` for the definitions."""
        return self.run("step_breakdown")

    def iteration_breakdown(self, rules: str | None = None) -> pl.DataFrame:
        """Per rank and step: the whole iteration (wall time, iterations tiling the run) and where it
        went: computing, exposed communication and memcpy in it, data loading, host overhead (runtime
        and framework), other idle (µs), adding up to iteration_us. `rules`: a rules file whose
        [[phases.data_loading]] patterns come first. See `traceview.analysis.iteration`."""
        return self.run("iteration_breakdown", rules=rules)

    def iteration_segments(self, rules: str | None = None) -> pl.DataFrame:
        """Where each instant of every iteration went: rank, step, seg_start_ns, seg_end_ns and the
        segment's term and wall phase (the iteration_breakdown's attribution, instant by instant;
        the Perfetto export draws them). See `traceview.analysis.iteration.label_segments`."""
        return self.run("iteration_segments", rules=rules)

    def host_phases(self, rules: str | None = None) -> pl.DataFrame:
        """The host phase spans (forward, backward, optimizer: the host ranges the phase rules
        mark, per rank): rank, phase, start_ns, end_ns. See `traceview.analysis.phases.host_spans`."""
        return self.run("host_phases", rules=rules)

    def task_phases(self, rules: str | None = None) -> pl.DataFrame:
        """Every device task's phase (forward, backward, optimizer, other; through its launch):
        rank, stream, name, start_ns, end_ns, phase. See `traceview.analysis.phases`."""
        phase = self.run("task_phases", rules=rules)["phase"]
        return self.device_tasks.select("rank", "stream", "name", "start_ns", "end_ns").with_columns(phase)

    def device_phases(self, rules: str | None = None) -> pl.DataFrame:
        """Per rank, over the whole trace: device time by phase (forward, backward, optimizer,
        other; µs), each busy instant once. Needs no steps (MindSpore timelines, inference). See
        `traceview.analysis.phases.device_totals`."""
        return self.run("device_phases", rules=rules)

    def headline(self, step: int | None = None) -> pl.DataFrame:
        """One row, over every rank's steps (or only step `step`): mean step and iteration time (µs),
        the exposed communication's share of the step time, each iteration term's share of the
        iteration time and the largest term. See `traceview.analysis.iteration.headline`."""
        return self.run("headline", step=step)

    def trace_breakdown(self) -> pl.DataFrame:
        """The same terms as `step_breakdown` over each rank's whole trace (first to last device task)."""
        return self.run("trace_breakdown")

    def classified_tasks(self, classes: str | None = None) -> pl.DataFrame:
        """device_tasks with compute_class, compute_group and launch_op columns.

        `classes`: a user's rules file (TOML) whose rules come before the shipped ones.
        See `traceview.analysis.classes`."""
        return self.run("classified_tasks", classes=classes)

    def compute_classes(self, classes: str | None = None, by: Sequence[str] = ("rank",)) -> pl.DataFrame:
        """Per rank (or `by`) and compute class: time_us, share of device time, count."""
        return self.run("compute_classes", classes=classes, by=tuple(by))

    def unclassified_share(self, classes: str | None = None) -> pl.DataFrame:
        """Per rank: device time no compute-class rule matched, and its share of all device time."""
        return self.run("unclassified_share", classes=classes)

    def top_kernels(self, n: int = 10, classes: str | None = None, by: Sequence[str] = ("rank",)) -> pl.DataFrame:
        """The `n` kernels with the most device time per rank (or `by`): count, total, mean, share."""
        return self.run("top_kernels", n=n, classes=classes, by=tuple(by))

    def kernel_totals(self, n: int = 20, classes: str | None = None) -> pl.DataFrame:
        """The `n` kernels with the most device time over all ranks, with a short distinct name
        and their time per rank (min / median / max). See `traceview.analysis.kernels`."""
        return self.run("kernel_totals", n=n, classes=classes)

    def operators(self, n: int = 20, classes: str | None = None) -> pl.DataFrame:
        """Host operators by name and input shapes with the device time of the tasks they
        launched (the plugin's "Operator + Input Shape"). See `traceview.analysis.kernels`."""
        return self.run("operators", n=n, classes=classes)

    def iteration_gaps(self) -> pl.DataFrame:
        """Per rank and step: host and device step length and the device gap before the step (µs).
        See `traceview.analysis.gaps.step_times`."""
        return self.run("iteration_gaps")

    def launch_calls(self) -> pl.DataFrame:
        """Per rank and correlation id: the launch call's start and end (ns), shared by the idle and
        delay analyses. See `traceview.analysis.gaps.launch_calls`."""
        return self.run("launch_calls")

    def stream_idle(self, kernel_wait_threshold_us: float = 30.0, by_step: bool = False) -> pl.DataFrame:
        """Per rank and stream: idle time split into host_wait / kernel_wait / other (HTA's rule).
        See `traceview.analysis.gaps.stream_idle`."""
        return self.run("stream_idle", kernel_wait_threshold_us=kernel_wait_threshold_us, by_step=by_step)

    def memory(self) -> pl.DataFrame:
        """The memory timeline: per rank, device and allocator component, each record's
        allocated_bytes and reserved_bytes (torch.profiler(profile_memory=True), torch_npu
        memory_record.csv); empty when the profile recorded no memory. See
        `traceview.analysis.memory.memory_timeline`."""
        return self.run("memory")

    def memory_peaks(self) -> pl.DataFrame:
        """Per memory series: peak allocated and reserved bytes over the whole trace (step null)
        and each step, when the peak was, and its share of the device's memory. See
        `traceview.analysis.memory.memory_peaks`."""
        return self.run("memory_peaks")

    def memory_at_peak(self) -> pl.DataFrame:
        """Per device at its peak: the operators whose blocks were live, bytes and share of the
        peak, and what was allocated before the trace. See `traceview.analysis.memory.memory_at_peak`."""
        return self.run("memory_at_peak")

    def op_roofline(self, rules=None, by_step: bool = False) -> pl.DataFrame:
        """Per rank, operator, input dims and dtype: calls, GFLOP and bytes per call (from the
        recorded shapes: record_shapes=True), device time, achieved TFLOP/s and TB/s, the device's
        peak for the dtype, peak_frac, the roofline's expected time and bound (`rules`: extra
        device table entries; `by_step`: a row per step too). See
        `traceview.analysis.roofline.op_roofline` and docs/roofline.md."""
        return self.run("op_roofline", rules=rules, by_step=by_step)

    def traced_flops(self, rules=None) -> pl.DataFrame:
        """Per rank and step: the model FLOPs summed from the operators' recorded shapes, TFLOP/s
        per device over the step time, and the MFU they give against the device's peak for the
        dtype carrying most matrix FLOPs (no --params needed). See
        `traceview.analysis.traced_flops.traced_flops`."""
        return self.run("traced_flops", rules=rules)

    def flops_anatomy(self) -> pl.DataFrame:
        """Per rank and operator family: share of the traced FLOPs next to share of device time.
        See `traceview.analysis.traced_flops.flops_anatomy`."""
        return self.run("flops_anatomy")

    def what_if(self, peak_frac: float = 0.7, micro_batches: int | None = None, rules=None) -> pl.DataFrame:
        """What the mean iteration would be if one measured part changed, each a bound stated as
        such: exposed communication hidden, data loading overlapped, the pipeline bubble at an
        ideal 1F1B schedule's (with `micro_batches`), matrix work at `peak_frac` of the peak, bf16
        matrix work in fp8. See `traceview.analysis.what_if` and docs/roofline.md."""
        return self.run("what_if", peak_frac=peak_frac, micro_batches=micro_batches, rules=rules)

    def expected(self, config, rules=None) -> pl.DataFrame:
        """The analytical model's step for a transformer `config` (a ModelConfig, a dict or a TOML
        file: `traceview.analysis.model_config`) on this profile's device, term by term (compute,
        memory, optimizer, tp/pp/dp communication, bubble, step, matrix FLOPs) beside the measured
        terms of the busiest rank. See `traceview.analysis.expected` and docs/roofline.md."""
        return self.run("expected", config=config, rules=rules)

    def expected_ops(self, config, rules=None) -> pl.DataFrame:
        """The analytical model's operations (per layer and pass, communication, optimizer) with
        FLOPs, bytes, time at the roofline and time per step. See `traceview.analysis.expected`."""
        return self.run("expected_ops", config=config, rules=rules)

    def op_calls(self) -> pl.DataFrame:
        """One row per operator call the roofline covers: its kernels, device time (their union),
        FLOPs and bytes. See `traceview.analysis.roofline.op_calls`."""
        return self.run("op_calls")

    def launch_delays(self) -> pl.DataFrame:
        """Per rank: launch delay (task start − launch call end) statistics, µs, over the tasks of
        asynchronous launch calls; `synchronous` counts the tasks of synchronous calls (a
        `cudaMemcpy` returns once its copy is done), left out."""
        return self.run("launch_delays")

    def long_steps(self, factor: float = 1.2) -> pl.DataFrame:
        """Steps longer than `factor` × the rank's median step, with the term that grew most."""
        return self.run("long_steps", factor=factor)

    def bubbles(self) -> pl.DataFrame:
        """Per rank and step: GPU pipeline bubble, pipeline step, exposed P2P (µs).
        See `traceview.analysis.bubbles` (Ascend's receive-op bubble is in `step_breakdown`)."""
        return self.run("bubbles")

    def pipeline_stages(self) -> pl.DataFrame:
        """Per rank: pipeline group and stage when the trace allows inferring them (else null)."""
        return self.run("pipeline_stages")

    def collectives(self) -> pl.DataFrame:
        """One row per collective instance and rank, matched across ranks: transfer (min duration
        over ranks), wait, start skew, bandwidths. See `traceview.analysis.collectives`. When the ranks'
        clocks disagree (`collectives.clock_offsets`), start skew is computed on aligned clocks and
        `warnings` names the offsets."""
        return self.run("collectives")

    def stragglers(self) -> pl.DataFrame:
        """Per rank: waits in collectives and `is_straggler` for the rank the others wait for."""
        return self.run("stragglers")

    def step_skew(self) -> pl.DataFrame:
        """Per step: spread of step duration over ranks and the rank with the longest step."""
        return self.run("step_skew")

    def throughput(self, **kwargs) -> pl.DataFrame:
        """Tokens/s per device, model TFLOP/s per device and MFU per step.

        Keyword arguments as `traceview.analysis.throughput.throughput` (tokens_per_step or
        seq_len + global_batch; params or flops_per_token; recompute; peak_tflops; devices).
        Defaults: devices = the recorded world size (else the ranks loaded), device_name = the
        first rank's device."""
        return self.run("throughput", **kwargs)

    def findings(
        self,
        throughput: dict | None = None,
        rules: str | None = None,
        classes: str | None = None,
        details: bool = True,
        micro_batches: int | None = None,
    ) -> pl.DataFrame:
        """Advice from the numbers: one row per rule that fires on a rank (or profile-wide), with
        severity, the value and threshold, a message citing the numbers, and the advice.

        `throughput`: keyword arguments of `throughput` (enables the MFU rule); `rules`: a user's
        findings rules file (TOML, see docs/findings.md); `classes`: a compute-class rules file;
        `details=False` skips the costly idle-per-stream, launch-call and pipeline-stage analyses
        (the host-wait rule, the launch cost and the stage count then stay silent); `micro_batches`:
        the run's micro-batch count, for the ideal-bubble rule. See `traceview.analysis.findings`."""
        return self.run(
            "findings",
            throughput=dict(throughput) if throughput else None,
            rules=rules,
            classes=classes,
            details=details,
            micro_batches=micro_batches,
        )

    def info(self) -> pl.DataFrame:
        """One row per rank: what was loaded.

        Columns: rank, format, world_size, device_name, device_type, device_tasks (every kernel,
        memcpy, memset and communication task), kernel/memcpy/memset/communication counts, streams
        (distinct device streams), steps (distinct step numbers), host_events, start_us/end_us/span_us
        (first device-task start to last end, or of host events when there are no device tasks),
        source.
        """
        tasks = self.device_tasks
        counts = tasks.group_by("rank").agg(
            pl.len().alias("device_tasks"),
            *[(pl.col("kind") == k).sum().alias(k) for k in schema.TASK_KINDS],
            pl.col("stream").n_unique().alias("streams"),
            pl.col("start_ns").min().alias("_dev_start"),
            pl.col("end_ns").max().alias("_dev_end"),
        )
        host = self.host_events.group_by("rank").agg(
            pl.len().alias("host_events"),
            pl.col("start_ns").min().alias("_host_start"),
            pl.col("end_ns").max().alias("_host_end"),
        )
        steps = self.steps.group_by("rank").agg(pl.col("step").n_unique().alias("steps"))
        zero = [pl.col(c).fill_null(0) for c in ("device_tasks", *schema.TASK_KINDS, "streams", "host_events", "steps")]
        start = pl.coalesce("_dev_start", "_host_start")
        end = pl.coalesce("_dev_end", "_host_end")
        return (
            self.ranks.join(counts, on="rank", how="left")
            .join(host, on="rank", how="left")
            .join(steps, on="rank", how="left")
            .with_columns(
                *zero,
                (start / 1000).alias("start_us"),
                (end / 1000).alias("end_us"),
                ((end - start) / 1000).alias("span_us"),
            )
            .select(
                "rank",
                "format",
                "world_size",
                "device_name",
                "device_type",
                "device_tasks",
                *schema.TASK_KINDS,
                "streams",
                "steps",
                "host_events",
                "start_us",
                "end_us",
                "span_us",
                "source",
            )
            .sort("rank")
        )

    def __repr__(self) -> str:
        n = self.ranks.height
        fmts = ",".join(sorted(set(self.ranks["format"].drop_nulls().to_list())))
        return (
            f"<Trace {self.source!r}: {n} rank{'s' if n != 1 else ''} ({fmts}), "
            f"{self.device_tasks.height:,} device tasks, {self.steps['step'].n_unique()} steps, "
            f"{len(self.load_warnings)} load warnings>"
        )

    def _repr_html_(self) -> str:
        """A compact table for Jupyter (`traceview.dashboards.notebook.trace_html`)."""
        return notebook_views.views().trace_html(self)
