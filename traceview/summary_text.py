"""The summary document in words: the lines and phrases every view shows the same way (the CLI's
text, the HTML report, the dashboard). Above the model (it reads the summary's rows), below the
views; nothing here computes a number, it only words one.
"""

from __future__ import annotations

import math

from traceview.selection import int_ranges
from traceview.terms import ITERATION_LABELS as LABELS
from traceview.terms import ITERATION_TERMS, TERM_LABELS
from traceview.terms import WALL_PHASE_COLUMNS as PHASE_WALL


def companion_text(row: dict) -> str:
    """A companion of `Trace.companions` in words, the same in every view."""
    tasks = "" if row.get("device_tasks") is None else f", {row['device_tasks']:,} device tasks"
    return (
        f"rank {row['rank']}: {row['source']}: the CUDA/HIP graph capture of the graphs this rank replays"
        f"{tasks}; kept beside the rank (it describes the graphs' kernels), not counted as a rank"
    )


def traced_rate_text(s: dict) -> str:
    """The traced TFLOP/s and MFU of a row (`traced_flops`, or a mean of them) with the coverage
    they stand on, or the note that replaces them: ": 123.4 TFLOP/s, MFU 11.8 % of 989 bf16
    (FLOPs known for 94 % of kernel time)" / ": n/a (FLOPs known for 29 % of kernel time)"."""
    if s.get("traced_note"):
        return f": {s['traced_note']}"
    if s.get("traced_tflops_per_device") is None:
        return ""
    mfu = (
        ""
        if s.get("traced_mfu_frac") is None
        else f", MFU {100 * s['traced_mfu_frac']:.1f} %"
        + (f" of {s['peak_tflops']:g} {s['peak_dtype']}" if s.get("peak_dtype") else "")
    )
    cover = s.get("flops_coverage_frac")
    known = "" if cover is None else f" (FLOPs known for {math.floor(100 * cover)} % of kernel time)"
    return f": {s['traced_tflops_per_device']:,.1f} TFLOP/s{mfu}{known}"


def expected_value_text(value: float | None, unit: str) -> str:
    """A term of the analytical model (`Trace.expected`) in words, the same in every view: µs as
    ms (3 decimals), FLOPs as TFLOP, shares in %; "-" for none."""
    if value is None:
        return "-"
    if unit == "frac":
        return f"{value * 100:.1f} %"
    return f"{value / 1e12:,.3f} TFLOP" if unit == "flop" else f"{value / 1000:,.3f} ms"


def headline_lines(first: dict | None) -> list[str]:
    """The headline of a summary (`doc["headline"]`) in words, the same in every view (summary
    text, report, dashboard): the mean iteration and its largest term, then every term's share of
    the iteration and every phase's share of its wall time, lines of at most 110 characters; []
    without an iteration."""
    if not first or first.get("mean_iteration_us") is None:
        return []
    n = first["iterations"]
    line = f"Iteration: {first['mean_iteration_us'] / 1000:,.3f} ms (mean of {n} rank-step{'s' if n != 1 else ''})"
    if first.get("largest_term"):
        line += f"; largest: {LABELS[first['largest_term']]} {100 * first['largest_term_frac']:.1f} %"
    shares = [
        f"{LABELS[t]} {100 * first[f'{t}_frac']:.1f} %" for t in ITERATION_TERMS if first.get(f"{t}_frac") is not None
    ]
    phase_shares = [
        f"{c.removeprefix('wall_')} {100 * first[f'{c}_frac']:.1f} %"
        for c in PHASE_WALL
        if first.get(f"{c}_frac") is not None
    ]
    if first.get("mfu_frac") is not None or first.get("tokens_per_s_per_device") is not None:
        tokens = first.get("tokens_per_s_per_device")
        line += f"; {tokens:,.0f} tokens/s per device" if tokens is not None else ""
        if first.get("mfu_frac") is not None:
            line += f"; MFU {100 * first['mfu_frac']:.1f} % (HFU {100 * first['hfu_frac']:.1f} %)"
    lines = [line]
    for head, items in (("of the iteration:", shares), ("by phase (wall time):", phase_shares)):
        if not items:
            continue
        lines.append(head)
        for share in items:  # whole items per line, never a label cut in two
            if len(lines[-1]) + len(share) + 2 > 110:
                lines[-1] += ","
                lines.append("  " + share)
            else:
                lines[-1] += (" " if lines[-1].endswith(":") else ", ") + share
    return lines + [
        first[k] for k in ("mfu_formula", "hfu_formula") if first.get("mfu_frac") is not None and first.get(k)
    ]


def size_text(n: int | None) -> str:
    """Bytes in binary units with 2 decimals ("1.13 GiB"), as PyTorch's memory_summary writes them;
    "-" for None. The same in every view (summary text, report, dashboard)."""
    if n is None:
        return "-"
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if abs(n) >= 1 << shift:
            return f"{n / (1 << shift):,.2f} {unit}"
    return f"{n:,} B"


def finding_heading(finding: dict) -> str:
    """A grouped finding's heading (`findings_by_rule` row) in words, the same in every view: its
    title, the term it explains, and the ranks it fired on when several (which one is shown)."""
    head = finding["title"]
    term = finding.get("term")
    if term:
        head += f" [{LABELS.get(term) or TERM_LABELS.get(term, term)}]"
    ranks = finding.get("ranks") or []
    if len(ranks) > 1:
        head += f" (ranks {int_ranges(ranks)}; shown: rank {finding['rank']})"
    return head
