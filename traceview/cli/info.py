"""`traceview info`: text and JSON renderings of `Trace.info()`."""

from __future__ import annotations

import orjson

from traceview.cli.text import bullet_list, table
from traceview.safe_text import json_text, one_line, one_line_strings
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


def render_info(trace: Trace, fmt: str) -> str:
    rows = info_rows(trace)
    if fmt == "json":
        doc = {
            "source": trace.source,
            "ranks": rows,
            "companions": trace.companions.to_dicts(),
            "warnings": trace.warnings,
            "failures": trace.failures,
        }
        return json_text(orjson.dumps(doc, option=orjson.OPT_INDENT_2).decode())
    rows = one_line_strings(rows)
    for row in rows:
        row["span_ms"] = None if row["span_us"] is None else row["span_us"] / 1000
    formats = sorted({r["format"] for r in rows})
    head = f"{one_line(trace.source)}: {len(rows)} rank{'s' if len(rows) != 1 else ''} ({', '.join(formats)})"
    parts = [head, "", table(rows, COLUMNS)]
    companions = [companion_text(c) for c in trace.companions.to_dicts()]
    for title, items in (("Companions", companions), ("Warnings", trace.warnings), ("Failed", trace.failures)):
        block = bullet_list(title, items)
        if block:
            parts += ["", block]
    return "\n".join(parts)
