"""The summary document: every headline number of a profile, as plain JSON-ready data.

`build_summary(trace)` is what `traceview summary --format json` prints and what the text output,
the dashboard and the reports render, so they always agree. Shape:

    {"source": ..., "ranks": [{"rank", "device", "format", "window_rule",
                               "trace": {<terms>_us},
                               "steps": [{"step": N, <terms>_us}],
                               "compute_classes": [{"class", "group", "time_us", "share", "count"}],
                               ...}],
     "cross_rank": {...}, "warnings": [...], "failures": [...]}

Terms: computing, communication, overlapped, communication_not_overlapped, exposed_memcpy, free,
idle, busy, stage, bubble, communication_not_overlapped_exclude_receive, preparing, duration,
start (all µs; definitions in `traceview.analysis.breakdown`). Values are rounded to the ns.
"""

from __future__ import annotations

import polars as pl

from traceview.analysis.breakdown import TERMS

TERM_COLUMNS = [f"{t}_us" for t in TERMS]


def _round(value):
    return None if value is None else round(float(value), 3)


def _terms(row: dict) -> dict:
    return {col: _round(row.get(col)) for col in TERM_COLUMNS}


def build_summary(trace, step: int | None = None) -> dict:
    """The summary of `trace` (optionally only step `step`), as JSON-ready dicts and lists."""
    steps = trace.step_breakdown()
    if step is not None:
        steps = steps.filter(pl.col("step") == step)
    whole = {r["rank"]: r for r in trace.trace_breakdown().to_dicts()}
    by_rank_steps: dict[int, list[dict]] = {}
    for row in steps.to_dicts():
        by_rank_steps.setdefault(row["rank"], []).append({"step": row["step"], **_terms(row)})
    rules = dict(steps.group_by("rank").agg(pl.col("window_rule").first()).iter_rows())
    ranks = []
    for meta in trace.ranks.to_dicts():
        rank = meta["rank"]
        ranks.append(
            {
                "rank": rank,
                "device": meta["device_name"],
                "format": meta["format"],
                "window_rule": rules.get(rank),
                "trace": _terms(whole[rank]) if rank in whole else None,
                "steps": by_rank_steps.get(rank, []),
            }
        )
    return {
        "source": trace.source,
        "ranks": ranks,
        "warnings": list(trace.warnings),
        "failures": list(trace.failures),
    }
