"""`traceview.compare(run1, run2, ...)`: N runs side by side, the experiment log of a tuning
session (docs/compare.md).

    import traceview as tv
    c = tv.compare(["runs/base", "runs/amp", "runs/flash"], model={"seq_len": 2048, "global_batch": 64, "params": 7e9})
    c.table        # one row per run: the iteration and its terms (µs and share), tokens/s, MFU, ...
    c.changes      # each run against the previous and the first: every term, share_of_change
    c.to_dict()    # JSON-ready, what `traceview compare --format json` prints
    c.figure()     # plotly: the iteration terms per run, stacked

Each run is measured as `traceview diff` measures a side (`run_diff.prepare`: its profiled steps,
or each rank's whole trace when it has no step with device work), and each pair of runs is
compared by `run_diff.iteration_table`, so a run's change against the previous one has the same
numbers (delta, share_of_change) as `traceview diff PREVIOUS RUN`.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import polars as pl

from traceview import notebook_views
from traceview.analysis import diff as d
from traceview.analysis import iteration, traced_flops
from traceview.analysis import throughput as throughput_analysis
from traceview.errors import TraceError
from traceview.run_diff import iteration_headline, iteration_table, prepare
from traceview.summary import _rounded

#: The iteration columns compared, in table order (each `<name>_us` in `Trace.iteration_breakdown`).
#: The one place to extend: adding more columns of the iteration frame here adds them to the table,
#: the JSON, the CSV, the changes and the views.
COMPARED: list[str] = [t for t in d.ITERATION_TERMS if t != "iteration"]  # the terms, then the wall phases
#: The terms that add up to the iteration in every rank-step: the chart stacks them, and a run's
#: largest change is the one of these that moved most (their shares of the change add up to 1).
PARTITION: tuple[str, ...] = tuple(iteration.TERMS)
#: The headline numbers of each run (`Trace.headline`): the device step time and the exposed
#: communication's share of it.
HEADLINE = ("mean_step_us", "communication_not_overlapped_frac")
#: The throughput of each run (`throughput.mean_of`), when the model is given.
THROUGHPUT = ("tokens_per_s_per_device", "mfu_frac", "hfu_frac")
#: What a change is measured against: the run before, and the first run.
AGAINST = ("previous", "first")
#: Trace file extensions left out of a default label.
TRACE_EXTENSIONS = (".pt.trace.json.gz", ".pt.trace.json", ".json.gz", ".json")


def change_text(row: dict, against: str, unit: str = "") -> str:
    """A run's iteration change against the "previous" or "first" run (a `RunComparison.table`
    row) in words: '-22.681 ms (-12.8 %)' with unit " ms" ('-22.681 (-12.8 %)' without); '-' when
    there is none."""
    delta = row.get(f"{against}_delta_us")
    if delta is None:
        return "-"
    pct = row.get(f"{against}_delta_pct")
    return f"{delta / 1000:+,.3f}{unit}" + ("" if pct is None else f" ({pct:+.1f} %)")


def label(source) -> str:
    """The default label of a run: its path's name without a trace extension."""
    name = Path(os.path.abspath(str(source))).name or str(source)
    for ext in TRACE_EXTENSIONS:
        if name.lower().endswith(ext) and len(name) > len(ext):
            return name[: -len(ext)]
    return name


def unique(labels: list[str]) -> list[str]:
    """`labels` with ' (2)', ' (3)' ... added where one repeats: every run is told apart."""
    seen: dict[str, int] = {}
    out = []
    for name in labels:
        seen[name] = seen.get(name, 0) + 1
        out.append(name if seen[name] == 1 else f"{name} ({seen[name]})")
    return out


def _label_of(term: str) -> str:
    return iteration.LABELS.get(term, term)


@dataclasses.dataclass
class RunComparison:
    """N runs side by side (definitions: docs/compare.md). µs unless named otherwise.

    - table: one row per run, in the given order: run (1, 2, ...), label, source, window
      ("steps" or "trace"), rank_steps (compared), iteration_us and each COMPARED term `<t>_us`
      (means per rank-step, as `traceview diff`) with its share of the iteration `<t>_frac`;
      mean_step_us and communication_not_overlapped_frac (the summary's headline: the device
      step time and the exposed communication's share of it); tokens_per_s_per_device, mfu_frac,
      hfu_frac (null unless the model is given); speedup (the first run's iteration / this one's);
      and for each of `previous` and `first`: `<against>_delta_us`, `<against>_delta_pct` (the
      iteration's change), `<against>_term` (the PARTITION term that moved most),
      `<against>_term_delta_us` and `<against>_term_share` (its share_of_change); null for run 1.
    - changes: run, label, against, base_run, base_label, term ("iteration", then COMPARED),
      base_us, new_us, delta_us, delta_pct, share_of_change: `RunDiff.iteration` of each pair
      (all ranks).
    """

    table: pl.DataFrame
    changes: pl.DataFrame
    model: dict | None = None
    notes: list[str] = dataclasses.field(default_factory=list)
    warnings: list[str] = dataclasses.field(default_factory=list)
    failures: list[str] = dataclasses.field(default_factory=list)

    @property
    def labels(self) -> list[str]:
        return self.table["label"].to_list()

    def to_dict(self) -> dict:
        """JSON-ready (µs to the ns, shares to 1e-6): {"runs": [table rows], "changes": [rows],
        "terms": COMPARED, "stacked": PARTITION, "labels": {term: label}, "model", "notes",
        "warnings", "failures"}; every row flat."""
        return {
            "runs": [_rounded(r) for r in self.table.to_dicts()],
            "changes": [_rounded(r) for r in self.changes.to_dicts()],
            "terms": list(COMPARED),
            "stacked": list(PARTITION),
            "labels": {t: _label_of(t) for t in ["iteration", *COMPARED]},
            "model": self.model,
            "notes": list(self.notes),
            "warnings": list(self.warnings),
            "failures": list(self.failures),
        }

    def figure(self):
        """The iteration terms per run, stacked (plotly Figure; `traceview.dashboards.notebook`)."""
        return notebook_views.views().comparison_figure(self.to_dict())

    def __repr__(self) -> str:
        parts = []
        for row in self.table.iter_rows(named=True):
            it = row["iteration_us"]
            parts.append(f"{row['label']} {'-' if it is None else f'{it / 1000:,.3f} ms'}")
        return f"<RunComparison {len(parts)} runs: {' -> '.join(parts)}>"


def _means(run) -> dict:
    """The run's mean iteration and COMPARED terms per rank-step (µs), as `traceview diff`."""
    terms = ["iteration", *COMPARED]
    rows = d.iteration_means(run.iterations, (), terms).to_dicts()
    return {f"{r['term']}_us": r["us"] for r in rows}


def _throughput(trace, name: str, model: dict | None) -> tuple[dict, list[str]]:
    if not model:
        return dict.fromkeys(THROUGHPUT), []
    try:
        rows = trace.throughput(**model)
    except (TypeError, ValueError) as exc:
        raise TraceError(None, f"{name}: throughput: {exc}") from None
    means = throughput_analysis.mean_of(rows)
    flagged = rows.filter(pl.col("check").is_not_null())
    checks = []
    if flagged.height:
        checks.append(f"{name}: throughput of {flagged.height} of {rows.height} steps: {flagged['check'][0]}")
    return {k: means.get(k) for k in THROUGHPUT}, checks


def _largest(pair: pl.DataFrame) -> dict:
    """The PARTITION term of a pair (all-ranks rows) whose delta is largest in size."""
    moved = pair.filter(pl.col("term").is_in(PARTITION) & pl.col("delta_us").is_not_null())
    if moved.is_empty():
        return {"term": None, "term_delta_us": None, "term_share": None}
    top = moved.sort(pl.col("delta_us").abs(), "term", descending=[True, False]).row(0, named=True)
    return {"term": top["term"], "term_delta_us": top["delta_us"], "term_share": top["share_of_change"]}


def _pair(base, new) -> pl.DataFrame:
    """`run_diff.iteration_table` of two prepared runs, all ranks, "iteration" and COMPARED."""
    return iteration_table(base, new, per_rank=False, terms=("iteration", *COMPARED)).drop("rank")


def _notes(runs: list, names: list[str]) -> list[str]:
    notes = [line for run in runs for line in run.notes]
    described = [run.describe() for run in runs]
    devices = {tuple(d["devices"] + d["formats"]) for d in described}
    if len(devices) > 1:
        notes.append(
            "devices or formats differ: "
            + "; ".join(f"{n}: {', '.join(d['devices'] + d['formats']) or 'unknown'}" for n, d in zip(names, described))
        )
    modes = {d["window"] for d in described}
    if len(modes) > 1:
        whole = [n for n, d in zip(names, described) if d["window"] == "trace"]
        notes.append(f"{', '.join(whole)}: compared over whole traces (no step with device work), the others per step")
    return notes


def compare(traces, labels: list[str] | None = None, model: dict | None = None) -> RunComparison:
    """Compare loaded Traces `traces` (two or more, in order: each against the one before it and
    against the first). `labels`: one per run (default: each source's name); `model`: keyword
    arguments of `Trace.throughput` (tokens_per_step or seq_len + global_batch, params or
    flops_per_token, devices, recompute, peak_tflops), the same for every run, giving tokens/s
    per device, MFU and HFU."""
    traces = list(traces)
    if len(traces) < 2:
        raise ValueError(f"compare needs two runs or more, got {len(traces)}")
    if labels is not None and len(labels) != len(traces):
        raise ValueError(f"{len(labels)} labels for {len(traces)} runs: give one label per run")
    names = unique([str(x) for x in labels] if labels is not None else [label(t.source) for t in traces])
    runs = [prepare(t, name) for t, name in zip(traces, names)]
    rows, pairs, checks = [], [], []
    for i, (trace, run, name) in enumerate(zip(traces, runs, names)):
        head = trace.headline().row(0, named=True)
        through, flagged = _throughput(trace, name, model)
        checks += flagged
        means = _means(run)
        total = means["iteration_us"]
        row = {
            "run": i + 1,
            "label": name,
            "source": str(trace.source),
            "window": run.mode,
            "rank_steps": run.n,
            **means,
            **{f"{t}_frac": _share(means[f"{t}_us"], total) for t in COMPARED},
            **{k: head.get(k) for k in HEADLINE},
            **through,
        }
        row |= _memory_peak(trace)
        row |= _traced(trace)
        first = rows[0]["iteration_us"] if rows else total
        row["speedup"] = first / total if first is not None and total else None
        for against, j in zip(AGAINST, (i - 1, 0)):
            change = {"delta_us": None, "delta_pct": None, "term": None, "term_delta_us": None, "term_share": None}
            if i > 0:
                pair = _pair(runs[j], run)
                whole = pair.filter(pl.col("term") == "iteration").row(0, named=True)
                change = {"delta_us": whole["delta_us"], "delta_pct": whole["delta_pct"], **_largest(pair)}
                pairs.append(
                    pair.select(
                        pl.lit(i + 1).alias("run"),
                        pl.lit(name).alias("label"),
                        pl.lit(against).alias("against"),
                        pl.lit(j + 1).alias("base_run"),
                        pl.lit(names[j]).alias("base_label"),
                        pl.all(),
                    )
                )
            row |= {f"{against}_{k}": v for k, v in change.items()}
        rows.append(row)
    table = pl.DataFrame(rows, schema=_schema())
    changes = pl.concat(pairs).with_columns(pl.col("run", "base_run").cast(pl.Int64))
    return RunComparison(
        table=table,
        changes=changes,
        model=dict(model) if model else None,
        notes=_notes(runs, names),
        warnings=[f"{n}: {w}" for n, t in zip(names, traces) for w in t.warnings] + checks,
        failures=[f"{n}: {f}" for n, t in zip(names, traces) for f in t.failures],
    )


def headlines(doc: dict, against: str = "previous") -> list[str]:
    """One line per run after the first (`RunComparison.to_dict()`): its change against the
    previous (or the `first`) run in the words of `traceview diff`'s first line (the same numbers),
    e.g. "amp vs base: Iteration 177.592 -> 154.911 ms (-22.681 ms, -12.8 %): data loading ..."
    (from the rows `traceview diff` has, `ITERATION_TERMS`, whatever else COMPARED holds);
    "amp vs base: no iteration in one run" where a run has none."""
    out = []
    for row in doc["runs"][1:]:
        rows = [{**c, "rank": None} for c in doc["changes"] if c["run"] == row["run"] and c["against"] == against]
        base = rows[0]["base_label"] if rows else "-"
        line = iteration_headline({"iteration": [r for r in rows if r["term"] in d.ITERATION_TERMS]})  # diff's rows
        out.append(f"{row['label']} vs {base}: {line or 'no iteration in one run'}")
    return out


def _memory_peak(trace) -> dict:
    """The run's peak device memory, bytes: the largest over its ranks of the series their timeline
    lanes show (`traceview.analysis.memory.lane_series`); null when it recorded none."""
    from traceview.analysis import memory

    lanes = memory.lane_series(trace.memory_peaks())
    return {
        "peak_allocated_bytes": lanes["peak_allocated_bytes"].max() if lanes.height else None,
        "peak_reserved_bytes": lanes["peak_reserved_bytes"].max() if lanes.height else None,
    }


def _traced(trace) -> dict:
    """The run's FLOPs traced from recorded shapes (`Trace.traced_flops`): mean over its rank-steps
    of the traced TFLOP/s per device and of the traced MFU, their lowest coverage and its note
    (`traced_flops.traced_means`: null values and a note when a rank-step's FLOPs are too little
    known); null without recorded shapes."""
    rows = trace.traced_flops()
    if not rows.height:
        return dict.fromkeys(("traced_tflops_per_device", "traced_mfu_frac", "flops_coverage_frac", "traced_note"))
    return traced_flops.traced_means(rows, []).row(0, named=True)


def _share(part, total):
    return part / total if part is not None and total else None


def _schema() -> dict:
    """The table's columns and dtypes, in order."""
    out = {"run": pl.Int64, "label": pl.String, "source": pl.String, "window": pl.String, "rank_steps": pl.Int64}
    out |= {f"{t}_us": pl.Float64 for t in ["iteration", *COMPARED]}
    out |= {f"{t}_frac": pl.Float64 for t in COMPARED}
    out |= dict.fromkeys([*HEADLINE, *THROUGHPUT, "speedup"], pl.Float64)
    out |= {"peak_allocated_bytes": pl.Int64, "peak_reserved_bytes": pl.Int64}
    out |= {"traced_tflops_per_device": pl.Float64, "traced_mfu_frac": pl.Float64}
    out |= {"flops_coverage_frac": pl.Float64, "traced_note": pl.String}
    for against in AGAINST:
        out |= {f"{against}_delta_us": pl.Float64, f"{against}_delta_pct": pl.Float64, f"{against}_term": pl.String}
        out |= {f"{against}_term_delta_us": pl.Float64, f"{against}_term_share": pl.Float64}
    return out


__all__ = ["COMPARED", "PARTITION", "RunComparison", "compare", "headlines", "label"]
