"""The HTML page machinery of the reports: templates (`dashboards/templates/`), the blocks a
section is made of, and the escaping every value goes through.

A section is a list of block dicts (`table`, `heading`, `text`, `items`, `Page.figure`, and the
report's findings list) rendered by `templates/blocks.html.j2`; `Page.html` renders the whole page
(`templates/page.html.j2`): plotly.js inlined once, a header, a navigation, the sections, JSON
documents, and the script that draws each figure from its JSON block.

Safety: the templates autoescape, and every value from anywhere passes `traceview.safe_text.one_line`
first (control and bidi characters as visible escapes; None as '-'), text and attributes alike;
figure and document JSON is embedded in `<script type="application/json">` blocks with every `<`
written as the JSON escape `\\u003c`, so no `</script>` or `<!--` inside a name can end the block.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Iterable
from pathlib import Path

import jinja2
import markupsafe
import orjson
import plotly.graph_objects as go

from traceview.safe_text import json_text, one_line

FIGURE_HEIGHT = 450  # px, when a figure does not set its own

CSS = """
body{margin:0;font-family:system-ui,-apple-system,'Segoe UI',sans-serif;color:#111827;font-size:14px}
header{background:#1f2937;color:#fff;padding:10px 20px}header b{font-size:18px;margin-right:20px}
header span{margin-right:20px}.wrap{display:flex}nav{width:170px;padding:16px;border-right:1px solid #e5e7eb;
position:sticky;top:0;align-self:flex-start;height:100vh;box-sizing:border-box}nav a{display:block;margin:6px 0;color:#1d4ed8}
main{flex:1;padding:16px 24px;min-width:0}section{margin-bottom:28px}h2{border-bottom:1px solid #e5e7eb;padding-bottom:4px}
table.tv{border-collapse:collapse;margin:8px 0;font-size:13px}table.tv th,table.tv td{border-bottom:1px solid #e5e7eb;
padding:3px 8px;text-align:right;white-space:nowrap}table.tv th{background:#f9fafb}table.tv td.t,table.tv th.t{text-align:left;
white-space:normal;min-width:10em;max-width:640px;overflow-wrap:anywhere}
.scroll{overflow-x:auto;max-width:100%}.note{color:#4b5563}.warn{color:#b45309}.bad{color:#b91c1c}
.fig{min-height:120px}.sev-critical{color:#b91c1c;font-weight:600}.sev-warning{color:#b45309;font-weight:600}
.sev-info{color:#1d4ed8}.version{color:#d1d5db}
"""

RENDER_JS = """
(function(){
  var blocks = document.querySelectorAll('script[type="application/json"][data-figure]');
  for (var i = 0; i < blocks.length; i++) {
    var spec = JSON.parse(blocks[i].textContent);
    var target = document.getElementById(blocks[i].getAttribute('data-figure'));
    Plotly.newPlot(target, spec.data || [], spec.layout || {}, {displaylogo: false, responsive: true});
  }
})();
"""


def esc(value) -> str:
    """Text (or an attribute value) from anywhere, escaped for HTML, control and bidi characters
    shown as escapes (`traceview.safe_text.one_line`: a name cannot reorder the page); None as '-'."""
    return "-" if value is None else html.escape(one_line(value), quote=True)


def _shown(value):
    """What the templates print for a value: trusted markup as it is, anything else as one line
    of text (autoescaped after), None as '-'."""
    if isinstance(value, markupsafe.Markup):
        return value
    return "-" if value is None else one_line(value)


ENV = jinja2.Environment(
    loader=jinja2.FileSystemLoader(Path(__file__).parent / "templates"),
    autoescape=True,
    finalize=_shown,
    undefined=jinja2.StrictUndefined,
    keep_trailing_newline=False,
)


def script_json(data) -> str:
    """JSON text safe inside a <script> element: every '<' as \\u003c (only strings contain one),
    and the characters `traceview.safe_text.json_text` escapes (C1 and bidi controls) as \\u too."""
    text = data if isinstance(data, str) else orjson.dumps(data, option=orjson.OPT_SERIALIZE_NUMPY).decode()
    return json_text(text).replace("<", "\\u003c")


def fmt_ms(us) -> str:
    """µs as ms with 3 decimals (µs resolution)."""
    return "-" if us is None else f"{us / 1000:,.3f}"


def fmt_pct(frac) -> str:
    return "-" if frac is None else f"{frac * 100:.1f}"


# ---- blocks: what a section is made of (rendered by templates/blocks.html.j2) ----


def table(
    rows: Iterable[dict],
    columns: list[tuple[str, str, Callable | None]],
    table_id: str = "",
    text_columns: tuple[str, ...] = (),
    hover: dict[str, str] | None = None,
) -> dict:
    """A table block: columns are (key, header, formatter or None for str); every cell is text.
    `hover`: column key -> the row key whose text the cell shows on hover (a full kernel name
    behind its short one)."""
    hover = hover or {}

    def cell(row: dict, key: str, fmt: Callable | None) -> dict:
        value = row.get(key)
        text = fmt(value) if fmt is not None and value is not None else ("-" if value is None else str(value))
        title = row.get(hover[key]) if key in hover else None
        return {"key": key, "text": text, "text_column": key in text_columns, "title": title}

    return {
        "kind": "table",
        "id": table_id,
        "headers": [{"title": title, "text_column": key in text_columns} for key, title, _ in columns],
        "rows": [[cell(row, key, fmt) for key, _, fmt in columns] for row in rows],
    }


def heading(text: str, cls: str | None = None) -> dict:
    return {"kind": "heading", "text": text, "cls": cls}


def text(value, cls: str | None = None, block_id: str | None = None, label: str | None = None) -> dict:
    return {"kind": "text", "text": value, "cls": cls, "id": block_id, "label": label}


def items(values: Iterable, block_id: str | None = None) -> dict:
    return {"kind": "items", "items": list(values), "id": block_id}


class Page:
    """Sections and figures of one report, rendered by `html()` (templates/page.html.j2)."""

    def __init__(self, title: str):
        self.title = title
        self.sections: list[dict] = []  # {"anchor", "title", "blocks"}
        self.n_figures = 0

    def figure(self, fig: go.Figure, note: str | None = None) -> dict:
        """A figure block (drawn by the page's render script from its JSON), with its note."""
        self.n_figures += 1
        if fig.layout.height is None:
            fig.update_layout(height=FIGURE_HEIGHT)  # the dashboard's default graph height
        json = markupsafe.Markup(script_json(fig.to_json()))  # safe inside <script>: see script_json
        return {"kind": "figure", "id": f"fig-{self.n_figures}", "json": json, "note": note}

    def add(self, anchor: str, title: str, blocks: list[dict]) -> None:
        self.sections.append({"anchor": anchor, "title": title, "blocks": blocks})

    def html(self, header: list[dict], embedded: dict[str, object]) -> str:
        """The page: `header` items ({"text", "id", "cls"}; the first is the bold title), the
        sections, and `embedded` documents as JSON blocks (name -> JSON-ready data)."""
        from plotly.offline import get_plotlyjs

        page = {
            "title": self.title,
            "header": header,
            "sections": self.sections,
            "embedded": [(name, markupsafe.Markup(script_json(data))) for name, data in embedded.items()],
        }
        return ENV.get_template("page.html.j2").render(
            page=page,
            css=markupsafe.Markup(CSS),
            plotly_js=markupsafe.Markup(get_plotlyjs()),
            render_js=markupsafe.Markup(RENDER_JS),
        )


def header_item(text: str, item_id: str | None = None, cls: str | None = None) -> dict:
    return {"text": text, "id": item_id, "cls": cls}
