"""Phases: forward, backward, optimizer and other, for device time and for wall time (docs/metrics.md,
"The whole iteration"; docs/metrics.md, "Phases").

**Host phase spans** (per rank; `traceview/rules/phases.toml` [[phase]] entries with a `host`
pattern, searched in host event names; a user's first):

- optimizer: `Optimizer.step#...`, `Optimizer.zero_grad#...` spans;
- backward: `autograd::engine::evaluate_function: ...` spans (2021 traces: the autograd node
  names, `...Backward0`), and every event on an *autograd thread*: a thread that records a
  backward span and no step annotation (ProfilerStep#N; the [[not_activity]] patterns), as the
  autograd engine's device threads do;
- forward: spans of the rules' forward patterns (none shipped), and the *forward region* of each
  step: from the host step's start to the end of its last backward span inside it (the whole
  host step when it has none, as in inference); a rank without host steps is one step, from its
  first host event to its last;
- a span matching several phases belongs to the first in the priority optimizer, backward,
  forward.

**Device phase of a task**: a [[phase]] entry with a `task` pattern matching the task's scope
(MindSpore's `Gradients/...` paths; the name where no scope is recorded) decides first; otherwise the phase of the host at the task's *issue point*,
the start of its launch call (the runtime event with its correlation id; a graph launch's
kernels share it). Where a task queue sits between operator and launch (torch_npu: the operator
records `Enqueue`, a worker thread `Dequeue@...` and the launch inside it), the issue point is the
start of the Enqueue paired with the Dequeue holding the launch (the queue is first in, first
out: the k-th Enqueue of a rank with the k-th Dequeue, when the rank has as many of each; the
[task_queue] patterns name them). A task with neither is `other`.

**Measures** (over each iteration window, in `traceview.analysis.iteration`'s sweep; busy = any
device task running):

- `device_<phase>_us`: device busy time whose running tasks include one of that phase, each
  instant once in the priority optimizer, backward, forward, other. Σ device phases = the
  device's busy time in the iteration (iteration_computing + exposed comm + exposed memcpy).
- `wall_<phase>_us`: device busy instants by the device's phase; idle instants by the host's
  (the first phase span covering the instant; data loading and instants outside every span are
  `other`). Σ wall phases = iteration_us.

Device phases are null on a rank with no host events and no task rule match (nothing says what
any task is for); wall phases are null on a rank without host events.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path

import polars as pl

from traceview import rules as rule_tables
from traceview.analysis import intervals as iv
from traceview.analysis.declare import analysis, use
from traceview.terms import DEVICE_PHASE_COLUMNS, PHASE_LABELS, PHASES, WALL_PHASE_COLUMNS

#: The phases host spans mark (`other` is what none marks); the phases, their columns (µs) in
#: `traceview.analysis.iteration.iteration_breakdown` and their labels are the vocabulary's
#: (`traceview.terms`).
MARKED = PHASES[:-1]
DEVICE_COLUMNS = DEVICE_PHASE_COLUMNS
WALL_COLUMNS = WALL_PHASE_COLUMNS
LABELS = PHASE_LABELS

#: The interval sets this module adds to the iteration's sweep.
SETS = [*(f"dev_{p}" for p in MARKED), *(f"host_{p}" for p in MARKED)]


@dataclasses.dataclass(frozen=True)
class HostRules:
    """What the host's spans mean (`traceview/rules/phases.toml`; `host_rules`): regexes of
    host event names that are data loading / not program activity / a task queue's Enqueue and
    Dequeue / a synchronous runtime call (the host waits for what it issues), and the phase rules, (phase, "host" or "task", regex) in order."""

    data_loading: tuple[str, ...] = ()
    not_activity: tuple[str, ...] = ()
    enqueue: tuple[str, ...] = ()
    dequeue: tuple[str, ...] = ()
    synchronous: tuple[str, ...] = ()
    phase_rules: tuple[tuple[str, str, str], ...] = ()


#: The pattern lists of `traceview/rules/phases.toml` (each entry one `pattern`).
_PATTERN_KEYS = ("data_loading", "not_activity", "enqueue", "dequeue", "synchronous")
_PHASE_KEYS = {"phase", "host", "task"}


def _phase_entry(entry: dict, where: str) -> tuple[str, str, str]:
    """(phase, "host" or "task", pattern) of one [[phase]] entry; RulesError naming `where`."""
    if set(entry) - _PHASE_KEYS or "phase" not in entry or len(set(entry) & {"host", "task"}) != 1:
        raise rule_tables.RulesError(f"{where}: an entry has 'phase' and one of 'host' or 'task'")
    if entry["phase"] not in MARKED:
        raise rule_tables.RulesError(f"{where}: phase {entry['phase']!r} is not one of {', '.join(MARKED)}")
    key = "host" if "host" in entry else "task"
    return entry["phase"], key, rule_tables.check_regex(entry[key], where, key=key)


def host_rules(user: Sequence[tuple[str, dict]] = ()) -> HostRules:
    """The host-span and phase patterns of `traceview/rules/phases.toml`, a user's first (`user`:
    (file, its phases part) pairs whose `[[<key>]]` entries come first, from `traceview.ruleset`).
    RulesError naming the file and entry for an unknown key or a bad regex."""
    docs: list[tuple[str | Path, dict]] = list(user)
    docs.append((rule_tables.shipped_path("phases"), rule_tables.shipped("phases")))
    keys = (*_PATTERN_KEYS, "phase")
    out: dict[str, list] = {k: [] for k in keys}
    for path, doc in docs:
        unknown = sorted(set(doc) - set(keys))
        if unknown:
            raise rule_tables.RulesError(f"{path}: phases: unknown key(s) {', '.join(unknown)} ({', '.join(keys)})")
        for key in keys:
            if key not in doc:
                continue
            for i, entry in enumerate(rule_tables.entries(doc, path, key=key, allowed=keys), start=1):
                where = f"{path}: phases.{key} {i}"
                if key == "phase":
                    out[key].append(_phase_entry(entry, where))
                    continue
                if set(entry) != {"pattern"}:
                    raise rule_tables.RulesError(f"{where}: an entry has one key, 'pattern'")
                out[key].append(rule_tables.check_regex(entry["pattern"], where))
    return HostRules(**{k: tuple(out[k]) for k in _PATTERN_KEYS}, phase_rules=tuple(out["phase"]))


def name_matches(patterns: tuple[str, ...], column: str = "name") -> pl.Expr:
    """Rows whose `column` matches any of the regexes `patterns` (false on a null, and with none)."""
    if not patterns:
        return pl.lit(False)
    return pl.col(column).str.contains("|".join(f"(?:{p})" for p in patterns)).fill_null(False)


def _phase_of(rules: tuple[tuple[str, str, str], ...], where: str, column: str = "name") -> pl.Expr:
    """The first phase whose `where` ("host" or "task") patterns match `column`, else null."""
    expr = pl.lit(None, pl.String)
    for phase in reversed(MARKED):
        patterns = tuple(p for ph, w, p in rules if ph == phase and w == where)
        expr = pl.when(name_matches(patterns, column)).then(pl.lit(phase)).otherwise(expr)
    return expr


def host_spans(
    host_events: pl.DataFrame,
    steps: pl.DataFrame,
    rules: tuple[tuple[str, str, str], ...],
    not_activity: tuple[str, ...] = (),
) -> pl.DataFrame:
    """The host phase spans (module docstring): rank, phase, start_ns, end_ns."""
    ev = host_events.select("rank", "pid", "tid", "name", "start_ns", "end_ns").with_columns(
        _phase_of(rules, "host").alias("phase")
    )
    thread = ["rank", "pid", "tid"]
    autograd = (
        ev.group_by(thread)
        .agg(
            (pl.col("phase") == "backward").any().alias("_bwd"),
            name_matches(not_activity).any().alias("_step"),
        )
        .filter(pl.col("_bwd") & ~pl.col("_step"))
        .select(thread)
    )
    on_autograd = ev.join(autograd, on=thread, how="semi", nulls_equal=True).with_columns(
        pl.when(pl.col("phase") == "optimizer").then(pl.lit("optimizer")).otherwise(pl.lit("backward")).alias("phase")
    )
    marked = pl.concat([ev.filter(pl.col("phase").is_not_null()), on_autograd]).select(
        "rank", "phase", "start_ns", "end_ns"
    )
    # a rank without host steps (an inference trace) is one step: its whole host time
    stepped = steps.filter(pl.col("host_start_ns").is_not_null() & pl.col("host_end_ns").is_not_null())
    whole = (
        ev.join(stepped.select("rank").unique(), on="rank", how="anti")
        .group_by("rank")
        .agg(
            pl.lit(None, pl.Int64).alias("step"),
            pl.col("start_ns").min().alias("host_start_ns"),
            pl.col("end_ns").max().alias("host_end_ns"),
        )
    )
    ranges = pl.concat([stepped.select(whole.columns), whole], how="vertical_relaxed")
    return pl.concat([marked, forward_regions(marked, ranges)]).unique()


def forward_regions(marked: pl.DataFrame, steps: pl.DataFrame) -> pl.DataFrame:
    """Each host step's forward region: [host start, end of its last backward span starting inside
    it) (clipped to the host step), or the whole host step when no backward span starts inside it.
    `steps`: rank, step, host_start_ns, host_end_ns. rank, phase ("forward"), start_ns, end_ns."""
    hosts = steps.select("rank", "step", "host_start_ns", "host_end_ns").sort("host_start_ns")
    backward = marked.filter(pl.col("phase") == "backward").select("rank", "start_ns", "end_ns").sort("start_ns")
    last = (
        backward.join_asof(
            hosts, left_on="start_ns", right_on="host_start_ns", by="rank", strategy="backward", check_sortedness=False
        )
        .filter(pl.col("start_ns") < pl.col("host_end_ns"))
        .group_by("rank", "step")
        .agg(pl.col("end_ns").max().alias("_bwd_end"))
    )
    return hosts.join(last, on=["rank", "step"], how="left", nulls_equal=True).select(
        "rank",
        pl.lit("forward").alias("phase"),
        pl.col("host_start_ns").alias("start_ns"),
        pl.min_horizontal(pl.col("_bwd_end").fill_null(pl.col("host_end_ns")), "host_end_ns").alias("end_ns"),
    )


def issue_points(
    host_events: pl.DataFrame,
    launches: pl.DataFrame,
    enqueue: tuple[str, ...] = (),
    dequeue: tuple[str, ...] = (),
) -> pl.DataFrame:
    """When the host issued the work of each correlation id: rank, correlation, issue_ns (the
    launch call's start, or the start of the paired Enqueue when the launch runs inside a Dequeue;
    module docstring)."""
    points = launches.select("rank", "correlation", pl.col("launch_start_ns").alias("issue_ns"))
    if not enqueue or not dequeue or host_events.height == 0:
        return points

    def queue(patterns: tuple[str, ...], prefix: str) -> pl.DataFrame:
        return (
            host_events.filter(name_matches(patterns))
            .select("rank", pl.col("start_ns").alias(f"{prefix}_start"), pl.col("end_ns").alias(f"{prefix}_end"))
            .sort("rank", f"{prefix}_start")
            .with_columns(pl.int_range(pl.len()).over("rank").alias("_k"), pl.len().over("rank").alias(f"_{prefix}_n"))
        )

    pairs = (
        queue(dequeue, "deq")
        .join(queue(enqueue, "enq"), on=["rank", "_k"], how="inner")
        .filter(pl.col("_deq_n") == pl.col("_enq_n"))
        .select("rank", "deq_start", "deq_end", "enq_start")
        .sort("deq_start")
    )
    if pairs.height == 0:
        return points
    found = (
        points.sort("issue_ns")
        .join_asof(
            pairs, left_on="issue_ns", right_on="deq_start", by="rank", strategy="backward", check_sortedness=False
        )
        .with_columns(
            pl.when(pl.col("issue_ns") < pl.col("deq_end"))
            .then(pl.col("enq_start"))
            .otherwise(pl.col("issue_ns"))
            .alias("issue_ns")
        )
    )
    return found.select("rank", "correlation", "issue_ns")


def _covered(points: pl.DataFrame, spans: pl.DataFrame, at: str) -> pl.Series:
    """Whether each row's time `at` lies in U(spans) of its rank (in the order of `points`)."""
    merged = iv.merged(spans).select("rank", "s", "e").sort("s")
    probe = points.select("rank", pl.col(at).alias("_t")).with_row_index("_i").sort("_t")
    hit = probe.join_asof(merged, left_on="_t", right_on="s", by="rank", strategy="backward", check_sortedness=False)
    return hit.sort("_i").select((pl.col("_t") < pl.col("e")).fill_null(False))["_t"]


def task_phases(
    device_tasks: pl.DataFrame,
    spans: pl.DataFrame,
    issues: pl.DataFrame,
    rules: tuple[tuple[str, str, str], ...],
) -> pl.Series:
    """The phase of every device task (module docstring), in the order of `device_tasks`."""
    scoped = pl.coalesce("scope", "name") if "scope" in device_tasks.columns else pl.col("name")
    tasks = (
        device_tasks.select("rank", scoped.alias("name"), "correlation")
        .with_row_index("_i")
        .with_columns(_phase_of(rules, "task").alias("_named"))
        .join(issues, on=["rank", "correlation"], how="left")
    )
    known = tasks.filter(pl.col("issue_ns").is_not_null())
    phase = pl.lit("other")
    for p in reversed(MARKED):
        phase = pl.when(pl.col(f"_in_{p}")).then(pl.lit(p)).otherwise(phase)
    launched = known.with_columns(
        _covered(known, spans.filter(pl.col("phase") == p), "issue_ns").alias(f"_in_{p}") for p in MARKED
    ).select("_i", phase.alias("_launched"))
    out = tasks.join(launched, on="_i", how="left").sort("_i")
    return out.select(pl.coalesce("_named", "_launched", pl.lit("other")).alias("phase"))["phase"]


def classify(
    device_tasks: pl.DataFrame,
    host_events: pl.DataFrame,
    steps: pl.DataFrame,
    launches: pl.DataFrame,
    phase_rules: tuple[tuple[str, str, str], ...] = (),
    not_activity: tuple[str, ...] = (),
    enqueue: tuple[str, ...] = (),
    dequeue: tuple[str, ...] = (),
    with_tasks: bool = True,
) -> tuple[pl.DataFrame, pl.Series | None]:
    """The host phase spans (`host_spans`) and the phase of every device task (`task_phases`, in
    the order of `device_tasks`; None without `with_tasks`). `launches`:
    `gaps.launch_calls(host_events)`."""
    spans = host_spans(host_events, steps, phase_rules, not_activity)
    if not with_tasks:
        return spans, None
    issued = issue_points(host_events, launches, enqueue, dequeue)
    return spans, task_phases(device_tasks, spans, issued, phase_rules)


def device_totals(device_tasks: pl.DataFrame, task_phase: pl.Series, host_events: pl.DataFrame) -> pl.DataFrame:
    """Per rank, over its whole trace: `device_<phase>_us` for the DEVICE_COLUMNS, each device busy
    instant once by the phase priority (as per iteration, but with no step needed: MindSpore
    timelines, inference traces). Null on a rank with no host events and no task rule match."""
    tasks = device_tasks.select("rank", "start_ns", "end_ns").with_columns(task_phase.alias("phase"))
    spans = pl.concat(
        [
            tasks.select("rank", pl.lit("busy").alias("set"), "start_ns", "end_ns"),
            tasks.filter(pl.col("phase") != "other").select(
                "rank", ("dev_" + pl.col("phase")).alias("set"), "start_ns", "end_ns"
            ),
        ]
    )
    measures, before = {}, pl.lit(False)
    for phase in MARKED:
        measures[f"device_{phase}_ns"] = pl.col(f"dev_{phase}") & ~before
        before = before | pl.col(f"dev_{phase}")
    measures["device_other_ns"] = pl.col("busy") & ~before
    segs = iv.segments(spans, ["rank"], ["busy", *(f"dev_{p}" for p in MARKED)])
    known = pl.concat([host_events.select("rank"), tasks.filter(pl.col("phase") != "other").select("rank")]).unique()
    out = device_tasks.select("rank").unique().join(iv.lengths(segs, ["rank"], measures), on="rank", how="left")
    known_rank = pl.col("rank").is_in(known["rank"].implode())
    return out.select(
        "rank",
        *[pl.when(known_rank).then(pl.col(f"{c}_ns").fill_null(0) / 1000.0).alias(f"{c}_us") for c in DEVICE_COLUMNS],
    ).sort("rank")


# ---- declared analyses (`traceview.registry`) ------------------------------------------------------


@analysis(
    "host_phases",
    inputs={"host_events": "host_events", "steps": "steps", "rules": "rules.phases"},
    keys=("rank", "phase"),
)
def host_phases(host_events: pl.DataFrame, steps: pl.DataFrame, rules: HostRules) -> pl.DataFrame:
    """The host phase spans (forward, backward, optimizer: the host ranges the trace's phase rules
    mark, per rank): rank, phase, start_ns, end_ns. See `host_spans`."""
    return host_spans(host_events, steps, rules.phase_rules, rules.not_activity)


@analysis(
    "task_phases",
    inputs={
        "device_tasks": "device_tasks",
        "host_events": "host_events",
        "launches": use("launch_calls"),
        "spans": use("host_phases"),
        "rules": "rules.phases",
    },
    keys=("rank", "stream", "start_ns"),
)
def task_phase_frame(
    device_tasks: pl.DataFrame,
    host_events: pl.DataFrame,
    launches: pl.DataFrame,
    spans: pl.DataFrame,
    rules: HostRules,
) -> pl.DataFrame:
    """Every device task's phase (forward, backward, optimizer, other; through its launch), in
    the order of device_tasks: rank, stream, name, start_ns, end_ns, phase. See `task_phases`."""
    issued = issue_points(host_events, launches, rules.enqueue, rules.dequeue)
    phase = task_phases(device_tasks, spans, issued, rules.phase_rules)
    return device_tasks.select("rank", "stream", "name", "start_ns", "end_ns").with_columns(phase)


@analysis(
    "device_phases",
    inputs={"device_tasks": "device_tasks", "phased": use("task_phases"), "host_events": "host_events"},
    scope="rank",
)
def device_phases(device_tasks: pl.DataFrame, phased: pl.DataFrame, host_events: pl.DataFrame) -> pl.DataFrame:
    """Per rank, over the whole trace: device time by phase (forward, backward, optimizer, other;
    µs), each busy instant once. Needs no steps (MindSpore timelines, inference). See
    `device_totals`."""
    return device_totals(device_tasks, phased["phase"], host_events)
