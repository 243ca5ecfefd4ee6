"""The summary document: every headline number of a profile, as plain JSON-ready data.

`build_summary(trace)` is what `traceview summary --format json` prints and what the text output,
the dashboard and the reports render, so they always agree. Its shape, every section and row with
its keys and types, is declared once in `traceview.summary_doc` (a rank's rows:
`traceview.summary_rows`) and published as JSON Schema (docs/summary.schema.json); the tests
check every document this module gives against it.

Terms: computing, communication, overlapped, communication_not_overlapped, exposed_memcpy, free,
idle, busy, stage, bubble, communication_not_overlapped_exclude_receive, preparing, duration,
start (all µs; definitions in `traceview.analysis.breakdown`), measured in the step's device
window; the iteration terms (`traceview.analysis.iteration`) in the step's whole iteration.
Values are rounded to the ns.
Findings (`traceview.analysis.findings`, docs/findings.md) cover the whole profile, whatever `step`;
rank is null for profile-wide findings (MFU).
"""

from __future__ import annotations

import polars as pl

from traceview.analysis import findings, iteration, kernels, memory, traced_flops
from traceview.analysis import throughput as throughput_analysis
from traceview.analysis.breakdown import DERIVED, TERMS
from traceview.selection import require_step

TERM_COLUMNS = [f"{t}_us" for t in TERMS] + DERIVED
#: The iteration's columns in each step entry (`traceview.analysis.iteration`).
ITERATION_COLUMNS = [
    "iteration_us",
    *(f"{t}_us" for t in iteration.TERMS + iteration.HOST_PARTS + iteration.PHASE_COLUMNS),
]
STREAM_IDLE_COLUMNS = [
    "rank",
    "stream",
    "tasks",
    "span_us",
    "busy_us",
    "idle_us",
    "host_wait_us",
    "kernel_wait_us",
    "other_us",
    "idle_frac",
    "host_wait_frac",
    "kernel_wait_frac",
    "other_frac",
]


def _round(value, digits: int = 3):
    """µs values to the ns (3 decimals); shares and ratios (`digits`=6) finer."""
    return None if value is None else round(float(value), digits)


def _terms(row: dict) -> dict:
    return {col: _round(row.get(col), 6 if col.endswith("_frac") else 3) for col in TERM_COLUMNS}


def _rounded(row: dict) -> dict:
    return {
        k: _round(v, 6 if k.endswith(("_frac", "share", "_ratio")) else 3) if isinstance(v, float) else v
        for k, v in row.items()
    }


def _per_rank(df: pl.DataFrame) -> dict[int, dict]:
    return {r.pop("rank"): _rounded(r) for r in df.to_dicts()}


def _listed(df: pl.DataFrame) -> dict[int, list[dict]]:
    out: dict[int, list[dict]] = {}
    for row in df.to_dicts():
        out.setdefault(row.pop("rank"), []).append(_rounded(row))
    return out


MEMORY_STEP_COLUMNS = ("step", "peak_allocated_bytes", "peak_reserved_bytes")
AT_PEAK_COLUMNS = ("operator", "live_bytes", "blocks", "share_frac")


def _memory(trace, top: int) -> dict[int, list[dict]]:
    """Per rank, per memory series (`traceview.analysis.memory`): the whole trace's peak, the
    step holding it, each step's peak, and the `top` operators live at the peak (plus what was
    allocated before the trace)."""
    peaks = trace.memory_peaks()
    if peaks.is_empty():
        return {}
    series = memory.SERIES
    # each series' steps and blocks, grouped once (a lookup per series, not a scan)
    steps_of = peaks.filter(pl.col("step").is_not_null()).partition_by(series, as_dict=True, maintain_order=True)
    held_of = trace.memory_at_peak().partition_by(series, as_dict=True, maintain_order=True)
    empty_steps, empty_held = peaks.clear(), trace.memory_at_peak().clear()
    remainder = pl.col("operator").is_in(memory.REMAINDERS)
    out: dict[int, list[dict]] = {}
    for whole in peaks.filter(pl.col("step").is_null()).to_dicts():
        key = tuple(whole[c] for c in series)
        steps, held = steps_of.get(key, empty_steps), held_of.get(key, empty_held)
        at_peak_step = (
            steps.filter(pl.col("peak_ns") == whole["peak_ns"])["step"] if whole["peak_ns"] is not None else []
        )
        blocks = held.filter(~remainder)
        out.setdefault(whole["rank"], []).append(
            {
                **{c: whole[c] for c in series if c != "rank"},
                "basis": whole["basis"],
                "peak_allocated_bytes": whole["peak_allocated_bytes"],
                "peak_reserved_bytes": whole["peak_reserved_bytes"],
                "peak_ns": whole["peak_ns"],
                "peak_step": at_peak_step[0] if len(at_peak_step) else None,
                "device_memory_bytes": whole["device_memory_bytes"],
                "peak_device_frac": _round(whole["peak_device_frac"], 6),
                "steps": steps.select(MEMORY_STEP_COLUMNS).to_dicts(),
                "at_peak": [
                    _rounded(r)
                    for r in pl.concat([blocks.head(top), held.filter(remainder)]).select(AT_PEAK_COLUMNS).to_dicts()
                ],
            }
        )
    return out


def _cross_rank(trace) -> dict:
    """Straggler, per-rank waits, step skew and per-collective totals (ranks > 1 only)."""
    waits = trace.stragglers()
    straggler = waits.filter(pl.col("is_straggler"))["rank"].to_list()
    matched = trace.collectives()
    per_collective = (
        matched.filter(pl.col("n_ranks") >= 2)
        .group_by("collective", "process_group")
        .agg(
            pl.col("collective_id").n_unique().alias("instances"),
            pl.col("transfer_us").sum().truediv(pl.col("n_ranks").mean()).alias("transfer_us"),
            pl.col("wait_us").sum().alias("wait_us"),
            pl.col("busbw_gbps").mean().alias("busbw_gbps"),
        )
        # a total order: identical inputs give identical output, ties included
        .sort("wait_us", "collective", "process_group", descending=[True, False, False], nulls_last=True)
    )
    return {
        "straggler": straggler[0] if straggler else None,
        "ranks": [_rounded(r) for r in waits.to_dicts()],
        "step_skew": [_rounded(r) for r in trace.step_skew().to_dicts()],
        "collectives": [_rounded(r) for r in per_collective.to_dicts()],
    }


def build_summary(
    trace,
    step: int | None = None,
    top: int = 10,
    throughput: dict | None = None,
    details: bool = True,
    micro_batches: int | None = None,
    model_config=None,
) -> dict:
    """The summary of `trace` (optionally only step `step`), as JSON-ready dicts and lists, by the
    trace's rules (`Trace.rules`: its compute classes, findings, device peaks and phases).

    `top`: how
    many kernels to list per rank; `throughput`: keyword arguments of `Trace.throughput` (adds the
    "throughput" section when given); `details`: False leaves out the per-stream idle, launch
    delays, iteration gaps and pipeline stages (the dashboard's first page does not show them and
    they cost most on large profiles), and with them the findings that need them (host waits,
    pipeline stage count); `micro_batches`: micro-batches per pipeline step
    (the bubble-above-ideal rule needs it; the "what_if" section, `Trace.what_if`'s bounds over the
    steps summarised, takes it too unless `details` is False); `model_config`: a transformer configuration
    (`traceview.analysis.model_config`) adds the "expected" section, the analytical model's terms
    beside the measured ones (docs/roofline.md), a TraceError when the device table cannot
    complete it.
    """
    if step is not None:
        require_step(trace.steps, step, trace.source)
    steps = trace.step_breakdown()
    if step is not None:
        steps = steps.filter(pl.col("step") == step)
    whole = {r["rank"]: r for r in trace.trace_breakdown().to_dicts()}
    gaps = {(r["rank"], r["step"]): r["gap_before_us"] for r in trace.iteration_gaps().to_dicts()} if details else {}
    lived = {(r["rank"], r["step"]): r for r in trace.iteration_breakdown().to_dicts()}
    by_rank_steps: dict[int, list[dict]] = {}
    for row in steps.to_dicts():
        it = lived.get((row["rank"], row["step"]), {})
        entry = {
            "step": row["step"],
            **_terms(row),
            "gap_before_us": _round(gaps.get((row["rank"], row["step"]))),
            "iteration_rule": it.get("iteration_rule"),
            **{col: _round(it.get(col)) for col in ITERATION_COLUMNS},
        }
        by_rank_steps.setdefault(row["rank"], []).append(entry)
    idle: dict[int, list[dict]] = {}
    for row in trace.stream_idle().select(STREAM_IDLE_COLUMNS).to_dicts() if details else []:
        idle.setdefault(row.pop("rank"), []).append(_rounded(row))
    launch = _per_rank(trace.launch_delays().drop("tasks")) if details else {}
    long = _listed(trace.long_steps())
    stages = {r["rank"]: r for r in trace.pipeline_stages().to_dicts()} if details else {}
    compute_classes = _listed(trace.compute_classes())
    unclassified = dict(trace.unclassified_share().select("rank", "unclassified_share").iter_rows())
    short = kernels.short_name("name", trace.device_tasks.select("name"))
    top_kernels = _listed(trace.top_kernels(top).with_columns(short.alias("short_name")))
    rules = dict(steps.group_by("rank").agg(pl.col("window_rule").first()).iter_rows())
    device_phases = _per_rank(trace.device_phases())
    memory_series = _memory(trace, top)
    roofline = _roofline(trace, step, top)
    ranks = []
    for meta in trace.ranks.to_dicts():
        rank = meta["rank"]
        ranks.append(
            {
                "rank": rank,
                "device": meta["device_name"],
                "format": meta["format"],
                "window_rule": rules.get(rank),
                "pipeline_stage": (stages.get(rank) or {}).get("stage"),
                "pipeline_stages": (stages.get(rank) or {}).get("n_stages"),
                "trace": _terms(whole[rank]) if rank in whole else None,
                "device_phases": device_phases.get(rank),
                "steps": by_rank_steps.get(rank, []),
                "compute_classes": compute_classes.get(rank, []),
                "unclassified_share": _round(unclassified.get(rank, 0.0), 6),
                "top_kernels": top_kernels.get(rank, []),
                "stream_idle": idle.get(rank, []),
                "launch_delay": launch.get(rank),
                "long_steps": long.get(rank, []),
                "memory": memory_series.get(rank, []),
                **({"roofline": roofline[rank]} if rank in roofline else {}),
            }
        )
    first = _rounded(trace.run("headline", step=step).row(0, named=True))
    doc = {"source": trace.source, "headline": first, "ranks": ranks}
    doc["kernels"] = [_rounded(r) for r in trace.kernel_totals(max(top, 1) * 2).to_dicts()]
    doc["operators"] = [_rounded(r) for r in trace.operators(max(top, 1) * 2).to_dicts()]
    if trace.ranks.height > 1:
        doc["cross_rank"] = _cross_rank(trace)
    checks: list[str] = []
    if throughput:
        rows = _with_traced(trace.throughput(**throughput), trace.traced_flops())
        if step is not None:
            rows = rows.filter(pl.col("step") == step)
        doc["throughput"] = [_rounded(r) for r in rows.to_dicts()]
        doc["headline"] = {**doc["headline"], **_rounded(throughput_analysis.mean_of(rows))}
        flagged = rows.filter(pl.col("check").is_not_null())
        if flagged.height:
            checks.append(
                f"{trace.source}: throughput of {flagged.height} of {rows.height} steps: {flagged['check'][0]}"
            )
    found = trace.findings(
        throughput=throughput or None,
        details=details,
        micro_batches=micro_batches,
    )
    one_step = trace.select_steps([step]) if step is not None else trace  # what-if and model: that step's
    what_if = one_step.what_if(micro_batches=micro_batches if details else None)
    doc["what_if"] = [_rounded(r) for r in what_if.to_dicts()]
    if model_config is not None:
        doc["expected"] = _expected(one_step, model_config)
    doc["findings"] = _finding_rows(found)
    doc["findings_by_rule"] = _finding_rows(findings.by_rule(found))
    return {
        **doc,
        "companions": trace.companions.to_dicts(),
        "warnings": list(trace.warnings) + checks,
        "failures": list(trace.failures),
    }


#: The traced estimate set beside the 6 x params x tokens one (docs/roofline.md).
TRACED_FORMULA = (
    "traced MFU = FLOPs summed from the recorded operators' shapes / step time / peak of the dtype carrying "
    "most matrix FLOPs (a lower bound: operators not covered add none)"
)


def _with_traced(rows: pl.DataFrame, traced: pl.DataFrame) -> pl.DataFrame:
    """Throughput rows with the traced estimate beside them (per step over ranks,
    `traced_flops.traced_means`: traced_tflops_per_device, traced_mfu_frac, flops_coverage_frac,
    traced_note, and its formula); unchanged without shapes."""
    if traced.is_empty() or rows.is_empty():
        return rows
    per_step = traced_flops.traced_means(traced, ["step"])
    return rows.join(per_step, on="step", how="left").with_columns(
        pl.when(pl.col("traced_mfu_frac").is_not_null()).then(pl.lit(TRACED_FORMULA)).alias("traced_formula")
    )


def _expected(trace, config) -> dict:
    """The analytical model's section: its configuration, verdict and terms (`expected_model`)."""
    from traceview.roofline_doc import expected_model

    model = expected_model(trace, config)
    digits = {"frac": 6, "flop": 0}
    rows = [
        {**r, **{k: _round(r[k], digits.get(r["unit"], 3)) for k in ("expected", "measured", "difference")}}
        for r in model.terms.to_dicts()
    ]
    return {"config": model.config, "verdict": model.verdict, "terms": rows}


def _roofline(trace, step: int | None, top: int) -> dict[int, dict]:
    """Per rank with recorded shapes: its traced FLOPs and MFU per step, the FLOPs anatomy and its
    `top` operators by device time against the roofline (docs/roofline.md); {} without shapes.
    A profile without steps still has its operators and anatomy (its steps list is empty)."""
    operators = trace.op_roofline()
    if operators.is_empty():
        return {}
    traced = trace.traced_flops()
    if step is not None:
        traced = traced.filter(pl.col("step") == step)
    out: dict[int, dict] = {}
    for name, frame in (
        ("steps", traced),
        ("anatomy", trace.flops_anatomy()),
        ("operators", operators.group_by("rank", maintain_order=True).head(max(top, 1))),
    ):
        for row in frame.to_dicts():
            out.setdefault(row.pop("rank"), {"steps": [], "anatomy": [], "operators": []})[name].append(_rounded(row))
    return out


def _finding_rows(frame: pl.DataFrame) -> list[dict]:
    """Findings rows as JSON-ready dicts, value and threshold to 1e-6."""
    return [{**r, "value": _round(r["value"], 6), "threshold": _round(r["threshold"], 6)} for r in frame.to_dicts()]
