"""The report's sections on how far the run is from the hardware's limits (docs/report.md,
docs/roofline.md): throughput and MFU, the what-if bounds, the operators against the roofline and
the analytical model beside the measured terms. Each takes the summary document (`build_summary`)
and returns report blocks (`html_page`)."""

from __future__ import annotations

from traceview.dashboards.html_page import Page, fmt_ms, fmt_pct, items, table, text
from traceview.summary_text import expected_value_text


def roofline_section(page: Page, trace, summary: dict) -> list[dict]:
    """The operators against the roofline, the FLOPs traced per step and their anatomy (the
    summary's roofline; docs/roofline.md)."""
    from traceview.dashboards.roofline_figure import roofline_figure

    ranks = [r for r in summary["ranks"] if r.get("roofline")]
    if not ranks:
        return [text("No operator with recorded shapes: record the profile with torch.profiler(record_shapes=True).")]
    steps = [{"rank": r["rank"], **s} for r in ranks for s in r["roofline"]["steps"]]
    anatomy = [{"rank": r["rank"], **a} for r in ranks for a in r["roofline"]["anatomy"]]
    operators = [{"rank": r["rank"], **o} for r in ranks for o in r["roofline"]["operators"]]
    return [
        page.figure(roofline_figure(trace.op_roofline())),
        table(
            operators,
            [
                ("rank", "rank", None),
                ("op", "operator", None),
                ("input_dims", "input dims", None),
                ("dtype", "dtype", None),
                ("algorithm", "algorithm", lambda v: v or ""),
                ("count", "calls", None),
                ("device_time_us", "device ms", fmt_ms),
                ("achieved_tflops_per_s", "TFLOP/s", None),
                ("peak_frac", "% of peak", fmt_pct),
                ("roofline_frac", "% of roofline", fmt_pct),
                ("bound", "bound", None),
            ],
            "roofline-table",
            text_columns=("op", "input_dims", "algorithm", "bound"),
        ),
        table(
            steps,
            [
                ("rank", "rank", None),
                ("step", "step", None),
                ("traced_flops", "traced TFLOP", lambda v: None if v is None else f"{v / 1e12:,.3f}"),
                ("traced_tflops_per_device", "TFLOP/s per device", None),
                ("traced_mfu_frac", "MFU (%)", fmt_pct),
                ("flops_coverage_frac", "FLOPs known for (% of kernel time)", fmt_pct),
                ("traced_note", "note", lambda v: v or ""),
                ("peak_dtype", "peak of", None),
            ],
            "traced-flops-table",
        ),
        table(
            anatomy,
            [
                ("rank", "rank", None),
                ("family", "operator family", None),
                ("flops_frac", "share of FLOPs (%)", fmt_pct),
                ("device_time_frac", "share of device time (%)", fmt_pct),
            ],
            "anatomy-table",
            text_columns=("family",),
        ),
    ]


def what_if_section(summary: dict) -> list[dict]:
    """The what-if bounds on the mean iteration (the summary's "what_if"; docs/roofline.md)."""
    return [
        text(
            "Each row changes one measured part of the mean iteration and keeps the rest: a bound, not a "
            "prediction (docs/roofline.md, 'What-if').",
            "note",
        ),
        table(
            summary["what_if"],
            [
                ("scenario", "scenario", None),
                ("iteration_us", "iteration (ms)", fmt_ms),
                ("bound_us", "bound (ms)", fmt_ms),
                ("saving_us", "saving (ms)", fmt_ms),
                ("speedup", "speedup", lambda v: "-" if v is None else f"{v:.2f}x"),
                ("assumption", "assumption", None),
            ],
            "what-if-table",
            text_columns=("scenario", "assumption"),
        ),
    ]


def expected_section(summary: dict) -> list[dict]:
    """The analytical model's terms beside the measured ones (the summary's "expected"; docs/roofline.md)."""
    doc = summary["expected"]

    rows = [
        {
            "term": r["term"],
            **{k: expected_value_text(r[k], r["unit"]) for k in ("expected", "measured", "difference")},
            "definition": r["definition"],
        }
        for r in doc["terms"]
    ]
    return [
        text(doc["verdict"], None, "expected-verdict"),
        table(
            rows,
            [
                ("term", "term", None),
                ("expected", "expected", None),
                ("measured", "measured", None),
                ("difference", "measured - expected", None),
                ("definition", "what it is", None),
            ],
            "expected-table",
            text_columns=("term", "expected", "measured", "difference", "definition"),
        ),
    ]


def throughput_section(summary: dict) -> list[dict]:
    rows = summary.get("throughput") or []
    cols = [
        ("step", "step", None),
        ("step_time_us", "iteration, slowest rank (ms)", fmt_ms),
        ("tokens_per_s_per_device", "tokens/s per device", lambda v: f"{v:,.0f}"),
        ("model_tflops_per_device", "model TFLOP/s per device", lambda v: f"{v:,.1f}"),
        ("peak_tflops", "peak TFLOP/s", lambda v: f"{v:,.0f}"),
        ("mfu_frac", "MFU (%)", fmt_pct),
        ("hfu_frac", "HFU (%)", fmt_pct),
    ]
    if any(r.get("traced_mfu_frac") is not None or r.get("traced_note") for r in rows):
        rows = [dict(r, traced_mfu_frac=r.get("traced_note") or r.get("traced_mfu_frac")) for r in rows]
        cols += [
            ("traced_tflops_per_device", "traced TFLOP/s per device", lambda v: "-" if v is None else f"{v:,.1f}"),
            ("traced_mfu_frac", "traced MFU (%)", lambda v: v if isinstance(v, str) else fmt_pct(v)),
        ]
    blocks = [table(rows, cols, "throughput-table")]
    formulas = [rows[0][k] for k in ("mfu_formula", "hfu_formula", "traced_formula") if rows and rows[0].get(k)]
    if formulas:
        blocks.append(items(formulas, "throughput-formulas"))
    check = next((r["check"] for r in rows if r.get("check")), None)
    if check:
        blocks.append(text(check, "bad", "throughput-check"))
    return blocks
