"""The Dash app of `traceview serve`: a header, a navigation, the Overview and the Timeline page (/timeline).

`create_app(trace, summary)` builds it. The filters (ranks, step) live in the URL query string
(`?rank=0,2&step=4`), so a view can be shared by its address. Callbacks run on the server from the
summary and the Trace's memoised analyses; the browser only receives figures and table rows.
Everything from the trace (kernel names, paths, warnings) goes into components as text/data, which
React and plotly escape; nothing is formatted into HTML.
"""

from __future__ import annotations

import functools
from urllib.parse import parse_qs, urlencode

import dash
import polars as pl
from dash import Input, Output, dash_table, dcc, html

from traceview.dashboards import figures
from traceview.dashboards.colors import class_color
from traceview.dashboards.server import harden, log
from traceview.dashboards.timeline_page import HOST_KEY, TimelineData, name_contains, stacked_figure
from traceview.safe_text import one_line

TIMELINE_PATH = "/timeline"
# the widgets whose values live in the query string, and the property holding each value
FILTER_WIDGETS = {
    "rank-select": "value",
    "step-select": "value",
    "tl-compare-a": "value",
    "tl-compare-b": "value",
    "class-select": "value",
    "name-search": "value",
    "tl-host": "value",
}
TABLE_TOP = 50  # kernels per rank in the table (the CLI's --top defaults to 10)

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

FONT = "system-ui, -apple-system, 'Segoe UI', sans-serif"
STYLE_HEADER = {"background": "#1f2937", "color": "white", "padding": "10px 20px", "fontFamily": FONT}
STYLE_NAV = {"width": "150px", "padding": "20px", "borderRight": "1px solid #e5e7eb", "fontFamily": FONT}
STYLE_MAIN = {"flex": "1", "padding": "20px", "minWidth": "0", "fontFamily": FONT}


def parse_query(search: str | None, ranks: list[int], steps: list[int]) -> tuple[list[int] | None, int | None]:
    """(`rank` list or None for all, `step` or None for all) from a query string; unknown values dropped."""
    query = parse_qs((search or "").lstrip("?"))
    picked: list[int] = []
    for part in ",".join(query.get("rank", [])).split(","):
        if part.strip().lstrip("-").isdigit() and int(part) in ranks and int(part) not in picked:
            picked.append(int(part))
    step_text = (query.get("step") or [""])[0].strip()
    step = int(step_text) if step_text.lstrip("-").isdigit() and int(step_text) in steps else None
    return (sorted(picked) or None), step


def parse_compare(search: str | None, ranks: list[int]) -> list[int]:
    """The ranks (at most two, distinct, known) of the query's `compare=a,b`, in the given order."""
    picked: list[int] = []
    for part in ",".join(parse_qs((search or "").lstrip("?")).get("compare", [])).split(","):
        part = part.strip()
        if part.lstrip("-").isdigit() and int(part) in ranks and int(part) not in picked and len(picked) < 2:
            picked.append(int(part))
    return picked


def parse_filters(search: str | None, classes: list[str]) -> tuple[list[str] | None, str | None, bool]:
    """(`class` list of known classes or None for all, `q` name search or None, `host` lanes on)."""
    query = parse_qs((search or "").lstrip("?"))
    picked = [c for c in ",".join(query.get("class", [])).split(",") if c in classes]
    text = (query.get("q") or [""])[0].strip()[:200]
    host = (query.get("host") or [""])[0] in ("1", "true", "yes")
    return (sorted(set(picked)) or None), (text or None), host


def is_timeline(pathname: str | None) -> bool:
    return (pathname or "/").rstrip("/").endswith(TIMELINE_PATH)


def make_query(
    ranks: list[int] | None,
    step: int | None,
    compare: list[int | None] | None = None,
    classes: list[str] | None = None,
    query: str | None = None,
    host: bool = False,
) -> str:
    """The query string of a view (the inverse of `parse_query`, `parse_compare`, `parse_filters`)."""
    params = {}
    if ranks:
        params["rank"] = ",".join(str(r) for r in sorted(ranks))
    if step is not None:
        params["step"] = str(step)
    compare = [r for r in (compare or []) if r is not None]
    if compare:
        params["compare"] = ",".join(str(r) for r in compare)
    if classes:
        params["class"] = ",".join(sorted(classes))
    if query and query.strip():
        params["q"] = query.strip()
    if host:
        params["host"] = "1"
    return ("?" + urlencode(params)) if params else ""


def _header(trace, summary: dict) -> html.Header:
    devices = sorted({r["device"] for r in summary["ranks"] if r.get("device")})
    n = len(summary["ranks"])
    return html.Header(
        style=STYLE_HEADER,
        children=[
            html.Strong("traceview", style={"marginRight": "20px", "fontSize": "18px"}),
            html.Span(one_line(summary.get("source", trace.source)), id="profile-path", style={"marginRight": "20px"}),
            html.Span(f"{n} rank{'s' if n != 1 else ''}", id="profile-ranks", style={"marginRight": "20px"}),
            html.Span(one_line(", ".join(devices)) or "device unknown", id="profile-device"),
        ],
    )


def _findings(summary: dict) -> html.Div:
    """Straggler, long steps, warnings and failed ranks as visible lists (text only)."""
    items = [
        html.Li(
            [
                html.Strong(
                    f["severity"],
                    className=f"sev-{f['severity']}",
                    style={"color": SEVERITY_COLORS.get(f["severity"], "#111827")},
                ),
                " ",
                one_line(f["message"]),
                html.Br(),
                html.Span(one_line(f["advice"]), style={"color": "#4b5563"}),
            ],
            className="finding-rule",
        )
        for f in summary.get("findings") or []
    ]
    straggler = figures.straggler_line(summary)
    if straggler:
        items.append(html.Li(straggler, id="straggler"))
    items += [html.Li(line) for line in figures.long_step_lines(summary)]
    children = [html.H3("Findings"), html.Ul(items or [html.Li("No straggler or long step found.")])]
    if summary.get("failures"):
        children += [
            html.H4("Failed ranks", style={"color": "#b91c1c"}),
            html.Ul([html.Li(one_line(line)) for line in summary["failures"]], id="failures"),
        ]
    if summary.get("warnings"):
        children += [
            html.H4("Warnings", style={"color": "#b45309"}),
            html.Ul([html.Li(one_line(line)) for line in summary["warnings"]], id="warnings"),
        ]
    return html.Div(children, id="findings")


def _throughput(summary: dict) -> html.Div:
    """Tokens/s, model TFLOP/s and MFU per step (only when the model/job options were given)."""
    rows = summary.get("throughput") or []
    if not rows:
        return html.Div(id="throughput")
    head = ["step", "step time (ms)", "tokens/s per device", "model TFLOP/s per device", "peak TFLOP/s", "MFU (%)"]

    def cell(value, fmt):
        return "-" if value is None else format(value, fmt)

    body = [
        html.Tr(
            [
                html.Td(r["step"]),
                html.Td(cell(figures.ms(r["step_time_us"]), ",.3f")),
                html.Td(cell(r.get("tokens_per_s_per_device"), ",.0f")),
                html.Td(cell(r.get("model_tflops_per_device"), ",.1f")),
                html.Td(cell(r.get("peak_tflops"), ",.0f")),
                html.Td(cell(None if r.get("mfu_frac") is None else r["mfu_frac"] * 100, ".1f")),
            ]
        )
        for r in rows
    ]
    source = next((r.get("peak_source") for r in rows if r.get("peak_source")), None)
    children = [
        html.H3("Throughput"),
        html.Table(
            [html.Thead(html.Tr([html.Th(h) for h in head])), html.Tbody(body)], style={"borderSpacing": "16px 2px"}
        ),
    ]
    if source:
        children.append(html.P(f"Peak: {source} (dense bf16).", style={"color": "#4b5563"}))
    check = next((r["check"] for r in rows if r.get("check")), None)
    if check:
        children.append(html.P(check, style={"color": "#b91c1c"}, id="mfu-warning"))
    return html.Div(children, id="throughput")


SEVERITY_COLORS = {"critical": "#b91c1c", "warning": "#b45309", "info": "#1d4ed8"}

KERNEL_COLUMNS = [
    {"name": "rank", "id": "rank", "type": "numeric"},
    {"name": "kernel", "id": "name", "type": "text"},
    {"name": "class", "id": "class", "type": "text"},
    {"name": "count", "id": "count", "type": "numeric"},
    {"name": "total (ms)", "id": "total_ms", "type": "numeric"},
    {"name": "mean (µs)", "id": "mean_us", "type": "numeric"},
    {"name": "share (% of device time)", "id": "share_pct", "type": "numeric"},
]


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
    rows = []
    for row in frame.to_dicts():
        if ranks is not None and row["rank"] not in ranks:
            continue
        rows.append(
            {
                "rank": row["rank"],
                "name": one_line(row["name"]),
                "class": one_line(row["class"]),
                "count": row["count"],
                "total_ms": round(row["total_us"] / 1000.0, 6),
                "mean_us": round(row["mean_us"], 3),
                "share_pct": round(row["share"] * 100.0, 4),
            }
        )
    return rows


def guarded(callback):
    """`callback` that answers "no update" (and logs one line, no traceback) to inputs it cannot
    use: a request the page would never send (NaN, infinities, wrong types) is not a server error."""

    @functools.wraps(callback)
    def run(*args):
        try:
            return callback(*args)
        except dash.exceptions.PreventUpdate:
            raise
        except Exception as exc:  # noqa: BLE001 - inputs come from the network: any of them can be wrong
            log.warning(
                "%s: ignored inputs it cannot use (%s: %s)", callback.__name__, type(exc).__name__, str(exc)[:200]
            )
            raise dash.exceptions.PreventUpdate from None

    return run


def create_app(trace, summary: dict) -> dash.Dash:
    """The dashboard of one loaded profile; `summary` is `build_summary(trace)`."""
    rank_ids = [r["rank"] for r in summary["ranks"]]
    step_ids = sorted({s["step"] for r in summary["ranks"] for s in r["steps"]})
    app = dash.Dash(
        __name__, serve_locally=True, title="traceview", update_title=None, suppress_callback_exceptions=False
    )
    graph = {"displaylogo": False}
    rank_options = [{"label": f"rank {r}", "value": r} for r in rank_ids]
    classes = sorted({c["class"] for r in summary["ranks"] for c in r["compute_classes"]})
    timeline_state: dict = {}

    def timeline_data() -> TimelineData:
        """The sorted tasks, lanes and step windows, built once per app on first use."""
        if "data" not in timeline_state:
            timeline_state["data"] = TimelineData.from_trace(trace)
        return timeline_state["data"]

    def host_data() -> TimelineData:
        """Host events as lanes per thread, on the device data's x origin (built on first use)."""
        if "host" not in timeline_state:
            timeline_state["host"] = TimelineData.host_from_trace(trace, t0_ns=timeline_data().t0_ns)
        return timeline_state["host"]

    def filtered(data: TimelineData, picked_classes, name) -> TimelineData:
        """`data` restricted to the class / name filters, memoised (the last few filter sets)."""
        if not picked_classes and not name:
            return data
        memo = timeline_state.setdefault("filtered", {})
        key = (id(data), tuple(picked_classes or ()), name)
        if key not in memo:
            if len(memo) >= 8:
                memo.pop(next(iter(memo)))
            memo[key] = data.filtered(picked_classes, name)
        return memo[key]

    app.traceview_timeline_data = timeline_data
    overview = html.Div(
        id="page-overview",
        children=[
            _findings(summary),
            _throughput(summary),
            dcc.Graph(id="fig-breakdown", config=graph),
            dcc.Graph(id="fig-step-time", config=graph),
            dcc.Graph(id="fig-heatmap", config=graph),
            dcc.Graph(id="fig-classes", config=graph),
            html.H3("Top kernels (whole trace)", id="kernel-title"),
            dash_table.DataTable(
                id="kernel-table",
                columns=KERNEL_COLUMNS,
                data=[],
                sort_action="native",
                filter_action="native",
                page_size=20,
                sort_by=[{"column_id": "total_ms", "direction": "desc"}],
                style_cell={
                    "fontFamily": FONT,
                    "fontSize": "13px",
                    "textAlign": "left",
                    "maxWidth": "600px",
                    "overflow": "hidden",
                    "textOverflow": "ellipsis",
                },
                style_data_conditional=[
                    {"if": {"filter_query": f'{{class}} = "{c}"', "column_id": "class"}, "color": class_color(c)}
                    for c in classes
                ],
                tooltip_duration=None,
            ),
        ],
    )
    timeline_page = html.Div(
        id="page-timeline",
        style={"display": "none"},
        children=[
            html.Div(
                style={
                    "display": "flex",
                    "gap": "20px",
                    "alignItems": "flex-end",
                    "maxWidth": "900px",
                    "marginTop": "10px",
                },
                children=[
                    html.Div(
                        style={"flex": "1"},
                        children=[
                            html.Label("Jump to step", htmlFor="tl-step"),
                            dcc.Dropdown(
                                id="tl-step",
                                options=[{"label": f"step {s}", "value": s} for s in step_ids],
                                placeholder="pick a step",
                            ),
                        ],
                    ),
                    html.Div(
                        style={"flex": "1"},
                        children=[
                            html.Label("Compare rank", htmlFor="tl-compare-a"),
                            dcc.Dropdown(id="tl-compare-a", options=rank_options, placeholder="rank (top)"),
                        ],
                    ),
                    html.Div(
                        style={"flex": "1"},
                        children=[
                            html.Label("with rank", htmlFor="tl-compare-b"),
                            dcc.Dropdown(id="tl-compare-b", options=rank_options, placeholder="rank (below)"),
                        ],
                    ),
                    dcc.Checklist(id="tl-host", options=[{"label": " host threads", "value": "host"}], value=[]),
                    html.Button("Reset view", id="tl-reset", n_clicks=0),
                ],
            ),
            html.P(id="tl-note", style={"color": "#4b5563"}),
            dcc.Graph(id="tl-graph", config={**graph, "scrollZoom": True}),
            dcc.Store(id="tl-window"),
            html.H3("Task details"),
            html.Div(id="tl-details"),
        ],
    )
    app.layout = html.Div(
        [
            dcc.Location(id="url", refresh=False),
            _header(trace, summary),
            html.Div(
                style={"display": "flex"},
                children=[
                    html.Nav(
                        style=STYLE_NAV,
                        children=[
                            html.Div(dcc.Link("Overview", href="/", id="nav-overview")),
                            html.Div(
                                dcc.Link("Timeline", href=TIMELINE_PATH, id="nav-timeline"), style={"marginTop": "8px"}
                            ),
                        ],
                    ),
                    html.Main(
                        style=STYLE_MAIN,
                        children=[
                            html.H2("Overview", id="page-title"),
                            html.Div(
                                style={"display": "flex", "gap": "20px", "maxWidth": "1200px"},
                                children=[
                                    html.Div(
                                        style={"flex": "1"},
                                        children=[
                                            html.Label("Ranks", htmlFor="rank-select"),
                                            dcc.Dropdown(
                                                id="rank-select",
                                                options=rank_options,
                                                multi=True,
                                                placeholder="all ranks",
                                            ),
                                        ],
                                    ),
                                    html.Div(
                                        style={"flex": "1"},
                                        id="step-filter",
                                        children=[
                                            html.Label("Step", htmlFor="step-select"),
                                            dcc.Dropdown(
                                                id="step-select",
                                                options=[{"label": f"step {s}", "value": s} for s in step_ids],
                                                placeholder="all steps",
                                            ),
                                        ],
                                    ),
                                    html.Div(
                                        style={"flex": "1"},
                                        children=[
                                            html.Label("Classes", htmlFor="class-select"),
                                            dcc.Dropdown(
                                                id="class-select",
                                                options=[{"label": c, "value": c} for c in classes],
                                                multi=True,
                                                placeholder="all classes",
                                            ),
                                        ],
                                    ),
                                    html.Div(
                                        style={"flex": "1"},
                                        children=[
                                            html.Label("Kernel name contains", htmlFor="name-search"),
                                            dcc.Input(
                                                id="name-search",
                                                type="search",
                                                debounce=True,
                                                placeholder="e.g. gemm",
                                                style={"width": "100%", "height": "34px"},
                                            ),
                                        ],
                                    ),
                                ],
                            ),
                            overview,
                            timeline_page,
                        ],
                    ),
                ],
            ),
        ]
    )

    def sync_filters(search, ranks, step, compare_a=None, compare_b=None, picked_classes=None, name=None, host=None):
        """URL <-> filter widgets: the URL wins on page load, the widgets when the user picks."""
        if dash.ctx.triggered_id in FILTER_WIDGETS:
            query = make_query(ranks or None, step, [compare_a, compare_b], picked_classes, name, bool(host))
            return (query,) + (dash.no_update,) * len(FILTER_WIDGETS)
        picked, picked_step = parse_query(search, rank_ids, step_ids)
        compare = parse_compare(search, rank_ids) + [None, None]
        picked_classes, name, host = parse_filters(search, classes)
        return (
            dash.no_update,
            picked or [],
            picked_step,
            compare[0],
            compare[1],
            picked_classes or [],
            name or "",
            ["host"] if host else [],
        )

    def update_overview(search):
        """Figures and table rows for the filters in the query string `search` (a selected step
        narrows the compute classes and the kernel table to that step)."""
        ranks, step = parse_query(search, rank_ids, steps=step_ids)
        picked_classes, name, _ = parse_filters(search, classes)
        steps = None if step is None else [step]
        window = "whole trace" if step is None else f"step {step}"
        per_class = summary if step is None else step_classes(trace, step)
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
            kernel_rows(trace, ranks, step, picked_classes, name),
            f"Top kernels ({window})",
        )

    app.callback(
        Output("url", "search"),
        *[Output(w, p) for w, p in FILTER_WIDGETS.items()],
        Input("url", "search"),
        *[Input(w, p) for w, p in FILTER_WIDGETS.items()],
    )(guarded(sync_filters))
    app.callback(
        Output("fig-breakdown", "figure"),
        Output("fig-step-time", "figure"),
        Output("fig-heatmap", "figure"),
        Output("fig-classes", "figure"),
        Output("kernel-table", "data"),
        Output("kernel-title", "children"),
        Input("url", "search"),
    )(guarded(update_overview))
    app.traceview_update_overview = update_overview  # the plain function, for tests and reports

    def show_page(pathname, search):
        """Which page the path shows; the navigation links keep the query string (rank/step state)."""
        on_timeline = is_timeline(pathname)
        hidden, shown = {"display": "none"}, {}
        return (
            hidden if on_timeline else shown,
            shown if on_timeline else hidden,
            {"flex": "1", "display": "none"} if on_timeline else {"flex": "1"},
            "Timeline" if on_timeline else "Overview",
            "/" + (search or ""),
            TIMELINE_PATH + (search or ""),
        )

    def update_timeline(pathname, search, relayout, jump_step, reset_clicks, trigger=None):
        """(figure, note) of the timeline for the window the trigger asks for.

        trigger (the id of the input that fired): "tl-window" (or "tl-graph") -> the zoomed/panned
        x range of `relayout`, a plotly relayoutData that moved x (`X_MOVES_JS` lets only those
        through; autorange -> whole trace; no x change -> no update); "tl-step" -> that step's
        device window (no update when cleared); "tl-reset", "url" or None -> whole trace.
        Two ranks in the query's `compare=a,b`: rank a's lanes above rank b's on one x axis (the
        rank filter does not apply then)."""
        if not is_timeline(pathname):
            raise dash.exceptions.PreventUpdate
        base = timeline_data()
        ranks, _ = parse_query(search, rank_ids, step_ids)
        pair = parse_compare(search, rank_ids)
        picked_classes, name, host = parse_filters(search, classes)
        if len(pair) == 2:
            ranks = pair
        data = filtered(base, picked_classes, name)
        hosts = filtered(host_data(), None, name) if host else None
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

    def timeline_callback(pathname, search, relayout, jump_step, reset_clicks):
        """`update_timeline`, and the step picker cleared after any other move (zoom, pan, reset),
        so that picking the same step again jumps back to it."""
        trigger = dash.ctx.triggered_id
        fig, note = update_timeline(pathname, search, relayout, jump_step, reset_clicks, trigger=trigger)
        return fig, note, (dash.no_update if trigger == "tl-step" else None)

    def timeline_details(click):
        """The clicked task's fields as plain text components."""
        points = (click or {}).get("points") or []
        key = points[0].get("customdata") if points else None
        if isinstance(key, str) and key.startswith(HOST_KEY):
            return host_data().details(key.removeprefix(HOST_KEY))
        return timeline_data().details(key if isinstance(key, str) else None)

    app.callback(
        Output("page-overview", "style"),
        Output("page-timeline", "style"),
        Output("step-filter", "style"),
        Output("page-title", "children"),
        Output("nav-overview", "href"),
        Output("nav-timeline", "href"),
        Input("url", "pathname"),
        Input("url", "search"),
    )(guarded(show_page))
    # In the browser: only relayouts that move x reach the server (module constant X_MOVES_JS).
    app.clientside_callback(X_MOVES_JS, Output("tl-window", "data"), Input("tl-graph", "relayoutData"))
    app.callback(
        Output("tl-graph", "figure"),
        Output("tl-note", "children"),
        Output("tl-step", "value"),
        Input("url", "pathname"),
        Input("url", "search"),
        Input("tl-window", "data"),
        Input("tl-step", "value"),
        Input("tl-reset", "n_clicks"),
    )(guarded(timeline_callback))
    app.callback(Output("tl-details", "children"), Input("tl-graph", "clickData"))(guarded(timeline_details))
    app.traceview_update_timeline = update_timeline
    app.traceview_timeline_details = timeline_details
    harden(app)  # last: its Content-Security-Policy lists the hashes of every inline script
    return app
