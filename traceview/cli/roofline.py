"""`traceview roofline`: the per-operator roofline (`Trace.op_roofline`) as text, JSON or CSV."""

from __future__ import annotations

import orjson
import polars as pl

from traceview.cli.text import bullet_list, table
from traceview.safe_text import json_text, one_line, one_line_strings
from traceview.trace import Trace

COLUMNS = [
    ("rank", "rank"),
    ("op", "operator"),
    ("input_dims", "input dims"),
    ("dtype", "dtype"),
    ("count", "calls"),
    ("gflop", "GFLOP/call"),
    ("intensity_flop_per_byte", "FLOP/byte"),
    ("device_time_us", "device us"),
    ("achieved_tflops_per_s", "TFLOP/s"),
    ("achieved_tbps", "TB/s"),
    ("peak_frac", "% of peak"),
    ("roofline_frac", "% of roofline"),
    ("bound", "bound"),
]
#: Characters of the input dims shown in the text table (JSON and CSV keep them whole).
DIMS_CHARS = 40
NO_SHAPES = (
    "no operator with recorded shapes: record the profile with torch.profiler(record_shapes=True) "
    "(docs/roofline.md lists the operators covered)"
)


def render_roofline(trace: Trace, fmt: str, top: int, rules=None) -> str:
    """The roofline frame in `fmt` (text: the `top` rows by device time; json/csv: every row)."""
    frame = trace.op_roofline(rules=rules)
    if fmt == "csv":
        return frame.write_csv()
    if fmt == "json":
        doc = {"source": trace.source, "operators": frame.to_dicts(), "warnings": trace.warnings}
        return json_text(orjson.dumps(doc, option=orjson.OPT_INDENT_2 | orjson.OPT_SERIALIZE_NUMPY).decode())
    head = f"{one_line(trace.source)}: operators against the device's roofline (docs/roofline.md)"
    if frame.is_empty():
        return "\n".join([head, "", NO_SHAPES])
    shown = frame.head(top).with_columns(
        pl.col("input_dims").str.slice(0, DIMS_CHARS),
        (pl.col("peak_frac") * 100).round(1),
        (pl.col("roofline_frac") * 100).round(1),
        pl.col("gflop").round(4),
        pl.col("intensity_flop_per_byte").round(1),
        pl.col("device_time_us").round(1),
        pl.col("achieved_tflops_per_s").round(2),
        pl.col("achieved_tbps").round(3),
    )
    unknown = sorted(set(frame.filter(pl.col("memory_tbps").is_null())["rank"].drop_nulls().to_list()))
    no_peak = frame.filter(pl.col("memory_tbps").is_not_null() & pl.col("peak_tflops").is_null())
    parts = [head, "", table(one_line_strings(shown.to_dicts()), COLUMNS)]
    if unknown:
        ranks = ", ".join(map(str, unknown))
        parts += ["", f"rank {ranks}: device not in the device table, no roofline (add it: docs/roofline.md)"]
    if no_peak.height:
        dtypes = ", ".join(sorted(set(no_peak["dtype"].drop_nulls().to_list())))
        parts += ["", f"{no_peak.height} rows of a dtype the device table gives no peak for ({dtypes}): no bound"]
    if frame.height > top:
        parts += ["", f"{frame.height - top} more rows: --top N, or --format csv / json for all"]
    block = bullet_list("Warnings", trace.warnings)
    if block:
        parts += ["", block]
    return "\n".join(parts)
