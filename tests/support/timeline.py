"""Device-task frames for the timeline tests: the columns the timeline reads, built from short rows."""

from __future__ import annotations

import polars as pl

SCHEMA = {
    "rank": pl.Int64,
    "stream": pl.Int64,
    "name": pl.String,
    "kind": pl.String,
    "start_ns": pl.Int64,
    "end_ns": pl.Int64,
    "dur_ns": pl.Int64,
    "step": pl.Int64,
    "correlation": pl.Int64,
}


def frame(rows):
    """rows: (rank, stream, kind, start, end)."""
    return pl.DataFrame(
        [
            {
                "rank": r,
                "stream": s,
                "name": f"t{i}",
                "kind": k,
                "start_ns": a,
                "end_ns": b,
                "dur_ns": b - a,
                "step": 1,
                "correlation": i,
            }
            for i, (r, s, k, a, b) in enumerate(rows)
        ],
        schema=SCHEMA,
    )
