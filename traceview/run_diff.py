"""`traceview.diff(base, new)`: what changed between two runs (definitions: docs/diff.md).

    import traceview as tv
    d = tv.diff("runs/baseline", "runs/flash_attn")     # paths or loaded `Trace`s
    d.steps        # step time per rank (and for the whole run): mean/median, delta, %
    d.terms        # each step-decomposition term, base/new/delta/%
    d.iteration    # the whole iteration and its terms, each term's share of the change
    d.classes      # device time per compute class
    d.kernels      # every task name: counts, time, mean duration; added/removed
    d.collectives  # per collective type and process group: count, time, exposed time
    d.to_dict()    # JSON-ready, what `traceview diff --format json` prints

Every value is a mean per rank-step (see `traceview.analysis.diff` for the normalisation and the
identities between the frames); `base`/`new` describe what each run contributed (steps, ranks,
window rule), and `notes` say, in one line each, whatever makes the two runs less comparable.
"""

from __future__ import annotations

import dataclasses
import functools

import polars as pl

from traceview.analysis import diff as d
from traceview.errors import TraceError
from traceview.selection import int_ranges
from traceview.summary import _rounded

#: Labels of the two runs in notes and errors.
BASE, NEW = "BASE", "NEW"


#: The terms named in the iteration's headline: those moving at least this share of its change.
ATTRIBUTION_MIN_SHARE = 0.05


def iteration_headline(doc: dict) -> str | None:
    """The first line of a comparison (`RunDiff.to_dict()`), all ranks: the iteration's change and
    the terms it came from, largest first (those moving at least ATTRIBUTION_MIN_SHARE of it), e.g.
    "Iteration 177.592 -> 154.911 ms (-22.681 ms, -12.8 %): data loading -23.758 ms (105 % of the
    change), ..."; None when a run has no iteration."""
    from traceview.analysis.iteration import LABELS, TERMS
    from traceview.analysis.phases import WALL_COLUMNS

    rows = {r["term"]: r for r in doc.get("iteration", []) if r["rank"] is None}
    whole = rows.get("iteration")
    if not whole or whole["base_us"] is None or whole["new_us"] is None:
        return None
    line = f"Iteration {whole['base_us'] / 1000:,.3f} -> {whole['new_us'] / 1000:,.3f} ms ({whole['delta_us'] / 1000:+,.3f} ms"
    line += f", {whole['delta_pct']:+.1f} %)" if whole["delta_pct"] is not None else ")"
    for names, lead in ((TERMS, ": "), (WALL_COLUMNS, "; by phase: ")):
        movers = sorted(
            (
                r
                for t, r in rows.items()
                if t in names and r["delta_us"] is not None and r["share_of_change"] is not None
            ),
            key=lambda r: -abs(r["delta_us"]),
        )
        named = [r for r in movers if abs(r["share_of_change"]) >= ATTRIBUTION_MIN_SHARE]
        if named:
            line += lead + ", ".join(
                f"{LABELS[r['term']]} {r['delta_us'] / 1000:+,.3f} ms ({100 * r['share_of_change']:.0f} % of the change)"
                for r in named
            )
    return line


@dataclasses.dataclass
class _Run:
    """One side of a comparison: what is compared and the normaliser."""

    trace: object
    mode: str  # "steps" or "trace"
    windows: pl.DataFrame | None  # rank, step, win_start_ns, win_end_ns, clip (steps mode)
    breakdown: pl.DataFrame  # one row per measured window (step_breakdown / trace_breakdown rows)
    n: int  # compared rank-steps (the normaliser of raw sums)
    tasks: pl.DataFrame  # classified device tasks inside the compared windows
    class_rows: pl.DataFrame  # class_summary rows per rank (and step) inside the compared windows
    iterations: pl.DataFrame  # iteration_breakdown rows of the compared steps (none over whole traces)
    step_numbers: list[int]
    notes: list[str]

    def describe(self) -> dict:
        t = self.trace
        rules = sorted(set(self.breakdown["window_rule"].drop_nulls().to_list())) if self.mode == "steps" else ["trace"]
        return {
            "source": t.source,
            "formats": sorted(set(t.ranks["format"].drop_nulls().to_list())),
            "devices": sorted(set(t.ranks["device_name"].drop_nulls().to_list())),
            "ranks": sorted(r for r in t.ranks["rank"].to_list() if r is not None),
            "window": self.mode,
            "window_rules": rules,
            "step_numbers": self.step_numbers,
            "rank_steps": self.n,
            "measured_rank_steps": self.breakdown.height,
        }


#: Device time outside the compared steps is noted from this share on.
OUTSIDE_NOTE_FRAC = 0.01


def _left_out(trace, tasks: pl.DataFrame, chosen: pl.DataFrame, label: str) -> list[str]:
    """Notes on device work a per-step comparison does not count: ranks without a compared step,
    and the share of device time outside the compared steps (warm-up, tasks past the last step)."""
    notes = []
    missing = set(trace.device_tasks["rank"].unique().to_list()) - set(chosen["rank"].unique().to_list())
    if missing:
        notes.append(
            f"{label}: rank {int_ranges(missing) or 'unknown'} has device tasks but no compared step: left out"
        )
    total = trace.device_tasks["dur_ns"].sum()
    outside = 1 - tasks["dur_ns"].sum() / total if total else 0.0
    if outside >= OUTSIDE_NOTE_FRAC:
        notes.append(
            f"{label}: {100 * outside:.1f} % of the device time lies outside the compared steps and is "
            f"not counted (--whole-trace counts it)"
        )
    return notes


def prepare(trace, label: str, step: int | None = None, whole_trace: bool = False) -> _Run:
    """Choose the compared windows of one run and restrict its tasks and class sums to them
    (`label` names the run in its notes and errors; classes by the trace's rules)."""
    steps = trace.steps.with_columns(
        (pl.col("window_rule") == "gpu_annotation").any().over("rank").alias("clip")  # breakdown's per-rank rule
    )
    if step is not None:
        steps = steps.filter(pl.col("step") == step)
        if steps.is_empty():
            have = int_ranges(trace.steps["step"].to_list()) or "none"
            raise TraceError(
                None,
                f"step {step} is not in {label} {trace.source} (its steps: {have})",
                "give a step both runs have, or leave out --step",
            )
    # steps in which the device ran nothing (all-idle rows) are noted below, not measured
    breakdown = trace.step_breakdown().filter(pl.col("first_busy_ns").is_not_null())
    if not whole_trace and (step is not None or breakdown.height > 0):
        chosen = steps.select("rank", "step").unique()
        windows = steps.filter(pl.col("device_start_ns").is_not_null()).select(
            "rank",
            "step",
            pl.col("device_start_ns").alias("win_start_ns"),
            pl.col("device_end_ns").alias("win_end_ns"),
            "clip",
        )
        notes = []
        bare = steps.filter(pl.col("device_start_ns").is_null())
        if bare.height and bare.height == chosen.height:
            notes.append(
                f"{label}: step {int_ranges(bare['step'].to_list())} has no device tasks: no step time or terms, "
                f"and its device work counts as zero"
            )
        elif bare.height:
            notes.append(
                f"{label}: {bare.height} of {chosen.height} rank-steps have no device tasks (step "
                f"{int_ranges(bare['step'].to_list())}); they count as steps with no device work, and step time "
                f"and terms are over the other {chosen.height - bare.height}"
            )
        tasks = d.select_tasks(trace.classified_tasks(), chosen)
        notes += _left_out(trace, tasks, chosen, label)
        return _Run(
            trace=trace,
            mode="steps",
            windows=windows,
            breakdown=breakdown.join(chosen, on=["rank", "step"], how="semi", nulls_equal=True),
            n=chosen.height,
            tasks=tasks,
            class_rows=trace.compute_classes(by=("rank", "step")).join(
                chosen, on=["rank", "step"], how="semi", nulls_equal=True
            ),
            iterations=trace.iteration_breakdown().join(chosen, on=["rank", "step"], how="semi", nulls_equal=True),
            step_numbers=sorted(set(chosen["step"].to_list())),
            notes=notes,
        )
    if trace.device_tasks.is_empty():
        notes = [f"{label} has no device tasks (a CPU-only profile?): it has no step time, terms or kernels"]
    elif whole_trace:
        notes = []
    else:
        notes = [
            f"{label} has no step with device tasks: each rank's whole trace (first to last device task) "
            f"is compared as one step"
        ]
    return _Run(
        trace=trace,
        mode="trace",
        windows=None,
        breakdown=trace.trace_breakdown(),
        n=trace.ranks.height,
        tasks=trace.classified_tasks(),
        class_rows=trace.compute_classes(by=("rank",)),
        iterations=trace.iteration_breakdown().clear(),
        step_numbers=[],
        notes=notes,
    )


def _with_all(frame_of, breakdown: pl.DataFrame, per_rank: bool) -> pl.DataFrame:
    """frame_of(breakdown, by) for the whole run (rank null), plus per rank when `per_rank`."""
    whole = frame_of(breakdown, ()).with_columns(pl.lit(None, pl.Int64).alias("rank"))
    parts = [frame_of(breakdown, ["rank"]), whole] if per_rank else [whole]
    return pl.concat([p.select("rank", *[c for c in whole.columns if c != "rank"]) for p in parts])


def _step_table(b: _Run, w: _Run, per_rank: bool) -> pl.DataFrame:
    both = d.side_by_side(
        _with_all(d.step_times, b.breakdown, per_rank),
        _with_all(d.step_times, w.breakdown, per_rank),
        ["rank"],
        ["steps", "mean_us", "median_us"],
        absent_is_zero=False,
    )
    both = d.with_delta(d.with_delta(both, "mean_us"), "median_us", "median_delta_us", "median_delta_pct")
    return both.select(
        "rank",
        pl.col("base_steps").fill_null(0),
        pl.col("new_steps").fill_null(0),
        "base_mean_us",
        "new_mean_us",
        "delta_us",
        "delta_pct",
        "base_median_us",
        "new_median_us",
        "median_delta_us",
        "median_delta_pct",
    ).sort("rank", nulls_last=True)


def _terms_side_by_side(means_of, base: pl.DataFrame, new: pl.DataFrame, per_rank: bool, terms) -> pl.DataFrame:
    """Long-format term means (`means_of`) of both runs side by side with their deltas, in the
    order of `terms`: rank, term, base_us, new_us, delta_us, delta_pct."""
    both = d.side_by_side(
        _with_all(means_of, base, per_rank), _with_all(means_of, new, per_rank), ["rank", "term"], ["us"], False
    )
    order = {t: i for i, t in enumerate(terms)}
    return (
        d.with_delta(both, "us")
        .with_columns(pl.col("term").replace_strict(order, return_dtype=pl.Int64).alias("_o"))
        .sort("rank", "_o", nulls_last=True)
        .select("rank", "term", "base_us", "new_us", "delta_us", "delta_pct")
    )


def _term_table(b: _Run, w: _Run, per_rank: bool) -> pl.DataFrame:
    return _terms_side_by_side(d.term_means, b.breakdown, w.breakdown, per_rank, d.DIFF_TERMS)


def iteration_table(b: _Run, w: _Run, per_rank: bool = False, terms=d.ITERATION_TERMS) -> pl.DataFrame:
    """The iteration comparison of two prepared runs (`prepare`): rank (null: all ranks), term,
    base_us, new_us, delta_us, delta_pct, share_of_change; `terms`: "iteration" first, then
    columns of `iteration_breakdown` (without `_us`). `RunDiff.iteration` is this with
    ITERATION_TERMS; `traceview.compare` calls it for each pair of runs it compares."""
    means = functools.partial(d.iteration_means, terms=terms)
    table = _terms_side_by_side(means, b.iterations, w.iterations, per_rank, terms)
    return d.with_attribution(table, ["rank"]).select(*table.columns, "share_of_change")


def _exposure(run: _Run) -> pl.DataFrame:
    return d.collective_exposure(run.trace.device_tasks, run.windows)


def _comparability_notes(b: _Run, w: _Run) -> list[str]:
    notes = [*b.notes, *w.notes]
    bd, wd = b.describe(), w.describe()
    if bd["ranks"] != wd["ranks"]:
        notes.append(
            f"ranks differ ({BASE}: {int_ranges(bd['ranks']) or 'unknown'}, "
            f"{NEW}: {int_ranges(wd['ranks']) or 'unknown'}): step time and terms are means over all ranks only"
        )
    if bd["devices"] != wd["devices"] or bd["formats"] != wd["formats"]:
        notes.append(
            f"devices differ ({BASE}: {', '.join(bd['devices'] + bd['formats'])}; {NEW}: "
            f"{', '.join(wd['devices'] + wd['formats'])}): kernel names seldom match across vendors or "
            f"backends, compare the compute classes"
        )
    if b.mode != w.mode:
        notes.append(
            f"{BASE} is compared {'per step' if b.mode == 'steps' else 'over whole traces'}, {NEW} "
            f"{'per step' if w.mode == 'steps' else 'over whole traces'}"
        )
    return notes


@dataclasses.dataclass
class RunDiff:
    """What changed between a base run and a new run. Frames (definitions in
    `traceview.analysis.diff`; every value per rank-step, µs unless named otherwise):

    - steps: rank (null: all ranks), base_/new_steps (windows measured), base_/new_mean_us,
      delta_us, delta_pct, base_/new_median_us, median_delta_us, median_delta_pct;
    - terms: rank, term (`DIFF_TERMS`), base_us, new_us, delta_us, delta_pct;
    - iteration: rank, term (`ITERATION_TERMS`: the iteration, then its terms), base_us, new_us,
      delta_us, delta_pct, share_of_change (the term's part of the iteration's change);
    - classes: class, group, base_/new_us, delta_us, delta_pct, base_/new_share, delta_share, counts;
    - kernels: name, kind, class, status (added/removed/both), counts, total and per-step time,
      delta_us, delta_pct, mean task duration;
    - collectives: collective, process_group, status, counts, time, exposed time and their deltas;
    - memory: per rank (null: the largest over the ranks) the peak allocated and reserved bytes of
      each run, over the whole trace or the compared step (`traceview.analysis.diff.memory_diff`);
    - operators: each operator with recorded shapes (operator, input dims, dtype) in both runs,
      whole trace: calls, device time, achieved TFLOP/s and its change (`operator_diff`).

    `base` / `new`: what each run contributed (source, ranks, window, steps, rank_steps); `notes`:
    one line per thing that makes the runs less comparable; `warnings` / `failures`: the loads'.
    """

    steps: pl.DataFrame
    terms: pl.DataFrame
    iteration: pl.DataFrame
    classes: pl.DataFrame
    kernels: pl.DataFrame
    collectives: pl.DataFrame
    memory: pl.DataFrame
    base: dict
    new: dict
    step: int | None = None
    per_rank: bool = False
    notes: list[str] = dataclasses.field(default_factory=list)
    operators: pl.DataFrame = dataclasses.field(default_factory=pl.DataFrame)
    warnings: list[str] = dataclasses.field(default_factory=list)
    failures: list[str] = dataclasses.field(default_factory=list)

    def device_time(self) -> dict:
        """Σ of all task durations per rank-step (µs): base_us, new_us, delta_us, delta_pct."""
        b, n = float(self.kernels["base_us"].sum()), float(self.kernels["new_us"].sum())
        return {"base_us": b, "new_us": n, "delta_us": n - b, "delta_pct": 100 * (n - b) / b if b else None}

    def to_dict(self, top: int | None = 10) -> dict:
        """JSON-ready dict (µs to the ns, shares to 1e-6), `top` kernels per list (None: all).

        Shape (flat for renderers: every value is a scalar, a dict of scalars or lists, or a list
        of flat rows): {"base": {...}, "new": {...}, "step", "per_rank", "notes", "iteration":
        [rows], "step_time": [rows], "terms": [rows], "device_time": {...}, "classes": [rows], "kernel_counts": {both,
        added, removed, gained, lost}, "kernels_lost": [rows in both runs, most time lost first],
        "kernels_gained", "kernels_added" (only in new), "kernels_removed" (only in base),
        "collectives": [rows], "memory": [rows], "operators": [rows: largest device time change
        first], "warnings", "failures"}. Rows carry the frames' columns.
        """
        k = self.kernels
        both = k.filter(pl.col("status") == "both")

        def rows(df: pl.DataFrame, by: str | None = None, descending: bool = False) -> list[dict]:
            if by is not None:
                df = df.sort(by, "name", descending=[descending, False])
            return [_rounded(r) for r in (df if top is None else df.head(top)).to_dicts()]

        return {
            "base": self.base,
            "new": self.new,
            "step": self.step,
            "per_rank": self.per_rank,
            "notes": list(self.notes),
            "iteration": [_rounded(r) for r in self.iteration.to_dicts()],
            "step_time": [_rounded(r) for r in self.steps.to_dicts()],
            "terms": [_rounded(r) for r in self.terms.to_dicts()],
            "device_time": _rounded(self.device_time()),
            "classes": [_rounded(r) for r in self.classes.to_dicts()],
            "kernel_counts": {
                **{s: int((k["status"] == s).sum()) for s in ("both", "added", "removed")},
                "gained": int((both["delta_us"] > 0).sum()),
                "lost": int((both["delta_us"] < 0).sum()),
            },
            "kernels_lost": rows(both.filter(pl.col("delta_us") < 0), "delta_us"),
            "kernels_gained": rows(both.filter(pl.col("delta_us") > 0), "delta_us", descending=True),
            "kernels_added": rows(k.filter(pl.col("status") == "added"), "new_us", descending=True),
            "kernels_removed": rows(k.filter(pl.col("status") == "removed"), "base_us", descending=True),
            "collectives": [_rounded(r) for r in self.collectives.to_dicts()],
            "memory": [_rounded(r) for r in self.memory.to_dicts()],
            "operators": rows(self.operators),
            "warnings": list(self.warnings),
            "failures": list(self.failures),
        }

    def __repr__(self) -> str:
        whole = self.steps.filter(pl.col("rank").is_null()).to_dicts()
        s = whole[0] if whole else {}
        if s.get("base_mean_us") is not None and s.get("new_mean_us") is not None:
            change = f"step {s['base_mean_us'] / 1000:,.3f} ms -> {s['new_mean_us'] / 1000:,.3f} ms"
            if s.get("delta_pct") is not None:
                change += f" ({s['delta_pct']:+.1f} %)"
        else:
            change = "no step time in one run"
        return f"<RunDiff {self.base['source']!r} -> {self.new['source']!r}: {change}, {len(self.notes)} notes>"


def diff(base, new, *, step: int | None = None, whole_trace: bool = False) -> RunDiff:
    """Compare run `new` with run `base`, two loaded Traces (`traceview.diff` also takes paths).

    `step`: compare only step N (ProfilerStep#N / Ascend Step Id) of both runs; a run without it
    raises TraceError. Each run's compute classes are by its own rules (`Trace.rules`; load both
    with the same rules to compare like with like). `whole_trace`: compare each rank's whole trace (first to last device task) instead of steps;
    a run without any step that has device tasks is compared that way anyway (and a note says so).

    Step time and terms are per rank when both runs have the same ranks (and more than one), always
    also for all ranks together (rank null). Kernels are matched by exact name.
    """
    if whole_trace and step is not None:
        raise ValueError("give either step or whole_trace, not both")
    b_trace, w_trace = base, new
    b = prepare(b_trace, BASE, step, whole_trace)
    w = prepare(w_trace, NEW, step, whole_trace)
    per_rank = b.describe()["ranks"] == w.describe()["ranks"] and b_trace.ranks.height > 1
    return RunDiff(
        steps=_step_table(b, w, per_rank),
        terms=_term_table(b, w, per_rank),
        iteration=iteration_table(b, w, per_rank),
        classes=d.class_diff(b.class_rows, w.class_rows, b.n, w.n),
        kernels=d.kernel_diff(b.tasks, w.tasks, b.n, w.n),
        collectives=d.collective_diff(b.tasks, w.tasks, _exposure(b), _exposure(w), b.n, w.n),
        memory=d.memory_diff(b_trace.memory_peaks(), w_trace.memory_peaks(), step),
        base=b.describe(),
        new=w.describe(),
        step=step,
        per_rank=per_rank,
        notes=_comparability_notes(b, w),
        operators=d.operator_diff(b_trace.op_roofline(), w_trace.op_roofline()),
        warnings=[f"{BASE}: {x}" for x in b_trace.warnings] + [f"{NEW}: {x}" for x in w_trace.warnings],
        failures=[f"{BASE}: {x}" for x in b_trace.failures] + [f"{NEW}: {x}" for x in w_trace.failures],
    )


__all__ = ["RunDiff", "diff", "iteration_table", "prepare"]
