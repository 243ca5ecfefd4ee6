"""What every parser returns: the canonical frames of one rank, its metadata and its warnings."""

from __future__ import annotations

from dataclasses import dataclass, field

import polars as pl

from traceview import schema

#: Bumped whenever a parser's output changes, so cached Parquet from an older version is not reused.
PARSER_VERSION = 2


@dataclass
class ParsedRank:
    """One rank's canonical frames (table name -> frame conforming to `traceview.schema`).

    `frames` must hold every table of `schema.TABLES` except `ranks`; `meta` holds the columns of the
    `ranks` table (rank, world_size, format, source, device_name, device_type); `warnings` holds
    one line per kind of recoverable oddity (see `traceview.errors.Warnings`).
    """

    frames: dict[str, pl.DataFrame]
    meta: dict
    warnings: list[str] = field(default_factory=list)

    @classmethod
    def build(cls, frames: dict[str, pl.DataFrame], meta: dict, warnings: list[str]) -> "ParsedRank":
        """Conform the given frames to the schema (missing tables become empty) and fill `rank`."""
        rank = meta.get("rank")
        out = {}
        for table in schema.TABLES:
            if table == "ranks":
                continue
            df = frames.get(table)
            if df is None:
                out[table] = schema.empty(table)
                continue
            if "rank" not in df.columns or df["rank"].null_count() == df.height:
                df = df.with_columns(pl.lit(rank, dtype=pl.Int64).alias("rank"))
            out[table] = schema.conform(df, table)
        full_meta = {col: meta.get(col) for col in schema.RANKS}
        return cls(frames=out, meta=full_meta, warnings=list(warnings))
