"""`Trace.plot`: plotly figures of a loaded profile for notebooks.

    t = traceview.load("sample_traces/dp4_nccl")
    t.plot.step_breakdown()             # a plotly.graph_objects.Figure; Jupyter renders it
    t.plot.timeline(ranks=0, start_ms=50, end_ms=52)

Every method returns a `go.Figure` and never shows or writes it (call `.show()` or
`.write_html(...)` yourself). The figures are the dashboard's (`dashboards.figures`,
`dashboards.timeline_page`), so a notebook, `traceview serve` and `traceview summary` show the
same numbers: the summary document (`traceview.summary.build_summary`, without the per-stream
details) is built once per trace and memoised on it. Times on value axes are ms.

`ranks` (every method) is a rank, a list of ranks, or None for all; `steps` likewise. A rank or
step the trace does not have raises ValueError naming the ones it has.

Trace text (kernel names) only goes into figures as data; where plotly would read it as its
pseudo-HTML (tick labels, hover text) it is entity-escaped first (`timeline_page.hover_safe`).
"""

from __future__ import annotations

from collections.abc import Iterable
from numbers import Integral

import plotly.graph_objects as go
import polars as pl

from traceview.dashboards import figures
from traceview.dashboards.colors import class_color
from traceview.dashboards.timeline_page import TimelineData, hover_safe

KERNEL_LABEL_CHARS = 60  # kernel names are cut to this many characters on the axis (full name in the hover)


def _as_list(value: int | Iterable[int] | None) -> list[int] | None:
    if value is None:
        return None
    if isinstance(value, Integral):
        return [int(value)]
    return [int(v) for v in value]


def _checked(what: str, wanted: list[int] | None, have: Iterable) -> list[int] | None:
    """`wanted` unchanged when every value is in `have`, else ValueError naming what the trace has."""
    if wanted is None:
        return None
    have = sorted({h for h in have if h is not None})
    missing = [w for w in wanted if w not in have]
    if missing:
        raise ValueError(
            f"no {what} {', '.join(map(str, missing))} in this trace (it has {what}s: "
            f"{', '.join(map(str, have)) or 'none'})"
        )
    return wanted


class TracePlots:
    """The figures of one `Trace` (reach them as `trace.plot`)."""

    def __init__(self, trace):
        self._trace = trace

    def __repr__(self) -> str:
        methods = ", ".join(
            m for m in ("step_breakdown", "step_time", "heatmap", "compute_classes", "kernels", "timeline", "memory")
        )
        return f"<plots of {self._trace.source!r}: {methods}>"

    # ---- shared inputs, memoised on the trace ----

    def _summary(self) -> dict:
        from traceview.summary import build_summary

        return self._trace.memoised("plot_summary", lambda: build_summary(self._trace, details=False))

    def _timeline_data(self) -> TimelineData:
        return self._trace.memoised("plot_timeline_data", lambda: TimelineData.from_trace(self._trace))

    def _ranks(self, ranks) -> list[int] | None:
        return _checked("rank", _as_list(ranks), self._trace.ranks["rank"].to_list())

    def _steps(self, steps) -> list[int] | None:
        return _checked("step", _as_list(steps), self._trace.steps["step"].to_list())

    # ---- summary figures ----

    def step_breakdown(self, ranks=None, steps=None) -> go.Figure:
        """Stacked bars per rank and step (ms): computing (not overlapped), overlapped, exposed
        communication, exposed memcpy and free, summing to the step's busy span; the bubble as a
        marker. The numbers of `trace.step_breakdown()` in ms (bar `computing` = computing_us −
        overlapped_us). At most 16 ranks are drawn (the title says so); pass `ranks` for others."""
        return figures.step_breakdown_figure(self._summary(), self._ranks(ranks), self._steps(steps))

    def step_time(self, ranks=None) -> go.Figure:
        """Step duration (ms) per rank over the steps (`trace.step_breakdown()` duration_us), one
        line per rank, the long steps of `trace.long_steps()` marked."""
        return figures.step_time_figure(self._summary(), self._ranks(ranks))

    def heatmap(self, ranks=None, steps=None) -> go.Figure:
        """Rank × step heatmap of step duration vs the median step (%, the ms in the hover): a
        straggler is a red row, a long step a red column (`figures.step_heatmap_figure`)."""
        return figures.step_heatmap_figure(self._summary(), self._ranks(ranks), self._steps(steps))

    def compute_classes(self, ranks=None) -> go.Figure:
        """Device time per compute class (ms, whole trace, raw sum of durations) stacked per rank:
        `trace.compute_classes()` time_us in ms, by the trace's rules (other rules:
        `trace.with_rules(FILE).plot.compute_classes()`)."""
        return figures.compute_classes_figure(self._summary(), self._ranks(ranks))

    def memory(self, ranks=None) -> go.Figure:
        """Allocated (solid) and reserved (dotted) device memory, GiB, over time per rank: the
        series each rank's timeline lane shows (`trace.memory()` rows; `memory_figure`). Needs a
        profile recorded with profile_memory=True (torch.profiler) or torch_npu's memory files."""
        from traceview.dashboards.memory_figure import lane_records, memory_figure

        return memory_figure(lane_records(self._trace, self._ranks(ranks)))

    def roofline(self, ranks=None) -> go.Figure:
        """Each operator (rank, operator, dims, dtype) at its arithmetic intensity and achieved
        TFLOP/s over the device's roofline per dtype, log scales (`trace.op_roofline()` rows;
        `roofline_figure`). Needs a profile recorded with record_shapes=True (docs/roofline.md)."""
        from traceview.dashboards.roofline_figure import roofline_figure

        rows = self._trace.op_roofline()
        wanted = self._ranks(ranks)
        if wanted is not None:
            rows = rows.filter(pl.col("rank").is_in(wanted))
        return roofline_figure(rows)

    def kernels(self, top: int = 10, ranks=None) -> go.Figure:
        """The `top` kernels by total device time (ms) over the selected ranks (all by default),
        one horizontal bar each, largest first, coloured by compute class; count, mean and share
        of the ranks' device time in the hover. With all ranks the bars are
        `trace.top_kernels(top, by=())` total_us in ms."""
        wanted = self._ranks(ranks)
        rows = self._trace.top_kernels(top, by=(), ranks=wanted)
        which = "all ranks" if wanted is None else f"rank{'s' if len(wanted) > 1 else ''} {', '.join(map(str, wanted))}"
        title = f"Top {top} kernels by device time ({which}, whole trace)"
        if rows.is_empty():
            return figures._empty(title, "no device tasks in this selection")
        rows = rows.with_row_index("position", offset=1)
        labels = {}
        for position, name in zip(rows["position"].to_list(), rows["name"].to_list()):
            short = name if len(name) <= KERNEL_LABEL_CHARS else name[: KERNEL_LABEL_CHARS - 1] + "…"
            labels[position] = hover_safe(f"{position}. {short}")  # the position keeps cut names apart
        fig = go.Figure()
        for name in rows["class"].unique(maintain_order=True).to_list():
            part = rows.filter(pl.col("class") == name)
            fig.add_bar(
                name=name,
                meta=name,
                orientation="h",
                marker_color=class_color(name),
                x=[figures.ms(v) for v in part["total_us"].to_list()],
                y=[labels[p] for p in part["position"].to_list()],
                hovertext=[
                    f"{hover_safe(k)}<br>class: {hover_safe(name)}<br>total: {t / 1000:.3f} ms in {c:,} tasks"
                    f"<br>mean: {m:.3f} µs<br>share of device time: {s * 100:.1f} %"
                    for k, t, c, m, s in part.select("name", "total_us", "count", "mean_us", "share").iter_rows()
                ],
                hoverinfo="text",
            )
        fig.update_xaxes(title_text="device time (ms)")
        fig.update_yaxes(
            title_text="kernel",
            type="category",
            categoryorder="array",
            categoryarray=list(labels.values()),
            autorange="reversed",
            automargin=True,
        )
        return figures._layout(fig, title, height=max(320, 28 * len(labels) + 160))

    # ---- timeline ----

    def timeline(
        self,
        ranks=None,
        start_ms: float | None = None,
        end_ms: float | None = None,
        *,
        start_ns: int | None = None,
        end_ns: int | None = None,
        step: int | None = None,
    ) -> go.Figure:
        """Device tasks on one lane per (rank, stream), as the dashboard's Timeline page draws them.

        The window, [start, end):
        - `start_ms` / `end_ms`: ms relative to the first device-task start of the whole trace (all
          ranks), the figure's x axis; or
        - `start_ns` / `end_ns`: absolute ns on the trace's clock (the `start_ns` of `device_tasks`);
        - `step`: the device window of that step over the selected ranks;
        - nothing: the whole trace. A missing end (start) runs to the trace's last task end (first start).
        Give a bound in one unit only.

        Up to 20,000 tasks in the window are drawn individually (one line segment per task,
        coloured by compute class, hover for name, class, duration, step, stream); more are binned:
        a heatmap of each lane's busy fraction in ~800 bins (narrow the window for the tasks).
        """
        wanted = self._ranks(ranks)
        data = self._timeline_data()
        if start_ms is not None and start_ns is not None or end_ms is not None and end_ns is not None:
            raise ValueError("give the timeline window in ms (start_ms/end_ms) or in ns (start_ns/end_ns), not both")
        lo, hi = data.full_window()
        if step is not None:
            if any(v is not None for v in (start_ms, end_ms, start_ns, end_ns)):
                raise ValueError("give either step or a start/end window, not both")
            window = data.step_window(step, wanted)
            if window is None:
                raise ValueError(
                    f"step {step} has no device window in this trace"
                    f"{'' if wanted is None else ' for the selected ranks'}"
                )
            lo, hi = window
        if start_ms is not None:
            lo = data.t0_ns + round(start_ms * 1e6)
        if start_ns is not None:
            lo = int(start_ns)
        if end_ms is not None:
            hi = data.t0_ns + round(end_ms * 1e6)
        if end_ns is not None:
            hi = int(end_ns)
        if hi <= lo:
            raise ValueError(
                f"empty timeline window: end ({data.to_ms(hi):.6f} ms) must be after start "
                f"({data.to_ms(lo):.6f} ms), both relative to the first task start"
            )
        fig, note, mode = data.figure(lo, hi, wanted)
        note = note.replace(" (click a task for details)", "")  # no click-through outside the dashboard
        fig.update_layout(
            title_text=f"Timeline · {hover_safe(note)}",
            meta={"mode": mode, "start_ns": lo, "end_ns": hi, "t0_ns": data.t0_ns},
        )
        fig.update_yaxes(title_text="lane (rank · stream)")
        return fig
