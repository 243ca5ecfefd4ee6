"""`DashboardState`: what the dashboard's callbacks read, built once per app.

The callbacks are module-level functions of (state, inputs) (`traceview.dashboards.overview`,
`traceview.dashboards.timeline_view`, `traceview.dashboards.app`); `create_app` binds them to one
state. The state holds the loaded Trace, its summary document, the choices the filters offer, and
the timeline's data, built on first use and kept for the app's life.
"""

from __future__ import annotations

from traceview.dashboards.timeline_page import TimelineData

#: Filtered timeline data kept per (data, classes, name): the last few filter sets.
FILTERED_KEPT = 8


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
        self._timeline: TimelineData | None = None
        self._host: TimelineData | None = None
        self._filtered: dict[tuple, TimelineData] = {}

    def timeline_data(self) -> TimelineData:
        """The sorted device tasks, lanes and step windows (built on first use)."""
        if self._timeline is None:
            self._timeline = TimelineData.from_trace(self.trace)
        return self._timeline

    def host_data(self) -> TimelineData:
        """Host events as lanes per thread, on the device data's x origin (built on first use)."""
        if self._host is None:
            self._host = TimelineData.host_from_trace(self.trace, t0_ns=self.timeline_data().t0_ns)
        return self._host

    def filtered(self, data: TimelineData, classes: list[str] | None, name: str | None) -> TimelineData:
        """`data` restricted to the class / name filters, memoised (the last `FILTERED_KEPT` sets)."""
        if not classes and not name:
            return data
        key = (id(data), tuple(classes or ()), name)
        if key not in self._filtered:
            if len(self._filtered) >= FILTERED_KEPT:
                self._filtered.pop(next(iter(self._filtered)))
            self._filtered[key] = data.filtered(classes, name)
        return self._filtered[key]
