"""The Overview's tables (dash-ag-grid): top kernels per rank, kernels across ranks, operators.

One number format per column, the same in every table of the page: ms with 3 decimals, µs with 3
(to the ns), % with 1, counts with thousands separators (`FORMATS`: d3-format strings the grid
applies in the browser; the row data keep the numbers, so sorting and filtering stay numeric).
Kernels are shown by their short distinct name (`Trace.kernel_short_names`, the
summary's `short_name`), the full name in the tooltip; clicking a kernel or operator name opens
the Timeline on its instances (`instances_link`). Trace text enters the grids only as row
data (text cells); the only code strings are the formats and the class colours' conditions, built
here from constants and JSON-escaped class names.
"""

from __future__ import annotations

import json

import dash_ag_grid as dag
import polars as pl
from dash import html

from traceview.dashboards.colors import class_color
from traceview.dashboards.query import TIMELINE_PATH, ascii_int, instances_query
from traceview.dashboards.timeline_page import name_contains
from traceview.safe_text import one_line

FONT = "system-ui, -apple-system, 'Segoe UI', sans-serif"
TABLE_TOP = 50  # kernels per rank in the table (the CLI's --top defaults to 10)
PAGE_ROWS = 20

#: d3-format of each kind of number (one per column, whatever the table).
FORMATS = {"ms": ",.3f", "us": ",.3f", "pct": ".1f", "count": ",d", "tflops": ",.1f"}


def _number(kind: str, **extra) -> dict:
    fmt = FORMATS[kind]
    return {
        "type": "numericColumn",
        "filter": "agNumberColumnFilter",
        "valueFormatter": {"function": f"params.value == null ? '-' : d3.format('{fmt}')(params.value)"},
        **extra,
    }


_TEXT = {"filter": "agTextColumnFilter"}
#: A name cell that opens the Timeline on its row's instances (`INSTANCE_LINKS`).
_LINK = {
    **_TEXT,
    "cellStyle": {"color": "#1d4ed8", "cursor": "pointer", "textDecoration": "underline dotted"},
    "headerTooltip": "click a name to see its instances on the Timeline",
}
#: The top-kernel table's columns: field, header, how it filters and formats.
KERNEL_COLUMNS = [
    {"field": "rank", "headerName": "rank", "width": 90, **_number("count")},
    {"field": "short_name", "headerName": "kernel", "flex": 3, "minWidth": 260, "tooltipField": "name", **_LINK},
    {"field": "class", "headerName": "class", "width": 150, **_TEXT},
    {"field": "count", "headerName": "count", "width": 110, **_number("count")},
    {"field": "total_ms", "headerName": "total (ms)", "sort": "desc", "width": 130, **_number("ms")},
    {"field": "mean_us", "headerName": "mean (µs)", "width": 130, **_number("us")},
    {"field": "share_pct", "headerName": "share (% of device time)", "width": 200, **_number("pct")},
]
#: Kernels over all ranks (the summary's "kernels").
CROSS_RANK_COLUMNS = [
    {"field": "short_name", "headerName": "kernel", "flex": 1, "minWidth": 190, "tooltipField": "name", **_LINK},
    {"field": "class", "headerName": "class", "width": 135, **_TEXT},
    {"field": "ranks", "headerName": "ranks", "width": 85, **_number("count")},
    {"field": "count", "headerName": "count", "width": 95, **_number("count")},
    {"field": "total_ms", "headerName": "total (ms)", "sort": "desc", "width": 115, **_number("ms")},
    {"field": "share_pct", "headerName": "share (%)", "width": 95, **_number("pct")},
    {"field": "rank_min_ms", "headerName": "min per rank (ms)", "width": 110, **_number("ms")},
    {"field": "rank_median_ms", "headerName": "median per rank (ms)", "width": 110, **_number("ms")},
    {"field": "rank_max_ms", "headerName": "max per rank (ms)", "width": 110, **_number("ms")},
    {"field": "max_rank", "headerName": "max rank", "width": 90, **_number("count")},
]
#: Host operators and input shapes with the device time of what they launched (the summary's "operators").
OPERATOR_COLUMNS = [
    {"field": "operator", "headerName": "operator", "flex": 2, "minWidth": 180, "tooltipField": "operator", **_LINK},
    {
        "field": "input_shapes",
        "headerName": "input shapes",
        "flex": 2,
        "minWidth": 140,
        "tooltipField": "input_shapes",
        **_TEXT,
    },
    {"field": "calls", "headerName": "calls", "width": 95, **_number("count")},
    {"field": "device_ms", "headerName": "device (ms)", "sort": "desc", "width": 115, **_number("ms")},
    {"field": "share_pct", "headerName": "share (%)", "width": 95, **_number("pct")},
    {"field": "per_call_us", "headerName": "per call (µs)", "width": 115, **_number("us")},
    {
        "field": "top_kernel_short",
        "headerName": "top kernel",
        "flex": 3,
        "minWidth": 220,
        "tooltipField": "top_kernel",
        **_TEXT,
    },
]


def class_colours(classes: list[str]) -> dict:
    """cellStyle of a class column: each class marked by its figure colour (a bar at the cell's
    left, which keeps light colours such as yellow readable on white). The grid evaluates each
    condition as JavaScript: a class name (from a user's rules file) enters it only as a JSON
    string literal, ASCII-escaped."""
    return {
        "styleConditions": [
            {
                "condition": f"params.value === {json.dumps(c, ensure_ascii=True)}",
                "style": {"borderLeft": f"8px solid {class_color(c)}"},
            }
            for c in classes
        ]
    }


def grid(grid_id: str, columns: list[dict], rows: list[dict], classes: list[str], **options) -> dag.AgGrid:
    """A sortable, filterable grid as tall as its rows (`autoHeight`, `PAGE_ROWS` a page)."""
    columns = [{**c, "cellStyle": class_colours(classes)} if c["field"] == "class" else c for c in columns]
    return dag.AgGrid(
        id=grid_id,
        columnDefs=columns,
        rowData=rows,
        defaultColDef={
            "sortable": True,
            "resizable": True,
            "floatingFilter": True,
            "wrapHeaderText": True,
            "autoHeaderHeight": True,
        },
        dashGridOptions={
            "pagination": True,
            "paginationPageSize": PAGE_ROWS,
            "tooltipShowDelay": 300,
            "domLayout": "autoHeight",
            **options,
        },
        style={"fontFamily": FONT},
    )


#: The grids whose name cell opens the Timeline on the clicked row's instances: grid id ->
#: (the clicked column, the row's field holding the full name, whether host lanes show it).
INSTANCE_LINKS = {
    "kernel-table": ("short_name", "name", False),
    "cross-rank-table": ("short_name", "name", False),
    "operator-table": ("operator", "operator", True),
}


def linked_tables(summary: dict) -> list[str]:
    """The grids of `INSTANCE_LINKS` the Overview of `summary` holds (the kernel table always)."""
    present = {"kernel-table": True, "cross-rank-table": bool(summary.get("kernels"))}
    present["operator-table"] = bool(summary.get("operators"))
    return [t for t in INSTANCE_LINKS if present[t]]


def instances_link(
    table: str, cell: dict | None, rows: list[dict] | None, search: str | None
) -> tuple[str, str] | None:
    """(path, query) of the Timeline showing the instances of the row whose name cell of `table`
    was clicked (a dash-ag-grid `cellClicked`: its rowId is the row's index in `rows`, the grid's
    rowData), or None for another cell or a row it cannot find."""
    column, field, host = INSTANCE_LINKS[table]
    if not cell or cell.get("colId") != column or not rows:
        return None
    row_id = ascii_int(str(cell.get("rowId", "")))
    if row_id is None or not 0 <= row_id < len(rows):
        return None
    row = rows[row_id]
    name = row.get(field)
    if not isinstance(name, str) or not name.strip():
        return None
    rank = row.get("rank") if isinstance(row.get("rank"), int) else None
    return TIMELINE_PATH, instances_query(search, name, rank, host)


def _ms(us):
    return None if us is None else round(us / 1000.0, 6)


def _pct(frac):
    return None if frac is None else round(frac * 100.0, 4)


def cross_rank_rows(summary: dict) -> list[dict]:
    """The summary's "kernels" as grid rows (µs -> ms, share -> %), names as text."""
    return [
        {
            "name": one_line(k["name"]),
            "short_name": one_line(k.get("short_name") or k["name"]),
            "class": one_line(k["class"]),
            "ranks": k.get("ranks"),
            "count": k["count"],
            "total_ms": _ms(k["total_us"]),
            "share_pct": _pct(k.get("share")),
            "rank_min_ms": _ms(k.get("rank_min_us")),
            "rank_median_ms": _ms(k.get("rank_median_us")),
            "rank_max_ms": _ms(k.get("rank_max_us")),
            "max_rank": k.get("max_rank"),
        }
        for k in summary.get("kernels") or []
    ]


def operator_rows(summary: dict) -> list[dict]:
    """The summary's "operators" as grid rows (µs -> ms, share -> %), text as text."""
    return [
        {
            "operator": one_line(o["operator"]),
            "input_shapes": one_line(o["input_shapes"]) if o.get("input_shapes") else "",
            "calls": o["calls"],
            "device_ms": _ms(o["device_us"]),
            "share_pct": _pct(o.get("share")),
            "per_call_us": o.get("device_per_call_us"),
            "top_kernel": one_line(o.get("top_kernel") or ""),
            "top_kernel_short": one_line(o.get("top_kernel_short") or o.get("top_kernel") or ""),
        }
        for o in summary.get("operators") or []
    ]


def summary_tables(summary: dict, classes: list[str]) -> list:
    """The kernels-across-ranks and operator tables, each only when the summary has rows (the
    per-rank columns of the kernel table only with several ranks)."""
    out = []
    rows = cross_rank_rows(summary)
    if rows:
        several = len(summary["ranks"]) > 1
        columns = [
            {**c, "hide": True}
            if not several and c["field"] in ("ranks", "rank_min_ms", "rank_median_ms", "rank_max_ms", "max_rank")
            else c
            for c in CROSS_RANK_COLUMNS
        ]
        out += [
            html.H3("Kernels across ranks (whole trace)", id="cross-rank-title"),
            grid("cross-rank-table", columns, rows, classes),
        ]
    rows = operator_rows(summary)
    if rows:
        out += [
            html.H3("Operators (whole trace)", id="operator-title"),
            grid("operator-table", OPERATOR_COLUMNS, rows, []),
        ]
    return out


def short_names(trace) -> dict[str, str]:
    """{kernel name: short distinct name} over every task name of the trace, as in the summary
    (the declared `Trace.kernel_short_names`, memoised on the trace)."""
    frame = trace.kernel_short_names()
    return dict(zip(frame["name"].to_list(), frame["short_name"].to_list()))


def kernel_rows(
    trace, ranks: list[int] | None, step: int | None = None, classes: list[str] | None = None, query: str | None = None
) -> list[dict]:
    """Top kernels per rank (of `step` when given) from the memoised `Trace.top_kernels` (same
    function as the summary); only `classes` and names containing `query` (case-insensitive) when given."""
    if step is None:
        frame = trace.top_kernels(TABLE_TOP)
    else:
        frame = trace.top_kernels(TABLE_TOP, by=("rank", "step")).filter(pl.col("step") == step)
    if classes:
        frame = frame.filter(pl.col("class").is_in(classes))
    if query:
        frame = frame.filter(name_contains(query))
    if ranks is not None:
        frame = frame.filter(pl.col("rank").is_in(ranks))
    short = short_names(trace)
    return [
        {
            "rank": row["rank"],
            "name": one_line(row["name"]),
            "short_name": one_line(short.get(row["name"], row["name"])),
            "class": one_line(row["class"]),
            "count": row["count"],
            "total_ms": round(row["total_us"] / 1000.0, 6),
            "mean_us": round(row["mean_us"], 3),
            "share_pct": round(row["share"] * 100.0, 4),
        }
        for row in frame.to_dicts()
    ]
