"""One Trace from parsed ranks: every rank numbered, the frames concatenated (`traceview.load`, and
a one-rank Trace where a rank is parsed, for its rank-local analyses: `traceview.executors`)."""

from __future__ import annotations

from collections import Counter

import polars as pl

from traceview import schema
from traceview.parsers import ParsedRank, RankGroup, Source
from traceview.ruleset import RuleSet
from traceview.safe_text import path_text
from traceview.trace import Trace


def one_rank_trace(source: Source, parsed: ParsedRank, rules: RuleSet | None = None) -> Trace:
    """A Trace of one parsed rank alone, with `rules` (where it was parsed: a worker's rank-local
    analyses)."""
    return assemble(str(source.path), [(source, parsed)], [], rules=rules)


def assemble(
    source: str,
    ranks: list[tuple[Source, ParsedRank]],
    failures: list[str],
    numbers: list[int] | None = None,
    warnings: list[str] | None = None,
    rules: RuleSet | None = None,
) -> Trace:
    """Concatenate per-rank frames, giving every rank a distinct number (`numbers` when the caller
    numbered them, with the numbering's `warnings`; else `rank_numbers` here). Ranks parsed in a
    group (`ParsedRank.group`, `traceview.rank_groups`) bring their group's frames, concatenated
    once per group, not per rank. The Trace's rules are `rules` (None: the shipped ones); the
    rank-local analyses the ranks bring seed it only when computed with those rules."""
    warnings = list(warnings or [])
    if numbers is None:
        numbers = rank_numbers([p.meta.get("rank") for _, p in ranks], [path_text(s.path) for s, _ in ranks], warnings)
    metas = []
    for (_, parsed), rank in zip(ranks, numbers):
        warnings.extend(parsed.warnings)
        metas.append(dict(parsed.meta, rank=rank))
    parts = _parts([p for _, p in ranks])
    lookup = _lookup(parts, numbers)
    combined = {}
    for table in schema.TABLES:
        if table == "ranks":
            continue
        frames = [_part_frame(part, table) for part in parts]
        df = pl.concat(frames) if frames else schema.empty(table)
        combined[table] = df.with_columns(lookup.gather(df["rank"]).alias("rank")) if df.height else df
    ranks_df = schema.conform(pl.DataFrame(metas, schema=schema.polars_schema("ranks")), "ranks")
    trace = Trace(path_text(source), ranks_df, combined, warnings, failures)
    if rules is not None:
        trace.rules = rules
    if any(part.analyses for part in parts) and all(part.rules == trace.rules.digest for part in parts):
        from traceview import per_rank

        per_rank.seed(
            trace,
            [part.analyses if part.whole else None for part in parts],
            [part.offset for part in parts],
            [part.group is not None for part in parts],
            lookup,
        )
    return trace


class _Part:
    """A run of the assembled ranks that shares frames: one ParsedRank alone, or members of one
    RankGroup (`indices`: their member indices, in order). `offset`: the first of the positions
    0..n-1 its rows' `rank` takes while assembling (mapped to rank numbers by the lookup)."""

    def __init__(self, parsed: ParsedRank, offset: int):
        self.group = parsed.group
        self.single = parsed if parsed.group is None else None
        self.indices = [parsed.index]
        self.offset = offset

    @property
    def whole(self) -> bool:
        """A single rank, or a group whose members are all assembled, in order."""
        return self.group is None or self.indices == list(range(len(self.group.metas)))

    @property
    def holder(self) -> ParsedRank | RankGroup:
        """What holds its analyses: the rank alone, or its group."""
        holder = self.single if self.single is not None else self.group
        assert holder is not None  # one of the two is always set
        return holder

    @property
    def analyses(self) -> dict[str, bytes] | None:
        return self.holder.analyses

    @property
    def rules(self) -> str:
        """The digest of the rules its analyses were computed with."""
        return self.holder.analyses_rules


def _parts(parsed: list[ParsedRank]) -> list[_Part]:
    parts: list[_Part] = []
    position = 0
    for p in parsed:
        last = parts[-1] if parts else None
        if last is not None and p.group is not None and last.group is p.group and p.index > last.indices[-1]:
            last.indices.append(p.index)
            continue
        if last is not None:
            position += 1 if last.group is None else len(last.group.metas)
        parts.append(_Part(p, position))
    return parts


def _lookup(parts: list[_Part], numbers: list[int]) -> pl.Series:
    """Position (a part's offset + member index) -> rank number; null for a group's members not assembled."""
    size = 0 if not parts else parts[-1].offset + (1 if parts[-1].group is None else len(parts[-1].group.metas))
    out: list[int | None] = [None] * size
    it = iter(numbers)
    for part in parts:
        for index in part.indices:
            out[part.offset + index] = next(it)
    return pl.Series("rank", out, dtype=pl.Int64)


def _part_frame(part: _Part, table: str) -> pl.DataFrame:
    """A part's rows of `table`, conformed, with `rank` = its position (offset + member index)."""
    if part.group is None:
        df = schema.conform(part.single.frames.get(table, schema.empty(table)), table)
        return df.with_columns(pl.lit(part.offset, dtype=pl.Int64).alias("rank"))
    df = schema.conform(part.group.frames.get(table, schema.empty(table)), table)
    if not part.whole:
        df = df.filter(pl.col("rank").is_in(part.indices))
    return df.with_columns(pl.col("rank") + part.offset) if part.offset else df


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
