"""Self-contained HTML reports: one file that opens from disk with no network.

`report_html(trace, summary, diff=None)` returns the page: plotly.js inlined once, then the
Overview figures of the dashboard (step breakdown, step time, rank x step heatmap, compute
classes), the step-decomposition, compute-class and kernel tables, a binned timeline of the whole
trace and a few raw windows (each says when it was cut), the cross-rank section, the findings, and
the comparison with a baseline when `diff` (a `RunDiff.to_dict()`) is given. The summary
document itself is embedded as JSON (`<script type="application/json" id="traceview-summary">`),
so the numbers on the page can be checked against `traceview summary --format json`.

This module chooses and formats what goes on the page: each section is a list of blocks
(`traceview.dashboards.html_page`), rendered from the templates in `dashboards/templates/`, which
also hold the escaping rules. Tables carry the numbers as text, so the report reads even with
JavaScript off.
"""

from __future__ import annotations

import polars as pl

from traceview.dashboards import figures
from traceview.dashboards.diff_report import diff_section
from traceview.dashboards.html_page import Page, fmt_ms, fmt_pct, header_item, heading, items, table, text
from traceview.dashboards.report_limits import expected_section, roofline_section, throughput_section, what_if_section
from traceview.dashboards.timeline_page import TimelineData
from traceview.summary_text import finding_heading, headline_lines, size_text
from traceview.terms import (
    DEVICE_PHASE_COLUMNS,
    ITERATION_LABELS,
    ITERATION_TERMS,
    REMAINDERS,
    TABLE_TERMS,
    TERM_LABELS,
    WALL_PHASE_COLUMNS,
)

RAW_WINDOW_TASKS = 4_000  # raw tasks drawn per timeline window in a report
TIMELINE_LIMIT = 5_000  # the whole-trace timeline is binned above this many tasks
MAX_STEP_ROWS = 2_000  # rows of the per-step decomposition table
KERNELS_PER_RANK = 20

STEP_TERMS = [(f"{term}_us", TERM_LABELS[term]) for term in ("duration", *TABLE_TERMS)]

# ---- sections ----


def _header(summary: dict) -> list[dict]:
    devices = sorted({r["device"] for r in summary["ranks"] if r.get("device")})
    n = len(summary["ranks"])
    from traceview.version import __version__

    # no date: the same profile gives the same report, byte for byte (the file's time says when)
    return [
        header_item("traceview report"),
        header_item(summary.get("source"), "profile-path"),
        header_item(f"{n} rank{'s' if n != 1 else ''}"),
        header_item(", ".join(devices) or "device unknown"),
        header_item(f"traceview {__version__}", cls="note version"),
    ]


def findings_section(summary: dict) -> list[dict]:
    """Rule findings (each citing its numbers), straggler, long steps, failed ranks, warnings."""
    blocks: list[dict] = []
    rows = [{**f, "heading": finding_heading(f)} for f in summary.get("findings_by_rule") or []]
    if rows:
        blocks.append({"kind": "findings", "rows": rows})
    straggler = figures.straggler_line(summary)
    if straggler:
        blocks.append(text(straggler, block_id="straggler"))
    long_steps = figures.long_step_lines(summary)
    if long_steps:
        blocks.append(items(long_steps))
    if summary.get("failures"):
        blocks += [heading("Failed ranks", "bad"), items(summary["failures"], "failures")]
    if summary.get("warnings"):
        blocks += [heading("Warnings", "warn"), items(summary["warnings"], "warnings")]
    return blocks or [text("No finding: nothing above the rules' thresholds, no straggler or long step.")]


def step_rows(summary: dict) -> list[dict]:
    return [{"rank": r["rank"], **s} for r in summary["ranks"] for s in r["steps"]]


def steps_section(page: Page, summary: dict) -> list[dict]:
    rows = step_rows(summary)
    cols = [("rank", "rank", None), ("step", "step", None)] + [(k, f"{t} (ms)", fmt_ms) for k, t in STEP_TERMS]
    whole = [{"rank": r["rank"], **(r["trace"] or {})} for r in summary["ranks"]]
    whole_cols = (
        [("rank", "rank", None)]
        + [(k, f"{t} (ms)", fmt_ms) for k, t in STEP_TERMS if k not in ("duration_us", "preparing_us")]
        + [("idle_us", "idle (ms)", fmt_ms)]
    )
    blocks = [
        page.figure(figures.step_breakdown_figure(summary)),
        page.figure(figures.step_time_figure(summary)),
        page.figure(figures.step_heatmap_figure(summary)),
        heading("Per rank and step"),
        text(
            "Definitions: docs/metrics.md. exposed comm = communication not overlapped by compute; "
            "computing + exposed comm + exposed memcpy + free = busy span.",
            "note",
        ),
        table(rows[:MAX_STEP_ROWS], cols, "steps-table"),
    ]
    if len(rows) > MAX_STEP_ROWS:
        blocks.append(
            text(f"First {MAX_STEP_ROWS:,} of {len(rows):,} rank-step rows; all are in --format json/csv.", "note")
        )
    return blocks + [heading("Whole trace per rank"), table(whole, whole_cols, "trace-table")]


ITERATION_COLUMNS = [("iteration_us", ITERATION_LABELS["iteration"])] + [
    (f"{t}_us", ITERATION_LABELS[t]) for t in ITERATION_TERMS
]


#: The phase columns in the report: wall time, then device time.
PHASE_ORDER = [*WALL_PHASE_COLUMNS, *DEVICE_PHASE_COLUMNS]


def iteration_section(summary: dict) -> list[dict]:
    """The headline (`summary_text.headline_lines`) and where each rank-step's iteration went."""
    lines = headline_lines(summary.get("headline"))
    if not lines:
        return [text("No iteration: the profile has no steps.", "note")]
    rows = [
        {"rank": r["rank"], "step": s["step"], **s, "window": s.get("iteration_rule")}
        for r in summary["ranks"]
        for s in r["steps"]
        if s.get("iteration_us") is not None
    ]
    cols = [("rank", "rank", None), ("step", "step", None)] + [(k, f"{t} (ms)", fmt_ms) for k, t in ITERATION_COLUMNS]
    blocks = [text(" ".join(line.strip() for line in lines), block_id="headline")]
    blocks.append(
        text(
            "The iteration is the whole step, host included (iterations tile the run); its terms add up to it "
            "(docs/metrics.md, 'The iteration').",
            "note",
        )
    )
    blocks.append(
        table(rows[:MAX_STEP_ROWS], cols + [("window", "window", None)], "iteration-table", text_columns=("window",))
    )
    phased = [r for r in rows if r.get("wall_forward_us") is not None]
    if phased:
        phase_cols = [("rank", "rank", None), ("step", "step", None)] + [
            (f"{c}_us", f"{ITERATION_LABELS[c]} (ms)", fmt_ms) for c in PHASE_ORDER
        ]
        blocks.append(
            text(
                "Phases: wall times add up to the iteration, device times to the device's busy time in it "
                "(docs/metrics.md, 'Phases').",
                "note",
            )
        )
        blocks.append(table(phased[:MAX_STEP_ROWS], phase_cols, "phase-table"))
    return blocks


def classes_section(page: Page, summary: dict) -> list[dict]:
    class_rows = [{"rank": r["rank"], **c} for r in summary["ranks"] for c in r["compute_classes"]]
    kernel_rows = [{"rank": r["rank"], **k} for r in summary["ranks"] for k in r["top_kernels"][:KERNELS_PER_RANK]]
    worst = max((r.get("unclassified_share") or 0 for r in summary["ranks"]), default=0)
    class_cols = [
        ("rank", "rank", None),
        ("class", "class", None),
        ("group", "group", None),
        ("time_us", "time (ms)", fmt_ms),
        ("share", "share (%)", fmt_pct),
        ("count", "tasks", None),
    ]
    kernel_cols = [
        ("rank", "rank", None),
        ("short_name", "kernel", None),
        ("class", "class", None),
        ("count", "count", None),
        ("total_us", "total (ms)", fmt_ms),
        ("mean_us", "mean (µs)", lambda v: f"{v:,.3f}"),
        ("share", "share (%)", fmt_pct),
    ]
    return [
        page.figure(figures.compute_classes_figure(summary)),
        table(class_rows, class_cols, "classes-table", text_columns=("class", "group")),
        text(f"Unclassified device time: at most {worst * 100:.2f} % of a rank's device time.", "note"),
        heading(f"Top kernels (per rank, up to {KERNELS_PER_RANK})"),
        table(
            kernel_rows,
            kernel_cols,
            "kernels-table",
            text_columns=("short_name", "class"),
            hover={"short_name": "name"},
        ),
        *kernels_and_operators(summary),
    ]


def kernels_and_operators(summary: dict) -> list[dict]:
    """The kernels over all ranks (with several ranks) and the operators by device time."""
    blocks = []
    if len(summary["ranks"]) > 1 and summary.get("kernels"):
        cols = [
            ("short_name", "kernel", None),
            ("class", "class", None),
            ("ranks", "ranks", None),
            ("total_us", "total (ms)", fmt_ms),
            ("share", "share (%)", fmt_pct),
            *((f"rank_{q}_us", f"{q} per rank (ms)", fmt_ms) for q in ("min", "median", "max")),
            ("max_rank", "max on rank", None),
        ]
        blocks += [
            heading("Kernels over all ranks"),
            table(summary["kernels"], cols, "kernel-totals-table", ("short_name", "class"), {"short_name": "name"}),
        ]
    if summary.get("operators"):
        cols = [
            ("operator", "operator", None),
            ("input_shapes", "input shapes", None),
            ("calls", "calls", None),
            ("kernels", "tasks", None),
            ("device_us", "device (ms)", fmt_ms),
            ("share", "share (%)", fmt_pct),
            ("device_per_call_us", "device per call (µs)", lambda v: f"{v:,.3f}"),
            ("top_kernel_short", "top kernel", None),
        ]
        text_cols = ("operator", "input_shapes", "top_kernel_short")
        blocks += [
            heading("Operators by device time (all ranks; the tasks each host operator launched)"),
            table(summary["operators"], cols, "operators-table", text_cols, {"top_kernel_short": "top_kernel"}),
        ]
    return blocks


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


def timeline_section(page: Page, trace, summary: dict) -> list[dict]:
    data = TimelineData.from_trace(trace)
    if not data.tasks.height:
        return [text("No device tasks.")]
    fig, note, mode = data.figure(*data.full_window(), limit=TIMELINE_LIMIT)
    binned = mode == "binned"
    blocks = [
        page.figure(
            fig,
            note=("Downsampled: " if binned else "")
            + note
            + (" (each cell: the lane's busy fraction in the bin)" if binned else ""),
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
        blocks.append(page.figure(fig, note=note + cut))
    return blocks


def _us(value) -> str:
    return f"{value:,.3f}"


def cross_rank_section(summary: dict) -> list[dict]:
    cross = summary.get("cross_rank")
    if not cross:
        return [text("One rank: no cross-rank analysis.")]
    rank_cols = [
        ("rank", "rank", None),
        ("instances", "collectives", None),
        ("total_wait_us", "total wait (ms)", fmt_ms),
        ("mean_wait_us", "mean wait (µs)", _us),
        ("mean_start_skew_us", "mean start skew (µs)", _us),
        ("last_arrivals", "last to arrive", None),
        ("is_straggler", "straggler", None),
    ]
    skew_cols = [
        ("step", "step", None),
        ("n_ranks", "ranks", None),
        ("min_us", "min (ms)", fmt_ms),
        ("max_us", "max (ms)", fmt_ms),
        ("skew_us", "skew (ms)", fmt_ms),
        ("skew_frac", "skew (%)", fmt_pct),
        ("longest_step_rank", "longest step on", None),
        ("shortest_step_rank", "shortest step on", None),
    ]
    collective_cols = [
        ("collective", "collective", None),
        ("process_group", "group", None),
        ("instances", "instances", None),
        ("transfer_us", "transfer per rank (ms)", fmt_ms),
        ("wait_us", "wait, all ranks (ms)", fmt_ms),
        ("busbw_gbps", "bus bandwidth (GB/s)", lambda v: f"{v:,.1f}"),
    ]
    return [
        heading("Waits in collectives per rank"),
        table(cross["ranks"], rank_cols, "cross-ranks-table"),
        heading("Step skew"),
        table(cross["step_skew"], skew_cols, "step-skew-table"),
        heading("Collectives"),
        table(cross["collectives"], collective_cols, "collectives-table", text_columns=("collective", "process_group")),
    ]


def memory_section(page: Page, trace, summary: dict) -> list[dict]:
    """Each rank's device memory over time, its peaks and what held them (the summary's memory)."""
    from traceview.dashboards.memory_figure import lane_records, memory_figure

    rows = []
    for r in summary["ranks"]:
        for m in r.get("memory") or []:
            if m["device"] is None or (m["peak_allocated_bytes"] is None and m["peak_reserved_bytes"] is None):
                continue
            held = [a for a in m["at_peak"] if a["operator"] not in REMAINDERS][:3]
            rows.append(
                {
                    "rank": r["rank"],
                    "series": f"{m['device_type']}:{m['device']}" + (f" {m['component']}" if m["component"] else ""),
                    "peak_allocated_bytes": m["peak_allocated_bytes"],
                    "peak_reserved_bytes": m["peak_reserved_bytes"],
                    "peak_step": m["peak_step"],
                    "peak_device_frac": m["peak_device_frac"],
                    "held": ", ".join(f"{a['operator']} {size_text(a['live_bytes'])}" for a in held),
                }
            )
    if not rows:
        return [text("No device memory recorded: torch.profiler(profile_memory=True) or torch_npu's memory files.")]
    cols = [
        ("rank", "rank", None),
        ("series", "device", None),
        ("peak_allocated_bytes", "peak allocated", size_text),
        ("peak_reserved_bytes", "peak reserved", size_text),
        ("peak_device_frac", "reserved, of the device (%)", fmt_pct),
        ("peak_step", "peak in step", None),
        ("held", "largest blocks held at the peak, by operator", None),
    ]
    return [
        page.figure(memory_figure(lane_records(trace))),
        table(rows, cols, "memory-table", text_columns=("series", "held")),
    ]


def report_html(trace, summary: dict, diff: dict | None = None) -> str:
    """The whole report of `trace` (with `summary` = `build_summary(trace, ...)`) as one HTML page."""
    page = Page(f"traceview report: {summary.get('source')}")
    page.add("iteration", "Where the iteration went", iteration_section(summary))
    page.add("findings", "Findings", findings_section(summary))
    if summary.get("throughput"):
        page.add("throughput", "Throughput", throughput_section(summary))
    if summary.get("what_if"):
        page.add("what-if", "What if", what_if_section(summary))
    page.add("steps", "Step time decomposition", steps_section(page, summary))
    page.add("classes", "Compute classes and kernels", classes_section(page, summary))
    page.add("timeline", "Timeline", timeline_section(page, trace, summary))
    page.add("cross-rank", "Cross-rank", cross_rank_section(summary))
    page.add("memory", "Device memory", memory_section(page, trace, summary))
    page.add("roofline", "Operators against the roofline", roofline_section(page, trace, summary))
    if summary.get("expected"):
        page.add("expected", "Expected from the model, and measured", expected_section(summary))
    if diff is not None:
        page.add("diff", "Compared with the baseline", diff_section(diff))
    return page.html(_header(summary), {"traceview-summary": summary})
