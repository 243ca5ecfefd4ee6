"""`traceview roofline`: the text, JSON and CSV of the per-operator roofline (`Trace.op_roofline`,
built by `traceview.roofline_doc`; the renderers: `traceview.cli.outputs.ROOFLINE`)."""

from __future__ import annotations

import polars as pl

from traceview.cli.outputs import as_json
from traceview.cli.text import bullet_list, table
from traceview.roofline_doc import RooflineResult
from traceview.safe_text import csv_safe, one_line, one_line_strings
from traceview.summary_text import expected_value_text

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


EXPECT_COLUMNS = [
    ("term", "term"),
    ("expected", "expected"),
    ("measured", "measured"),
    ("difference", "difference"),
    ("definition", "what it is"),
]


def roofline_csv(result: RooflineResult) -> str:
    """Every operator row as CSV (the model's terms are not rows of it: the command refuses both)."""
    return csv_safe(result.frame).write_csv()


def roofline_json(result: RooflineResult) -> str:
    """Every operator row, the warnings and the model's section, as JSON."""
    doc = {"source": result.source, "operators": result.frame.to_dicts(), "warnings": result.warnings}
    if result.model is not None:
        model = result.model
        doc["expected"] = {
            "config": model.config,
            "verdict": model.verdict,
            "terms": model.terms.to_dicts(),
            "operations": [] if model.operations is None else model.operations.to_dicts(),
        }
    return as_json(doc)


def roofline_text(result: RooflineResult) -> str:
    """The `top` rows by device time as a table, what the table cannot show, the model's terms and
    the warnings."""
    frame, top, by_step, model = result.frame, result.top, result.by_step, result.model
    head = f"{one_line(result.source)}: operators against the device's roofline (docs/roofline.md)"
    tail = [] if model is None else ["", expected_text(model.verdict, model.terms.to_dicts())]
    if frame.is_empty():
        return "\n".join([head, "", NO_SHAPES, *tail])
    shown = frame.head(top).with_columns(
        pl.col("input_dims").str.slice(0, DIMS_CHARS),
        pl.when(pl.col("algorithm").is_not_null() & (pl.col("algorithm") != pl.col("dtype")))
        .then(pl.format("{} {}", "dtype", "algorithm"))
        .otherwise("dtype")
        .alias("dtype"),
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
    columns = [COLUMNS[0], ("step", "step"), *COLUMNS[1:]] if by_step else COLUMNS
    parts = [head, "", table(one_line_strings(shown.to_dicts()), columns)]
    if unknown:
        ranks = ", ".join(map(str, unknown))
        parts += ["", f"rank {ranks}: device not in the device table, no roofline (add it: docs/roofline.md)"]
    if no_peak.height:
        dtypes = ", ".join(sorted(set(no_peak["dtype"].drop_nulls().to_list())))
        parts += ["", f"{no_peak.height} rows of a dtype the device table gives no peak for ({dtypes}): no bound"]
    above = frame.filter(pl.col("roofline_frac") > 1)
    if above.height:
        parts += [
            "",
            f"{above.height} rows above 100 % of their roofline: a Winograd or FFT convolution does fewer "
            "multiplications than the direct formula counts, or the kernels ran on units the dtype does not say "
            "(docs/roofline.md)",
        ]
    if frame.height > top:
        parts += ["", f"{frame.height - top} more rows: --top N, or --format csv / json for all"]
    parts += tail
    block = bullet_list("Warnings", result.warnings)
    if block:
        parts += ["", block]
    return "\n".join(parts)


def expected_text(line: str, terms: list[dict]) -> str:
    """The analytical model as text: its verdict `line`, then the `terms` (rows of
    `Trace.expected`) in ms (FLOPs in TFLOP, the roofline share in %)."""
    rows = [
        {
            "term": r["term"],
            "expected": expected_value_text(r["expected"], r["unit"]),
            "measured": expected_value_text(r["measured"], r["unit"]),
            "difference": expected_value_text(r["difference"], r["unit"]),
            "definition": r["definition"],
        }
        for r in terms
    ]
    return "\n".join(
        ["Analytical model (docs/roofline.md): " + line, "", table(one_line_strings(rows), EXPECT_COLUMNS)]
    )
