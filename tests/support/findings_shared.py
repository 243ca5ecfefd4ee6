"""What the split modules of test_findings.py share (helpers and fixtures)."""

from __future__ import annotations

import functools
from pathlib import Path

import polars as pl

import traceview as tv


@functools.cache
def load(path: str) -> tv.Trace:
    """One Trace per path for the whole module (analyses are memoised on it)."""
    return tv.load(Path(path), use_cache=False)


def fired(trace: tv.Trace, rule: str, **kwargs) -> dict:
    """rank -> finding row of `rule`."""
    found = trace.findings(**kwargs).filter(pl.col("rule") == rule)
    return {row["rank"]: row for row in found.to_dicts()}
