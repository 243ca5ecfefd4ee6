"""`DashboardState`: what the dashboard's callbacks read, built once per app.

The callbacks are module-level functions of (state, inputs) (`traceview.dashboards.overview`,
`traceview.dashboards.app`); `create_app` binds them to one state. The state holds the loaded
Trace, its summary document and the choices the filters offer. (The Timeline page's data is the
canvas timeline's model, `traceview.dashboards.timeline.api`, built on its first request.)
"""

from __future__ import annotations


class DashboardState:
    """One profile's dashboard: `trace`, `summary` (`build_summary(trace)`), the filter choices
    `rank_ids`, `step_ids`, `classes` (compute classes present in the summary), and `comparison`
    (`RunComparison.to_dict()` of the profile and the runs given with --compare, or None)."""

    def __init__(self, trace, summary: dict, comparison: dict | None = None):
        self.trace = trace
        self.summary = summary
        self.comparison = comparison
        self.rank_ids: list[int] = [r["rank"] for r in summary["ranks"]]
        self.step_ids: list[int] = sorted({s["step"] for r in summary["ranks"] for s in r["steps"]})
        self.classes: list[str] = sorted({c["class"] for r in summary["ranks"] for c in r["compute_classes"]})
