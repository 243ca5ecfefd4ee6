"""One Trace from parsed ranks: every rank numbered, the frames concatenated (`traceview.load`, and
a one-rank Trace where a rank is parsed, for its rank-local analyses: `traceview.executors`)."""

from __future__ import annotations

from collections import Counter

import polars as pl

from traceview import schema
from traceview.parsers import ParsedRank, Source
from traceview.safe_text import path_text
from traceview.trace import Trace


def one_rank_trace(source: Source, parsed: ParsedRank) -> Trace:
    """A Trace of one parsed rank alone (where it was parsed: a Ray task's rank-local analyses)."""
    return assemble(str(source.path), [(source, parsed)], [])


def assemble(
    source: str,
    ranks: list[tuple[Source, ParsedRank]],
    failures: list[str],
    numbers: list[int] | None = None,
    warnings: list[str] | None = None,
) -> Trace:
    """Concatenate per-rank frames, giving every rank a distinct number (`numbers` when the caller
    numbered them, with the numbering's `warnings`; else `rank_numbers` here)."""
    warnings = list(warnings or [])
    if numbers is None:
        numbers = rank_numbers([p.meta.get("rank") for _, p in ranks], [path_text(s.path) for s, _ in ranks], warnings)
    frames: dict[str, list[pl.DataFrame]] = {t: [] for t in schema.TABLES if t != "ranks"}
    metas = []
    for (src, parsed), rank in zip(ranks, numbers):
        warnings.extend(parsed.warnings)
        meta = dict(parsed.meta, rank=rank)
        metas.append(meta)
        for table in frames:
            df = parsed.frames.get(table, schema.empty(table))
            frames[table].append(df.with_columns(pl.lit(rank, dtype=pl.Int64).alias("rank")))
    ranks_df = schema.conform(pl.DataFrame(metas, schema=schema.polars_schema("ranks")), "ranks")
    combined = {
        t: pl.concat([schema.conform(d, t) for d in dfs]) if dfs else schema.empty(t) for t, dfs in frames.items()
    }
    trace = Trace(path_text(source), ranks_df, combined, warnings, failures)
    if any(p.analyses for _, p in ranks):
        from traceview import per_rank

        per_rank.seed(trace, [p.analyses for _, p in ranks])
    return trace


def rank_numbers(recorded: list[int | None], names: list[str], warnings: list[str]) -> list[int]:
    """Recorded ranks where unique; missing or repeated ones get the next unused numbers, with a warning."""
    seen = Counter(r for r in recorded if r is not None)
    used = set(seen)
    out = []
    next_free = 0
    taken: set[int] = set()
    for rank, name in zip(recorded, names):
        if rank is not None and seen[rank] == 1:
            out.append(rank)
            continue
        if rank is not None and rank not in taken:
            taken.add(rank)
            out.append(rank)
            continue
        while next_free in used or next_free in taken:
            next_free += 1
        taken.add(next_free)
        if len(names) > 1:
            why = "records no rank" if rank is None else f"repeats rank {rank}"
            warnings.append(f"{name}: {why}; numbered rank {next_free}")
        out.append(next_free)
    return out
