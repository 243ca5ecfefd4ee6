"""Plotly figures from the summary document (`traceview.summary.build_summary`).

Pure functions: a summary dict (and optional rank/step filters) in, a `plotly.graph_objects.Figure`
out; nothing is shown or written. Numbers are the summary's, only converted µs -> ms, so the
dashboard shows exactly what `traceview summary` prints. Trace text (kernel names, paths) only ever
goes into figures as data (hover text, categories), which plotly renders as text, never as markup.
"""

from __future__ import annotations

from collections.abc import Iterable

import plotly.graph_objects as go

from traceview.dashboards.colors import LONG_STEP_COLOR, TERM_COLORS, TERM_LABELS, class_color, rank_color
from traceview.terms import EXPOSED_COMM

MAX_BAR_RANKS = 16  # the stacked bars show at most this many ranks (the heatmap shows all)
# Disjoint parts of a step's busy span: computing(not overlapped) + overlapped + exposed comm +
# exposed memcpy + free = last busy end - first busy start (docs/metrics.md identity).
STACKED_TERMS = ["computing", "overlapped", EXPOSED_COMM, "exposed_memcpy", "free"]


def ms(value_us: float | None) -> float | None:
    return None if value_us is None else value_us / 1000.0


def select_ranks(summary: dict, ranks: Iterable[int] | None = None) -> list[dict]:
    """The summary's rank entries, only `ranks` when given (in rank order)."""
    wanted = None if ranks is None else set(ranks)
    return [r for r in summary["ranks"] if wanted is None or r["rank"] in wanted]


def select_steps(rank: dict, steps: Iterable[int] | None = None) -> list[dict]:
    wanted = None if steps is None else set(steps)
    return [s for s in rank["steps"] if wanted is None or s["step"] in wanted]


def _layout(fig: go.Figure, title: str, **kwargs) -> go.Figure:
    fig.update_layout(
        title=dict(text=title, y=0.98, yanchor="top"),
        template="plotly_white",
        margin=dict(l=60, r=20, t=90, b=50),
        # the legend sits between the title and the plot, never over the title
        legend=dict(orientation="h", yanchor="bottom", y=1.01, x=0),
        **kwargs,
    )
    return fig


def _empty(title: str, message: str) -> go.Figure:
    fig = _layout(go.Figure(), title)
    fig.add_annotation(text=message, showarrow=False, xref="paper", yref="paper", x=0.5, y=0.5)
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False)
    return fig


def step_breakdown_figure(summary: dict, ranks=None, steps=None, max_ranks: int = MAX_BAR_RANKS) -> go.Figure:
    """Stacked bars per rank and step: computing (not overlapped), overlapped, exposed communication,
    exposed memcpy and free (ms), summing to the step's busy span; the bubble (receive ops, part of
    that span) and the pipeline-bubble estimate as markers. `computing` bars are computing_not_overlapped_us (computing − overlapped, from the
    breakdown), so bar + overlapped = computing."""
    title = "Step time breakdown"
    entries = [r for r in select_ranks(summary, ranks) if select_steps(r, steps)]
    if len(entries) > max_ranks:
        title += f" (first {max_ranks} of {len(entries)} ranks; pick a rank to see others)"
        entries = entries[:max_ranks]
    rows = [(r["rank"], s) for r in entries for s in select_steps(r, steps)]
    if not rows:
        return _empty(title, "no steps in this selection")
    x = [[f"rank {rank}" for rank, _ in rows], [f"step {s['step']}" for _, s in rows]]
    fig = go.Figure()
    for term in STACKED_TERMS:
        if term == "computing":
            y = [ms(s["computing_not_overlapped_us"]) for _, s in rows]
        else:
            y = [ms(s[f"{term}_us"]) for _, s in rows]
        fig.add_bar(
            name=TERM_LABELS[term],
            x=x,
            y=y,
            marker_color=TERM_COLORS[term],
            meta=term,
            hovertemplate="%{x}<br>" + TERM_LABELS[term] + ": %{y:.3f} ms<extra></extra>",
        )
    for term, symbol in (("bubble", "diamond"), ("pipeline_bubble", "triangle-up")):
        values = [ms(s.get(f"{term}_us")) for _, s in rows]
        if any(values):
            fig.add_scatter(
                name=TERM_LABELS[term],
                x=x,
                y=values,
                mode="markers",
                meta=term,
                marker=dict(color=TERM_COLORS[term], symbol=symbol, size=10),
                hovertemplate="%{x}<br>" + TERM_LABELS[term] + ": %{y:.3f} ms<extra></extra>",
            )
    fig.update_yaxes(title_text="time (ms)")
    fig.update_xaxes(title_text="rank / step")
    return _layout(fig, title, barmode="stack")


def step_time_figure(summary: dict, ranks=None, selected_step: int | None = None) -> go.Figure:
    """Step duration (ms) per rank over the steps, one line per rank; the rank's long steps
    (`long_steps`: over 1.2x its median) marked with a red cross and the reason in the hover."""
    title = "Step time per rank"
    entries = [r for r in select_ranks(summary, ranks) if r["steps"]]
    if not entries:
        return _empty(title, "no steps in this selection")
    fig = go.Figure()
    for r in entries:
        fig.add_scatter(
            name=f"rank {r['rank']}",
            x=[s["step"] for s in r["steps"]],
            y=[ms(s["duration_us"]) for s in r["steps"]],
            mode="lines+markers",
            line=dict(color=rank_color(r["rank"])),
            meta=r["rank"],
            hovertemplate=f"rank {r['rank']}" + "<br>step %{x}: %{y:.3f} ms<extra></extra>",
        )
    long = [(r["rank"], s) for r in entries for s in r["long_steps"]]
    if long:
        fig.add_scatter(
            name="long step (> 1.2x median)",
            x=[s["step"] for _, s in long],
            y=[ms(s["duration_us"]) for _, s in long],
            mode="markers",
            marker=dict(color=LONG_STEP_COLOR, symbol="x", size=14),
            meta="long_step",
            customdata=[[rank, s.get("slowdown_ratio"), str(s.get("why"))] for rank, s in long],
            hovertemplate="rank %{customdata[0]}, step %{x}: %{y:.3f} ms<br>%{customdata[1]:.2f}x median; "
            "grew most: %{customdata[2]}<extra></extra>",
        )
    if selected_step is not None:
        fig.add_vline(x=selected_step, line_dash="dot", line_color="#888")
    fig.update_xaxes(title_text="step", dtick=1)
    fig.update_yaxes(title_text="step time (ms)")
    return _layout(fig, title)


def compute_classes_figure(
    summary: dict, ranks=None, max_ranks: int = MAX_BAR_RANKS, window: str = "whole trace"
) -> go.Figure:
    """Device time per compute class (ms, raw sum of task durations in `window`, by default the
    whole trace), stacked per rank; the share of the rank's device time in the hover."""
    title = f"Compute classes ({window})"
    entries = select_ranks(summary, ranks)
    if len(entries) > max_ranks:
        title += f" (first {max_ranks} of {len(entries)} ranks)"
        entries = entries[:max_ranks]
    classes: dict[str, None] = {}
    for r in entries:
        for c in r["compute_classes"]:
            classes.setdefault(c["class"], None)
    if not classes:
        return _empty(title, "no device tasks in this selection")
    x = [f"rank {r['rank']}" for r in entries]
    fig = go.Figure()
    for name in classes:
        found = [next((c for c in r["compute_classes"] if c["class"] == name), None) for r in entries]
        fig.add_bar(
            name=name,
            x=x,
            y=[ms(c["time_us"]) if c else 0.0 for c in found],
            marker_color=class_color(name),
            meta=name,
            customdata=[[c["share"] * 100 if c else 0.0, c["count"] if c else 0] for c in found],
            hovertemplate="%{x}<br>"
            + name
            + ": %{y:.3f} ms (%{customdata[0]:.1f} %, %{customdata[1]} tasks)<extra></extra>",
        )
    fig.update_yaxes(title_text="device time (ms)")
    fig.update_xaxes(title_text="rank")
    return _layout(fig, title, barmode="stack")


#: The heatmap's colour range is ±max(HEATMAP_MIN_RANGE_PCT, the largest deviation shown) around
#: the median: a 1.5 % spread stays pale (it is no straggler), a 30 % one uses the whole scale.
HEATMAP_MIN_RANGE_PCT = 5.0
#: Diverging, centred at 0 (the median): blue is faster than the median, red slower (ColorBrewer RdBu).
HEATMAP_COLORSCALE = "RdBu_r"


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def step_heatmap_figure(summary: dict, ranks=None, steps=None) -> go.Figure:
    """Rank x step heatmap of step duration relative to the median step of the cells shown:
    colour = duration / median − 1 in %, a diverging scale centred at 0 and clamped to
    ±max(HEATMAP_MIN_RANGE_PCT, the largest deviation), so a straggler is a red row and a long step
    a red column only when they are far from the median; the hover shows the ms and the %."""
    title = "Step time vs the median step, rank x step"
    entries = [r for r in select_ranks(summary, ranks) if select_steps(r, steps)]
    all_steps = sorted({s["step"] for r in entries for s in select_steps(r, steps)})
    if not entries:
        return _empty(title, "no steps in this selection")
    durations = []
    for r in entries:
        by_step = {s["step"]: ms(s["duration_us"]) for s in r["steps"]}
        durations.append([by_step.get(step) for step in all_steps])
    shown = [v for row in durations for v in row if v is not None]
    median = _median(shown)
    z = [[None if v is None or not median else 100.0 * (v / median - 1.0) for v in row] for row in durations]
    spread = max((abs(v) for row in z for v in row if v is not None), default=0.0)
    limit = max(HEATMAP_MIN_RANGE_PCT, spread)
    fig = go.Figure(
        go.Heatmap(
            z=z,
            x=[str(s) for s in all_steps],
            y=[str(r["rank"]) for r in entries],
            customdata=durations,
            colorscale=HEATMAP_COLORSCALE,
            zmid=0.0,
            zmin=-limit,
            zmax=limit,
            colorbar=dict(title=dict(text="vs median (%)"), ticksuffix=" %"),
            hovertemplate="rank %{y}, step %{x}: %{customdata:.3f} ms (%{z:+.1f} % vs median)<extra></extra>",
        )
    )
    fig.update_xaxes(title_text="step", type="category")
    fig.update_yaxes(title_text="rank", type="category", autorange="reversed")
    return _layout(fig, f"{title} ({median:,.3f} ms)")


def others_mean_wait_us(summary: dict) -> float | None:
    """The mean collective wait (µs) of the ranks other than the straggler (the summary's
    `cross_rank.ranks[*].mean_wait_us`), None without a straggler or waits."""
    cross = summary.get("cross_rank") or {}
    straggler = cross.get("straggler")
    others = [
        r["mean_wait_us"]
        for r in cross.get("ranks", [])
        if r["rank"] != straggler and r.get("mean_wait_us") is not None
    ]
    return sum(others) / len(others) if straggler is not None and others else None


def straggler_line(summary: dict) -> str | None:
    """The straggler sentence of the findings (None for one rank): which rank the others wait for
    in collectives, with their mean wait (µs)."""
    cross = summary.get("cross_rank")
    if cross and cross.get("straggler") is not None:
        wait = others_mean_wait_us(summary)
        detail = f" (the others wait for it in collectives: mean wait {wait:,.1f} µs)" if wait is not None else ""
        return f"Straggler: rank {cross['straggler']}{detail}"
    return "No straggler: no rank is waited for in collectives." if len(summary["ranks"]) > 1 else None


def long_step_lines(summary: dict) -> list[str]:
    """One sentence per long step: rank, step, duration (ms), ratio to the median, what grew most."""
    return [
        f"Long step: rank {r['rank']} step {s['step']}, {ms(s['duration_us']):,.3f} ms "
        f"({s.get('slowdown_ratio') or 0:.2f}x median; grew most: {s.get('why')})"
        for r in summary["ranks"]
        for s in r["long_steps"]
    ]
