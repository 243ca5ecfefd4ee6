"""Small ranks in groups: parsed by one task, cached as one entry, assembled as one frame per table.

A folder of thousands of small rank files would otherwise pay per rank what does not grow with its
bytes: a worker task and its answer, a cache entry of seven files, a few dozen polars operations to
verify, concatenate and renumber its frames, and the rank-local analyses' fixed cost. Grouping
makes those costs per group. Which ranks are grouped (`plan`) depends only on the sources and
their sizes, in the order `discover` lists them, so a second open forms the same groups and finds
their cache entries: consecutive sources under `SMALL_RANK_BYTES` are grouped until a group holds
`GROUP_BYTES` of input or `GROUP_RANKS` ranks; a larger source, or a small one alone, is parsed
and cached on its own as before. Adding, removing or changing one small rank file re-parses the
group(s) it falls in (and, when it shifts the boundaries, the later groups of that run).

The numbers are the same as parsing each rank alone: a group is the ranks' own frames
concatenated (`build`), and its rank-local analyses are computed on the group at once, which the
registry's scope "rank" guarantees equals computing them rank by rank (`traceview.per_rank`).
"""

from __future__ import annotations

from traceview import per_rank, schema
from traceview.assemble import assemble
from traceview.errors import TraceError
from traceview.parsers import ParsedRank, RankGroup, Source
from traceview.ruleset import RuleSet

#: A rank source under this many input bytes is grouped with its small neighbours.
SMALL_RANK_BYTES = 4 * 2**20
#: A group holds at most this many input bytes (the local executor's in-process threshold, so a
#: load large enough to go to worker processes has at least two units to spread over them) ...
GROUP_BYTES = 16 * 2**20
#: ... and at most this many ranks.
GROUP_RANKS = 256


def plan(sizes: list[int]) -> list[list[int]]:
    """The units of a load: lists of indices into its sources (whose input bytes are `sizes`), in
    order; a unit of several indices is a group (see the module docstring)."""
    units: list[list[int]] = []
    current: list[int] = []
    held = 0
    for i, size in enumerate(sizes):
        if size >= SMALL_RANK_BYTES:
            units.extend([[j] for j in current] if len(current) == 1 else [current] if current else [])
            current, held = [], 0
            units.append([i])
            continue
        if current and (held + size > GROUP_BYTES or len(current) >= GROUP_RANKS):
            units.append(current)
            current, held = [], 0
        current.append(i)
        held += size
    if current:
        units.append(current)
    return units


def build(
    sources: list[Source], results: list[ParsedRank | TraceError], analyse: bool = False, rules: RuleSet | None = None
) -> RankGroup:
    """One group from its sources' parse results (in order): the parsed ranks' frames
    concatenated with `rank` = member index, their metadata and warnings, each failed source's
    error line, and with `analyse` the members' rank-local analyses computed at once with `rules`
    (None: the shipped ones)."""
    ok = [(s, r) for s, r in zip(sources, results) if not isinstance(r, TraceError)]
    errors = [str(r) if isinstance(r, TraceError) else None for r in results]
    trace = assemble(str(sources[0].path.parent), ok, [], numbers=list(range(len(ok))), rules=rules)
    frames = {t: trace.frame(t) for t in schema.TABLES if t != "ranks"}
    analyses = per_rank.compute(trace) if analyse and ok else None
    metas, warnings = [p.meta for _, p in ok], [list(p.warnings) for _, p in ok]
    return RankGroup(frames, metas, warnings, errors, analyses, analyses_rules=trace.rules.digest)
