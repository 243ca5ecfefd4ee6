"""The roofline figure of the notebook (`t.plot.roofline()`) and the report: each operator row of
`Trace.op_roofline()` at its arithmetic intensity (FLOP/byte, x) and achieved TFLOP/s (y), both
log scales, over each device's roofline min(peak, bandwidth x intensity): one per dtype for
matrix work (GEMM, attention, convolution: the tensor peak), one for vector work (elementwise:
the fp32 vector rate).

A marker's size grows with the row's device time; its hover names the operator, its input dims
(entity-escaped for plotly's pseudo-HTML), calls, device time, % of the peak and the bound; its
customdata is [rank, operator] (the dashboard's click to the timeline).
"""

from __future__ import annotations

import math

import plotly.graph_objects as go
import polars as pl

from traceview.dashboards.figures import _empty, _layout
from traceview.dashboards.timeline_page import hover_safe
from traceview.terms import MATRIX_FAMILIES

TITLE = "Operators against the roofline"
#: Family -> marker colour.
COLORS = {
    "gemm": "#2563eb",
    "sdpa": "#7c3aed",
    "sdpa_bwd": "#a855f7",
    "conv": "#0891b2",
    "conv_bwd": "#06b6d4",
    "unary": "#ea580c",
    "binary": "#d97706",
    "resize": "#65a30d",
}


def roofline_figure(rows: pl.DataFrame) -> go.Figure:
    """The figure of `Trace.op_roofline()` rows (module docstring)."""
    rows = rows.filter(
        (pl.col("intensity_flop_per_byte") > 0) & (pl.col("achieved_tflops_per_s") > 0) & (pl.col("device_time_us") > 0)
    )
    if rows.is_empty():
        return _empty(TITLE, "no operator with recorded shapes: record with torch.profiler(record_shapes=True)")
    fig = go.Figure()
    top = float(rows["device_time_us"].max())
    for family, part in rows.group_by("family", maintain_order=True):
        family = family[0]
        hover = [
            hover_safe(
                f"{r['op']} [{(r['input_dims'] or '')[:80]}] {r['dtype']}<br>{r['count']} calls, "
                f"{r['device_time_us'] / 1000:,.3f} ms<br>{r['achieved_tflops_per_s']:,.2f} TFLOP/s at "
                f"{r['intensity_flop_per_byte']:,.1f} FLOP/byte"
                + ("" if r["peak_frac"] is None else f"<br>{100 * r['peak_frac']:.1f} % of peak, {r['bound']}-bound")
            )
            for r in part.iter_rows(named=True)
        ]
        fig.add_trace(
            go.Scatter(
                x=part["intensity_flop_per_byte"].to_list(),
                y=part["achieved_tflops_per_s"].to_list(),
                mode="markers",
                name=family,
                marker=dict(
                    color=COLORS.get(family, "#6b7280"),
                    size=[6 + 24 * math.sqrt(t / top) for t in part["device_time_us"].to_list()],
                    opacity=0.75,
                    line=dict(width=0.5, color="white"),
                ),
                text=hover,
                customdata=[[r, o] for r, o in part.select("rank", "op").iter_rows()],
                hovertemplate="%{text}<extra></extra>",
            )
        )
    x_lo = float(rows["intensity_flop_per_byte"].min()) / 2
    x_hi = float(rows["intensity_flop_per_byte"].max()) * 2
    units = (
        pl.when(pl.col("family").is_in(MATRIX_FAMILIES))
        .then(pl.format("{} matrix", "dtype"))
        .otherwise(pl.lit("vector"))
    )
    limits = (  # one line per distinct roof, naming every kind of work under it (in a fixed order)
        rows.select(units.alias("units"), "peak_tflops", "memory_tbps")
        .drop_nulls()
        .group_by("peak_tflops", "memory_tbps")
        .agg(pl.col("units").unique().sort().str.join(", "))
        .sort(["peak_tflops", "memory_tbps"], descending=True)
        .select("units", "peak_tflops", "memory_tbps")
    )
    for unit, peak, bandwidth in limits.iter_rows():
        ridge = peak / bandwidth  # FLOP/byte where the memory roof meets the compute roof
        xs = [x_lo, min(max(ridge, x_lo), x_hi), x_hi]
        fig.add_trace(
            go.Scatter(
                x=xs,
                y=[min(peak, bandwidth * x) for x in xs],
                mode="lines",
                name=f"roofline, {unit}: {peak:g} TFLOP/s, {bandwidth:g} TB/s",
                line=dict(color="#111827", width=1, dash="dash"),
                hoverinfo="skip",
            )
        )
    fig = _layout(fig, TITLE, hovermode="closest")
    fig.update_xaxes(type="log", title_text="arithmetic intensity (FLOP/byte)")
    fig.update_yaxes(type="log", title_text="achieved TFLOP/s")
    return fig
