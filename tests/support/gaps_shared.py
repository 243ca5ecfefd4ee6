"""What the split modules of test_gaps.py share (helpers and fixtures)."""

from __future__ import annotations

import polars as pl

from traceview import schema


def _tasks(rows: list[dict]) -> pl.DataFrame:
    """device_tasks frame (canonical schema) from dicts with rank, stream, start, end, corr[, step]."""
    df = pl.DataFrame(
        {
            "rank": [r.get("rank", 0) for r in rows],
            "stream": [r.get("stream", 7) for r in rows],
            "name": [r.get("name", f"k{i}") for i, r in enumerate(rows)],
            "kind": [r.get("kind", "kernel") for r in rows],
            "start_ns": [r["start"] for r in rows],
            "end_ns": [r["end"] for r in rows],
            "dur_ns": [r["end"] - r["start"] for r in rows],
            "correlation": [r.get("corr") for r in rows],
            "step": [r.get("step") for r in rows],
        },
        schema_overrides={"rank": pl.Int64, "stream": pl.Int64, "correlation": pl.Int64, "step": pl.Int64},
    )
    return schema.conform(df, "device_tasks")


def _host(rows: list[dict]) -> pl.DataFrame:
    """host_events frame from dicts with rank, start, end, corr[, kind]."""
    df = pl.DataFrame(
        {
            "rank": [r.get("rank", 0) for r in rows],
            "name": [r.get("name", "cudaLaunchKernel") for r in rows],
            "kind": [r.get("kind", "runtime") for r in rows],
            "start_ns": [r["start"] for r in rows],
            "end_ns": [r["end"] for r in rows],
            "dur_ns": [r["end"] - r["start"] for r in rows],
            "correlation": [r.get("corr") for r in rows],
        },
        schema_overrides={"rank": pl.Int64, "correlation": pl.Int64},
    )
    return schema.conform(df, "host_events")


def _by(df: pl.DataFrame, *keys: str) -> dict:
    return {tuple(r[k] for k in keys): r for r in df.to_dicts()}


def _steps(rows: list[dict]) -> pl.DataFrame:
    keys = ["rank", "step", "host_start_ns", "host_end_ns", "device_start_ns", "device_end_ns", "window_rule"]
    types = {k: pl.String if k == "window_rule" else pl.Int64 for k in keys}
    return schema.conform(pl.DataFrame({k: [r.get(k) for r in rows] for k in keys}, schema=types), "steps")
