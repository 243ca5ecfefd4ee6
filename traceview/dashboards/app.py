"""The Dash app of `traceview serve`: a header, a navigation, the Overview, the Timeline page
(/timeline), the Roofline page (/roofline, `roofline_view`) and, with runs to compare
(`--compare`), the Compare page (/compare).

`create_app(trace, summary)` builds it over one `DashboardState` (`traceview.dashboards.state`).
The filters (ranks, step, classes, name) live in the URL query string (`traceview.dashboards.query`),
so a view can be shared by its address. The callbacks are module-level functions of (state,
inputs): the shell's here, the pages' in `overview` and `compare_view`; they run on the server
from the summary and the Trace's memoised analyses, and the browser only receives figures and
table rows. The Timeline page is a canvas drawn in the browser (`timeline.view`) over JSON routes
(`timeline.api`); it follows the same URL. Everything from the trace goes into components as text
or data, which React, plotly and the grid escape; nothing is formatted into HTML.
"""

from __future__ import annotations

import functools
import io
import re
import threading
from pathlib import Path

import dash
from dash import Input, Output, State, dcc, html

from traceview.dashboards.compare_view import compare_layout
from traceview.dashboards.overview import FONT, GRAPH_CONFIG, instances_callback, overview_layout, update_overview
from traceview.dashboards.overview import OUTPUTS as OVERVIEW_OUTPUTS
from traceview.dashboards.overview_tables import linked_tables
from traceview.dashboards.query import (
    COMPARE_PATH,
    FILTER_WIDGETS,
    ROOFLINE_PATH,
    TIMELINE_PATH,
    is_compare,
    is_roofline,
    is_timeline,
    make_query,
    parse_compare,
    parse_filters,
    parse_query,
)
from traceview.dashboards.roofline_view import roofline_click, roofline_layout, update_roofline
from traceview.dashboards.server import harden, log
from traceview.dashboards.state import DashboardState
from traceview.dashboards.timeline.api import TimelineApi, register
from traceview.dashboards.timeline.view import URL_JS, timeline_layout
from traceview.safe_text import one_line

__all__ = ["FILTER_WIDGETS", "create_app", "make_query", "parse_compare", "parse_filters", "parse_query"]

STYLE_HEADER = {"background": "#1f2937", "color": "white", "padding": "10px 20px", "fontFamily": FONT}
STYLE_NAV = {"width": "150px", "padding": "20px", "borderRight": "1px solid #e5e7eb", "fontFamily": FONT}
STYLE_MAIN = {"flex": "1", "padding": "20px", "minWidth": "0", "fontFamily": FONT}
FILTERS_SHOWN = {"display": "flex", "gap": "20px", "maxWidth": "1200px"}


def _header(state: DashboardState) -> html.Header:
    summary = state.summary
    devices = sorted({r["device"] for r in summary["ranks"] if r.get("device")})
    n = len(summary["ranks"])
    return html.Header(
        style=STYLE_HEADER,
        children=[
            html.Strong("traceview", style={"marginRight": "20px", "fontSize": "18px"}),
            html.Span(
                one_line(summary.get("source", state.trace.source)), id="profile-path", style={"marginRight": "20px"}
            ),
            html.Span(f"{n} rank{'s' if n != 1 else ''}", id="profile-ranks", style={"marginRight": "20px"}),
            html.Span(one_line(", ".join(devices)) or "device unknown", id="profile-device"),
        ],
    )


def _filter(label: str, widget, **div) -> html.Div:
    return html.Div(style={"flex": "1"}, children=[html.Label(label, htmlFor=widget.id), widget], **div)


def _filters(state: DashboardState) -> html.Div:
    """The filters the Overview and Timeline share: ranks, step, classes, kernel name."""
    return html.Div(
        id="filters",
        style=FILTERS_SHOWN,
        children=[
            _filter(
                "Ranks",
                dcc.Dropdown(
                    id="rank-select",
                    options=[{"label": f"rank {r}", "value": r} for r in state.rank_ids],
                    multi=True,
                    placeholder="all ranks",
                ),
            ),
            _filter(
                "Step",
                dcc.Dropdown(
                    id="step-select",
                    options=[{"label": f"step {s}", "value": s} for s in state.step_ids],
                    placeholder="all steps",
                ),
                id="step-filter",
            ),
            _filter(
                "Classes",
                dcc.Dropdown(
                    id="class-select",
                    options=[{"label": c, "value": c} for c in state.classes],
                    multi=True,
                    placeholder="all classes",
                ),
            ),
            _filter(
                "Kernel name contains",
                dcc.Input(
                    id="name-search",
                    type="search",
                    debounce=True,
                    placeholder="e.g. gemm",
                    style={"width": "100%", "height": "34px"},
                ),
            ),
        ],
    )


#: The profile as a Perfetto / chrome://tracing file (`traceview export --format perfetto`).
PERFETTO_PATH = "/download/perfetto.json"
PERFETTO_TITLE = "Download the profile for ui.perfetto.dev: every rank, flows, and the iteration, terms, phases and findings as tracks"


class PerfettoDownload:
    """The profile's Perfetto export (`perfetto.perfetto_json`), built once: on the first request,
    under a lock, so that requests arriving meanwhile wait for that build instead of starting
    their own; then kept in memory for the server's life (one copy, the size of the export)."""

    def __init__(self, trace) -> None:
        self.trace = trace
        self._body: bytes | None = None
        self._lock = threading.Lock()
        self.builds = 0  # how many times the export was built (1 once asked for)

    def body(self) -> bytes:
        with self._lock:
            if self._body is None:
                from traceview.dashboards.perfetto import perfetto_json

                self._body = perfetto_json(self.trace)
                self.builds += 1
            return self._body


def register_download(server, trace) -> PerfettoDownload:
    """The Perfetto export as a download (built on the first request, then reused; docs/export.md).
    Each answer reads the one copy in memory through the server's file wrapper (waitress sends it
    as the client takes it): a client that reads slowly, or never, costs neither a copy nor a
    temporary file."""
    from flask import Response, request
    from werkzeug.wsgi import wrap_file

    stem = re.sub(r"(\.pt\.trace)?\.json(\.gz)?$", "", Path(str(trace.source)).name)
    name = re.sub(r"[^A-Za-z0-9._-]+", "_", stem)[:100].strip("._") or "profile"
    export = PerfettoDownload(trace)

    def download():
        body = export.body()
        headers = {
            "Content-Disposition": f'attachment; filename="{name}.perfetto.json"',
            "Content-Length": str(len(body)),
        }
        # io.BytesIO over bytes shares them (no copy until written to)
        stream = wrap_file(request.environ, io.BytesIO(body))
        return Response(stream, mimetype="application/json", headers=headers, direct_passthrough=True)

    server.add_url_rule(PERFETTO_PATH, "perfetto_download", download, methods=["GET"])
    return export


def layout(state: DashboardState) -> html.Div:
    """The whole page: header, navigation, the shared filters, the pages (Compare listed only
    with runs to compare)."""
    nav = html.Nav(
        style=STYLE_NAV,
        children=[
            html.Div(dcc.Link("Overview", href="/", id="nav-overview")),
            html.Div(dcc.Link("Timeline", href=TIMELINE_PATH, id="nav-timeline"), style={"marginTop": "8px"}),
            html.Div(dcc.Link("Roofline", href=ROOFLINE_PATH, id="nav-roofline"), style={"marginTop": "8px"}),
            html.Div(
                dcc.Link("Compare", href=COMPARE_PATH, id="nav-compare"),
                style={"marginTop": "8px"} if state.comparison else {"display": "none"},
            ),
            html.Div(
                html.A("Perfetto JSON", href=PERFETTO_PATH, id="nav-perfetto", download="", title=PERFETTO_TITLE),
                style={"marginTop": "24px", "fontSize": "13px"},
            ),
        ],
    )
    main = html.Main(
        style=STYLE_MAIN,
        children=[
            html.H2("Overview", id="page-title"),
            _filters(state),
            overview_layout(state),
            timeline_layout(),
            roofline_layout(GRAPH_CONFIG),
            compare_layout(state.comparison, GRAPH_CONFIG),
        ],
    )
    return html.Div(
        [
            dcc.Location(id="url", refresh=False),
            _header(state),
            html.Div(style={"display": "flex"}, children=[nav, main]),
        ]
    )


def sync_filters(state: DashboardState, search, ranks, step, picked_classes=None, name=None) -> tuple:
    """URL <-> filter widgets: the URL wins on page load, the widgets when the user picks. The
    timeline's own keys (compare=a,b, host=1: its toolbar writes them) pass through a pick."""
    if dash.ctx.triggered_id in FILTER_WIDGETS:
        compare = parse_compare(search, state.rank_ids)
        host = parse_filters(search, state.classes)[2]
        query = make_query(ranks or None, step, compare, picked_classes, name, host)
        return (query,) + (dash.no_update,) * len(FILTER_WIDGETS)
    picked, picked_step = parse_query(search, state.rank_ids, state.step_ids)
    picked_classes, name, _ = parse_filters(search, state.classes)
    return (dash.no_update, picked or [], picked_step, picked_classes or [], name or "")


def page_of(pathname) -> str:
    """The page a path shows: timeline, compare, roofline or overview (any other path)."""
    if is_timeline(pathname):
        return "timeline"
    if is_compare(pathname):
        return "compare"
    return "roofline" if is_roofline(pathname) else "overview"


def on_page(page: str, callback):
    """`callback(state, *inputs)` run only while `page` is shown: its callback takes the path
    first and answers "no update" on any other page, so opening the Timeline builds no Overview
    figure (the page's content is computed when the user goes to it, with the query string then)."""

    @functools.wraps(callback)
    def run(state: DashboardState, pathname, *args):
        if page_of(pathname) != page:
            raise dash.exceptions.PreventUpdate
        return callback(state, *args)

    return run


def show_page(state: DashboardState, pathname, search) -> tuple:
    """Which page the path shows (page styles, the step filter's and the filters' style, the
    title); the navigation links keep the query string (rank/step state). The Compare page has no
    filters: it compares whole runs."""
    page = page_of(pathname)
    hidden, shown = {"display": "none"}, {}
    return (
        shown if page == "overview" else hidden,
        shown if page == "timeline" else hidden,
        shown if page == "roofline" else hidden,
        shown if page == "compare" else hidden,
        {"flex": "1"} if page == "overview" else {"flex": "1", "display": "none"},
        {**FILTERS_SHOWN, "display": "none"} if page == "compare" else FILTERS_SHOWN,
        page.capitalize(),
        "/" + (search or ""),
        TIMELINE_PATH + (search or ""),
        ROOFLINE_PATH + (search or ""),
        COMPARE_PATH + (search or ""),
    )


def guarded(callback, state: DashboardState):
    """`callback` bound to `state`, answering "no update" (and logging one line, no traceback) to
    inputs it cannot use: a request the page would never send (NaN, infinities, wrong types) is
    not a server error."""

    @functools.wraps(callback)
    def run(*args):
        try:
            return callback(state, *args)
        except dash.exceptions.PreventUpdate:
            raise
        except Exception as exc:  # noqa: BLE001 - inputs come from the network: any of them can be wrong
            log.warning(
                "%s: ignored inputs it cannot use (%s: %s)", callback.__name__, type(exc).__name__, str(exc)[:200]
            )
            raise dash.exceptions.PreventUpdate from None

    return run


def app_for(state: DashboardState, warm_timeline: bool = False) -> dash.Dash:
    """The Dash app of `state`: its layout and every callback bound to it, then hardened. With
    warm_timeline, the canvas timeline's model is built in the background now (`TimelineApi.warm`)."""
    app = dash.Dash(
        __name__, serve_locally=True, title="traceview", update_title=None, suppress_callback_exceptions=False
    )
    app.layout = layout(state)
    app.callback(
        Output("url", "search"),
        *[Output(w, p) for w, p in FILTER_WIDGETS.items()],
        Input("url", "search"),
        *[Input(w, p) for w, p in FILTER_WIDGETS.items()],
    )(guarded(sync_filters, state))
    # the Overview's and the Roofline's content: computed when their page is shown (`on_page`)
    app.callback(*[Output(c, p) for c, p in OVERVIEW_OUTPUTS], Input("url", "pathname"), Input("url", "search"))(
        guarded(on_page("overview", update_overview), state)
    )
    app.callback(
        Output("page-overview", "style"),
        Output("page-timeline", "style"),
        Output("page-roofline", "style"),
        Output("page-compare", "style"),
        Output("step-filter", "style"),
        Output("filters", "style"),
        Output("page-title", "children"),
        Output("nav-overview", "href"),
        Output("nav-timeline", "href"),
        Output("nav-roofline", "href"),
        Output("nav-compare", "href"),
        Input("url", "pathname"),
        Input("url", "search"),
    )(guarded(show_page, state))
    app.callback(
        Output("roofline-graph", "figure"),
        Output("roofline-note", "children"),
        Output("roofline-flops", "children"),
        Output("roofline-table", "children"),
        Input("url", "pathname"),
        Input("url", "search"),
    )(guarded(on_page("roofline", update_roofline), state))
    app.callback(
        Output("url", "pathname", allow_duplicate=True),
        Output("url", "search", allow_duplicate=True),
        Input("roofline-graph", "clickData"),
        State("url", "search"),
        prevent_initial_call=True,
    )(guarded(roofline_click, state))
    # In the browser: each new query string reaches the canvas timeline (timeline.view.URL_JS).
    app.clientside_callback(URL_JS, Output("tvtl-url", "data"), Input("url", "search"))
    for table in linked_tables(state.summary):  # a kernel or operator name -> its instances on the Timeline
        app.callback(
            Output("url", "pathname", allow_duplicate=True),
            Output("url", "search", allow_duplicate=True),
            Input(table, "cellClicked"),
            State(table, "rowData"),
            State("url", "search"),
            prevent_initial_call=True,
        )(guarded(instances_callback(table), state))
    # the canvas timeline's JSON routes (its overlays mark the findings the Overview lists)
    timeline_api = TimelineApi(state.trace, findings=state.summary.get("findings"))
    register(app.server, timeline_api)
    if warm_timeline:
        timeline_api.warm()
    register_download(app.server, state.trace)
    harden(app)  # last: its Content-Security-Policy lists the hashes of every inline script
    return app


def create_app(trace, summary: dict, comparison: dict | None = None, warm_timeline: bool = False) -> dash.Dash:
    """The dashboard of one loaded profile; `summary` is `build_summary(trace)`; `comparison`
    (`RunComparison.to_dict()`, the profile first) adds the Compare page; warm_timeline builds the
    timeline's model in the background (`traceview serve`)."""
    return app_for(DashboardState(trace, summary, comparison), warm_timeline)
