"""`traceview info`: its document (`Trace.info()` per rank, companions, warnings) and its text
(the renderers: `traceview.cli.outputs.INFO`)."""

from __future__ import annotations

from traceview.cli.text import bullet_list, table
from traceview.safe_text import one_line, one_line_strings
from traceview.summary_text import companion_text
from traceview.trace import Trace

COLUMNS = [
    ("rank", "rank"),
    ("format", "format"),
    ("world_size", "world"),
    ("device_name", "device"),
    ("device_tasks", "tasks"),
    ("kernel", "kernel"),
    ("communication", "comm"),
    ("memcpy", "memcpy"),
    ("memset", "memset"),
    ("streams", "streams"),
    ("steps", "steps"),
    ("host_events", "host events"),
    ("span_ms", "span ms"),
]


def info_rows(trace: Trace) -> list[dict]:
    """One JSON-ready dict per rank (the `ranks` list of `traceview info --format json`)."""
    rows = trace.info().to_dicts()
    step_numbers = trace.steps.group_by("rank").agg("step")
    by_rank = {r["rank"]: sorted(set(r["step"])) for r in step_numbers.to_dicts()}
    for row in rows:
        row["step_numbers"] = by_rank.get(row["rank"], [])
    return rows


def info_document(trace: Trace) -> dict:
    """What `traceview info` prints (`--format json`): source, ranks (`info_rows`), companions,
    warnings, failures."""
    return {
        "source": trace.source,
        "ranks": info_rows(trace),
        "companions": trace.companions.to_dicts(),
        "warnings": trace.warnings,
        "failures": trace.failures,
    }


def info_text(doc: dict) -> str:
    """`info_document` as text: one table row per rank, then companions, warnings, failed ranks."""
    rows = one_line_strings(doc["ranks"])
    for row in rows:
        row["span_ms"] = None if row["span_us"] is None else row["span_us"] / 1000
    formats = sorted({r["format"] for r in rows})
    head = f"{one_line(doc['source'])}: {len(rows)} rank{'s' if len(rows) != 1 else ''} ({', '.join(formats)})"
    parts = [head, "", table(rows, COLUMNS)]
    companions = [companion_text(c) for c in doc["companions"]]
    for title, items in (("Companions", companions), ("Warnings", doc["warnings"]), ("Failed", doc["failures"])):
        block = bullet_list(title, items)
        if block:
            parts += ["", block]
    return "\n".join(parts)
