"""What the split modules of test_diff.py share (helpers and fixtures)."""

from __future__ import annotations

import polars as pl


def _row(df: pl.DataFrame, **where) -> dict:
    rows = df.filter(*[pl.col(k).is_null() if v is None else pl.col(k) == v for k, v in where.items()]).to_dicts()
    assert len(rows) == 1, (where, rows)
    return rows[0]
