"""The Timeline page (/timeline): its layout and its callbacks over a `DashboardState`.

The figure itself (lanes, binning, hover points) is `traceview.dashboards.timeline_page`; this
module decides which window and which lanes a request asks for.
"""

from __future__ import annotations

import dash
from dash import dcc, html

from traceview.dashboards.query import is_timeline, parse_compare, parse_filters, parse_query
from traceview.dashboards.state import DashboardState
from traceview.dashboards.timeline_page import HOST_KEY, stacked_figure

#: Runs in the browser on every plotly relayout of the timeline: passes on (to the server, through
#: the tl-window store) only those that move the x axis, each as a new value. The others (the
#: autosize of a first draw, a resize, a y-only zoom) never become a request: a second request for
#: the figure while the first is in flight made Dash drop the first answer, and the server had
#: nothing to draw for the second ("no update"), so the page often loaded blank.
X_MOVES_JS = """
function (relayout) {
    if (!relayout) { return window.dash_clientside.no_update; }
    var moves = Object.keys(relayout).some(function (k) { return /^xaxis\\d*\\.(range|autorange)/.test(k); });
    if (!moves) { return window.dash_clientside.no_update; }
    return Object.assign({}, relayout, {_seq: Date.now() + Math.random()});
}
"""


def _labelled(label: str, html_for: str, control) -> html.Div:
    return html.Div(style={"flex": "1"}, children=[html.Label(label, htmlFor=html_for), control])


def timeline_layout(state: DashboardState, graph_config: dict) -> html.Div:
    """The Timeline page's components (hidden until the path is /timeline)."""
    rank_options = [{"label": f"rank {r}", "value": r} for r in state.rank_ids]
    step_options = [{"label": f"step {s}", "value": s} for s in state.step_ids]
    controls = html.Div(
        style={"display": "flex", "gap": "20px", "alignItems": "flex-end", "maxWidth": "900px", "marginTop": "10px"},
        children=[
            _labelled(
                "Jump to step", "tl-step", dcc.Dropdown(id="tl-step", options=step_options, placeholder="pick a step")
            ),
            _labelled(
                "Compare rank",
                "tl-compare-a",
                dcc.Dropdown(id="tl-compare-a", options=rank_options, placeholder="rank (top)"),
            ),
            _labelled(
                "with rank",
                "tl-compare-b",
                dcc.Dropdown(id="tl-compare-b", options=rank_options, placeholder="rank (below)"),
            ),
            dcc.Checklist(id="tl-host", options=[{"label": " host threads", "value": "host"}], value=[]),
            html.Button("Reset view", id="tl-reset", n_clicks=0),
        ],
    )
    return html.Div(
        id="page-timeline",
        style={"display": "none"},
        children=[
            # the canvas timeline (dashboards/assets/tv_timeline_*.js over timeline_api's routes)
            html.Div(id="tvtl-root"),
            html.H3("Server-rendered timeline (plotly)", style={"marginTop": "30px"}),
            controls,
            html.P(id="tl-note", style={"color": "#4b5563"}),
            dcc.Graph(id="tl-graph", config={**graph_config, "scrollZoom": True}),
            dcc.Store(id="tl-window"),
            html.H3("Task details"),
            html.Div(id="tl-details"),
        ],
    )


def update_timeline(
    state: DashboardState, pathname, search, relayout, jump_step, reset_clicks, trigger=None
) -> tuple[dict, str]:
    """(figure, note) of the timeline for the window the trigger asks for.

    trigger (the id of the input that fired): "tl-window" (or "tl-graph") -> the zoomed/panned
    x range of `relayout`, a plotly relayoutData that moved x (`X_MOVES_JS` lets only those
    through; autorange -> whole trace; no x change -> no update); "tl-step" -> that step's
    device window (no update when cleared); "tl-reset", "url" or None -> whole trace.
    Two ranks in the query's `compare=a,b`: rank a's lanes above rank b's on one x axis (the
    rank filter does not apply then)."""
    if not is_timeline(pathname):
        raise dash.exceptions.PreventUpdate
    base = state.timeline_data()
    ranks, _ = parse_query(search, state.rank_ids, state.step_ids)
    pair = parse_compare(search, state.rank_ids)
    picked_classes, name, host = parse_filters(search, state.classes)
    if len(pair) == 2:
        ranks = pair
    data = state.filtered(base, picked_classes, name)
    hosts = state.filtered(state.host_data(), None, name) if host else None
    window = base.full_window()
    if hosts is not None and hosts.tasks.height:
        window = (min(window[0], hosts.first_ns), max(window[1], hosts.last_ns))
    if trigger in ("tl-window", "tl-graph"):
        asked = data.window_from_relayout(relayout)
        if asked is None:
            raise dash.exceptions.PreventUpdate
        if asked != "full":
            window = asked
    elif trigger == "tl-step":
        if jump_step is None:
            raise dash.exceptions.PreventUpdate
        window = data.step_window(jump_step, ranks) or window
    ui_key = f"{ranks}|{host}|{reset_clicks or 0}"
    groups = [[r] for r in pair] if len(pair) == 2 else [ranks]
    panels = []
    for group in groups:
        label = "all ranks" if group is None else ", ".join(f"rank {r}" for r in group)
        if hosts is not None:
            panels.append((hosts, group, f"{label} · host threads"))
        panels.append((data, group, f"{label} · device" if hosts is not None else label))
    if len(panels) == 1:
        fig, note, _ = data.figure(*window, ranks=ranks, ui_key=ui_key)
    else:
        fig, note, _ = stacked_figure(panels, *window, ui_key=ui_key)
    if picked_classes or name:
        note += " · filtered: " + ", ".join(
            ([f"classes {', '.join(picked_classes)}"] if picked_classes else [])
            + ([f"name contains {name!r}"] if name else [])
        )
    return fig, note


def timeline_callback(state: DashboardState, pathname, search, relayout, jump_step, reset_clicks) -> tuple:
    """`update_timeline`, and the step picker cleared after any other move (zoom, pan, reset),
    so that picking the same step again jumps back to it."""
    trigger = dash.ctx.triggered_id
    fig, note = update_timeline(state, pathname, search, relayout, jump_step, reset_clicks, trigger=trigger)
    return fig, note, (dash.no_update if trigger == "tl-step" else None)


def timeline_details(state: DashboardState, click):
    """The clicked task's fields as plain text components."""
    points = (click or {}).get("points") or []
    key = points[0].get("customdata") if points else None
    if isinstance(key, str) and key.startswith(HOST_KEY):
        return state.host_data().details(key.removeprefix(HOST_KEY))
    return state.timeline_data().details(key if isinstance(key, str) else None)
