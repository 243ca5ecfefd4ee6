"""Plain-text rendering of CLI results: fixed-width tables that read well in a terminal and in logs."""

from __future__ import annotations

from traceview.safe_text import one_line


def table(rows: list[dict], columns: list[tuple[str, str]]) -> str:
    """Render rows as an aligned table. columns: (key, header); numbers right-aligned, text left."""
    cells = [[_fmt(r.get(k)) for k, _ in columns] for r in rows]
    headers = [h for _, h in columns]
    widths = [max([len(h)] + [len(c[i]) for c in cells]) for i, h in enumerate(headers)]
    numeric = [all(isinstance(r.get(k), (int, float)) or r.get(k) is None for r in rows) for k, _ in columns]

    def line(values: list[str]) -> str:
        out = [v.rjust(w) if num else v.ljust(w) for v, w, num in zip(values, widths, numeric)]
        return "  ".join(out).rstrip()

    return "\n".join([line(headers), line(["-" * w for w in widths]), *[line(c) for c in cells]])


def _fmt(value) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:,.3f}"
    if isinstance(value, int):
        return f"{value:,}"
    return one_line(value)


def bullet_list(title: str, items: list[str]) -> str:
    """A titled list ('Warnings (2):' then one '  - item' per line), or '' if empty."""
    if not items:
        return ""
    return "\n".join([f"{title} ({len(items)}):", *[f"  - {one_line(i)}" for i in items]])
