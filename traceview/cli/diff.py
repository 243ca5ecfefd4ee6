"""`traceview diff`: text and JSON renderings of `RunDiff.to_dict()` (the HTML report renders the
same dict, so every output shows the same numbers)."""

from __future__ import annotations

import re

from traceview.cli.text import bullet_list, table
from traceview.run_diff import BASE, NEW, int_ranges, iteration_headline
from traceview.safe_text import one_line_strings
from traceview.summary_text import size_text
from traceview.terms import DIFF_TERMS, EXPOSED_COMM, ITERATION_LABELS
from traceview.terms import TERM_LABELS as STEP_TERM_LABELS

#: Above this many ranks the step-time table shows only the all-ranks row.
MAX_RANK_ROWS = 8
NAME_WIDTH = 60

#: term -> label in the text output, in the order of `traceview.analysis.diff.DIFF_TERMS`.
TERM_LABELS = {
    term: {"free": "  of which free (between tasks)", "busy_span": "busy span (first to last task)"}.get(
        term, STEP_TERM_LABELS.get(term)
    )
    for term in DIFF_TERMS
}
#: The terms whose deltas add up to the step-time delta (see docs/diff.md).
IDENTITY = ("computing", EXPOSED_COMM, "exposed_memcpy", "idle")

STEP_COLUMNS = [
    ("rank", "rank"),
    ("base_steps", "steps base"),
    ("new_steps", "steps new"),
    ("base_ms", "base ms"),
    ("new_ms", "new ms"),
    ("delta_ms", "delta ms"),
    ("delta_pct", "delta %"),
    ("base_median_ms", "median base"),
    ("new_median_ms", "median new"),
    ("median_delta_pct", "median delta %"),
]
TERM_COLUMNS = [
    ("label", "term"),
    ("base_ms", "base ms"),
    ("new_ms", "new ms"),
    ("delta_ms", "delta ms"),
    ("delta_pct", "delta %"),
]
ITERATION_COLUMNS = [*TERM_COLUMNS, ("share_pct", "% of the change")]
CLASS_COLUMNS = [
    ("class", "class"),
    ("group", "group"),
    ("base_ms", "base ms"),
    ("new_ms", "new ms"),
    ("delta_ms", "delta ms"),
    ("delta_pct", "delta %"),
    ("base_share_pct", "share base %"),
    ("new_share_pct", "share new %"),
]
KERNEL_COLUMNS = [
    ("name", "kernel"),
    ("class", "class"),
    ("base_count", "count base"),
    ("new_count", "count new"),
    ("base_ms", "base ms"),
    ("new_ms", "new ms"),
    ("delta_ms", "delta ms"),
    ("delta_pct", "delta %"),
    ("base_mean_us", "mean us base"),
    ("new_mean_us", "mean us new"),
]
ONE_SIDE_COLUMNS = [("name", "kernel"), ("class", "class"), ("count", "count"), ("ms", "ms"), ("mean_us", "mean us")]
MEMORY_COLUMNS = [
    ("rank", "rank"),
    ("series", "device"),
    ("base", "peak base"),
    ("new", "peak new"),
    ("delta", "delta"),
    ("pct", "delta %"),
    ("base_reserved", "reserved base"),
    ("new_reserved", "reserved new"),
]
COLL_COLUMNS = [
    ("collective", "collective"),
    ("process_group", "group"),
    ("base_count", "count base"),
    ("new_count", "count new"),
    ("base_ms", "time base ms"),
    ("new_ms", "time new ms"),
    ("base_exposed_ms", "exposed base ms"),
    ("new_exposed_ms", "exposed new ms"),
    ("delta_exposed_ms", "exposed delta ms"),
]


#: Namespace prefixes left out of kernel names in the text tables (JSON keeps the exact names).
_NOISE = re.compile(r"^void |\(anonymous namespace\)::|\b(?:at::native|at::detail|at::cuda|pytorch_flash|cutlass)::")


def _short(name: str) -> str:
    """A kernel name for a text table: without `void`, common namespaces and a C++ signature's
    argument list (what tells kernels apart is mostly in the template arguments), cut to NAME_WIDTH
    characters. `Memset (Device)` and other names that are not signatures stay whole."""
    short = _NOISE.sub("", name)
    if short.endswith(")"):
        depth = 0
        for i in range(len(short) - 1, 0, -1):
            depth += {")": 1, "(": -1}.get(short[i], 0)
            if depth == 0:
                head = short[:i].rstrip()
                short = head if ("<" in head or "::" in head) else short  # a C++ signature's arguments
                break
    return short if len(short) <= NAME_WIDTH else short[: NAME_WIDTH - 1] + "…"


def _ms(row: dict) -> dict:
    """The row with every `<x>_us` value also as `<x>_ms`, and shares as percent."""
    out = dict(row)
    for k, v in row.items():
        if k.endswith("_us") and not k.endswith("mean_us"):
            out[k.removesuffix("_us") + "_ms"] = None if v is None else v / 1000
        if k.endswith("_share") and not k.startswith("delta"):
            out[k + "_pct"] = None if v is None else 100 * v
    return out


def _run_line(label: str, run: dict) -> str:
    n = len(run["ranks"]) or 1
    what = ", ".join(run["formats"] + run["devices"])
    if run["window"] == "steps":
        window = f"steps {int_ranges(run['step_numbers'])} ({', '.join(run['window_rules']) or 'no device window'})"
    else:
        window = "whole trace"
    k = run["rank_steps"]
    return (
        f"  {label:<4} {run['source']}: {n} rank{'s' if n != 1 else ''} ({what}), {window}: "
        f"{k} rank-step{'s' if k != 1 else ''}"
    )


def _steps_text(doc: dict) -> list[str]:
    rows = doc["step_time"]
    if len(rows) > MAX_RANK_ROWS + 1:
        rows = [r for r in rows if r["rank"] is None]
    shown = [
        dict(
            _ms(r),
            rank="all" if r["rank"] is None else r["rank"],
            base_ms=_div(r["base_mean_us"]),
            new_ms=_div(r["new_mean_us"]),
            base_median_ms=_div(r["base_median_us"]),
            new_median_ms=_div(r["new_median_us"]),
        )
        for r in rows
    ]
    return ["", "Step time (mean and median per step):", table(shown, STEP_COLUMNS)]


def _div(us):
    return None if us is None else us / 1000


def _terms_text(doc: dict) -> list[str]:
    terms = {t["term"]: t for t in doc["terms"] if t["rank"] is None}
    if not terms:
        return []
    rows = [dict(_ms(t), label=TERM_LABELS.get(name, name)) for name, t in terms.items()]
    out = ["", "Where the step time went (ms per step, all ranks):", table(rows, TERM_COLUMNS)]
    step = terms.get("duration", {}).get("delta_us")
    parts = [terms.get(t, {}).get("delta_us") for t in IDENTITY]
    if step is not None and None not in parts:
        terms_sum = " + ".join(f"{TERM_LABELS[t]} {v / 1000:+,.3f}" for t, v in zip(IDENTITY, parts))
        out.append(f"  step time delta {step / 1000:+,.3f} ms = {terms_sum}")
    return out


def _classes_text(doc: dict) -> list[str]:
    if not doc["classes"]:
        return []
    dev = doc["device_time"]
    pct = "" if dev["delta_pct"] is None else f" ({dev['delta_pct']:+.1f} %)"
    return [
        "",
        "Compute classes (device time per step; raw sum of task durations, concurrent tasks all count):",
        table([_ms(c) for c in doc["classes"]], CLASS_COLUMNS),
        f"  device time per step: {BASE} {dev['base_us'] / 1000:,.3f} ms, {NEW} {dev['new_us'] / 1000:,.3f} ms, "
        f"delta {dev['delta_us'] / 1000:+,.3f} ms{pct}",
    ]


def _kernels_text(doc: dict) -> list[str]:
    counts = doc["kernel_counts"]
    out = [
        "",
        f"Kernels, matched by exact name ({counts['both']:,} in both runs, {counts['added']:,} only in {NEW}, "
        f"{counts['removed']:,} only in {BASE}); time in ms per step:",
    ]

    def more(shown: int, total: int) -> list[str]:
        return [f"  (and {total - shown:,} more)"] if total > shown else []

    for key, title, total in (
        ("lost", "lost the most time", counts["lost"]),
        ("gained", "gained the most time", counts["gained"]),
    ):
        if doc[f"kernels_{key}"]:
            rows = [dict(_ms(r), name=_short(r["name"])) for r in doc[f"kernels_{key}"]]
            out += [f"  {title}:", table(rows, KERNEL_COLUMNS), *more(len(rows), total)]
    for key, side, title in (
        ("added", "new", f"only in {NEW} (added)"),
        ("removed", "base", f"only in {BASE} (removed)"),
    ):
        if doc[f"kernels_{key}"]:
            rows = [
                {
                    "name": _short(r["name"]),
                    "class": r["class"],
                    "count": r[f"{side}_count"],
                    "ms": r[f"{side}_us"] / 1000,
                    "mean_us": r[f"{side}_mean_us"],
                }
                for r in doc[f"kernels_{key}"]
            ]
            out += [f"  {title}:", table(rows, ONE_SIDE_COLUMNS), *more(len(rows), counts[key])]
    if not any(counts.values()):
        out.append("  no device tasks in either run")
    elif not any(counts[key] for key in ("gained", "lost", "added", "removed")):
        out.append("  no kernel gained or lost time")
    return out


def _collectives_text(doc: dict) -> list[str]:
    if not doc["collectives"]:
        return []
    rows = [
        dict(_ms(r), collective=r["collective"] or "?", process_group=r["process_group"] or "-")
        for r in doc["collectives"]
    ]
    return [
        "",
        "Communication per collective and process group (per step; exposed = not overlapped with compute):",
        table(rows, COLL_COLUMNS),
    ]


def _memory_text(doc: dict) -> list[str]:
    """Peak device memory of both runs, all ranks (the largest over them) and per rank."""
    rows = doc.get("memory") or []
    if not rows:
        return []
    shown = [
        {
            "rank": "all" if r["rank"] is None else r["rank"],
            "series": r["series"] or "",
            "base": size_text(r["base_peak_allocated_bytes"]),
            "new": size_text(r["new_peak_allocated_bytes"]),
            "delta": "-"
            if r["allocated_delta_bytes"] is None
            else ("+" if r["allocated_delta_bytes"] >= 0 else "-") + size_text(abs(r["allocated_delta_bytes"])),
            "pct": r["allocated_delta_pct"],
            "base_reserved": size_text(r["base_peak_reserved_bytes"]),
            "new_reserved": size_text(r["new_peak_reserved_bytes"]),
        }
        for r in rows
    ]
    return ["", "Peak device memory (allocated; reserved beside it):", table(shown, MEMORY_COLUMNS)]


OPERATOR_COLUMNS = [
    ("op", "operator"),
    ("input_dims", "input dims"),
    ("dtype", "dtype"),
    ("base_ms", "BASE ms"),
    ("new_ms", "NEW ms"),
    ("base_tflops", "BASE TFLOP/s"),
    ("new_tflops", "NEW TFLOP/s"),
    ("pct", "TFLOP/s delta %"),
]


def _operators_text(doc: dict) -> list[str]:
    """The operators with recorded shapes whose device time changed most, with their achieved TFLOP/s."""
    rows = doc.get("operators") or []
    if not rows:
        return []
    shown = [
        {
            "op": r["op"],
            "input_dims": (r["input_dims"] or "")[:32],
            "dtype": r["dtype"],
            "base_ms": _div(r["base_device_time_us"]),
            "new_ms": _div(r["new_device_time_us"]),
            "base_tflops": r["base_achieved_tflops_per_s"],
            "new_tflops": r["new_achieved_tflops_per_s"],
            "pct": r["tflops_delta_pct"],
        }
        for r in rows
    ]
    return [
        "",
        "Operators (recorded shapes; whole trace, all ranks), largest device time change first:",
        table(shown, OPERATOR_COLUMNS),
    ]


def _iteration_text(doc: dict) -> list[str]:
    """The headline (the iteration's change and the terms it came from, largest first), then the
    iteration table (all ranks)."""
    line = iteration_headline(doc)
    if line is None:
        return []
    rows = {r["term"]: r for r in doc.get("iteration", []) if r["rank"] is None}
    shown = [
        dict(
            _ms(r),
            label=ITERATION_LABELS[r["term"]],
            base_ms=_div(r["base_us"]),
            new_ms=_div(r["new_us"]),
            share_pct=None if r["share_of_change"] is None else 100 * r["share_of_change"],
        )
        for r in rows.values()
    ]
    return [
        line,
        "",
        "Where the iteration went (ms per step, all ranks; the terms add up to the iteration):",
        table(shown, ITERATION_COLUMNS),
    ]


def diff_text(doc: dict) -> str:
    """A run diff's document (`RunDiff.to_dict(top)`) as the tables of docs/diff.md (its JSON and
    html: `traceview.cli.outputs.DIFF`)."""
    doc = one_line_strings(doc)
    head = "traceview diff" + (f", step {doc['step']} only" if doc["step"] is not None else "")
    lead = _iteration_text(doc)
    parts = [
        head,
        _run_line(BASE, doc["base"]),
        _run_line(NEW, doc["new"]),
        "  values are means per step and rank; delta = NEW - BASE",
    ]
    if lead:
        parts += ["", *lead]
    parts += _steps_text(doc)
    parts += _terms_text(doc)
    parts += _classes_text(doc)
    parts += _kernels_text(doc)
    parts += _collectives_text(doc)
    parts += _memory_text(doc)
    parts += _operators_text(doc)
    for title, items in (("Notes", doc["notes"]), ("Warnings", doc["warnings"]), ("Failed", doc["failures"])):
        block = bullet_list(title, items)
        if block:
            parts += ["", block]
    return "\n".join(parts)
