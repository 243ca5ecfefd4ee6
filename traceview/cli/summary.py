"""`traceview summary`: text and JSON renderings of `traceview.summary.build_summary`."""

from __future__ import annotations

import orjson

from traceview.cli.text import bullet_list, table

#: (summary key, column header) of the per-step table; values shown in ms.
STEP_COLUMNS = [
    ("step", "step"),
    ("duration_ms", "step ms"),
    ("computing_ms", "computing"),
    ("communication_not_overlapped_ms", "exposed comm"),
    ("overlapped_ms", "overlapped"),
    ("exposed_memcpy_ms", "exposed memcpy"),
    ("free_ms", "free"),
    ("bubble_ms", "bubble"),
    ("preparing_ms", "preparing"),
    ("exposed_comm_pct", "exposed comm %"),
]
#: Above this many ranks the text output shows one row per rank instead of per-rank step tables.
MAX_RANK_TABLES = 8


def _ms(terms: dict) -> dict:
    out = {k.removesuffix("_us") + "_ms": (None if v is None else v / 1000) for k, v in terms.items() if k.endswith("_us")}
    dur = terms.get("duration_us")
    cno = terms.get("communication_not_overlapped_us")
    out["exposed_comm_pct"] = 100 * cno / dur if dur and cno is not None else None
    return out


def render_summary(doc: dict, fmt: str) -> str:
    if fmt == "json":
        return orjson.dumps(doc, option=orjson.OPT_INDENT_2).decode()
    parts = [f"{doc['source']}: {len(doc['ranks'])} rank{'s' if len(doc['ranks']) != 1 else ''}"]
    if len(doc["ranks"]) > MAX_RANK_TABLES:
        rows = [{"rank": r["rank"], "step": None, **_ms(r["trace"] or {})} for r in doc["ranks"]]
        cols = [("rank", "rank")] + [c for c in STEP_COLUMNS if c[0] != "step"]
        parts += ["", "Whole trace per rank (ms):", table(rows, cols)]
    else:
        for r in doc["ranks"]:
            head = f"rank {r['rank']} · {r['device'] or 'unknown device'} · {r['format']}"
            if r["window_rule"]:
                head += f" · step window: {r['window_rule']}"
            parts += ["", head]
            rows = [{"step": s["step"], **_ms(s)} for s in r["steps"]]
            if r["trace"]:
                rows.append({"step": "trace", **_ms(r["trace"])})
            parts.append(table(rows, STEP_COLUMNS) if rows else "  (no device tasks)")
    for title, items in (("Warnings", doc["warnings"]), ("Failed", doc["failures"])):
        block = bullet_list(title, items)
        if block:
            parts += ["", block]
    return "\n".join(parts)
