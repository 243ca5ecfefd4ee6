"""The summary document as flat tables, for `traceview report --format csv|parquet`.

`summary_tables(summary)` turns `build_summary(...)`'s nested document into one polars frame per
table, with the same numbers (µs, shares as fractions) and column names as the JSON:

- `headline`: one row: steps, mean_step_us, communication_not_overlapped_frac;
- `steps`: rank, step and every step term (`<term>_us`, the derived columns), gap_before_us;
- `trace`: rank and every term over the whole trace;
- `compute_classes`: rank, class, group, time_us, share, count;
- `top_kernels`: rank, name, short_name, class, count, total_us, mean_us, share;
- `kernels`, `operators`: the kernels over all ranks and the operator view (profile-wide);
- `device_phases`: rank and device_<phase>_us over the whole trace;
- `stream_idle`, `long_steps`: rank plus the summary's fields (when the summary has them);
- `ranks`: rank, device, format, window_rule, pipeline stage, unclassified_share, launch delay stats;
- `cross_rank_ranks`, `step_skew`, `collectives`: the cross-rank section (several ranks only);
- `throughput`, `findings`: when the summary has them.

A table with no rows is left out.
"""

from __future__ import annotations

from pathlib import Path

import orjson
import polars as pl

from traceview.safe_text import csv_safe

RANK_FIELDS = ("device", "format", "window_rule", "pipeline_stage", "pipeline_stages", "unclassified_share")
NESTED = {
    "steps": "steps",
    "compute_classes": "compute_classes",
    "top_kernels": "top_kernels",
    "stream_idle": "stream_idle",
    "long_steps": "long_steps",
}


def _frame(rows: list[dict]) -> pl.DataFrame | None:
    if not rows:
        return None
    return pl.DataFrame(rows, infer_schema_length=None)


def summary_tables(summary: dict) -> dict[str, pl.DataFrame]:
    """One frame per table of the summary document (see the module docstring)."""
    rows: dict[str, list[dict]] = {name: [] for name in ("ranks", "trace", "device_phases", *NESTED)}
    for entry in summary.get("ranks", []):
        rank = entry["rank"]
        meta = {"rank": rank, **{k: entry.get(k) for k in RANK_FIELDS}}
        meta.update({f"launch_delay_{k}": v for k, v in (entry.get("launch_delay") or {}).items()})
        rows["ranks"].append(meta)
        if entry.get("trace"):
            rows["trace"].append({"rank": rank, **entry["trace"]})
        if entry.get("device_phases"):
            rows["device_phases"].append({"rank": rank, **entry["device_phases"]})
        for table, key in NESTED.items():
            rows[table] += [{"rank": rank, **item} for item in entry.get(key) or []]
    cross = summary.get("cross_rank") or {}
    rows["cross_rank_ranks"] = list(cross.get("ranks") or [])
    rows["step_skew"] = list(cross.get("step_skew") or [])
    rows["collectives"] = list(cross.get("collectives") or [])
    rows["throughput"] = list(summary.get("throughput") or [])
    rows["findings"] = list(summary.get("findings") or [])
    rows["kernels"] = list(summary.get("kernels") or [])
    rows["operators"] = list(summary.get("operators") or [])
    rows["what_if"] = list(summary.get("what_if") or [])
    rows["expected"] = list((summary.get("expected") or {}).get("terms") or [])
    rows["headline"] = [summary["headline"]] if summary.get("headline") else []
    out = {}
    for name, table_rows in rows.items():
        frame = _frame(table_rows)
        if frame is not None:
            out[name] = frame
    return out


def write_tables(summary: dict, folder: Path, fmt: str) -> list[Path]:
    """Write `summary_tables` into `folder` as <table>.csv or <table>.parquet; returns the files."""
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for name, frame in summary_tables(summary).items():
        path = folder / f"{name}.{fmt}"
        if fmt == "csv":
            # a nested value (a list or record) does not fit a CSV cell: written as JSON text
            # (summary tables are small: one row per rank, step or kernel)
            frame = frame.with_columns(
                [
                    pl.Series(
                        c, [None if v is None else orjson.dumps(v).decode() for v in frame[c].to_list()], pl.String
                    )
                    for c, t in frame.schema.items()
                    if t.is_nested()
                ]
            )
            csv_safe(frame).write_csv(path)
        else:
            frame.write_parquet(path)
        written.append(path)
    return written
