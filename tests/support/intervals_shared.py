"""What the split modules of test_intervals.py share (helpers and fixtures)."""

from __future__ import annotations

import polars as pl

SETS = ["comp", "comm", "mem"]


def _frame(rows):
    return pl.DataFrame(
        {
            "rank": [0] * len(rows),
            "set": [r[0] for r in rows],
            "start_ns": [r[1] for r in rows],
            "end_ns": [r[2] for r in rows],
        },
        schema={"rank": pl.Int64, "set": pl.String, "start_ns": pl.Int64, "end_ns": pl.Int64},
    )
