"""What the split modules of test_compute_classes.py share (helpers and fixtures)."""

from __future__ import annotations

import functools
from pathlib import Path

import polars as pl

import traceview as tv
from traceview import schema
from traceview.analysis import classes as cc

RULES = cc.class_rules()


@functools.cache
def _load(path: Path):
    """Each profile is parsed once per test session here (no Parquet cache: nothing is reused)."""
    return tv.load(path, use_cache=False)


def _host(ops: list[tuple[int, int, int, str]], launches: list[tuple[int, int, int]]) -> pl.DataFrame:
    """ops: (tid, start, end, name); launches: (tid, time, correlation)."""
    rows = [
        {
            "rank": 0,
            "pid": 1,
            "tid": tid,
            "name": name,
            "cat": "cpu_op",
            "kind": "operator",
            "start_ns": s,
            "end_ns": e,
            "dur_ns": e - s,
            "external_id": 1000 + i,
        }
        for i, (tid, s, e, name) in enumerate(ops)
    ] + [
        {
            "rank": 0,
            "pid": 1,
            "tid": tid,
            "name": "cudaLaunchKernel",
            "cat": "cuda_runtime",
            "kind": "runtime",
            "start_ns": t,
            "end_ns": t + 5,
            "dur_ns": 5,
            "correlation": c,
            "external_id": c,
        }
        for tid, t, c in launches
    ]
    return schema.conform(pl.DataFrame(rows, infer_schema_length=None), "host_events")


def _kernels(correlations: list[int | None]) -> pl.DataFrame:
    rows = [
        {
            "rank": 0,
            "name": f"k{i}",
            "kind": "kernel",
            "start_ns": 10_000 + i,
            "end_ns": 10_001 + i,
            "dur_ns": 1,
            "correlation": c,
            "external_id": c,
        }
        for i, c in enumerate(correlations)
    ]
    return schema.conform(pl.DataFrame(rows, infer_schema_length=None), "device_tasks")


def _agrees_with_external_ids(trace) -> int:
    out = cc.classify(trace.device_tasks, trace.host_events, RULES)
    ops = (
        trace.host_events.filter(pl.col("kind") == "operator")
        .drop_nulls("external_id")
        .unique(["rank", "external_id"], keep="first")
        .select("rank", "external_id", pl.col("name").alias("_by_ext"))
    )
    both = out.join(ops, on=["rank", "external_id"], how="inner").filter(pl.col("launch_op").is_not_null())
    assert both.height > 0
    assert (both["launch_op"] == both["_by_ext"]).mean() >= 0.99
    return both.height
