"""`traceview summary`: text and JSON renderings of `traceview.summary.build_summary`."""

from __future__ import annotations

import textwrap

from traceview.cli.roofline import expected_text
from traceview.cli.text import bullet_list, table
from traceview.safe_text import one_line, one_line_strings
from traceview.summary_text import companion_text, finding_heading, headline_lines, size_text, traced_rate_text
from traceview.terms import (
    DEVICE_PHASE_COLUMNS,
    EXPOSED_COMM,
    ITERATION_LABELS,
    ITERATION_TERMS,
    MIN_FLOPS_COVERAGE,
    REMAINDERS,
    TABLE_TERMS,
    TERM_LABELS,
    WALL_PHASE_COLUMNS,
)

#: (summary key, column header) of the per-step table; values shown in ms.
STEP_COLUMNS = [
    ("step", "step"),
    ("duration_ms", "step ms"),
    *((f"{term}_ms", TERM_LABELS[term]) for term in TABLE_TERMS),
    ("exposed_comm_pct", f"{TERM_LABELS[EXPOSED_COMM]} %"),
]
#: (summary key, column header) of the per-step iteration table (ms); the terms add up to the iteration.
ITERATION_TABLE = [
    ("step", "step"),
    ("iteration_ms", "iteration ms"),
    *((f"{t}_ms", ITERATION_LABELS[t]) for t in ITERATION_TERMS),
    ("iteration_rule", "window"),
]
#: (summary key, column header) of the per-step phase table (ms): wall time, then device time.
PHASE_TABLE = [
    ("step", "step"),
    *((f"{c}_ms", ITERATION_LABELS[c]) for c in [*WALL_PHASE_COLUMNS, *DEVICE_PHASE_COLUMNS]),
]
#: Above this many ranks the text output shows one row per rank instead of per-rank step tables.
MAX_RANK_TABLES = 8


def _ms(terms: dict) -> dict:
    out = {
        k.removesuffix("_us") + "_ms": (None if v is None else v / 1000) for k, v in terms.items() if k.endswith("_us")
    }
    share = terms.get(f"{EXPOSED_COMM}_frac")
    out["exposed_comm_pct"] = None if share is None else 100 * share
    return out


IDLE_COLUMNS = [
    ("stream", "stream"),
    ("tasks", "tasks"),
    ("busy_ms", "busy ms"),
    ("idle_ms", "idle ms"),
    ("host_wait_pct", "host wait %"),
    ("kernel_wait_pct", "kernel wait %"),
    ("other_pct", "other %"),
]


CLASS_COLUMNS = [
    ("class", "class"),
    ("group", "group"),
    ("time_ms", "time ms"),
    ("pct", "% of device time"),
    ("count", "tasks"),
]
KERNEL_COLUMNS = [
    ("name", "kernel"),
    ("class", "class"),
    ("count", "count"),
    ("total_ms", "total ms"),
    ("mean_us", "mean us"),
    ("pct", "%"),
]
NAME_WIDTH = 60
#: The cross-rank kernel table (ms; min / median / max of the kernel's time per rank).
TOTAL_COLUMNS = [
    ("name", "kernel"),
    ("class", "class"),
    ("ranks", "ranks"),
    ("total_ms", "total ms"),
    ("pct", "%"),
    ("rank_min_ms", "min/rank ms"),
    ("rank_median_ms", "median/rank ms"),
    ("rank_max_ms", "max/rank ms"),
    ("max_rank", "max on rank"),
]
#: The operator table (device time of the tasks each host operator launched).
OPERATOR_COLUMNS = [
    ("operator", "operator"),
    ("input_shapes", "input shapes"),
    ("calls", "calls"),
    ("kernels", "tasks"),
    ("device_ms", "device ms"),
    ("pct", "%"),
    ("per_call_us", "device us/call"),
    ("top_kernel", "top kernel"),
]
ROWS_SHOWN = 10


def _profile_tables(doc: dict) -> list[str]:
    """The kernels over all ranks (with several ranks) and the operators."""
    out = []
    if len(doc["ranks"]) > 1 and doc.get("kernels"):
        rows = [
            dict(
                k,
                name=_short(k["short_name"]),
                total_ms=k["total_us"] / 1000,
                pct=100 * k["share"],
                **{f"rank_{q}_ms": k[f"rank_{q}_us"] / 1000 for q in ("min", "median", "max")},
            )
            for k in doc["kernels"][:ROWS_SHOWN]
        ]
        out += ["", "Kernels over all ranks:", table(rows, TOTAL_COLUMNS)]
    if doc.get("operators"):
        rows = [
            dict(
                o,
                input_shapes=_short(o["input_shapes"] or "-"),
                device_ms=o["device_us"] / 1000,
                pct=100 * o["share"],
                per_call_us=o["device_per_call_us"],
                top_kernel=_short(o["top_kernel_short"] or "-"),
            )
            for o in doc["operators"][:ROWS_SHOWN]
        ]
        out += ["", "Operators by device time (all ranks):", table(rows, OPERATOR_COLUMNS)]
    return out


def _short(name: str) -> str:
    return name if len(name) <= NAME_WIDTH else name[: NAME_WIDTH - 1] + "…"


def _rank_details(r: dict) -> list[str]:
    """Device time by phase, compute classes, top kernels, idle per stream, launch delays and long
    steps of one rank."""
    out = []
    phased = r.get("device_phases") or {}
    if any(v for v in phased.values()):
        parts = ", ".join(f"{c.removeprefix('device_')} {phased[f'{c}_us'] / 1000:,.3f}" for c in DEVICE_PHASE_COLUMNS)
        out += ["", f"  device time by phase, whole trace (ms): {parts}"]
    if r.get("compute_classes"):
        rows = [dict(c, time_ms=c["time_us"] / 1000, pct=100 * c["share"]) for c in r["compute_classes"]]
        out += [
            "",
            f"  compute classes (unclassified {100 * r['unclassified_share']:.2f} %):",
            table(rows, CLASS_COLUMNS),
        ]
    if r.get("top_kernels"):
        rows = [
            dict(k, name=_short(k.get("short_name") or k["name"]), total_ms=k["total_us"] / 1000, pct=100 * k["share"])
            for k in r["top_kernels"]
        ]
        out += ["", "  top kernels:", table(rows, KERNEL_COLUMNS)]
    if r.get("stream_idle"):
        rows = [
            {
                "stream": "HCCL" if s["stream"] is None else s["stream"],
                "tasks": s["tasks"],
                "busy_ms": s["busy_us"] / 1000,
                "idle_ms": s["idle_us"] / 1000,
                **{
                    f"{c}_pct": None if s[f"{c}_frac"] is None else 100 * s[f"{c}_frac"]
                    for c in ("host_wait", "kernel_wait", "other")
                },
            }
            for s in r["stream_idle"]
        ]
        out += ["", "  idle per stream (host wait: the device waited for the launch):", table(rows, IDLE_COLUMNS)]
    d = r.get("launch_delay")
    if d and d.get("count"):
        sync = d.get("synchronous") or 0
        apart = f" ({sync:,} tasks of synchronous calls left out: their call lasts as long as the copy)" if sync else ""
        out.append(
            f"  launch delay (task start - launch end): p50 {d['p50_us']:,.1f} us, p99 {d['p99_us']:,.1f} us, "
            f"max {d['max_us']:,.1f} us over {d['count']:,} asynchronous launches{apart}"
        )
    for s in r.get("long_steps", []):
        out.append(
            f"  long step {s['step']}: {s['slowdown_ratio']:.2f}x the median step, {s['why']} "
            f"(+{s['why_delta_us'] / 1000:,.3f} ms)"
        )
    return out + memory_lines(r.get("memory") or []) + roofline_lines(r.get("roofline"))


def roofline_lines(roofline: dict | None) -> list[str]:
    """A rank's roofline section in words: the FLOPs its recorded operators add up to per step
    and the MFU they give, then the operators with the most device time against the roofline."""
    if not roofline:
        return []
    out = [""]
    for s in roofline["steps"]:
        out.append(
            f"  traced FLOPs, step {s['step']}: {s['traced_flops'] / 1e12:,.3f} TFLOP from recorded shapes"
            f"{traced_rate_text(s)}"
        )
    if roofline["operators"]:
        rows = [
            {
                "op": o["op"],
                "dtype": o["dtype"],
                "count": o["count"],
                "device_ms": o["device_time_us"] / 1000,
                "tflops": o["achieved_tflops_per_s"],
                "peak_pct": None if o["peak_frac"] is None else 100 * o["peak_frac"],
                "bound": o["bound"] or "-",
            }
            for o in roofline["operators"]
        ]
        out += ["  operators against the roofline (traceview roofline PATH for all):", table(rows, ROOFLINE_COLUMNS)]
    return out


ROOFLINE_COLUMNS = [
    ("op", "operator"),
    ("dtype", "dtype"),
    ("count", "calls"),
    ("device_ms", "device ms"),
    ("tflops", "TFLOP/s"),
    ("peak_pct", "% of peak"),
    ("bound", "bound"),
]


#: Operators named per device in the text's "held at the peak" (JSON has `--top` of them).
MEMORY_OPS_SHOWN = 5


def memory_lines(series: list[dict]) -> list[str]:
    """A rank's memory section (`doc["ranks"][i]["memory"]`) in words: per device allocator, its
    peak allocated (and reserved, and the share of the device) and what held the peak; then per
    device one line of the series that record reserved memory only (APP, CANN modules, cudaMalloc)."""
    out = []
    reserved_only: dict[str, list[str]] = {}
    for m in series:
        if m["device"] is not None and m["peak_allocated_bytes"] is None and m["peak_reserved_bytes"] is not None:
            item = f"{m['component'] or 'allocator'} {size_text(m['peak_reserved_bytes'])}"
            if m["peak_device_frac"] is not None:
                item += f" ({100 * m['peak_device_frac']:.1f} % of {size_text(m['device_memory_bytes'])})"
            reserved_only.setdefault(f"{m['device_type']}:{m['device']}", []).append(item)
        if m["device"] is None or m["peak_allocated_bytes"] is None:  # host memory; reserved only: below
            continue
        where = f"{m['device_type']}:{m['device']}" + (f" {m['component']}" if m["component"] else "")
        relative = " (since the trace started)" if m["basis"] == "relative" else ""
        line = f"  memory {where}: peak allocated {size_text(m['peak_allocated_bytes'])}{relative}"
        if m["peak_step"] is not None:
            line += f" in step {m['peak_step']}"
        if m["peak_reserved_bytes"] is not None:
            line += f", reserved {size_text(m['peak_reserved_bytes'])}"
        if m["peak_device_frac"] is not None:
            line += f" ({100 * m['peak_device_frac']:.1f} % of {size_text(m['device_memory_bytes'])})"
        out.append(line)
        shown = [a for a in m["at_peak"] if a["operator"] not in REMAINDERS][:MEMORY_OPS_SHOWN]
        shown += [a for a in m["at_peak"] if a["operator"] in REMAINDERS]
        held = [f"{_short(a['operator'])} {size_text(a['live_bytes'])} ({100 * a['share_frac']:.1f} %)" for a in shown]
        if held:
            _wrapped(out, "    held at the peak:", held)
    for device, items in reserved_only.items():  # APP, CANN modules, cudaMalloc: reserved memory only
        _wrapped(out, f"  memory {device} peak reserved:", items)
    return ["", *out] if out else []


def _wrapped(out: list[str], head: str, items: list[str], width: int = 110) -> None:
    """Append `head` and the comma-separated items to `out`, whole items per line of `width`."""
    out.append(head)
    for item in items:
        if len(out[-1]) + len(item) + 2 > width:
            out[-1] += ","
            out.append("      " + item)
        else:
            out[-1] += (" " if out[-1].endswith(":") else ", ") + item


SKEW_COLUMNS = [
    ("step", "step"),
    ("min_ms", "min ms"),
    ("max_ms", "max ms"),
    ("skew_pct", "skew %"),
    ("longest_step_rank", "longest step on rank"),
]
COLL_COLUMNS = [
    ("collective", "collective"),
    ("process_group", "group"),
    ("instances", "instances"),
    ("transfer_ms", "transfer ms"),
    ("wait_ms", "wait ms (all ranks)"),
    ("busbw_gbps", "bus GB/s"),
]
TPUT_COLUMNS = [
    ("step", "step"),
    ("step_time_ms", "iteration ms (slowest rank)"),
    ("tokens_per_s_per_device", "tokens/s/device"),
    ("model_tflops_per_device", "TFLOP/s/device"),
    ("peak_tflops", "peak"),
    ("mfu_pct", "MFU %"),
    ("hfu_pct", "HFU %"),
]


WHAT_IF_COLUMNS = [
    ("scenario", "scenario"),
    ("iteration_ms", "iteration ms"),
    ("bound_ms", "bound ms"),
    ("saving_ms", "saving ms"),
    ("speedup", "speedup"),
    ("assumption", "assumption"),
]


TRACED_COLUMNS = [("traced_tflops_per_device", "traced TFLOP/s/device"), ("traced_mfu_pct", "traced MFU %")]


def _what_if_text(rows: list[dict] | None) -> list[str]:
    """The what-if bounds on the mean iteration (docs/roofline.md, "What-if")."""
    if not rows:
        return []
    shown = [
        dict(
            r,
            iteration_ms=r["iteration_us"] / 1000,
            bound_ms=r["bound_us"] / 1000,
            saving_ms=r["saving_us"] / 1000,
            speedup=None if r["speedup"] is None else f"{r['speedup']:.2f}x",
        )
        for r in rows
    ]
    return [
        "",
        "What if (bounds on the mean iteration, docs/roofline.md):",
        table(one_line_strings(shown), WHAT_IF_COLUMNS),
    ]


def _cross_rank_text(cross: dict | None) -> list[str]:
    if not cross:
        return []
    out = ["", "Across ranks:"]
    straggler = cross.get("straggler")
    waits = {r["rank"]: r for r in cross.get("ranks", [])}
    if straggler is not None:
        others = [r["mean_wait_us"] for k, r in waits.items() if k != straggler and r["mean_wait_us"] is not None]
        mean_other = sum(others) / len(others) if others else 0.0
        out.append(
            f"  straggler: rank {straggler} (the others wait {mean_other / 1000:,.3f} ms per collective on average; it waits "
            f"{waits[straggler]['mean_wait_us'] / 1000:,.3f} ms)"
        )
    else:
        out.append("  straggler: none found (no matched collective with waits)")
    if cross.get("step_skew"):
        rows = [
            dict(
                r,
                min_ms=r["min_us"] / 1000,
                max_ms=r["max_us"] / 1000,
                skew_pct=None if r["skew_frac"] is None else 100 * r["skew_frac"],
            )
            for r in cross["step_skew"]
        ]
        out += ["  step time across ranks:", table(rows, SKEW_COLUMNS)]
    if cross.get("collectives"):
        rows = [dict(r, transfer_ms=r["transfer_us"] / 1000, wait_ms=r["wait_us"] / 1000) for r in cross["collectives"]]
        out += ["  collectives:", table(rows, COLL_COLUMNS)]
    return out


def _throughput_text(rows: list[dict] | None) -> list[str]:
    if not rows:
        return []
    shown = [
        dict(
            r,
            step_time_ms=r["step_time_us"] / 1000,
            mfu_pct=None if r["mfu_frac"] is None else 100 * r["mfu_frac"],
            hfu_pct=None if r["hfu_frac"] is None else 100 * r["hfu_frac"],
            traced_mfu_pct=(
                "n/a"
                if r.get("traced_note")
                else None
                if r.get("traced_mfu_frac") is None
                else 100 * r["traced_mfu_frac"]
            ),
            traced_tflops_per_device="n/a" if r.get("traced_note") else r.get("traced_tflops_per_device"),
        )
        for r in rows
    ]
    source = rows[0].get("peak_source") or "unknown device: give --peak-tflops"
    traced = any(r.get("traced_mfu_frac") is not None or r.get("traced_note") for r in rows)
    columns = TPUT_COLUMNS + (TRACED_COLUMNS if traced else [])
    out = ["", f"Throughput (peak: {source}):", table(shown, columns)]
    note = next((r["traced_note"] for r in rows if r.get("traced_note")), None)
    if note:
        out.append(f"  traced TFLOP/s and MFU: {note} (below {100 * MIN_FLOPS_COVERAGE:.0f} %: docs/roofline.md)")
    formulas = ("mfu_formula", "hfu_formula", "traced_formula")
    out += [f"  {r[k]}" for k in formulas for r in rows[:1] if r.get(k)]
    check = next((r["check"] for r in rows if r.get("check")), None)
    if check:
        out.append(textwrap.fill(check, width=110, initial_indent="  check: ", subsequent_indent="         "))
    return out


SEVERITY_ORDER = {"critical": 0, "warning": 1, "info": 2}


def _findings_text(doc: dict) -> list[str]:
    """One block per rule (`findings_by_rule`): its most severe, farthest-from-threshold finding in
    full, the other ranks it fired on, the term it explains, and the advice."""
    grouped = doc.get("findings_by_rule") or []
    if not grouped:
        return []
    blocks = []
    for worst in grouped:
        head = f"  [{worst['severity']}] {finding_heading(worst)}: "
        text = textwrap.fill(
            worst["message"], width=110, initial_indent=head, subsequent_indent="      ", break_long_words=False
        )
        advice = textwrap.fill(worst["advice"], width=110, initial_indent="      advice: ", subsequent_indent="      ")
        blocks += [text, advice]
    counts: dict[str, int] = {}
    for f in doc.get("findings") or []:
        counts[f["severity"]] = counts.get(f["severity"], 0) + 1
    tally = ", ".join(f"{counts[s]} {s}" for s in SEVERITY_ORDER if s in counts)
    n = len(doc.get("findings") or [])
    return ["", f"Findings ({n}: {tally}; details and every rank in --format json):", *blocks]


def summary_text(doc: dict) -> str:
    """The summary document (`build_summary`) as the text `traceview summary` prints."""
    doc = one_line_strings(doc)
    parts = [f"{doc['source']}: {len(doc['ranks'])} rank{'s' if len(doc['ranks']) != 1 else ''}"]
    parts += headline_lines(doc.get("headline"))
    if len(doc["ranks"]) > MAX_RANK_TABLES:
        rows = [{"rank": r["rank"], "step": None, **_ms(r["trace"] or {})} for r in doc["ranks"]]
        cols = [("rank", "rank")] + [c for c in STEP_COLUMNS if c[0] != "step"]
        parts += ["", "Whole trace per rank (ms):", table(rows, cols)]
    else:
        for r in doc["ranks"]:
            head = f"rank {r['rank']} · {r['device'] or 'unknown device'} · {r['format']}"
            if r["window_rule"]:
                head += f" · step window: {r['window_rule']}"
            if r.get("pipeline_stage") is not None:
                head += f" · pipeline stage {r['pipeline_stage']} of {r.get('pipeline_stages') or '?'}"
            parts += ["", head]
            rows = [{"step": s["step"], **_ms(s)} for s in r["steps"]]
            if r["trace"]:
                rows.append({"step": "trace", **_ms(r["trace"])})
            parts.append(table(rows, STEP_COLUMNS) if rows else "  (no device tasks)")
            lived = [{"step": s["step"], **_ms(s), "iteration_rule": s["iteration_rule"]} for s in r["steps"]]
            lived = [row for row in lived if row.get("iteration_ms") is not None]
            if lived:
                parts += ["  where the iteration went (ms; the terms add up to the iteration):"]
                parts.append(table(lived, ITERATION_TABLE))
                phased = [row for row in lived if row.get("wall_forward_ms") is not None]
                if phased:
                    parts += ["  phases (ms; wall times add up to the iteration, device times to its busy time):"]
                    parts.append(table(phased, PHASE_TABLE))
            parts += _rank_details(r)
    parts += _profile_tables(doc)
    parts += _cross_rank_text(doc.get("cross_rank"))
    parts += _throughput_text(doc.get("throughput"))
    parts += _what_if_text(doc.get("what_if"))
    if doc.get("expected"):
        parts += ["", expected_text(one_line(doc["expected"]["verdict"]), doc["expected"]["terms"])]
    parts += _findings_text(doc)
    companions = [companion_text(c) for c in doc.get("companions") or []]
    for title, items in (("Companions", companions), ("Warnings", doc["warnings"]), ("Failed", doc["failures"])):
        block = bullet_list(title, items)
        if block:
            parts += ["", block]
    return "\n".join(parts)
