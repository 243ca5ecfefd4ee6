"""The Overview page: the answer first (headline cards and sentence), findings, throughput, the
step figures sized to their data, and the kernel and operator tables.

`overview_layout(state)` is the page; `update_overview(state, search)` is its callback (figures,
table rows and panel sizes for the filters in the query string; `OUTPUTS` lists what it fills).
Every number is the summary's (`traceview.summary.build_summary`), only converted (µs -> ms,
fraction -> %) and formatted. Everything from the trace goes into components as text or data,
which React, plotly and the grid escape; nothing is formatted into HTML.
"""

from __future__ import annotations

import dash
import polars as pl
from dash import dcc, html

from traceview.dashboards import figures
from traceview.dashboards.overview_tables import (
    FONT,
    KERNEL_COLUMNS,
    TABLE_TOP,
    grid,
    instances_link,
    kernel_rows,
    summary_tables,
)
from traceview.dashboards.query import parse_filters, parse_query
from traceview.dashboards.state import DashboardState
from traceview.safe_text import one_line
from traceview.summary_text import expected_value_text, finding_heading, headline_lines
from traceview.terms import EXPOSED_COMM
from traceview.terms import ITERATION_LABELS as LABELS

__all__ = ["FONT", "GRAPH_CONFIG", "OUTPUTS", "TABLE_TOP", "kernel_rows", "overview_layout", "update_overview"]

SEVERITY_COLORS = {"critical": "#b91c1c", "warning": "#b45309", "info": "#1d4ed8"}
GRAPH_CONFIG = {"displaylogo": False}
MUTED = "#4b5563"
CARD = {
    "border": "1px solid #e5e7eb",
    "borderRadius": "6px",
    "padding": "8px 14px",
    "minWidth": "150px",
    "background": "#f9fafb",
}
LONG_STEPS_SHOWN = 3  # long steps listed as lines; more are folded
#: The figure panels: id, and (min, per row, max) height in px, a row being a rank (heatmap,
#: classes) or a bar (breakdown).
PANELS = {
    "fig-breakdown": (260, 12, 460),
    "fig-step-time": (260, 0, 360),
    "fig-heatmap": (250, 26, 720),
    "fig-classes": (260, 14, 460),
}
#: What `update_overview` fills, in its order (`app.py` registers them).
OUTPUTS = [
    *((p, "figure") for p in PANELS),
    ("kernel-table", "rowData"),
    ("kernel-title", "children"),
    *((f"panel-{p.removeprefix('fig-')}", "style") for p in PANELS),
]


def _card(card_id: str, label: str, value: str, detail: str | None = None) -> html.Div:
    children = [
        html.Div(label, style={"fontSize": "12px", "color": MUTED}),
        html.Div(value, id=f"{card_id}-value", style={"fontSize": "22px", "fontWeight": 600}),
    ]
    if detail:
        children.append(html.Div(detail, id=f"{card_id}-detail", style={"fontSize": "12px", "color": MUTED}))
    return html.Div(children, id=card_id, className="stat-card", style=CARD)


def _pct(frac: float) -> str:
    return f"{100 * frac:.1f} %"


def headline_cards(summary: dict) -> html.Div:
    """The answer in a row of stat cards, each only when the summary has its number: mean
    iteration, exposed communication, the largest iteration term, MFU (HFU), the straggler."""
    head = summary.get("headline") or {}
    cards = []
    if head.get("mean_iteration_us") is not None:
        n = head.get("iterations") or 0
        detail = f"mean of {n:,} rank-step{'s' if n != 1 else ''}"
        cards.append(_card("card-iteration", "Iteration", f"{figures.ms(head['mean_iteration_us']):,.3f} ms", detail))
    if head.get(f"{EXPOSED_COMM}_frac") is not None:
        cards.append(
            _card(
                "card-exposed-comm",
                "Exposed communication",
                _pct(head[f"{EXPOSED_COMM}_frac"]),
                "of step time, not hidden by compute",
            )
        )
    if head.get("largest_term") and head.get("largest_term_frac") is not None:
        label = LABELS.get(head["largest_term"], head["largest_term"])
        cards.append(
            _card("card-largest", "Largest term", _pct(head["largest_term_frac"]), f"{label} of the iteration")
        )
    if head.get("mfu_frac") is not None:
        hfu = head.get("hfu_frac")
        cards.append(_card("card-mfu", "MFU", _pct(head["mfu_frac"]), None if hfu is None else f"HFU {_pct(hfu)}"))
    cross = summary.get("cross_rank")
    if cross is not None:
        straggler = cross.get("straggler")
        if straggler is None:
            cards.append(_card("card-straggler", "Straggler", "none", "no rank is waited for"))
        else:
            wait = figures.others_mean_wait_us(summary)
            detail = None if wait is None else f"others wait {figures.ms(wait):,.3f} ms (mean)"
            cards.append(_card("card-straggler", "Straggler", f"rank {straggler}", detail))
    style = {"display": "flex", "flexWrap": "wrap", "gap": "12px", "margin": "14px 0 10px"}
    return html.Div(cards, id="headline-cards", style=style if cards else {"display": "none"})


def _headline(summary: dict) -> html.Div:
    """The summary's headline (`traceview.summary_text.headline_lines`): the iteration and its terms,
    the phases' shares of the wall time."""
    lines = headline_lines(summary.get("headline"))
    return html.Div([html.P(line.strip(), style={"margin": "2px 0"}) for line in lines], id="headline")


def _folded(summary_text: str, children, **kwargs) -> html.Details:
    return html.Details([html.Summary(summary_text, style={"cursor": "pointer", "color": MUTED}), *children], **kwargs)


def _finding(f: dict) -> html.Li:
    """One rule: severity, heading (title, term, ranks), message; the advice folded."""
    return html.Li(
        [
            html.Strong(
                f["severity"],
                className=f"sev-{f['severity']}",
                style={"color": SEVERITY_COLORS.get(f["severity"], "#111827")},
            ),
            " ",
            html.Span(one_line(finding_heading(f)), className="finding-heading", style={"fontWeight": 600}),
            ": ",
            html.Span(one_line(f["message"]), className="finding-message"),
            _folded(
                "advice",
                [html.P(one_line(f["advice"]), style={"margin": "2px 0 6px", "color": MUTED})],
                className="finding-advice",
            ),
        ],
        className="finding-rule",
        style={"marginBottom": "4px"},
    )


def _findings(summary: dict) -> html.Div:
    """One line per rule with its advice folded, the straggler, the long steps (folded beyond
    `LONG_STEPS_SHOWN`), warnings and failed ranks (folded), all as text."""
    items = [_finding(f) for f in summary.get("findings_by_rule") or []]
    straggler = figures.straggler_line(summary)
    if straggler:
        items.append(html.Li(straggler, id="straggler"))
    long_steps = figures.long_step_lines(summary)
    if len(long_steps) > LONG_STEPS_SHOWN:
        items.append(
            html.Li(_folded(f"{len(long_steps):,} long steps", [html.Ul([html.Li(line) for line in long_steps])]))
        )
    else:
        items += [html.Li(line) for line in long_steps]
    children = [html.H3("Findings"), html.Ul(items or [html.Li("No straggler or long step found.")])]
    for key, title, colour in (("failures", "Failed ranks", "#b91c1c"), ("warnings", "Warnings", "#b45309")):
        if summary.get(key):
            lines = summary[key]
            children.append(
                _folded(
                    f"{title} ({len(lines):,})",
                    [html.Ul([html.Li(one_line(line)) for line in lines], id=key)],
                    style={"color": colour},
                    open=key == "failures",
                )
            )
    return html.Div(children, id="findings")


def _cell(value, fmt: str) -> str:
    return "-" if value is None else format(value, fmt)


def _throughput(summary: dict) -> html.Div:
    """Tokens/s, model TFLOP/s, MFU and HFU per step (only when the model/job options were given);
    one format per column: ms ,.3f; tokens/s and peak as counts; TFLOP/s ,.1f; % .1f."""
    rows = summary.get("throughput") or []
    if not rows:
        return html.Div(id="throughput")
    head = [
        "step",
        "iteration, slowest rank (ms)",
        "tokens/s per device",
        "model TFLOP/s per device",
        "peak TFLOP/s",
        "MFU (%)",
        "HFU (%)",
    ]
    body = [
        html.Tr(
            [
                html.Td(f"{r['step']:,}"),
                html.Td(_cell(figures.ms(r["step_time_us"]), ",.3f")),
                html.Td(_cell(r.get("tokens_per_s_per_device"), ",.0f")),
                html.Td(_cell(r.get("model_tflops_per_device"), ",.1f")),
                html.Td(_cell(r.get("peak_tflops"), ",.0f")),
                html.Td(_cell(None if r.get("mfu_frac") is None else r["mfu_frac"] * 100, ".1f")),
                html.Td(_cell(None if r.get("hfu_frac") is None else r["hfu_frac"] * 100, ".1f")),
            ],
            style={"textAlign": "right"},
        )
        for r in rows
    ]
    table = html.Table(
        [html.Thead(html.Tr([html.Th(h) for h in head])), html.Tbody(body)], style={"borderSpacing": "16px 2px"}
    )
    children = [html.H3("Throughput"), table]
    source = next((r.get("peak_source") for r in rows if r.get("peak_source")), None)
    if source:
        children.append(html.P(f"Peak: {source} (dense bf16).", style={"color": MUTED}))
    check = next((r["check"] for r in rows if r.get("check")), None)
    if check:
        children.append(html.P(check, style={"color": "#b91c1c"}, id="mfu-warning"))
    return html.Div(children, id="throughput")


def _what_if(summary: dict) -> html.Div:
    """The what-if bounds on the mean iteration (the summary's "what_if"), one row per scenario."""
    rows = summary.get("what_if") or []
    if not rows:
        return html.Div(id="what-if")
    head = ["scenario", "iteration (ms)", "bound (ms)", "saving (ms)", "speedup", "assumption"]
    body = [
        html.Tr(
            [
                html.Td(r["scenario"]),
                html.Td(_cell(figures.ms(r["iteration_us"]), ",.3f"), style={"textAlign": "right"}),
                html.Td(_cell(figures.ms(r["bound_us"]), ",.3f"), style={"textAlign": "right"}),
                html.Td(_cell(figures.ms(r["saving_us"]), ",.3f"), style={"textAlign": "right"}),
                html.Td("-" if r.get("speedup") is None else f"{r['speedup']:.2f}x", style={"textAlign": "right"}),
                html.Td(r["assumption"], style={"color": MUTED}),
            ]
        )
        for r in rows
    ]
    table = html.Table(
        [html.Thead(html.Tr([html.Th(h) for h in head])), html.Tbody(body)], style={"borderSpacing": "16px 2px"}
    )
    note = html.P("Each a bound, not a prediction: one measured part changes, the rest stays.", style={"color": MUTED})
    return _folded("What if (bounds on the mean iteration)", [table, note], id="what-if")


def _expected(summary: dict) -> html.Div:
    """The analytical model's verdict and terms beside the measured ones (the summary's
    "expected", with --model-config)."""
    doc = summary.get("expected")
    if not doc:
        return html.Div(id="expected")

    head = ["term", "expected", "measured", "measured - expected", "what it is"]
    body = [
        html.Tr(
            [html.Td(r["term"])]
            + [
                html.Td(expected_value_text(r[k], r["unit"]), style={"textAlign": "right"})
                for k in ("expected", "measured", "difference")
            ]
            + [html.Td(r["definition"], style={"color": MUTED})]
        )
        for r in doc["terms"]
    ]
    table = html.Table(
        [html.Thead(html.Tr([html.Th(h) for h in head])), html.Tbody(body)], style={"borderSpacing": "16px 2px"}
    )
    return html.Div(
        [html.H3("Expected from the model"), html.P(doc["verdict"], id="expected-verdict"), table], id="expected"
    )


def overview_layout(state: DashboardState) -> html.Div:
    """The Overview page's components (the figures and the kernel rows filled by `update_overview`)."""
    panels = [html.Div(dcc.Graph(id=p, config=GRAPH_CONFIG), id=f"panel-{p.removeprefix('fig-')}") for p in PANELS]
    return html.Div(
        id="page-overview",
        children=[
            headline_cards(state.summary),
            _headline(state.summary),
            _findings(state.summary),
            _throughput(state.summary),
            _what_if(state.summary),
            _expected(state.summary),
            *panels,
            html.Div(  # hidden for a profile without device kernels (CPU only)
                [
                    html.H3("Top kernels (whole trace)", id="kernel-title"),
                    grid("kernel-table", KERNEL_COLUMNS, [], state.classes),
                ],
                id="panel-kernels",
                style={} if state.summary.get("kernels") else {"display": "none"},
            ),
            *summary_tables(state.summary, state.classes),
        ],
    )


def step_classes(trace, step: int) -> dict:
    """The compute classes of one step per rank, shaped like the summary's `ranks` entries
    (`Trace.compute_classes(by=("rank", "step"))`, the same function as the whole-trace classes)."""
    frame = trace.compute_classes(by=("rank", "step")).filter(pl.col("step") == step).drop("step")
    per_rank: dict[int, list[dict]] = {}
    for row in frame.to_dicts():
        per_rank.setdefault(row.pop("rank"), []).append(row)
    return {"ranks": [{"rank": r, "compute_classes": per_rank.get(r, [])} for r in trace.ranks["rank"].to_list()]}


def _height(panel: str, rows: int) -> int:
    low, per_row, high = PANELS[panel]
    return max(low, min(high, 140 + per_row * rows))


def panel_styles(summary: dict, ranks, step: int | None, per_class: dict) -> dict[str, tuple[dict, int]]:
    """(style, height px) of each figure panel for this selection: hidden when it has nothing to
    show (the breakdown without device time, step time with one step, the heatmap with one rank,
    classes without device tasks), else
    as tall as its ranks or bars need, within the panel's bounds (`PANELS`)."""
    entries = [
        r for r in figures.select_ranks(summary, ranks) if figures.select_steps(r, None if step is None else [step])
    ]
    n_ranks = len(entries)
    steps = {s["step"] for r in entries for s in r["steps"]} if step is None else {step}
    picked = [s for r in entries for s in figures.select_steps(r, None if step is None else [step])]
    bars = len(picked)
    device = any(s.get(f"{t}_us") for s in picked for t in figures.STACKED_TERMS)
    class_ranks = [r for r in figures.select_ranks(per_class, ranks) if r["compute_classes"]]
    shown = {
        "fig-breakdown": device,  # no device time at all (a CPU-only profile): nothing to stack
        "fig-step-time": step is None and len(steps) > 1,
        "fig-heatmap": n_ranks > 1,  # one rank: the step-time line shows the same
        "fig-classes": bool(class_ranks),
    }
    rows = {
        "fig-breakdown": bars,
        "fig-step-time": 0,
        "fig-heatmap": n_ranks,
        "fig-classes": len(class_ranks),
    }
    return {p: ({} if shown[p] else {"display": "none"}, _height(p, rows[p])) for p in PANELS}


def update_overview(state: DashboardState, search: str | None) -> tuple:
    """(breakdown, step time, heatmap and classes figures, kernel rows, kernel title, then the four
    panels' styles) for the filters in the query string `search` (a selected step narrows the
    compute classes and the kernel table to that step)."""
    summary = state.summary
    ranks, step = parse_query(search, state.rank_ids, steps=state.step_ids)
    picked_classes, name, _ = parse_filters(search, state.classes)
    steps = None if step is None else [step]
    window = "whole trace" if step is None else f"step {step}"
    per_class = summary if step is None else step_classes(state.trace, step)
    if picked_classes:
        per_class = {
            "ranks": [
                {**r, "compute_classes": [c for c in r["compute_classes"] if c["class"] in picked_classes]}
                for r in per_class["ranks"]
            ]
        }
    sized = panel_styles(summary, ranks, step, per_class)
    figs = [
        figures.step_breakdown_figure(summary, ranks, steps),
        figures.step_time_figure(summary, ranks, selected_step=step),
        figures.step_heatmap_figure(summary, ranks, steps),
        figures.compute_classes_figure(per_class, ranks, window=window),
    ]
    for panel, fig in zip(PANELS, figs):
        fig.update_layout(height=sized[panel][1])
    return (
        *figs,
        kernel_rows(state.trace, ranks, step, picked_classes, name),
        f"Top kernels ({window})",
        *(sized[p][0] for p in PANELS),
    )


def instances_callback(table: str):
    """The callback of one linked grid (`overview_tables.INSTANCE_LINKS`): a click on a row's name
    -> the Timeline's (path, query) showing that row's instances; any other click changes nothing."""

    def show_instances(state: DashboardState, cell, rows, search) -> tuple[str, str]:
        link = instances_link(table, cell, rows, search)
        if link is None:
            raise dash.exceptions.PreventUpdate
        return link

    return show_instances
