"""`Trace`: one loaded profile, all ranks, as canonical polars frames."""

from __future__ import annotations

import functools
from collections.abc import Iterable

import polars as pl

from traceview import notebook_views, registry, ruleset, schema
from traceview.analysis.declare import RULES_PREFIX
from traceview.trace_methods import AnalysisMethods

#: Columns of `Trace.companions`.
COMPANIONS_SCHEMA = {"rank": pl.Int64, "source": pl.String, "kind": pl.String, "device_tasks": pl.Int64}


class Trace(AnalysisMethods):
    """A loaded profile (one or many ranks).

    Frames (all ranks concatenated, schema in `traceview.schema` / docs/schema.md):
    `ranks`, `device_tasks`, `host_events`, `device_annotations`, `steps`,
    `ascend_step_trace`, `ascend_communication`.
    `load_warnings`: one line per kind of recoverable oddity met while loading, naming the file;
    `warnings`: those plus the ones the analyses derive (see the property).
    `failures`: one line per rank source that could not be read (the others loaded).
    `rules`: the rule tables the trace was loaded with (`traceview.ruleset.RuleSet`: the shipped
    ones, extended by a user's rules files); its task kinds were applied when parsing, its other
    tables are the inputs of the analyses that read them (`run`). `with_rules` gives the same
    trace with other rules.
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
        #: the rule tables of this trace (`traceview.load(rules=...)`)
        self.rules: ruleset.RuleSet = ruleset.shipped()
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

    def with_rules(self, rules) -> Trace:
        """This trace with other rules (`rules`: a rules file for all tables, or a RuleSet:
        `traceview.ruleset.build`): the same frames, never copied, and analyses that start afresh.
        TraceError for a bad file, or for rules whose task kinds differ from those the trace was
        parsed with (those apply while parsing: load again with them)."""
        from traceview.errors import TraceError

        chosen = ruleset.build(rules)
        if chosen.task_kinds != self.rules.task_kinds:
            raise TraceError(
                None,
                "these rules change the task kinds, which apply while parsing",
                f"load the profile again with them: traceview.load({self.source!r}, rules=...)",
            )
        other = Trace(self.source, self.ranks, dict(self._frames), list(self.load_warnings), list(self.failures))
        other.companions = self.companions
        other.rules = chosen
        return other

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

    # ---- analyses: the declared ones (`traceview.registry`); their methods are in AnalysisMethods ----

    def run(self, name: str, **params) -> pl.DataFrame:
        """Analysis `name` of the registry (`traceview.registry.REGISTRY`) with `params`, computed
        once per distinct parameters (lists and dicts work as parameters: the memo key is
        `registry.memo_key`). Its inputs are resolved by name: frames from this trace, rule tables
        from `rules`, analyses through `run` itself (with the parameters the declaration binds), a
        lazy input as a function that runs it. The methods (`AnalysisMethods`) call this; it is
        also how a view iterates them."""
        entry = registry.REGISTRY[name]
        bound = entry.bind(params)
        key = (name, registry.freeze(bound))
        if key in self._memo:
            return self._memo[key]
        args = {}
        for param, source in entry.inputs.items():
            if isinstance(source, str):
                is_rules = source.startswith(RULES_PREFIX)
                args[param] = self.rules.table(source.removeprefix(RULES_PREFIX)) if is_rules else self.frame(source)
                continue
            given = {theirs: bound[mine] for theirs, mine in source.bind.items()}
            args[param] = (
                functools.partial(self.run, source.analysis, **given)
                if source.lazy
                else self.run(source.analysis, **given)
            )
        # the function's own parameters (and, for one taking **kwargs, what no input is given)
        own = {k: v for k, v in bound.items() if k in entry.own or (entry.any_keywords and k not in entry.params)}
        self._memo[key] = result = entry.declaration.function(**args, **own)
        return result

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
        file) and those the analyses derive (a declaration's `notes`: the ranks' clocks
        disagreeing), the same whatever was called before. Reading it on a multi-rank trace with
        communication matches the collectives (memoised)."""
        derived = [
            f"{self.source}: {line}"
            for a in registry.REGISTRY.values()
            if a.notes
            for line in a.notes(self.run(a.name))
        ]
        return [*self.load_warnings, *(line for line in derived if line not in self.load_warnings)]

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
