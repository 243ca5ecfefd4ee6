"""What the split modules of test_timeline_tracks.py share (helpers and fixtures)."""

from __future__ import annotations

import polars as pl

from traceview.analysis import timeline as tl
from traceview.analysis import timeline_tracks as tt


def items(rows) -> pl.DataFrame:
    """rows: (lane, rank, start, end, cls) -> an items frame sorted by start."""
    f = pl.DataFrame(
        [(lane, i, rank, s, e, f"n{i}", cls) for i, (lane, rank, s, e, cls) in enumerate(rows)],
        schema=list(tt.ITEM_COLUMNS),
        orient="row",
    )
    return tl.sort_tasks(f.with_columns(pl.col(c).cast(pl.Int64) for c in ("lane", "id", "rank", "start_ns", "end_ns")))
