"""What a notebook shows of a Trace: its HTML table (`Trace._repr_html_`) and its figures
(`Trace.plot`), and the figure of a comparison (`RunComparison.figure`). The model's one hand-off to
the views: `traceview.trace` and `traceview.run_compare` import this module when those are used, and
nothing else of the views; plotly is imported only when a figure is asked for."""

from __future__ import annotations


def plots(trace):
    """`TracePlots` of `trace` (plotly imported now, on first use)."""
    from traceview.dashboards.plots import TracePlots

    return TracePlots(trace)


def trace_html(trace) -> str:
    """A compact table for Jupyter: source, ranks, devices, formats, tasks, steps, time span,
    warnings and failures (listed under a fold). Every string from the trace is HTML-escaped."""
    from html import escape

    info = trace.info()
    ranks = sorted(info["rank"].drop_nulls().to_list())
    if ranks and ranks == list(range(ranks[0], ranks[-1] + 1)):
        rank_text = f"{len(ranks)} ({ranks[0]}–{ranks[-1]})" if len(ranks) > 1 else f"1 (rank {ranks[0]})"
    else:
        rank_text = f"{info.height} ({', '.join(map(str, ranks[:8]))}{', …' if len(ranks) > 8 else ''})"
    steps = trace.steps["step"].drop_nulls()
    span = info["span_us"].drop_nulls()

    def distinct(col: str) -> str:
        return ", ".join(sorted({str(v) for v in info[col].drop_nulls().to_list()})) or "-"

    def folded(label: str, lines: list[str], limit: int = 20) -> str:
        if not lines:
            return "0"
        items = "".join(f"<li>{escape(line)}</li>" for line in lines[:limit])
        more = f"<li>… and {len(lines) - limit} more</li>" if len(lines) > limit else ""
        return f"<details><summary>{len(lines)} {label}</summary><ul>{items}{more}</ul></details>"

    rows = [
        ("source", escape(str(trace.source))),
        ("ranks", escape(rank_text)),
        ("device", escape(distinct("device_name"))),
        ("format", escape(distinct("format"))),
        ("device tasks", f"{trace.device_tasks.height:,}"),
        ("steps", f"{steps.n_unique()}" + (f" ({steps.min()}–{steps.max()})" if steps.len() else "")),
        (
            "time span",
            f"{span.max() / 1000:,.3f} ms (longest rank: first to last device task, else host event)"
            if span.len()
            else "-",
        ),
        ("warnings", folded("warnings", trace.warnings)),
        ("failures", folded("failures", trace.failures)),
    ]
    cell = "text-align:left;vertical-align:top;padding:2px 10px 2px 0"
    body = "".join(f'<tr><th style="{cell}">{k}</th><td style="{cell}">{v}</td></tr>' for k, v in rows)
    return (
        f'<table class="traceview-trace"><caption style="text-align:left"><b>traceview.Trace</b> · '
        f"frames: <code>.info()</code>, <code>.step_breakdown()</code>, … · figures: <code>.plot</code>"
        f"</caption><tbody>{body}</tbody></table>"
    )


def comparison_figure(doc: dict):
    """The figure of a comparison (`RunComparison.to_dict()`; `RunComparison.figure`)."""
    from traceview.dashboards.compare_view import comparison_figure as figure

    return figure(doc)
