"""`traceview compare`: text, JSON and CSV renderings of `RunComparison.to_dict()` (the HTML page,
`traceview.dashboards.compare_view`, renders the same dict, so every output shows the same numbers).

Text: the runs as rows (the experiment log: iteration, its change, step time, exposed comm,
throughput), then the iteration's terms as rows with the runs as columns (a list that grows with
the compared columns reads down, not across), then each run's change in the words of
`traceview diff`'s first line.
"""

from __future__ import annotations

import io

import polars as pl

from traceview.cli.text import bullet_list, table
from traceview.run_compare import change_text, headlines
from traceview.safe_text import csv_safe, one_line_strings
from traceview.summary_text import size_text
from traceview.terms import EXPOSED_COMM

#: A run's label in a column header is cut to this many characters.
LABEL_WIDTH = 24


def _ms(us):
    return None if us is None else us / 1000


def _pct(frac):
    return None if frac is None else 100 * frac


def _short(name: str) -> str:
    return name if len(name) <= LABEL_WIDTH else name[: LABEL_WIDTH - 1] + "…"


def _runs_text(doc: dict) -> list[str]:
    with_model = any(r.get("tokens_per_s_per_device") is not None for r in doc["runs"])
    with_memory = any(r.get("peak_allocated_bytes") is not None for r in doc["runs"])
    with_traced = any(r.get("traced_tflops_per_device") is not None or r.get("traced_note") for r in doc["runs"])
    columns = [
        ("run", "#"),
        ("label", "run"),
        ("iteration_ms", "iteration ms"),
        ("vs_previous", "vs previous ms"),
        ("vs_first", "vs first ms"),
        ("speedup", "speedup"),
        ("step_ms", "device step ms"),
        ("exposed_comm_pct", "exposed comm %"),
    ]
    if with_model:
        columns += [("tokens", "tokens/s/device"), ("mfu_pct", "MFU %"), ("hfu_pct", "HFU %")]
    if with_memory:
        columns += [("memory", "peak memory")]
    if with_traced:
        columns += [("traced_tflops", "traced TFLOP/s/device"), ("traced_mfu_pct", "traced MFU %")]
    rows = [
        {
            "run": r["run"],
            "label": r["label"],
            "iteration_ms": _ms(r["iteration_us"]),
            "vs_previous": change_text(r, "previous"),
            "vs_first": change_text(r, "first"),
            "speedup": "-" if r.get("speedup") is None else f"{r['speedup']:.2f}x",
            "step_ms": _ms(r["mean_step_us"]),
            "exposed_comm_pct": _pct(r[f"{EXPOSED_COMM}_frac"]),
            "tokens": None if r.get("tokens_per_s_per_device") is None else round(r["tokens_per_s_per_device"]),
            "mfu_pct": _pct(r.get("mfu_frac")),
            "hfu_pct": _pct(r.get("hfu_frac")),
            "memory": size_text(r.get("peak_allocated_bytes")),
            "traced_tflops": "n/a"
            if r.get("traced_note")
            else None
            if r.get("traced_tflops_per_device") is None
            else round(r["traced_tflops_per_device"], 1),
            "traced_mfu_pct": "n/a" if r.get("traced_note") else _pct(r.get("traced_mfu_frac")),
        }
        for r in doc["runs"]
    ]
    notes = [
        f"  run {r['run']}: traced TFLOP/s and MFU {r['traced_note']}" for r in doc["runs"] if r.get("traced_note")
    ]
    return ["Runs (mean per step; changes of the iteration):", table(rows, columns), *notes]


def _terms_text(doc: dict) -> list[str]:
    labels, runs = doc["labels"], doc["runs"]
    keys = [f"r{r['run']}" for r in runs]
    columns = [("term", "term"), *[(k, f"{r['run']} {_short(r['label'])}") for k, r in zip(keys, runs)]]
    rows = [{"term": labels["iteration"], **{k: _ms(r["iteration_us"]) for k, r in zip(keys, runs)}}]
    for term in doc["terms"]:
        row = {"term": labels.get(term, term)}
        for k, r in zip(keys, runs):
            us, frac = r.get(f"{term}_us"), r.get(f"{term}_frac")
            row[k] = "-" if us is None else f"{us / 1000:,.3f} ({'-' if frac is None else f'{100 * frac:.1f}'} %)"
        rows.append(row)
    return ["", "Where the iteration went (ms per step, % of the iteration):", table(rows, columns)]


def compare_text(doc: dict) -> str:
    """A comparison's document (`RunComparison.to_dict()`) as text (its other formats:
    `traceview.cli.outputs.COMPARE`)."""
    doc = one_line_strings(doc)  # a label or path can neither break the layout nor drive the terminal
    runs = doc["runs"]
    lines = [
        f"traceview compare: {len(runs)} runs (means per rank-step; each change as `traceview diff` gives it)",
        *[
            f"  {r['run']} {r['label']}: {r['source']} ({r['rank_steps']} rank-step{'s' if r['rank_steps'] != 1 else ''}"
            f"{', whole traces' if r['window'] == 'trace' else ''})"
            for r in runs
        ],
        "",
        *_runs_text(doc),
        *_terms_text(doc),
        "",
        "Change against the previous run (the terms with at least 5 % of it):",
        *[f"  {line}" for line in headlines(doc)],
    ]
    if len(runs) > 2:
        lines += ["", "Change against the first run:", *[f"  {line}" for line in headlines(doc, "first")[1:]]]
    if doc.get("model") and runs[0].get("mfu_frac") is None and runs[0].get("tokens_per_s_per_device") is not None:
        lines += ["", "  MFU: give --params or --flops-per-token (and the device's peak if it is not known)"]
    for key, title in (("notes", "Notes"), ("warnings", "Warnings"), ("failures", "Failed ranks")):
        block = bullet_list(title, doc.get(key) or [])
        if block:
            lines += ["", block]
    return "\n".join(lines)


def compare_csv(doc: dict) -> str:
    """The table (one row per run, the JSON's `runs` columns) as CSV."""
    buffer = io.StringIO()
    csv_safe(pl.DataFrame(doc["runs"], infer_schema_length=None)).write_csv(buffer)
    return buffer.getvalue()
