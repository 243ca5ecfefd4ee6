"""The memory figure of the notebook (`t.plot.memory()`) and the report: allocated and reserved
memory of each rank's device over time, as step lines (a value holds until the next record).

One series per rank: the one its timeline lane shows (`Trace.lane_memory`).
Values are GiB; x is ms from the first record shown. Series names come from the trace (an Ascend
component) and are entity-escaped for plotly's pseudo-HTML. A series of more than MAX_POINTS records is
drawn from the largest allocated and reserved values of each 1/MAX_POINTS of its span, so no peak
is lost to the thinning (the figure's note says so).
"""

from __future__ import annotations

import plotly.graph_objects as go
import polars as pl

from traceview.dashboards.colors import rank_color
from traceview.dashboards.figures import _empty, _layout
from traceview.dashboards.timeline_page import hover_safe
from traceview.terms import MEMORY_SERIES

MAX_POINTS = 5000
GIB = float(1 << 30)
TITLE = "Device memory over time"


def lane_records(trace, ranks: list[int] | None = None) -> pl.DataFrame:
    """The records of each rank's lane series (`Trace.lane_memory`), `ranks` only when given."""
    return trace.lane_memory(ranks=ranks)


def _thinned(records: pl.DataFrame) -> tuple[pl.DataFrame, bool]:
    """One series' records, at most MAX_POINTS of them (max per bin of its span), and whether thinned."""
    if records.height <= MAX_POINTS:
        return records, False
    t0, t1 = records["ts_ns"].min(), records["ts_ns"].max()
    width = max(1, (t1 - t0) // MAX_POINTS + 1)
    return (
        records.with_columns((t0 + (pl.col("ts_ns") - t0) // width * width).alias("ts_ns"))
        .group_by("ts_ns", maintain_order=True)
        .agg(pl.col("allocated_bytes").max(), pl.col("reserved_bytes").max(), pl.col("basis").first())
    ), True


def memory_figure(records: pl.DataFrame) -> go.Figure:
    """Allocated (solid) and reserved (dotted) GiB per rank over time from `lane_records` rows."""
    if records.is_empty():
        return _empty(TITLE, "no device memory recorded (torch.profiler(profile_memory=True) records it)")
    t0 = records["ts_ns"].min()
    fig = go.Figure()
    thinned_any = False
    for (rank, device_type, device, component), rows in records.sort("rank", "ts_ns").group_by(
        MEMORY_SERIES, maintain_order=True
    ):
        rows, thinned = _thinned(rows)
        thinned_any |= thinned
        x = ((rows["ts_ns"] - t0) / 1e6).to_list()
        name = hover_safe(f"rank {rank} {device_type}:{device}" + (f" {component}" if component else ""))
        relative = rows["basis"][0] == "relative"
        color = rank_color(rank)
        fig.add_trace(
            go.Scattergl(
                x=x,
                y=(rows["allocated_bytes"] / GIB).to_list(),
                name=f"{name} allocated" + (" (since the trace started)" if relative else ""),
                mode="lines",
                line=dict(shape="hv", color=color, width=2),
                hovertemplate="%{y:.3f} GiB allocated at %{x:.3f} ms<extra>%{fullData.name}</extra>",
            )
        )
        if rows["reserved_bytes"].null_count() < rows.height:
            fig.add_trace(
                go.Scattergl(
                    x=x,
                    y=(rows["reserved_bytes"] / GIB).to_list(),
                    name=f"{name} reserved",
                    mode="lines",
                    line=dict(shape="hv", color=color, width=1, dash="dot"),
                    hovertemplate="%{y:.3f} GiB reserved at %{x:.3f} ms<extra>%{fullData.name}</extra>",
                )
            )
    title = TITLE + (" (thinned: the largest values of each 1/5000 of the span)" if thinned_any else "")
    fig = _layout(fig, title, hovermode="closest")
    fig.update_xaxes(title_text="time (ms, from the first memory record shown)")
    fig.update_yaxes(title_text="GiB", rangemode="tozero")
    return fig
