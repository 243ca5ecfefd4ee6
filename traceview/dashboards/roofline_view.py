"""The dashboard's Roofline page (/roofline): each operator at its arithmetic intensity and
achieved TFLOP/s over the device's roofline (`roofline_figure`), the operators with the most device
time against it, and the FLOPs traced per step with the MFU they give (docs/roofline.md).

The rank filter applies (the step filter does not: the rows are whole-trace). A click on an
operator's marker opens the Timeline with that operator's calls (its name as the name filter, its
rank, host lanes on: `query.instances_query`). Names go into components as text.
"""

from __future__ import annotations

import dash
from dash import dcc, html

from traceview.dashboards.query import TIMELINE_PATH, instances_query, parse_query
from traceview.dashboards.roofline_figure import roofline_figure
from traceview.summary_text import traced_rate_text

#: Operators listed under the figure.
TABLE_ROWS = 25
NO_SHAPES = (
    "No operator with recorded shapes: record the profile with torch.profiler(record_shapes=True) to see "
    "each operator against the device's roofline."
)
COLUMNS = [
    ("rank", "rank"),
    ("op", "operator"),
    ("input_dims", "input dims"),
    ("dtype", "dtype"),
    ("count", "calls"),
    ("device_ms", "device ms"),
    ("tflops", "TFLOP/s"),
    ("peak_pct", "% of peak"),
    ("roofline_pct", "% of roofline"),
    ("bound", "bound"),
]
CELL = {"padding": "3px 10px", "borderBottom": "1px solid #e5e7eb", "fontSize": "13px", "textAlign": "left"}


def roofline_layout(graph_config: dict) -> html.Div:
    """The page's components (hidden until /roofline is the path)."""
    return html.Div(
        id="page-roofline",
        style={"display": "none"},
        children=[
            html.P(id="roofline-note", style={"fontSize": "14px"}),
            dcc.Graph(id="roofline-graph", config=graph_config, style={"height": "560px"}),
            html.Div(id="roofline-flops", style={"fontSize": "14px", "margin": "8px 0"}),
            html.Div(id="roofline-table"),
        ],
    )


def _fmt(value, digits: int = 3) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def update_roofline(state, search):
    """(figure, note, traced-FLOPs lines, table) for the query's ranks."""
    ranks, _ = parse_query(search, state.rank_ids, state.step_ids)
    rows = state.trace.op_roofline()
    traced = state.trace.traced_flops()
    if ranks:
        rows = rows.filter(rows["rank"].is_in(ranks))
        traced = traced.filter(traced["rank"].is_in(ranks))
    if rows.is_empty():
        return roofline_figure(rows), NO_SHAPES, [], []
    note = (
        "Each marker is an operator, its input dims and dtype; its size grows with its device time. "
        "Click one to see its calls on the Timeline."
    )
    flops = [
        html.Div(
            f"rank {r['rank']}, step {r['step']}: {r['traced_flops'] / 1e12:,.3f} TFLOP traced from recorded shapes"
            f"{traced_rate_text(r)}"
        )
        for r in traced.head(16).iter_rows(named=True)
    ]
    shown = [
        {
            "rank": str(r["rank"]),
            "op": r["op"],
            "input_dims": (r["input_dims"] or "")[:60],
            "dtype": " ".join(v for v in dict.fromkeys((r["dtype"], r["algorithm"])) if v) or "-",
            "count": str(r["count"]),
            "device_ms": _fmt(r["device_time_us"] / 1000),
            "tflops": _fmt(r["achieved_tflops_per_s"], 2),
            "peak_pct": "-" if r["peak_frac"] is None else f"{100 * r['peak_frac']:.1f}",
            "roofline_pct": "-" if r["roofline_frac"] is None else f"{100 * r['roofline_frac']:.1f}",
            "bound": r["bound"] or "-",
        }
        for r in rows.head(TABLE_ROWS).iter_rows(named=True)
    ]
    table = html.Table(
        [html.Tr([html.Th(title, style=CELL) for _, title in COLUMNS])]
        + [html.Tr([html.Td(row[key], style=CELL) for key, _ in COLUMNS]) for row in shown],
        id="roofline-operators",
        style={"borderCollapse": "collapse"},
    )
    return roofline_figure(rows), note, flops, table


def roofline_click(state, click, search):
    """A click on an operator's marker: the Timeline with its calls (pathname, query string)."""
    points = (click or {}).get("points") or []
    custom = points[0].get("customdata") if points else None
    if not isinstance(custom, list) or len(custom) != 2 or not isinstance(custom[1], str):
        raise dash.exceptions.PreventUpdate
    rank = custom[0] if isinstance(custom[0], int) and custom[0] in state.rank_ids else None
    return TIMELINE_PATH, instances_query(search, custom[1], rank, host=True)
