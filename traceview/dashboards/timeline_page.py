"""The plotly timeline of the HTML report (`traceview.dashboards.report`) and the notebook
(`traceview.dashboards.plots`): one lane per (rank, stream), level of detail chosen in Python.
(The dashboard's Timeline page is the canvas timeline: `traceview.dashboards.timeline.api`.)

`TimelineData` holds the classified device tasks sorted once by start (`timeline.sort_tasks`), the
lanes and the step windows. For a window it asks `timeline.view` (limit 20,000 raw tasks, ~800
bins): raw mode draws one `Scattergl` line trace per compute class, a task being a None-separated
segment [start, end] on its lane; binned mode draws a heatmap of each lane's busy fraction per bin.
The x axis is ms from the first task start (`t0_ns`).

Trace text (kernel names) only goes out as data: hover text is entity-escaped so plotly's hover
label never interprets a `<tag>` in a name.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
import polars as pl

from traceview.analysis import gaps
from traceview.analysis import timeline as tl
from traceview.dashboards.colors import class_color
from traceview.safe_text import one_line

LIMIT = 20_000  # raw tasks the browser may receive at most
#: Vertices per window width along a long task. plotly hit-tests a WebGL line at its vertices only,
#: so a task drawn as its two ends alone is not the nearest point in its middle (a 79 ms bar showed a
#: 1.4 µs kernel of another lane): with a vertex every 1/HOVER_POINTS of the window, the task under
#: the pointer is never more than ~10 px away along x, closer than any other lane's task.
HOVER_POINTS = 120
BINS = 800
TITLE = "Timeline"
X_TITLE = "time (ms, relative to the first task start)"


def hover_safe(text) -> str:
    """`text` for a plotly hover label: & < > as entities, so no tag in a kernel name is interpreted,
    and control or bidi characters as visible escapes (`traceview.safe_text.one_line`)."""
    return one_line(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def name_contains(query: str) -> pl.Expr:
    """Rows whose `name` contains `query`, case-insensitive (the dashboard's name search)."""
    return pl.col("name").str.to_lowercase().str.contains(query.lower(), literal=True)


def segment_points(start: np.ndarray, end: np.ndarray, step: float) -> tuple[np.ndarray, np.ndarray]:
    """x of the vertices of segments [start, end] (one after another, each ended by a NaN), with
    vertices at most `step` apart, and the segment each x belongs to (-1 for the NaNs)."""
    inner = np.clip(np.ceil((end - start) / step).astype(np.int64) - 1, 0, 4 * HOVER_POINTS)
    points = inner + 2  # both ends and the inner vertices
    owner = np.repeat(np.arange(start.size), points + 1)
    first = np.repeat(np.cumsum(points + 1) - (points + 1), points + 1)
    pos = np.arange(owner.size) - first  # 0 .. points per segment; `points` is the NaN
    last = pos == np.repeat(points, points + 1)
    frac = np.where(last, 0, pos / np.maximum(np.repeat(points, points + 1) - 1, 1))
    x = start[owner] + frac * (end - start)[owner]
    x[last] = np.nan
    owner[last] = -1
    return x, owner


def task_key(rank, stream, start_ns, end_ns) -> str:
    """A task's id in the browser (ns as decimal strings: they exceed JavaScript's 2**53)."""
    return f"{'' if rank is None else rank}|{'' if stream is None else stream}|{start_ns}|{end_ns}"


class TimelineData:
    """Sorted tasks, lanes and step windows of one profile (all times Int64 ns)."""

    def __init__(self, tasks: pl.DataFrame, steps: pl.DataFrame | None = None):
        self.tasks = tl.sort_tasks(tasks)
        self.lanes = tl.lanes(self.tasks)
        self.cls = tl.class_column(self.tasks)
        if self.tasks.height:
            self.t0_ns = int(self.tasks["start_ns"].min())
            self.t1_ns = max(int(self.tasks["end_ns"].max()), self.t0_ns + 1)
        else:
            self.t0_ns, self.t1_ns = 0, 1
        self.first_ns, self.last_ns = self.t0_ns, self.t1_ns  # this data's own extent
        self.steps = steps if steps is not None else pl.DataFrame()
        # The whole-trace view (first open, reset, zoom back out) re-bins every task: keep it per
        # rank selection, so only the first request for a selection pays for it.
        self._full_views: dict[tuple, dict] = {}

    @classmethod
    def from_trace(cls, trace) -> TimelineData:
        """The device tasks, classified, with launch_delay_ns = task start − its launch call's end
        (null without a launch call or for a synchronous call: `gaps.with_launch_delay`)."""
        launches = trace.launch_calls() if hasattr(trace, "launch_calls") else None
        return cls(gaps.with_launch_delay(trace.classified_tasks(), launches), trace.steps)

    # ---- windows ----

    def full_window(self) -> tuple[int, int]:
        return self.first_ns, self.last_ns

    def step_window(self, step: int, ranks: list[int] | None = None) -> tuple[int, int] | None:
        """The step's device window [min device_start_ns, max device_end_ns) over the selected ranks."""
        if self.steps.is_empty() or "device_start_ns" not in self.steps.columns:
            return None
        rows = self.steps.filter(pl.col("step") == step)
        if ranks:
            rows = rows.filter(pl.col("rank").is_in(ranks))
        rows = rows.filter(pl.col("device_start_ns").is_not_null() & pl.col("device_end_ns").is_not_null())
        if rows.is_empty():
            return None
        start, end = int(rows["device_start_ns"].min()), int(rows["device_end_ns"].max())
        return start, max(end, start + 1)

    def to_ms(self, ns: int) -> float:
        return (ns - self.t0_ns) / 1e6

    # ---- figures ----

    def figure(
        self, start_ns: int, end_ns: int, ranks: list[int] | None = None, ui_key: str = "", limit: int | None = None
    ) -> tuple[go.Figure, str, str]:
        """(figure, note, mode) for the window [start_ns, end_ns) and the selected ranks; raw
        segments when at most `limit` (default LIMIT) tasks overlap the window, else the binned view."""
        fig, labels, note, mode = self._panel(start_ns, end_ns, ranks, LIMIT if limit is None else limit)
        if mode == "empty":
            fig.add_annotation(text="no device tasks", showarrow=False, xref="paper", yref="paper", x=0.5, y=0.5)
        self._layout(fig, len(labels), start_ns, end_ns)
        fig.update_yaxes(**self._lane_axis(labels, ui_key))
        return fig, note, mode

    def _panel(
        self, start_ns: int, end_ns: int, ranks: list[int] | None, limit: int
    ) -> tuple[go.Figure, list[str], str, str]:
        """(figure of the traces, lane labels, note, mode) of the selected ranks' lanes in the window
        (the figure is built once: plotly validates every point when a trace is added)."""
        lanes = self.lanes if not ranks else self.lanes.filter(pl.col("rank").is_in(ranks))
        labels = lanes["label"].to_list()
        if not self.tasks.height or not labels:
            return go.Figure(), labels, "no device tasks", "empty"
        v = self._view(start_ns, end_ns, ranks, limit)
        if v["mode"] == "raw":
            fig = self._raw_figure(v["tasks"], labels, end_ns - start_ns)
            note = f"raw: {v['n_tasks']:,} tasks in view (click a task for details)"
        else:
            fig = self._binned_figure(v["bins"], lanes)
            note = f"binned: {v['n_tasks']:,} tasks in view, zoom in for individual tasks"
        return fig, labels, note, v["mode"]

    def _view(self, start_ns: int, end_ns: int, ranks: list[int] | None, limit: int = LIMIT) -> dict:
        """`timeline.view` of the window; the whole-trace window is memoised per rank selection."""
        if (start_ns, end_ns) != self.full_window():
            return tl.view(self.tasks, self.lanes, start_ns, end_ns, ranks=ranks or None, limit=limit, bins=BINS)
        key = (tuple(sorted(ranks or ())), limit)
        if key not in self._full_views:
            self._full_views[key] = tl.view(
                self.tasks, self.lanes, start_ns, end_ns, ranks=ranks or None, limit=limit, bins=BINS
            )
        return self._full_views[key]

    @staticmethod
    def _lane_axis(labels: list[str], ui_key: str) -> dict:
        """A y axis of lanes, top to bottom in `labels` order; keeps the user's y zoom per `ui_key`."""
        return dict(
            type="category", categoryorder="array", categoryarray=labels, autorange="reversed", uirevision=ui_key
        )

    def _layout(self, fig: go.Figure, n_lanes: int, start_ns: int, end_ns: int) -> go.Figure:
        fig.update_layout(
            title=dict(text=TITLE, y=0.98, yanchor="top"),
            template="plotly_white",
            height=max(320, 26 * n_lanes + 160),
            margin=dict(l=150, r=20, t=80, b=50),
            legend=dict(orientation="h", yanchor="bottom", y=1.01, x=0),
            hovermode="closest",
            # a Scattergl line is hit-tested at its vertices only: no distance cutoff, so a click on
            # a long bar picks its own nearest end (tasks on a lane do not overlap in x)
            hoverdistance=-1,
            uirevision="timeline",
        )
        # x follows the server's window (a new uirevision per window)
        fig.update_xaxes(
            title_text=X_TITLE,
            range=[self.to_ms(start_ns), self.to_ms(end_ns)],
            uirevision=f"{start_ns}-{end_ns}",
            showgrid=True,
            zeroline=False,
        )
        return fig

    def _raw_figure(self, raw: pl.DataFrame, labels: list[str], window_ns: int) -> go.Figure:
        """One Scattergl line trace per class: a task is the segment [start, end] on its lane, with
        vertices every window / HOVER_POINTS along it (`segment_points`), NaN-separated."""
        fig = go.Figure()
        label_of = dict(zip(self.lanes["lane"].to_list(), self.lanes["label"].to_list()))
        width = max(3, min(18, 360 // max(len(labels), 1)))
        cls = tl.class_column(raw)
        raw = raw.with_columns(pl.col(cls).cast(pl.String).fill_null("other").alias("_cls"))
        step = max(window_ns, 1) / HOVER_POINTS / 1e6  # ms between two vertices of a long task
        for name in sorted(raw["_cls"].unique().to_list()):
            part = raw.filter(pl.col("_cls") == name)
            s = (part["start_ns"].to_numpy() - self.t0_ns) / 1e6
            e = (part["end_ns"].to_numpy() - self.t0_ns) / 1e6
            x, owner = segment_points(s, e, step)
            lanes = np.array([label_of[lane] for lane in part["lane"].to_list()], dtype=object)
            delays = part["launch_delay_ns"].to_list() if "launch_delay_ns" in part.columns else [None] * part.height
            hover = np.array(
                [
                    f"{hover_safe(nm)}<br>class: {hover_safe(name)}<br>duration: {d / 1000:.3f} µs"
                    f"<br>step: {'-' if st is None else st}<br>stream: {'HCCL' if sm is None else sm}"
                    + ("" if ld is None else f"<br>launch delay: {ld / 1000:.3f} µs")
                    for nm, d, st, sm, ld in zip(
                        part["name"].to_list(),
                        part["dur_ns"].to_list(),
                        part["step"].to_list(),
                        part["stream"].to_list(),
                        delays,
                    )
                ],
                dtype=object,
            )
            keys = np.array(
                [
                    task_key(r, sm, a, b)
                    for r, sm, a, b in zip(
                        part["rank"].to_list(),
                        part["stream"].to_list(),
                        part["start_ns"].to_list(),
                        part["end_ns"].to_list(),
                    )
                ],
                dtype=object,
            )
            gap = owner < 0  # the NaN vertex ending each segment
            y = np.where(gap, None, lanes[owner])
            fig.add_trace(
                go.Scattergl(
                    x=x,
                    y=y.tolist(),
                    mode="lines",
                    name=name,
                    meta=name,
                    line=dict(color=class_color(name), width=width),
                    connectgaps=False,
                    hovertext=np.where(gap, None, hover[owner]).tolist(),
                    hoverinfo="text",
                    customdata=np.where(gap, None, keys[owner]).tolist(),
                )
            )
        return fig

    def _binned_figure(self, bins: pl.DataFrame, lanes: pl.DataFrame) -> go.Figure:
        lane_ids = lanes["lane"].to_list()
        nb = int(bins["bin"].max()) + 1 if bins.height else 0
        bins = bins.filter(pl.col("lane").is_in(lane_ids)).sort("lane", "bin")
        frac = bins["busy_frac"].to_numpy().reshape(len(lane_ids), nb)
        top = np.array(bins["top_class"].fill_null("idle").to_list(), dtype=object).reshape(len(lane_ids), nb)
        mids = (
            (bins["bin_start_ns"].head(nb).to_numpy() + bins["bin_end_ns"].head(nb).to_numpy()) / 2 - self.t0_ns
        ) / 1e6
        pct = np.round(frac * 100, 1)
        custom = np.dstack([top, pct.astype(object)])
        fig = go.Figure(
            go.Heatmap(
                z=frac.tolist(),
                x=mids.tolist(),
                y=lanes["label"].to_list(),
                zmin=0,
                zmax=1,
                meta="busy_frac",
                colorscale="Blues",
                colorbar=dict(title=dict(text="busy fraction")),
                customdata=custom.tolist(),
                hovertemplate="%{y}<br>%{x:.3f} ms<br>top class: %{customdata[0]}<br>busy: %{customdata[1]}%<extra></extra>",
            )
        )
        return fig
