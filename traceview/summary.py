"""The summary document: every headline number of a profile, as plain JSON-ready data.

`build_summary(trace)` is what `traceview summary --format json` prints and what the text output,
the dashboard and the reports render, so they always agree. Shape:

    {"source": ..., "ranks": [{"rank", "device", "format", "window_rule",
                               "trace": {<terms>_us},
                               "steps": [{"step": N, <terms>_us}],
                               "compute_classes": [{"class", "group", "time_us", "share", "count"}],
                               "stream_idle": [{"stream", "idle_us", "host_wait_us", ..., "other_frac"}],
                               "launch_delay": {count, mean_us, p50_us, p90_us, p99_us, max_us},
                               "slow_steps": [{"step", "duration_us", "slowdown_ratio", "why", ...}],
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
STREAM_IDLE_COLUMNS = [
    "rank", "stream", "tasks", "span_us", "busy_us", "idle_us", "host_wait_us", "kernel_wait_us", "other_us",
    "idle_frac", "host_wait_frac", "kernel_wait_frac", "other_frac",
]


def _round(value, digits: int = 3):
    """µs values to the ns (3 decimals); shares and ratios (`digits`=6) finer."""
    return None if value is None else round(float(value), digits)


def _terms(row: dict) -> dict:
    return {col: _round(row.get(col)) for col in TERM_COLUMNS}


def _rounded(row: dict) -> dict:
    return {
        k: _round(v, 6 if k.endswith(("_frac", "share", "_ratio")) else 3) if isinstance(v, float) else v
        for k, v in row.items()
    }


def _per_rank(df: pl.DataFrame) -> dict[int, dict]:
    return {r.pop("rank"): _rounded(r) for r in df.to_dicts()}


def build_summary(trace, step: int | None = None) -> dict:
    """The summary of `trace` (optionally only step `step`), as JSON-ready dicts and lists."""
    steps = trace.step_breakdown()
    if step is not None:
        steps = steps.filter(pl.col("step") == step)
    whole = {r["rank"]: r for r in trace.trace_breakdown().to_dicts()}
    gaps = {(r["rank"], r["step"]): r["gap_before_us"] for r in trace.iteration_gaps().to_dicts()}
    by_rank_steps: dict[int, list[dict]] = {}
    for row in steps.to_dicts():
        entry = {"step": row["step"], **_terms(row), "gap_before_us": _round(gaps.get((row["rank"], row["step"])))}
        by_rank_steps.setdefault(row["rank"], []).append(entry)
    idle: dict[int, list[dict]] = {}
    for row in trace.stream_idle().select(STREAM_IDLE_COLUMNS).to_dicts():
        idle.setdefault(row.pop("rank"), []).append(_rounded(row))
    launch = _per_rank(trace.launch_delays().drop("tasks"))
    slow: dict[int, list[dict]] = {}
    for row in trace.slow_steps().to_dicts():
        slow.setdefault(row.pop("rank"), []).append(_rounded(row))
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
                "stream_idle": idle.get(rank, []),
                "launch_delay": launch.get(rank),
                "slow_steps": slow.get(rank, []),
            }
        )
    return {
        "source": trace.source,
        "ranks": ranks,
        "warnings": list(trace.warnings),
        "failures": list(trace.failures),
    }
