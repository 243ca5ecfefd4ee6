"""`traceview compare` in the views: the figure (the iteration terms of each run, stacked), the
table as display rows, the self-contained HTML page (`compare_html`) and the dashboard's Compare
page (`compare_layout`, at /compare with `traceview serve RUN --compare OTHER`).

Everything renders `RunComparison.to_dict()`; no number is computed here. Labels and sources come
from users and traces: they enter the page as text (the templates escape it, React and plotly
escape component text and data), never as markup.
"""

from __future__ import annotations

import plotly.graph_objects as go

from traceview.dashboards.colors import ITERATION_COLORS
from traceview.dashboards.html_page import Page, header_item, heading, items, table, text
from traceview.run_compare import change_text, headlines
from traceview.safe_text import one_line
from traceview.summary_text import size_text
from traceview.terms import EXPOSED_COMM


def _ms(us) -> str:
    return "-" if us is None else f"{us / 1000:,.3f}"


def _pct(frac) -> str:
    return "-" if frac is None else f"{100 * frac:.1f}"


def _mover(row: dict, against: str, labels: dict) -> str:
    """The term that moved most: 'data loading -23.758 ms (105 % of the change)'."""
    term = row.get(f"{against}_term")
    if term is None:
        return "-"
    delta, share = row.get(f"{against}_term_delta_us"), row.get(f"{against}_term_share")
    out = f"{labels.get(term, term)} {delta / 1000:+,.3f} ms"
    return out + ("" if share is None else f" ({100 * share:.0f} % of the change)")


#: The runs table: (key, header), one row per run (`run_rows`).
RUN_COLUMNS = [
    ("run", "#"),
    ("label", "run"),
    ("iteration", "iteration (ms)"),
    ("vs_previous", "change vs previous"),
    ("mover_previous", "term that moved most"),
    ("vs_first", "change vs first"),
    ("mover_first", "term that moved most vs first"),
    ("speedup", "speedup vs first"),
    ("step", "device step (ms)"),
    ("exposed_comm", "exposed comm (% of step)"),
    ("tokens", "tokens/s per device"),
    ("mfu", "MFU (%)"),
    ("hfu", "HFU (%)"),
    ("memory", "peak memory (allocated)"),
]


def run_rows(doc: dict) -> list[dict]:
    """One dict of text cells per run (keys of RUN_COLUMNS): the headline numbers and the changes."""
    labels = doc["labels"]
    rows = []
    for r in doc["runs"]:
        tokens = r.get("tokens_per_s_per_device")
        rows.append(
            {
                "run": str(r["run"]),
                "label": one_line(r["label"]),
                "iteration": _ms(r.get("iteration_us")),
                "vs_previous": change_text(r, "previous", " ms"),
                "vs_first": change_text(r, "first", " ms"),
                "speedup": "-" if r.get("speedup") is None else f"{r['speedup']:.2f}x",
                "step": _ms(r.get("mean_step_us")),
                "exposed_comm": _pct(r.get(f"{EXPOSED_COMM}_frac")),
                "tokens": "-" if tokens is None else f"{tokens:,.0f}",
                "mfu": _pct(r.get("mfu_frac")),
                "hfu": _pct(r.get("hfu_frac")),
                "memory": size_text(r.get("peak_allocated_bytes")),
                "mover_previous": _mover(r, "previous", labels),
                "mover_first": _mover(r, "first", labels),
            }
        )
    return rows


def term_columns(doc: dict) -> list[tuple[str, str]]:
    """The terms table: (key, header): the term, then one column per run (`r<run>`)."""
    return [("term", "term")] + [(f"r{r['run']}", f"{r['run']} {one_line(r['label'])}") for r in doc["runs"]]


def term_rows(doc: dict) -> list[dict]:
    """The iteration, then each compared term (`terms`), as rows; per run its ms and share of the
    iteration ('98.678 ms (55.6 %)'). Rows, not columns: the list grows with the compared columns."""
    labels = doc["labels"]
    rows = [
        {
            "term": labels.get("iteration", "iteration"),
            **{f"r{r['run']}": _ms(r.get("iteration_us")) for r in doc["runs"]},
        }
    ]
    for t in doc["terms"]:
        row = {"term": labels.get(t, t)}
        for r in doc["runs"]:
            us, frac = r.get(f"{t}_us"), r.get(f"{t}_frac")
            row[f"r{r['run']}"] = "-" if us is None else f"{_ms(us)} ({_pct(frac)} %)"
        rows.append(row)
    return rows


def comparison_figure(doc: dict) -> go.Figure:
    """The mean iteration of each run (ms per step) as a bar stacked from its terms (`stacked`:
    the terms that add up to the iteration), one trace per term (`meta` = the term), runs in order."""
    labels = doc["labels"]
    runs = doc["runs"]
    x = [one_line(r["label"]) for r in runs]
    fig = go.Figure()
    for term in doc["stacked"]:
        fig.add_bar(
            name=labels.get(term, term),
            x=x,
            y=[None if r.get(f"{term}_us") is None else r[f"{term}_us"] / 1000 for r in runs],
            customdata=[None if r.get(f"{term}_frac") is None else 100 * r[f"{term}_frac"] for r in runs],
            hovertemplate="%{x}<br>" + labels.get(term, term) + ": %{y:,.3f} ms (%{customdata:.1f} %)<extra></extra>",
            marker_color=ITERATION_COLORS.get(term),
            meta=term,
        )
    fig.add_scatter(
        x=x,
        y=[None if r.get("iteration_us") is None else r["iteration_us"] / 1000 for r in runs],
        mode="markers+text",
        text=[_ms(r.get("iteration_us")) for r in runs],
        textposition="top center",
        marker={"color": "#111827", "symbol": "line-ew-open", "size": 18},
        name="iteration",
        meta="iteration",
        hovertemplate="%{x}<br>iteration: %{y:,.3f} ms<extra></extra>",
    )
    fig.update_layout(
        title="Where each run's iteration went (mean per step)",
        barmode="stack",
        template="plotly_white",
        yaxis_title="time per step (ms)",
        xaxis_title="run",
        xaxis={"type": "category"},
        legend={"traceorder": "normal"},
    )
    return fig


#: Text columns of the runs table (left-aligned).
TEXT_COLUMNS = ("label", "mover_previous", "mover_first")


def _terms_table(doc: dict) -> list[dict]:
    return [table(term_rows(doc), [(k, h, None) for k, h in term_columns(doc)], "compare-terms", ("term",))]


def sections(doc: dict, page: Page) -> list[dict]:
    """The comparison as report blocks: the change lines, the table, the chart, notes and warnings."""
    blocks = [heading("Run by run"), items(headlines(doc), "compare-headlines")]
    blocks.append(table(run_rows(doc), [(k, h, None) for k, h in RUN_COLUMNS], "compare-table", TEXT_COLUMNS))
    blocks += [heading("Where the iteration went (ms per step, % of the iteration)"), *_terms_table(doc)]
    blocks.append(
        text(
            "Iteration and terms are means per rank-step (the terms add up to the iteration); changes and "
            "their shares are those of `traceview diff` for the same pair of runs (docs/compare.md).",
            "note",
        )
    )
    blocks.append(page.figure(comparison_figure(doc)))
    sources = [f"{r['label']}: {r['source']}" for r in doc["runs"]]
    blocks += [heading("Runs"), items(sources, "compare-sources")]
    for key, title, cls in (
        ("notes", "Notes", "note"),
        ("warnings", "Warnings", "warn"),
        ("failures", "Failed", "bad"),
    ):
        if doc.get(key):
            blocks += [heading(title, cls), items(doc[key], f"compare-{key}")]
    return blocks


def compare_html(doc: dict) -> str:
    """`traceview compare --format html`: a self-contained page (plotly.js inlined, the JSON embedded)."""
    names = " | ".join(r["label"] for r in doc["runs"])
    page = Page(f"traceview compare: {names}")
    page.add("compare", f"{len(doc['runs'])} runs side by side", sections(doc, page))
    header = [header_item("traceview compare"), header_item(names)]
    return page.html(header, {"traceview-compare": doc})


def compare_layout(doc: dict | None, graph_config: dict):
    """The dashboard's Compare page (hidden until the path is /compare): the change lines, the
    table and the chart of `doc`, or how to start the dashboard with runs to compare."""
    from dash import dcc, html

    if doc is None:
        children = [
            html.P(
                "No runs to compare: start the dashboard with `traceview serve RUN --compare OTHER "
                "[--compare THIRD ...]`.",
                id="compare-none",
            )
        ]
    else:
        children = [
            html.Ul([html.Li(line) for line in headlines(doc)], id="compare-headlines"),
            _dash_table(RUN_COLUMNS, run_rows(doc), "compare-table"),
            html.H4("Where the iteration went (ms per step, % of the iteration)"),
            _dash_table(term_columns(doc), term_rows(doc), "compare-terms"),
            dcc.Graph(id="fig-compare", figure=comparison_figure(doc), config=graph_config, responsive=True),
            html.Ul([html.Li(f"{r['label']}: {r['source']}") for r in doc["runs"]], id="compare-sources"),
        ]
        for key in ("notes", "warnings", "failures"):
            if doc.get(key):
                children += [html.H4(key.capitalize()), html.Ul([html.Li(one_line(x)) for x in doc[key]])]
    return html.Div(children, id="page-compare", style={"display": "none"})


def _dash_table(columns: list[tuple[str, str]], rows: list[dict], table_id: str):
    """A plain table of text cells for the dashboard (React escapes the text)."""
    from dash import html

    grid = html.Table(
        [
            html.Thead(html.Tr([html.Th(h, style={"textAlign": "left"}) for _, h in columns])),
            html.Tbody([html.Tr([html.Td(row[k]) for k, _ in columns]) for row in rows]),
        ],
        id=table_id,
        style={"borderSpacing": "12px 2px", "fontSize": "13px", "whiteSpace": "nowrap"},
    )
    return html.Div(grid, style={"overflowX": "auto", "marginBottom": "12px"})
