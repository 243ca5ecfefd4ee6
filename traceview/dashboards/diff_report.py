"""`traceview diff` as HTML: the comparison of two runs (`RunDiff.to_dict()`) as report blocks
(`diff_section`, also the baseline section of a report) or a page of its own (`diff_html`)."""

from __future__ import annotations

import plotly.graph_objects as go

from traceview.dashboards.html_page import Page, header_item, heading, items, table, text
from traceview.run_diff import iteration_headline
from traceview.safe_text import one_line
from traceview.summary_text import size_text
from traceview.terms import ITERATION_LABELS as LABELS


def diff_section(diff: dict) -> list[dict]:
    """A `RunDiff.to_dict()` as blocks: the two runs side by side, the notes, then every table
    (lists of flat rows) in its order; µs values as they are in the JSON (3 decimals)."""
    blocks = []
    runs = [(k, diff[k]) for k in ("base", "new") if isinstance(diff.get(k), dict)]
    if runs:
        keys = list(dict.fromkeys(k for _, run in runs for k in run))
        rows = [{"what": k, **{name: _plain(run.get(k)) for name, run in runs}} for k in keys]
        columns = [("what", "", None)] + [(name, name, None) for name, _ in runs]
        blocks.append(table(rows, columns, "diff-runs", text_columns=("what", "base", "new")))
    for key, value in diff.items():
        if key in ("base", "new"):
            continue
        if isinstance(value, list) and value and isinstance(value[0], dict):
            keys = list(value[0])
            cols = [(k, k, _auto_fmt(k)) for k in keys]
            text_columns = tuple(k for k in keys if isinstance(value[0][k], str))
            blocks += [heading(key), table(value, cols, f"diff-{key}", text_columns=text_columns)]
        elif isinstance(value, list) and value:
            blocks += [heading(key), items(value, f"diff-{key}")]
        elif isinstance(value, dict):
            blocks.append(text(", ".join(f"{one_line(k)} = {_plain(v)}" for k, v in value.items()), label=key))
        elif value is not None and not isinstance(value, list):
            blocks.append(text(value, label=key))
    return blocks


def _plain(value) -> str:
    """A run's field as text: lists joined by commas."""
    if isinstance(value, (list, tuple)):
        return ", ".join(str(v) for v in value)
    return "-" if value is None else str(value)


def diff_html(diff: dict) -> str:
    """A page of its own for `traceview diff BASE NEW --format html`: the iteration's headline, a
    chart of the mean iteration terms of both runs, then `diff_section`."""
    page = Page(f"traceview diff: {(diff.get('base') or {}).get('source')} -> {(diff.get('new') or {}).get('source')}")
    lead = iteration_headline(diff)
    blocks = [text(lead, label="iteration")] if lead else []
    terms = [r for r in diff.get("iteration") or [] if r.get("rank") in (None, "all")]
    if terms and all(r.get("base_us") is not None and r.get("new_us") is not None for r in terms[:1]):
        fig = go.Figure()
        for side in ("base", "new"):
            fig.add_bar(
                name=side,
                x=[LABELS.get(r["term"], r["term"]) for r in terms],
                y=[(r.get(f"{side}_us") or 0) / 1000 for r in terms],
                meta=side,
            )
        fig.update_layout(
            title="The iteration and its terms, mean per step: base and new",
            barmode="group",
            template="plotly_white",
            yaxis_title="time per step (ms)",
            xaxis_title="term",
        )
        blocks.append(page.figure(fig))
    page.add("diff", "What changed", blocks + diff_section(diff))
    header = [
        header_item("traceview diff"),
        header_item((diff.get("base") or {}).get("source")),
        header_item("→"),
        header_item((diff.get("new") or {}).get("source")),
    ]
    return page.html(header, {"traceview-diff": diff})


def _auto_fmt(key: str):
    """Numbers of a diff table: µs and ratios with their own precision, the rest as they are."""
    if key.endswith("_us"):
        return lambda v: f"{v:,.3f}" if isinstance(v, (int, float)) else str(v)
    if key.endswith(("_frac", "_pct", "_ratio")):
        return lambda v: f"{v:,.4f}" if isinstance(v, (int, float)) else str(v)
    if key.endswith("_bytes"):  # peak memory: binary units, the delta signed
        return lambda v: (("-" if v < 0 else "") + size_text(abs(v))) if isinstance(v, int) else str(v)
    return None
