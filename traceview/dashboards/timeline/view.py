"""The Timeline page (/timeline): the canvas timeline's mount point and its link to the URL.

The timeline itself runs in the browser (`dashboards/assets/tv_timeline_*.js`) over the JSON
routes of `traceview.dashboards.timeline.api`. Its view state is the page's query string, shared
with the filter bar (`traceview.dashboards.query`): ranks, classes and name from the bar, and the
timeline's own compare=a,b and host=1, which its toolbar writes. `URL_JS` tells it each new query
string, whoever changed it (the filter bar through `app.sync_filters`, its toolbar, back/forward).
"""

from __future__ import annotations

from dash import dcc, html

#: Runs in the browser whenever the dcc.Location's search changes: hands it to the canvas
#: timeline (`tvTimeline.onUrl`), which redraws with the new filters. Updates nothing in Dash.
URL_JS = """
function (search) {
    var tv = window.tvTimeline;
    if (tv && tv.onUrl) { tv.onUrl(search || ""); }
    return window.dash_clientside.no_update;
}
"""


def timeline_layout() -> html.Div:
    """The Timeline page's components (hidden until the path is /timeline)."""
    return html.Div(
        id="page-timeline",
        style={"display": "none"},
        children=[
            # the canvas timeline (dashboards/assets/tv_timeline_*.js over timeline.api's routes)
            html.Div(id="tvtl-root"),
            dcc.Store(id="tvtl-url"),  # the output of URL_JS (never written)
        ],
    )
