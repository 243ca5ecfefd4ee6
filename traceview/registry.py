"""The analysis registry: every analysis a `Trace` offers, in one table.

Each row (`Analysis`) says how to compute the analysis from a Trace (its frames and other
analyses), its parameters with their defaults, its scope and the columns that identify a row:

- scope "rank": a rank's rows depend on that rank's frames only, so the analysis run on each rank
  alone and concatenated equals the analysis on all ranks (`tests/test_executors.py` checks it on
  real multi-rank profiles). These are computed where a rank is parsed, with their default
  parameters, and cached with the rank (`traceview.per_rank`).
- scope "profile": needs several ranks at once (the pipeline bubble's step is the longest compute
  span over a pipeline group; collective matching; whatever reads those).

`Trace.run(name, **params)` computes an analysis once per distinct parameters: the memo key is
`memo_key(name, params)`, the parameters bound to the defaults and frozen (lists and tuples alike,
dicts by sorted items), so `by=["rank"]` and `by=("rank",)` are one entry and unhashable values
work. A row's `notes` derives warning lines from the analysis (the clock-offset warning of the
collective matching): `Trace.warnings` is the load's warnings plus every row's notes, whatever was
called before.

The definitions and units of each analysis are in its function's docstring (`module`). Adding a
metric is one function in `traceview.analysis` plus one row here (docs/ARCHITECTURE.md).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from traceview import registry_reads as reads
from traceview.analysis import (
    breakdown,
    bubbles,
    collectives,
    gaps,
    iteration,
    kernels,
    memory,
    phases,
    roofline,
    traced_flops,
    what_if,
)
from traceview.analysis import classes as cls

#: Marks an analysis that takes free keyword arguments (checked by the analysis itself).
ANY_KEYWORDS = None

#: The columns `traceview.analysis.classes.classify` adds to device_tasks (what a rank caches of
#: `classified_tasks`: the rest are the device tasks themselves).
CLASS_COLUMNS = ("launch_op", "compute_class", "compute_group", "classified")


@dataclass(frozen=True)
class Analysis:
    """One registry row (see the module docstring)."""

    name: str
    run: Callable[..., pl.DataFrame | None]
    module: str
    scope: str = "profile"
    defaults: Mapping[str, object] | None = field(default_factory=dict)
    #: the output columns that say what a row is for (its group-by columns)
    keys: tuple[str, ...] = ("rank",)
    notes: Callable | None = None
    #: the columns a rank's cache keeps (None: all of them)
    stored_columns: tuple[str, ...] | None = None
    #: parameter -> rule table: a parameter that takes user rules files for that table; the
    #: trace's own rules file (`traceview.load(rules=...)`) is added to it (`with_user_rules`)
    rule_params: Mapping[str, str] = field(default_factory=dict)

    def bind(self, params: Mapping[str, object]) -> dict[str, object]:
        """`params` over the defaults; TypeError naming an unknown parameter."""
        if self.defaults is ANY_KEYWORDS:
            return dict(params)
        unknown = sorted(set(params) - set(self.defaults))
        if unknown:
            raise TypeError(f"{self.name}() got an unexpected keyword argument {unknown[0]!r}")
        return {**self.defaults, **params}

    def with_user_rules(self, params: Mapping[str, object], rules_file: str | None, tables) -> dict:
        """`params` with the trace's rules file `rules_file` added to each rule parameter whose
        table the file extends (`tables`): after the files the caller gave, so theirs come first."""
        params = dict(params)
        if rules_file is None:
            return params
        for name, table in self.rule_params.items():
            if table not in tables:
                continue
            given = params.get(name, (self.defaults or {}).get(name))
            files = () if given is None else (given,) if isinstance(given, (str, Path)) else tuple(given)
            files = tuple(str(f) for f in files)
            params[name] = files + (rules_file,) if rules_file not in files else files
            if len(params[name]) == 1:
                params[name] = params[name][0]
        return params


def freeze(value):
    """A hashable form of a parameter value: lists and tuples as tuples, dicts and sets sorted."""
    if isinstance(value, (list, tuple)):
        return tuple(freeze(v) for v in value)
    if isinstance(value, dict):
        return ("__dict__", tuple(sorted((str(k), freeze(v)) for k, v in value.items())))
    if isinstance(value, (set, frozenset)):
        return ("__set__", tuple(sorted(map(freeze, value), key=repr)))
    return value


def memo_key(name: str, params: Mapping[str, object]) -> tuple:
    """The memo key of analysis `name` with `params` (bound to the defaults, then frozen)."""
    bound = REGISTRY[name].bind(params)
    return (name, freeze(bound))


# ---- how each analysis reads a Trace -----------------------------------------------------------


def _clock_offsets(t) -> pl.DataFrame | None:
    if t.ranks.height < 2 or not t.device_tasks["kind"].eq("communication").any():
        return None
    return collectives.clock_offsets(t.run("matched_collectives"))


def _collectives(t) -> pl.DataFrame:
    matched = t.run("matched_collectives")
    offsets = t.run("clock_offsets")
    return matched if offsets is None else collectives.align_start_skew(matched, offsets)


def _clock_notes(t) -> list[str]:
    offsets = t.run("clock_offsets")
    return [] if offsets is None else [f"{t.source}: {collectives.clock_warning(offsets)}"]


def _labelled_segments(*inputs) -> pl.DataFrame:
    return iteration.label_segments(iteration.iteration_segments(*inputs)[1])


def _host_phases(t, rules) -> pl.DataFrame:
    """The host phase spans (`phases.host_spans`): computed once per trace and rules, read by the
    device tasks' phases and the iteration."""
    r = iteration.load_host_rules(rules)
    return phases.host_spans(t.host_events, t.steps, r.phase_rules, r.not_activity)


def _task_phases(t, rules) -> pl.DataFrame:
    """The phase of every device task, in their order (one column): classified once per trace
    and rules (`phases.classify`), read by the iteration, its segments and the device phases."""
    r = iteration.load_host_rules(rules)
    issued = phases.issue_points(t.host_events, t.run("launch_calls"), r.enqueue, r.dequeue)
    spans = t.run("host_phases", rules=rules)
    return phases.task_phases(t.device_tasks, spans, issued, r.phase_rules).to_frame("phase")


_CLASSES = {"classes": "compute_classes"}

_ROWS = [
    Analysis(
        "step_breakdown",
        lambda t: breakdown.step_breakdown(t.device_tasks, t.steps, t.run("bubbles")),
        "traceview.analysis.breakdown",
        keys=("rank", "step"),
    ),
    *[
        Analysis(
            name,
            lambda t, rules, fn=fn: fn(
                t.device_tasks,
                t.host_events,
                t.steps,
                t.run("launch_calls"),
                iteration.load_host_rules(rules),
                t.run("task_phases", rules=rules)["phase"],
                t.run("host_phases", rules=rules),
            ),
            "traceview.analysis.iteration",
            scope,
            {"rules": None},
            keys=keys,
            rule_params={"rules": "phases"},
        )
        # the segments (about two rows a task) are rank-local too, but only the timeline and the
        # Perfetto export read them: computed when asked, never with every rank's parse
        for name, fn, keys, scope in (
            ("iteration_breakdown", iteration.iteration_breakdown, ("rank", "step"), "rank"),
            ("iteration_segments", _labelled_segments, ("rank", "seg_start_ns"), "profile"),
        )
    ],
    Analysis(
        "host_phases",
        _host_phases,
        "traceview.analysis.phases",
        "profile",
        {"rules": None},
        keys=("rank", "phase"),
        rule_params={"rules": "phases"},
    ),
    Analysis(
        "task_phases",
        _task_phases,
        "traceview.analysis.phases",
        "profile",
        {"rules": None},
        keys=("phase",),
        rule_params={"rules": "phases"},
    ),
    Analysis(
        "device_phases",
        lambda t, rules: phases.device_totals(
            t.device_tasks, t.run("task_phases", rules=rules)["phase"], t.host_events
        ),
        "traceview.analysis.phases",
        "rank",
        {"rules": None},
        keys=("rank",),
        rule_params={"rules": "phases"},
    ),
    Analysis(
        "headline",
        lambda t, step: iteration.headline(
            *(
                frame if step is None else frame.filter(pl.col("step") == step)
                for frame in (t.run("step_breakdown"), t.run("iteration_breakdown"))
            )
        ),
        "traceview.analysis.iteration",
        defaults={"step": None},
        keys=(),
    ),
    Analysis(
        "trace_breakdown", lambda t: breakdown.trace_breakdown(t.device_tasks), "traceview.analysis.breakdown", "rank"
    ),
    Analysis(
        "classified_tasks",
        lambda t, classes: cls.classify(t.device_tasks, t.host_events, cls.load_rules(classes)),
        "traceview.analysis.classes",
        "rank",
        {"classes": None},
        keys=("rank", "stream", "start_ns"),
        stored_columns=CLASS_COLUMNS,
        rule_params=_CLASSES,
    ),
    Analysis(
        "compute_classes",
        lambda t, classes, by: cls.class_summary(t.run("classified_tasks", classes=classes), by),
        "traceview.analysis.classes",
        "rank",
        {"classes": None, "by": ("rank",)},
        keys=("rank", "class"),
        rule_params=_CLASSES,
    ),
    Analysis(
        "unclassified_share",
        lambda t, classes: cls.unclassified_share(t.run("classified_tasks", classes=classes)),
        "traceview.analysis.classes",
        "rank",
        {"classes": None},
        rule_params=_CLASSES,
    ),
    Analysis(
        "top_kernels",
        lambda t, n, classes, by: cls.top_kernels(t.run("classified_tasks", classes=classes), n, by),
        "traceview.analysis.classes",
        "rank",
        {"n": 10, "classes": None, "by": ("rank",)},
        keys=("rank", "name"),
        rule_params=_CLASSES,
    ),
    *[
        Analysis(
            name,
            lambda t, n, classes, fn=fn: fn(t.run("classified_tasks", classes=classes), n),
            "traceview.analysis.kernels",
            "profile",
            {"n": 20, "classes": None},
            keys=keys,
            rule_params=_CLASSES,
        )
        for name, fn, keys in (
            ("kernel_totals", kernels.kernel_totals, ("name",)),
            ("operators", kernels.operators, ("operator", "input_shapes")),
        )
    ],
    Analysis(
        "memory",
        lambda t: memory.memory_timeline(t.frame("memory_events")),
        "traceview.analysis.memory",
        keys=("rank", "device_type", "device", "component", "ts_ns"),
    ),
    Analysis(
        "memory_peaks",
        lambda t: memory.memory_peaks(t.run("memory"), t.steps, t.ranks),
        "traceview.analysis.memory",
        "rank",
        keys=(*memory.SERIES, "step"),
    ),
    Analysis(
        "memory_at_peak",
        lambda t: memory.memory_at_peak(t.run("memory_peaks"), t.frame("memory_allocations")),
        "traceview.analysis.memory",
        "rank",
        keys=(*memory.SERIES, "operator"),
    ),
    Analysis(
        "iteration_gaps",
        lambda t: gaps.step_times(t.steps, t.device_tasks),
        "traceview.analysis.gaps",
        "rank",
        keys=("rank", "step"),
    ),
    Analysis(
        "launch_calls",
        lambda t, rules: gaps.launch_calls(t.host_events, iteration.load_host_rules(rules).synchronous),
        "traceview.analysis.gaps",
        "rank",
        {"rules": None},
        keys=("rank", "correlation"),
        rule_params={"rules": "phases"},
    ),
    Analysis(
        "stream_idle",
        lambda t, kernel_wait_threshold_us, by_step: gaps.stream_idle(
            t.device_tasks, t.host_events, kernel_wait_threshold_us, by_step, t.run("launch_calls")
        ),
        "traceview.analysis.gaps",
        "rank",
        {"kernel_wait_threshold_us": 30.0, "by_step": False},
        keys=("rank", "stream"),
    ),
    Analysis(
        "launch_delays",
        lambda t, rules: gaps.launch_delay_stats(t.device_tasks, t.host_events, t.run("launch_calls", rules=rules)),
        "traceview.analysis.gaps",
        "rank",
        {"rules": None},
        rule_params={"rules": "phases"},
    ),
    Analysis(
        "long_steps",
        lambda t, factor: gaps.long_steps(t.run("step_breakdown"), factor),
        "traceview.analysis.gaps",
        defaults={"factor": 1.2},
        keys=("rank", "step"),
    ),
    Analysis(
        "bubbles",
        lambda t: bubbles.gpu_bubbles(t.device_tasks, t.steps),
        "traceview.analysis.bubbles",
        keys=("rank", "step"),
    ),
    Analysis(
        "pipeline_stages",
        lambda t: bubbles.pipeline_stages(t.device_tasks, t.host_events, t.ranks),
        "traceview.analysis.bubbles",
    ),
    Analysis(
        "matched_collectives",
        lambda t: collectives.match_collectives(t.device_tasks),
        "traceview.analysis.collectives",
        keys=("collective_id", "rank"),
    ),
    Analysis("clock_offsets", _clock_offsets, "traceview.analysis.collectives", notes=_clock_notes),
    Analysis("collectives", _collectives, "traceview.analysis.collectives", keys=("collective_id", "rank")),
    Analysis("stragglers", lambda t: collectives.stragglers(t.run("collectives")), "traceview.analysis.collectives"),
    Analysis(
        "step_skew",
        lambda t: collectives.step_skew(t.run("step_breakdown").select("rank", "step", "duration_us")),
        "traceview.analysis.collectives",
        keys=("step",),
    ),
    Analysis(
        "throughput",
        reads.throughput_of,
        "traceview.analysis.throughput",
        defaults=ANY_KEYWORDS,
        keys=("step",),
        rule_params={"rules": "device_peaks"},
    ),
    Analysis(
        "op_calls",
        lambda t: pl.concat(
            [
                roofline.op_calls(t.device_tasks, t.host_events, t.frame("op_inputs")),
                roofline.device_op_calls(t.device_tasks),
            ]
        ),
        "traceview.analysis.roofline",
        keys=("rank", "op", "start_ns"),
    ),
    Analysis(
        "op_roofline",
        lambda t, rules, by_step: roofline.op_roofline(
            t.run("op_calls"), roofline.device_limits(t.ranks, rules), by_step=by_step
        ),
        "traceview.analysis.roofline",
        defaults={"rules": None, "by_step": False},
        keys=("rank", "op", "input_dims", "dtype", "algorithm"),
        rule_params={"rules": "device_peaks"},
    ),
    Analysis(
        "traced_flops",
        reads.traced_flops_of,
        "traceview.analysis.traced_flops",
        defaults={"rules": None},
        keys=("rank", "step"),
        rule_params={"rules": "device_peaks"},
    ),
    Analysis(
        "flops_anatomy",
        lambda t: traced_flops.flops_anatomy(t.run("op_calls"), t.device_tasks),
        "traceview.analysis.traced_flops",
        keys=("rank", "family"),
    ),
    Analysis(
        "what_if",
        lambda t, peak_frac, micro_batches, rules: what_if.what_if(
            t.run("iteration_breakdown"),
            reads.fact_frame(t, micro_batches=micro_batches) if micro_batches else pl.DataFrame(),
            t.run("op_calls"),
            roofline.device_limits(t.ranks, rules),
            peak_frac=peak_frac,
            micro_batches=micro_batches,
        ),
        "traceview.analysis.what_if",
        defaults={"peak_frac": 0.7, "micro_batches": None, "rules": None},
        keys=("scenario",),
        rule_params={"rules": "device_peaks"},
    ),
    Analysis(
        "expected_ops",
        lambda t, config, rules: reads.expected_ops(t, config, rules)[0],
        "traceview.analysis.expected",
        defaults={"config": None, "rules": None},
        keys=("op", "pass"),
        rule_params={"rules": "device_peaks"},
    ),
    Analysis(
        "expected",
        lambda t, config, rules: reads.model_beside_measured(t, config, rules),
        "traceview.analysis.expected",
        defaults={"config": None, "rules": None},
        keys=("term",),
        rule_params={"rules": "device_peaks"},
    ),
    Analysis(
        "findings",
        reads.findings_of,
        "traceview.analysis.findings",
        defaults={"throughput": None, "rules": None, "classes": None, "details": True, "micro_batches": None},
        keys=("rule", "rank"),
        rule_params={"rules": "findings", **_CLASSES},
    ),
]

#: name -> Analysis, in the order above (dependencies before what reads them).
REGISTRY: dict[str, Analysis] = {a.name: a for a in _ROWS}

#: The rank-local analyses, computed and cached with each rank (with their default parameters).
RANK_LOCAL: tuple[str, ...] = tuple(a.name for a in _ROWS if a.scope == "rank")
