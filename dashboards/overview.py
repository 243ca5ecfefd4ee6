"""The Overview page: findings, throughput, the step figures, compute classes and the kernel table.

`overview_layout(state)` is the page; `update_overview(state, search)` is its callback (figures
and table rows for the filters in the query string). Everything from the trace goes into
components as text or data, which React, plotly and the grid escape; nothing is formatted into HTML.
"""

from __future__ import annotations

import json

import dash_ag_grid as dag
import polars as pl
from dash import dcc, html

from traceview.dashboards import figures
from traceview.dashboards.colors import class_color
from traceview.dashboards.query import parse_filters, parse_query
from traceview.dashboards.state import DashboardState
from traceview.dashboards.timeline_page import name_contains
from traceview.safe_text import one_line
from traceview.summary import finding_heading, headline_lines

FONT = "system-ui, -apple-system, 'Segoe UI', sans-serif"
TABLE_TOP = 50  # kernels per rank in the table (the CLI's --top defaults to 10)
SEVERITY_COLORS = {"critical": "#b91c1c", "warning": "#b45309", "info": "#1d4ed8"}
GRAPH_CONFIG = {"displaylogo": False}

_NUMBER = {"type": "numericColumn", "filter": "agNumberColumnFilter"}
_TEXT = {"filter": "agTextColumnFilter"}
#: The kernel table's columns (dash-ag-grid columnDefs): field, header, and how it filters.
KERNEL_COLUMNS = [
    {"field": "rank", "headerName": "rank", "width": 90, **_NUMBER},
    {"field": "name", "headerName": "kernel", "flex": 3, "tooltipField": "name", **_TEXT},
    {"field": "class", "headerName": "class", "width": 150, **_TEXT},
    {"field": "count", "headerName": "count", "width": 110, **_NUMBER},
    {"field": "total_ms", "headerName": "total (ms)", "sort": "desc", "width": 130, **_NUMBER},
    {"field": "mean_us", "headerName": "mean (µs)", "width": 130, **_NUMBER},
    {"field": "share_pct", "headerName": "share (% of device time)", "width": 200, **_NUMBER},
]


def _class_colours(classes: list[str]) -> dict:
    """cellStyle of the class column: each class in its figure colour. The grid evaluates each
    condition as JavaScript: a class name (from a user's rules file) enters it only as a JSON
    string literal, ASCII-escaped."""
    return {
        "styleConditions": [
            {"condition": f"params.value === {json.dumps(c, ensure_ascii=True)}", "style": {"color": class_color(c)}}
            for c in classes
        ]
    }


def _headline(summary: dict) -> html.Div:
    """The summary's headline (`traceview.summary.headline_lines`): the iteration and its terms."""
    lines = headline_lines(summary.get("headline"))
    return html.Div([html.P(line.strip(), style={"margin": "2px 0"}) for line in lines], id="headline")


def _findings(summary: dict) -> html.Div:
    """Findings, straggler, long steps, warnings and failed ranks as visible lists (text only)."""
    items = [
        html.Li(
            [
                html.Strong(
                    f["severity"],
                    className=f"sev-{f['severity']}",
                    style={"color": SEVERITY_COLORS.get(f["severity"], "#111827")},
                ),
                " ",
                html.Span(one_line(finding_heading(f)), className="finding-heading", style={"fontWeight": 600}),
                ": ",
                one_line(f["message"]),
                html.Br(),
                html.Span(one_line(f["advice"]), style={"color": "#4b5563"}),
            ],
            className="finding-rule",
        )
        for f in summary.get("findings_by_rule") or []
    ]
    straggler = figures.straggler_line(summary)
    if straggler:
        items.append(html.Li(straggler, id="straggler"))
    items += [html.Li(line) for line in figures.long_step_lines(summary)]
    children = [html.H3("Findings"), html.Ul(items or [html.Li("No straggler or long step found.")])]
    for key, title, colour in (("failures", "Failed ranks", "#b91c1c"), ("warnings", "Warnings", "#b45309")):
        if summary.get(key):
            children += [
                html.H4(title, style={"color": colour}),
                html.Ul([html.Li(one_line(line)) for line in summary[key]], id=key),
            ]
    return html.Div(children, id="findings")


def _cell(value, fmt: str) -> str:
    return "-" if value is None else format(value, fmt)


def _throughput(summary: dict) -> html.Div:
    """Tokens/s, model TFLOP/s, MFU and HFU per step (only when the model/job options were given)."""
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
                html.Td(r["step"]),
                html.Td(_cell(figures.ms(r["step_time_us"]), ",.3f")),
                html.Td(_cell(r.get("tokens_per_s_per_device"), ",.0f")),
                html.Td(_cell(r.get("model_tflops_per_device"), ",.1f")),
                html.Td(_cell(r.get("peak_tflops"), ",.0f")),
                html.Td(_cell(None if r.get("mfu_frac") is None else r["mfu_frac"] * 100, ".1f")),
                html.Td(_cell(None if r.get("hfu_frac") is None else r["hfu_frac"] * 100, ".1f")),
            ]
        )
        for r in rows
    ]
    table = html.Table(
        [html.Thead(html.Tr([html.Th(h) for h in head])), html.Tbody(body)], style={"borderSpacing": "16px 2px"}
    )
    children = [html.H3("Throughput"), table]
    source = next((r.get("peak_source") for r in rows if r.get("peak_source")), None)
    if source:
        children.append(html.P(f"Peak: {source} (dense bf16).", style={"color": "#4b5563"}))
    check = next((r["check"] for r in rows if r.get("check")), None)
    if check:
        children.append(html.P(check, style={"color": "#b91c1c"}, id="mfu-warning"))
    return html.Div(children, id="throughput")


def overview_layout(state: DashboardState) -> html.Div:
    """The Overview page's components (filled by `update_overview`)."""
    columns = [
        {**c, "cellStyle": _class_colours(state.classes)} if c["field"] == "class" else c for c in KERNEL_COLUMNS
    ]
    return html.Div(
        id="page-overview",
        children=[
            _headline(state.summary),
            _findings(state.summary),
            _throughput(state.summary),
            dcc.Graph(id="fig-breakdown", config=GRAPH_CONFIG),
            dcc.Graph(id="fig-step-time", config=GRAPH_CONFIG),
            dcc.Graph(id="fig-heatmap", config=GRAPH_CONFIG),
            dcc.Graph(id="fig-classes", config=GRAPH_CONFIG),
            html.H3("Top kernels (whole trace)", id="kernel-title"),
            dag.AgGrid(
                id="kernel-table",
                columnDefs=columns,
                rowData=[],
                defaultColDef={"sortable": True, "resizable": True, "floatingFilter": True},
                dashGridOptions={"pagination": True, "paginationPageSize": 20, "tooltipShowDelay": 300},
                style={"height": "720px", "fontFamily": FONT},
            ),
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


def kernel_rows(
    trace, ranks: list[int] | None, step: int | None = None, classes: list[str] | None = None, query: str | None = None
) -> list[dict]:
    """Top kernels per rank (of `step` when given) from the memoised `Trace.top_kernels` (same
    function as the summary); only `classes` and names containing `query` (case-insensitive) when given."""
    if step is None:
        frame = trace.top_kernels(TABLE_TOP)
    else:
        frame = trace.top_kernels(TABLE_TOP, by=("rank", "step")).filter(pl.col("step") == step)
    if classes:
        frame = frame.filter(pl.col("class").is_in(classes))
    if query:
        frame = frame.filter(name_contains(query))
    if ranks is not None:
        frame = frame.filter(pl.col("rank").is_in(ranks))
    return [
        {
            "rank": row["rank"],
            "name": one_line(row["name"]),
            "class": one_line(row["class"]),
            "count": row["count"],
            "total_ms": round(row["total_us"] / 1000.0, 6),
            "mean_us": round(row["mean_us"], 3),
            "share_pct": round(row["share"] * 100.0, 4),
        }
        for row in frame.to_dicts()
    ]


def update_overview(state: DashboardState, search: str | None) -> tuple:
    """(breakdown, step time, heatmap and classes figures, kernel rows, kernel title) for the
    filters in the query string `search` (a selected step narrows the compute classes and the
    kernel table to that step)."""
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
    return (
        figures.step_breakdown_figure(summary, ranks, steps),
        figures.step_time_figure(summary, ranks, selected_step=step),
        figures.step_heatmap_figure(summary, ranks, steps),
        figures.compute_classes_figure(per_class, ranks, window=window),
        kernel_rows(state.trace, ranks, step, picked_classes, name),
        f"Top kernels ({window})",
    )
