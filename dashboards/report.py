"""Self-contained HTML reports: one file that opens from disk with no network.

`report_html(trace, summary, diff=None)` returns the page: plotly.js inlined once, then the
Overview figures of the dashboard (step breakdown, step time, rank x step heatmap, compute
classes), the step-decomposition, compute-class and kernel tables, a binned timeline of the whole
trace and a few raw windows (each says when it was cut), the cross-rank section, the findings, and
the comparison with a baseline when `diff` (a `RunDiff.to_dict()`) is given. The summary
document itself is embedded as JSON (`<script type="application/json" id="traceview-summary">`),
so the numbers on the page can be checked against `traceview summary --format json`.

Safety: every string from the trace goes through `html.escape` (text and attributes); figure
and summary JSON is embedded in `<script type="application/json">` blocks with every `<`
written as the JSON escape `\\u003c`, so no `</script>` or `<!--` inside a name can end the block.
Tables carry the numbers as text, so the report reads even with JavaScript off.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Iterable

import orjson
import plotly.graph_objects as go
import polars as pl

from traceview.analysis.breakdown import TERM_LABELS
from traceview.dashboards import figures
from traceview.dashboards.timeline_page import TimelineData
from traceview.safe_text import json_text, one_line

RAW_WINDOW_TASKS = 4_000  # raw tasks drawn per timeline window in a report
TIMELINE_LIMIT = 5_000  # the whole-trace timeline is binned above this many tasks
MAX_STEP_ROWS = 2_000  # rows of the per-step decomposition table
KERNELS_PER_RANK = 20
FIGURE_HEIGHT = 450  # px, when a figure does not set its own

STEP_TERMS = [
    (f"{term}_us", TERM_LABELS[term])
    for term in (
        "duration",
        "computing",
        "communication",
        "overlapped",
        "communication_not_overlapped",
        "exposed_memcpy",
        "free",
        "bubble",
        "preparing",
    )
]

CSS = """
body{margin:0;font-family:system-ui,-apple-system,'Segoe UI',sans-serif;color:#111827;font-size:14px}
header{background:#1f2937;color:#fff;padding:10px 20px}header b{font-size:18px;margin-right:20px}
header span{margin-right:20px}.wrap{display:flex}nav{width:170px;padding:16px;border-right:1px solid #e5e7eb;
position:sticky;top:0;align-self:flex-start;height:100vh;box-sizing:border-box}nav a{display:block;margin:6px 0;color:#1d4ed8}
main{flex:1;padding:16px 24px;min-width:0}section{margin-bottom:28px}h2{border-bottom:1px solid #e5e7eb;padding-bottom:4px}
table.tv{border-collapse:collapse;margin:8px 0;font-size:13px}table.tv th,table.tv td{border-bottom:1px solid #e5e7eb;
padding:3px 8px;text-align:right;white-space:nowrap}table.tv th{background:#f9fafb}table.tv td.t,table.tv th.t{text-align:left;
white-space:normal;min-width:10em;max-width:640px;overflow-wrap:anywhere}
.scroll{overflow-x:auto;max-width:100%}.note{color:#4b5563}.warn{color:#b45309}.bad{color:#b91c1c}
.fig{min-height:120px}.sev-critical{color:#b91c1c;font-weight:600}.sev-warning{color:#b45309;font-weight:600}
.sev-info{color:#1d4ed8}
"""

RENDER_JS = """
(function(){
  var blocks = document.querySelectorAll('script[type="application/json"][data-figure]');
  for (var i = 0; i < blocks.length; i++) {
    var spec = JSON.parse(blocks[i].textContent);
    var target = document.getElementById(blocks[i].getAttribute('data-figure'));
    Plotly.newPlot(target, spec.data || [], spec.layout || {}, {displaylogo: false, responsive: true});
  }
})();
"""


def esc(value) -> str:
    """Text (or an attribute value) from anywhere, escaped for HTML, control and bidi characters
    shown as escapes (`traceview.safe_text.one_line`: a name cannot reorder the page); None as '-'."""
    return "-" if value is None else html.escape(one_line(value), quote=True)


def script_json(data) -> str:
    """JSON text safe inside a <script> element: every '<' as \\u003c (only strings contain one),
    and the characters `traceview.safe_text.json_text` escapes (C1 and bidi controls) as \\u too."""
    text = data if isinstance(data, str) else orjson.dumps(data, option=orjson.OPT_SERIALIZE_NUMPY).decode()
    return json_text(text).replace("<", "\\u003c")


def fmt_ms(us) -> str:
    """µs as ms with 3 decimals (µs resolution)."""
    return "-" if us is None else f"{us / 1000:,.3f}"


def fmt_pct(frac) -> str:
    return "-" if frac is None else f"{frac * 100:.1f}"


def table(
    rows: Iterable[dict],
    columns: list[tuple[str, str, Callable | None]],
    table_id: str = "",
    text_columns: tuple[str, ...] = (),
) -> str:
    """An HTML table: columns are (key, header, formatter or None for str); every cell escaped."""
    head = "".join(f'<th class="{"t" if key in text_columns else ""}">{esc(title)}</th>' for key, title, _ in columns)
    body = []
    for row in rows:
        cells = []
        for key, _, fmt in columns:
            value = row.get(key)
            text = fmt(value) if fmt is not None and value is not None else ("-" if value is None else str(value))
            cells.append(f'<td class="{"t" if key in text_columns else ""}" data-key="{esc(key)}">{esc(text)}</td>')
        body.append("<tr>" + "".join(cells) + "</tr>")
    attr = f' id="{esc(table_id)}"' if table_id else ""
    return (
        f'<div class="scroll"><table class="tv"{attr}><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table></div>"
    )


class Page:
    """Sections and figures of one report, rendered by `html()`."""

    def __init__(self, title: str):
        self.title = title
        self.sections: list[tuple[str, str, str]] = []  # (anchor, title, body html)
        self.n_figures = 0

    def figure(self, fig: go.Figure, note: str | None = None) -> str:
        self.n_figures += 1
        fid = f"fig-{self.n_figures}"
        if fig.layout.height is None:
            fig.update_layout(height=FIGURE_HEIGHT)  # the dashboard's default graph height
        block = (
            f'<div class="fig" id="{fid}"></div>'
            f'<script type="application/json" data-figure="{fid}">{script_json(fig.to_json())}</script>'
        )
        return block + (f'<p class="note">{esc(note)}</p>' if note else "")

    def add(self, anchor: str, title: str, body: str) -> None:
        self.sections.append((anchor, title, body))

    def html(self, header: str, embedded: dict[str, object]) -> str:
        from plotly.offline import get_plotlyjs

        nav = "".join(f'<a href="#{esc(a)}">{esc(t)}</a>' for a, t, _ in self.sections)
        body = "".join(f'<section id="{esc(a)}"><h2>{esc(t)}</h2>{b}</section>' for a, t, b in self.sections)
        data = "".join(
            f'<script type="application/json" id="{esc(k)}">{script_json(v)}</script>' for k, v in embedded.items()
        )
        return (
            f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{esc(self.title)}</title>'
            f'<meta name="viewport" content="width=device-width, initial-scale=1"><style>{CSS}</style>'
            f"<script>{get_plotlyjs()}</script></head><body>{header}"
            f'<div class="wrap"><nav>{nav}</nav><main>{body}</main></div>{data}'
            f"<script>{RENDER_JS}</script></body></html>"
        )


# ---- sections ----


def _header(summary: dict) -> str:
    devices = sorted({r["device"] for r in summary["ranks"] if r.get("device")})
    n = len(summary["ranks"])
    from traceview.version import __version__

    # no date: the same profile gives the same report, byte for byte (the file's time says when)
    return (
        f'<header><b>traceview report</b><span id="profile-path">{esc(summary.get("source"))}</span>'
        f"<span>{n} rank{'s' if n != 1 else ''}</span><span>{esc(', '.join(devices) or 'device unknown')}</span>"
        f'<span class="note" style="color:#d1d5db">traceview {esc(__version__)}</span></header>'
    )


def findings_section(summary: dict) -> str:
    """Rule findings (each citing its numbers), straggler, long steps, failed ranks, warnings."""
    parts = []
    rows = summary.get("findings") or []
    if rows:
        items = "".join(
            f'<li><span class="sev-{esc(f.get("severity"))}">{esc(f.get("severity"))}</span> '
            f'{esc(f.get("message"))}<br><span class="note">{esc(f.get("advice"))}</span></li>'
            for f in rows
        )
        parts.append(f'<ul id="findings-rules">{items}</ul>')
    straggler = figures.straggler_line(summary)
    if straggler:
        parts.append(f'<p id="straggler">{esc(straggler)}</p>')
    long_steps = figures.long_step_lines(summary)
    if long_steps:
        parts.append("<ul>" + "".join(f"<li>{esc(line)}</li>" for line in long_steps) + "</ul>")
    if summary.get("failures"):
        parts.append(
            '<h3 class="bad">Failed ranks</h3><ul id="failures">'
            + "".join(f"<li>{esc(x)}</li>" for x in summary["failures"])
            + "</ul>"
        )
    if summary.get("warnings"):
        parts.append(
            '<h3 class="warn">Warnings</h3><ul id="warnings">'
            + "".join(f"<li>{esc(x)}</li>" for x in summary["warnings"])
            + "</ul>"
        )
    return "".join(parts) or "<p>No finding: nothing above the rules' thresholds, no straggler or long step.</p>"


def step_rows(summary: dict) -> list[dict]:
    return [{"rank": r["rank"], **s} for r in summary["ranks"] for s in r["steps"]]


def steps_section(page: Page, summary: dict) -> str:
    rows = step_rows(summary)
    cols = [("rank", "rank", None), ("step", "step", None)] + [(k, f"{t} (ms)", fmt_ms) for k, t in STEP_TERMS]
    note = ""
    if len(rows) > MAX_STEP_ROWS:
        note = f'<p class="note">First {MAX_STEP_ROWS:,} of {len(rows):,} rank-step rows; all are in --format json/csv.</p>'
    whole = [{"rank": r["rank"], **(r["trace"] or {})} for r in summary["ranks"]]
    whole_cols = (
        [("rank", "rank", None)]
        + [(k, f"{t} (ms)", fmt_ms) for k, t in STEP_TERMS if k not in ("duration_us", "preparing_us")]
        + [("idle_us", "idle (ms)", fmt_ms)]
    )
    return (
        page.figure(figures.step_breakdown_figure(summary))
        + page.figure(figures.step_time_figure(summary))
        + page.figure(figures.step_heatmap_figure(summary))
        + '<h3>Per rank and step</h3><p class="note">Definitions: docs/metrics.md. exposed comm = communication '
        "not overlapped by compute; computing + exposed comm + exposed memcpy + free = busy span.</p>"
        + table(rows[:MAX_STEP_ROWS], cols, "steps-table")
        + note
        + "<h3>Whole trace per rank</h3>"
        + table(whole, whole_cols, "trace-table")
    )


def classes_section(page: Page, summary: dict) -> str:
    class_rows = [{"rank": r["rank"], **c} for r in summary["ranks"] for c in r["compute_classes"]]
    kernel_rows = [{"rank": r["rank"], **k} for r in summary["ranks"] for k in r["top_kernels"][:KERNELS_PER_RANK]]
    unclassified = [{"rank": r["rank"], "unclassified_share": r.get("unclassified_share")} for r in summary["ranks"]]
    worst = max((u["unclassified_share"] or 0 for u in unclassified), default=0)
    return (
        page.figure(figures.compute_classes_figure(summary))
        + table(
            class_rows,
            [
                ("rank", "rank", None),
                ("class", "class", None),
                ("group", "group", None),
                ("time_us", "time (ms)", fmt_ms),
                ("share", "share (%)", fmt_pct),
                ("count", "tasks", None),
            ],
            "classes-table",
            text_columns=("class", "group"),
        )
        + f'<p class="note">Unclassified device time: at most {worst * 100:.2f} % of a rank\'s device time.</p>'
        + f"<h3>Top kernels (per rank, up to {KERNELS_PER_RANK})</h3>"
        + table(
            kernel_rows,
            [
                ("rank", "rank", None),
                ("name", "kernel", None),
                ("class", "class", None),
                ("count", "count", None),
                ("total_us", "total (ms)", fmt_ms),
                ("mean_us", "mean (µs)", lambda v: f"{v:,.3f}"),
                ("share", "share (%)", fmt_pct),
            ],
            "kernels-table",
            text_columns=("name", "class"),
        )
    )


def _raw_windows(data: TimelineData, summary: dict) -> list[tuple[str, int, int, int]]:
    """(title, rank, start_ns, end_ns) of up to two raw windows: the longest and the median step
    of the straggler (else the rank with the longest step), cut to its first RAW_WINDOW_TASKS tasks."""
    cross = summary.get("cross_rank") or {}
    entries = [r for r in summary["ranks"] if r["steps"]]
    if not entries or data.steps.is_empty():
        return []
    rank = cross.get("straggler")
    if rank is None or rank not in {r["rank"] for r in entries}:
        rank = max(entries, key=lambda r: max(s["duration_us"] or 0 for s in r["steps"]))["rank"]
    steps = sorted(
        (s for r in entries if r["rank"] == rank for s in r["steps"] if s["duration_us"] is not None),
        key=lambda s: s["duration_us"],
    )
    if not steps:
        return []
    picks = [("longest step", steps[-1]["step"])]
    if len(steps) > 1:
        picks.append(("median step", steps[(len(steps) - 1) // 2]["step"]))
    out = []
    for label, step in picks:
        window = data.step_window(step, [rank])
        if window is not None:
            out.append((f"rank {rank}, {label} ({step})", rank, *window))
    return out


def timeline_section(page: Page, trace, summary: dict) -> str:
    data = TimelineData.from_trace(trace)
    if not data.tasks.height:
        return "<p>No device tasks.</p>"
    fig, note, mode = data.figure(*data.full_window(), limit=TIMELINE_LIMIT)
    parts = [
        page.figure(
            fig,
            note=("Downsampled: " if mode == "binned" else "")
            + note
            + (" (each cell: the lane's busy fraction in the bin)" if mode == "binned" else ""),
        )
    ]
    for title, rank, start, end in _raw_windows(data, summary):
        tasks = data.tasks.filter((pl.col("rank") == rank) & (pl.col("start_ns") < end) & (pl.col("end_ns") > start))
        cut = ""
        if tasks.height > RAW_WINDOW_TASKS:
            new_end = int(tasks["start_ns"][RAW_WINDOW_TASKS])
            cut = (
                f" Cut to the first {(new_end - start) / 1e6:,.3f} ms of {(end - start) / 1e6:,.3f} ms "
                f"({RAW_WINDOW_TASKS:,} of {tasks.height:,} tasks)."
            )
            end = max(new_end, start + 1)
        fig, note, _ = data.figure(start, end, ranks=[rank], limit=RAW_WINDOW_TASKS)
        fig.update_layout(title=dict(text=f"Timeline: {title}"))
        parts.append(page.figure(fig, note=note + cut))
    return "".join(parts)


def cross_rank_section(summary: dict) -> str:
    cross = summary.get("cross_rank")
    if not cross:
        return "<p>One rank: no cross-rank analysis.</p>"
    return (
        "<h3>Waits in collectives per rank</h3>"
        + table(
            cross["ranks"],
            [
                ("rank", "rank", None),
                ("instances", "collectives", None),
                ("total_wait_us", "total wait (ms)", fmt_ms),
                ("mean_wait_us", "mean wait (µs)", lambda v: f"{v:,.3f}"),
                ("mean_start_skew_us", "mean start skew (µs)", lambda v: f"{v:,.3f}"),
                ("last_arrivals", "last to arrive", None),
                ("is_straggler", "straggler", None),
            ],
            "cross-ranks-table",
        )
        + "<h3>Step skew</h3>"
        + table(
            cross["step_skew"],
            [
                ("step", "step", None),
                ("n_ranks", "ranks", None),
                ("min_us", "min (ms)", fmt_ms),
                ("max_us", "max (ms)", fmt_ms),
                ("skew_us", "skew (ms)", fmt_ms),
                ("skew_frac", "skew (%)", fmt_pct),
                ("longest_step_rank", "longest step on", None),
                ("shortest_step_rank", "shortest step on", None),
            ],
            "step-skew-table",
        )
        + "<h3>Collectives</h3>"
        + table(
            cross["collectives"],
            [
                ("collective", "collective", None),
                ("process_group", "group", None),
                ("instances", "instances", None),
                ("transfer_us", "transfer per rank (ms)", fmt_ms),
                ("wait_us", "wait, all ranks (ms)", fmt_ms),
                ("busbw_gbps", "bus bandwidth (GB/s)", lambda v: f"{v:,.1f}"),
            ],
            "collectives-table",
            text_columns=("collective", "process_group"),
        )
    )


def throughput_section(summary: dict) -> str:
    rows = summary.get("throughput") or []
    return table(
        rows,
        [
            ("step", "step", None),
            ("step_time_us", "step (ms)", fmt_ms),
            ("tokens_per_s_per_device", "tokens/s per device", lambda v: f"{v:,.0f}"),
            ("model_tflops_per_device", "model TFLOP/s per device", lambda v: f"{v:,.1f}"),
            ("peak_tflops", "peak TFLOP/s", lambda v: f"{v:,.0f}"),
            ("mfu_frac", "MFU (%)", fmt_pct),
        ],
        "throughput-table",
    ) + "".join(
        f'<p class="bad" id="throughput-check">{esc(check)}</p>'
        for check in list(dict.fromkeys(r["check"] for r in rows if r.get("check")))[:1]
    )


def diff_section(diff: dict) -> str:
    """A `RunDiff.to_dict()` as HTML: the two runs side by side, the notes, then every table (lists
    of flat rows) in its order; µs values as they are in the JSON (3 decimals)."""
    parts = []
    runs = [(k, diff[k]) for k in ("base", "new") if isinstance(diff.get(k), dict)]
    if runs:
        keys = list(dict.fromkeys(k for _, run in runs for k in run))
        rows = [{"what": k, **{name: _plain(run.get(k)) for name, run in runs}} for k in keys]
        parts.append(
            table(
                rows,
                [("what", "", None)] + [(name, name, None) for name, _ in runs],
                "diff-runs",
                text_columns=("what", "base", "new"),
            )
        )
    for key, value in diff.items():
        if key in ("base", "new"):
            continue
        if isinstance(value, list) and value and isinstance(value[0], dict):
            keys = list(value[0])
            cols = [(k, k, _auto_fmt(k)) for k in keys]
            parts.append(
                f"<h3>{esc(key)}</h3>"
                + table(value, cols, f"diff-{key}", text_columns=tuple(k for k in keys if isinstance(value[0][k], str)))
            )
        elif isinstance(value, list) and value:
            parts.append(
                f'<h3>{esc(key)}</h3><ul id="diff-{esc(key)}">' + "".join(f"<li>{esc(v)}</li>" for v in value) + "</ul>"
            )
        elif isinstance(value, dict):
            parts.append(
                f"<p><b>{esc(key)}</b>: " + ", ".join(f"{esc(k)} = {esc(v)}" for k, v in value.items()) + "</p>"
            )
        elif value is not None and not isinstance(value, list):
            parts.append(f"<p><b>{esc(key)}</b>: {esc(value)}</p>")
    return "".join(parts)


def _plain(value) -> str:
    """A run's field as text: lists joined by commas."""
    if isinstance(value, (list, tuple)):
        return ", ".join(str(v) for v in value)
    return "-" if value is None else str(value)


def diff_html(diff: dict) -> str:
    """A page of its own for `traceview diff BASE NEW --format html`: a chart of the mean step-time
    terms of both runs, then `diff_section`."""
    page = Page(f"traceview diff: {(diff.get('base') or {}).get('source')} -> {(diff.get('new') or {}).get('source')}")
    terms = [r for r in diff.get("terms") or [] if r.get("rank") in (None, "all")]
    body = ""
    if terms:
        fig = go.Figure()
        for side in ("base", "new"):
            fig.add_bar(
                name=side, x=[r["term"] for r in terms], y=[(r.get(f"{side}_us") or 0) / 1000 for r in terms], meta=side
            )
        fig.update_layout(
            title="Mean per step: base and new",
            barmode="group",
            template="plotly_white",
            yaxis_title="time per step (ms)",
            xaxis_title="term",
        )
        body = page.figure(fig)
    page.add("diff", "What changed", body + diff_section(diff))
    src = lambda side: esc((diff.get(side) or {}).get("source"))  # noqa: E731
    header = f"<header><b>traceview diff</b><span>{src('base')}</span><span>→</span><span>{src('new')}</span></header>"
    return page.html(header, {"traceview-diff": diff})


def _auto_fmt(key: str):
    """Numbers of a diff table: µs and ratios with their own precision, the rest as they are."""
    if key.endswith("_us"):
        return lambda v: f"{v:,.3f}" if isinstance(v, (int, float)) else str(v)
    if key.endswith(("_frac", "_pct", "_ratio")):
        return lambda v: f"{v:,.4f}" if isinstance(v, (int, float)) else str(v)
    return None


def report_html(trace, summary: dict, diff: dict | None = None) -> str:
    """The whole report of `trace` (with `summary` = `build_summary(trace, ...)`) as one HTML page."""
    page = Page(f"traceview report: {summary.get('source')}")
    page.add("findings", "Findings", findings_section(summary))
    if summary.get("throughput"):
        page.add("throughput", "Throughput", throughput_section(summary))
    page.add("steps", "Step time decomposition", steps_section(page, summary))
    page.add("classes", "Compute classes and kernels", classes_section(page, summary))
    page.add("timeline", "Timeline", timeline_section(page, trace, summary))
    page.add("cross-rank", "Cross-rank", cross_rank_section(summary))
    if diff is not None:
        page.add("diff", "Compared with the baseline", diff_section(diff))
    return page.html(_header(summary), {"traceview-summary": summary})
