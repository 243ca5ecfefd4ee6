"""`load(path)`: find the ranks under a path, parse them (in parallel, cached), return a `Trace`.

Selection (`load(..., ranks=, steps=)`, the CLI's `--ranks SPEC` / `--steps SPEC`), the way out for a
profile too large to load whole:

- ranks: the rank numbers of the loaded Trace (`t.ranks["rank"]`): the rank each source records,
  except that a missing or repeated one is renumbered (`rank_numbers`). A source whose recorded
  rank is known without parsing it (`parsers.recorded_rank`: Kineto's distributedInfo header,
  Ascend's profiler_info_<rank>.json, MindSpore's file name; or a cached entry's meta.json) and is
  not selected is never parsed (nor counted by the memory guard); the others are parsed and dropped
  afterwards when their final number is not selected. The numbering is computed over every source
  (skipped ones with their recorded rank), so a rank has the same number with and without
  selection. Exceptions, both rare: a skipped source that would have failed to parse still takes
  its number; a recorded rank repeated by a source whose rank only a parse reveals can renumber a
  source that was already skipped.
- steps: `select_steps` after the load (`Trace.select_steps`).

A selection given as text is a SPEC: inclusive ranges and numbers separated by commas, e.g.
`0-7,12,16-19` (`Selection.parse`). Asking for ranks or steps none of which exist is a TraceError
naming those that do; asking for some that do not exist loads the others with a warning.
"""

from __future__ import annotations

import dataclasses
import os
from collections import Counter
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing
from pathlib import Path

import orjson

from traceview import cache, executors, per_rank, rank_groups, ruleset
from traceview.assemble import assemble, rank_numbers
from traceview.errors import TraceError
from traceview.parsers import ParsedRank, RankGroup, Source, discover, load_guard
from traceview.parsers.recorded_rank import recorded_rank
from traceview.ruleset import RuleSet
from traceview.safe_text import path_text
from traceview.selection import Selection, listing
from traceview.step_selection import select_steps
from traceview.trace import Trace

#: Cache entries read at once (threads) by a load of several units.
READ_THREADS = 8

#: progress(done, total, label): called as rank sources finish.
Progress = Callable[[int, int, str], None]


def load(
    path: str | os.PathLike,
    *,
    cache_dir: str | os.PathLike | None = None,
    use_cache: bool = True,
    jobs: int | None = None,
    progress: Progress | None = None,
    executor: str = "local",
    ray_address: str | None = None,
    ranks: str | Iterable[int] | None = None,
    steps: str | Iterable[int] | None = None,
    analyse: bool = False,
    rules: str | os.PathLike | RuleSet | None = None,
) -> Trace:
    """Load the profile at `path` (a file, a rank folder, or a folder of ranks) into a `Trace`.

    Ranks are parsed in parallel worker processes when there are several large ones (`jobs`,
    default: the number of CPUs) and cached as Parquet (see `traceview.cache`), so a second load of
    an unchanged profile reads only Parquet. A rank that cannot be read is listed in
    `Trace.failures` while the others load; if none can be read, the first error is raised
    (`TraceError`, one line naming the file, the problem and the fix).

    `executor="ray"` parses the ranks as Ray tasks instead (`ray_address`: the cluster, default
    `$RAY_ADDRESS` or a local Ray instance; needs `traceview[ray]`), with identical results; see
    `traceview.executors`. Before a local parse, `traceview.parsers.load_guard` checks that the load fits in the
    available memory (fewer workers if not, else a TraceError naming the size and the ways out).

    `rules`: a user's rules file for all tables (docs/rules.md), or a RuleSet
    (`traceview.ruleset.build`, which also takes files of one table): read and checked once,
    before anything is parsed (a bad file is a TraceError), and the Trace's `rules`. Its task
    kinds apply while parsing (a cached rank parsed with other rules is parsed again); its other
    tables are the inputs of the analyses (rank-local analyses cached with other rules are
    computed again, and cached with these).

    `ranks`: load only these ranks (a SPEC such as "0-7,12", or integers); unselected ranks whose
    rank is known without parsing are never parsed (see the module docstring). `steps`: keep only
    these steps (`Trace.select_steps`). A bad SPEC raises ValueError; ranks or steps none of which
    exist raise TraceError naming those that do; some missing: a warning in `Trace.warnings`.

    `analyse=True`: where a group of small ranks or a large rank is parsed (a local worker
    process, a Ray task, or this process when it goes to the cache) its rank-local analyses
    (`traceview.per_rank`) are computed too and cached with it; a cache entry written without
    them (`traceview info`) is refilled with them on the first load that asks. The Trace holds
    them ready when every rank brings them (from the parse or from the cache, whatever
    `analyse`); otherwise it computes them itself on first use. Same numbers either way.
    """
    rank_sel = Selection.of(ranks, "ranks")
    step_sel = Selection.of(steps, "steps")
    chosen = ruleset.build(rules)
    runner = executors.get(executor, jobs=jobs, address=ray_address, analyse=analyse, rules=chosen)
    sources = discover(path)
    if chosen.task_kinds:
        sources = [dataclasses.replace(s, task_kinds=chosen.task_kinds) for s in sources]
    root = Path(cache_dir) if cache_dir else cache.default_root()
    store = _Store(root) if use_cache else None
    # Units are planned over every source, so a selection finds the groups a whole load cached.
    sizes = [load_guard.input_bytes(s) for s in sources]
    units = [[sources[i] for i in unit] for unit in rank_groups.plan(sizes)]
    skipped: dict[Source, int] = {}
    if rank_sel is not None:
        skipped = _unselected(sources, rank_sel, root if store else None, units)
    wanted = [s for s in sources if s not in skipped]
    parsed: dict[Source, ParsedRank] = {}
    errors: dict[Source, TraceError] = {}
    todo = []
    units = [u for u in units if any(s not in skipped for s in u)]
    for unit, entry in zip(units, store.read_all(units) if store else [None] * len(units)):
        want = [s for s in unit if s not in skipped]
        if entry is None and store and len(want) < len(unit):
            # a selection's part of a group that no whole load cached: cached under its own key
            unit, entry = want, store.read(want)
        if entry is not None and entry.analyses_rules != chosen.digest:
            entry.analyses = None  # computed with other rules: not this load's numbers
        if entry is not None and analyse and entry.analyses is None:
            entry = store.refill(unit, entry, chosen)
        if entry is None:
            todo.append(want)
        elif isinstance(entry, RankGroup):
            parsed.update((s, m) for s, m in zip(unit, entry.members()) if s not in skipped)
        else:
            parsed[unit[0]] = entry
    done = len(parsed)
    if progress and done:
        progress(done, len(wanted), "cached")

    try:
        # closing: when this load stops early (Ctrl-C, an error), the executor stops its workers now
        with closing(
            runner.run(todo, analyse_here=store is not None and store.writable, sizes=dict(zip(sources, sizes)))
        ) as results:
            for unit, result in results:
                done += len(unit)
                if isinstance(result, TraceError):
                    errors.update(_unit_errors(unit, result))
                elif isinstance(result, RankGroup):
                    for source, member in zip(unit, result.members()):
                        if isinstance(member, str):
                            errors[source] = TraceError(None, member)
                        else:
                            parsed[source] = member
                    if store and result.complete:
                        store.write(unit, result)
                else:
                    parsed[unit[0]] = result
                    if store and analyse and result.analyses is None:
                        store.pending[unit[0]] = result  # written once, with the driver's analyses
                    elif store:
                        store.write(unit, result)
                if progress:
                    progress(done, len(wanted), unit[0].path.name if len(unit) == 1 else f"{len(unit)} small ranks")
        first_error = next((errors[s] for s in wanted if s in errors), None)
        if not parsed and first_error is not None:
            raise first_error
        failures = [str(errors[s]) for s in sources if s in errors]
        beside = companions(sources, parsed)
        ranked = [s for s in sources if s not in beside]
        if rank_sel is None:
            kept = [s for s in ranked if s in parsed]
            trace = assemble(path_text(path), [(s, parsed[s]) for s in kept], failures, rules=chosen)
        else:
            trace, kept = _assemble_selected(
                path_text(path), ranked, parsed, skipped, rank_sel, failures, first_error, chosen
            )
        trace.companions = _companion_frame(beside, parsed, trace)
        trace.load_warnings += [
            f"{path_text(s.path)}: {LONE_CAPTURE}" for s in kept if parsed[s].meta.get("graph_capture")
        ]
        if store and analyse:
            store.store_analyses(trace, [parsed[s] for s in kept], kept)
    finally:  # whatever stops the load (Ctrl-C, an error), what was parsed is cached
        if store:
            store.finish()
    if store and store.problem:
        trace.load_warnings.append(store.problem)
    return select_steps(trace, step_sel) if step_sel is not None else trace


#: The warning for a graph-capture trace loaded with no trace of the run beside it.
LONE_CAPTURE = (
    "a CUDA/HIP graph capture trace (stream captures, no graph launch): its device time is the capture, "
    "not the run that replays the graphs (load it beside the run's trace, where it is that rank's companion)"
)


def companions(sources: list[Source], parsed: dict[Source, ParsedRank]) -> dict[Source, Source]:
    """The parsed sources that are another's companion, not ranks: a graph-capture trace (schema
    `ranks.graph_capture`: vLLM's and SGLang's capture_traces/) that records the same rank as a
    parsed trace that is no capture, mapped to that trace (the first in source order). Both
    recording no rank counts as the same only in a load of just those two (an Nsight export
    records none: two exports are two processes). Its kernels and shapes describe the graphs the other
    replays; counted as a rank it would add a 99.9 % idle rank and advice against the graphs the
    run already uses. A capture trace with no such trace beside it stays a rank."""
    runs: dict[int | None, Source] = {}
    captures = [s for s in sources if s in parsed and parsed[s].meta.get("graph_capture")]
    plain = [s for s in sources if s in parsed and not parsed[s].meta.get("graph_capture")]
    for s in plain:
        runs.setdefault(parsed[s].meta.get("rank"), s)
    if len(plain) > 1 or len(captures) > 1:  # no rank recorded says nothing then (Nsight: per process)
        runs.pop(None, None)
    return {s: runs[parsed[s].meta.get("rank")] for s in captures if parsed[s].meta.get("rank") in runs}


def _companion_frame(beside: dict[Source, Source], parsed: dict[Source, ParsedRank], trace: Trace):
    """Trace.companions: per companion, the number its rank got in `trace`, its source, its kind
    and its device tasks; companions of ranks not in the trace (a selection) are left out."""
    import polars as pl

    from traceview.trace import COMPANIONS_SCHEMA

    numbers = dict(zip(trace.ranks["source"].to_list(), trace.ranks["rank"].to_list()))
    rows = []
    for companion, run in beside.items():
        rank = numbers.get(parsed[run].meta.get("source"))
        if rank is None:
            continue
        member = parsed[companion]
        if member.group is not None:
            group_tasks = member.group.frames.get("device_tasks")
            tasks = None if group_tasks is None else int((group_tasks["rank"] == member.index).sum())
        else:
            tasks = member.frames["device_tasks"].height if "device_tasks" in member.frames else None
        rows.append((rank, parsed[companion].meta.get("source"), "graph capture", tasks))
    return pl.DataFrame(rows, schema=COMPANIONS_SCHEMA, orient="row")


def _unit_errors(unit: list[Source], error: TraceError) -> dict[Source, TraceError]:
    """A unit's error for each of its sources: a group's (a failed worker or Ray task) names each
    member with the first file's error, once per member."""
    if len(unit) == 1:
        return {unit[0]: error}
    return {
        s: TraceError(s.path, f"parsed with {len(unit) - 1} other small ranks in one task that failed: {error}")
        for s in unit
    }


def _unselected(
    sources: list[Source], wanted: Selection, cache_root: Path | None, units: list[list[Source]]
) -> dict[Source, int]:
    """The sources that need not be parsed for rank selection `wanted`, with their recorded rank:
    those whose rank is known without parsing (a cached group's or entry's meta.json, else
    `recorded_rank`), is not selected, and is recorded by no other source (a repeated rank may be
    renumbered into the selection, so those are parsed and judged by their final number)."""
    grouped = _grouped_ranks(units, cache_root) if cache_root is not None else {}
    known = {s: grouped[s] if s in grouped else _cheap_rank(s, cache_root) for s in sources}
    counts = Counter(r for r in known.values() if r is not None)
    return {s: r for s, r in known.items() if r is not None and counts[r] == 1 and r not in wanted}


def _grouped_ranks(units: list[list[Source]], cache_root: Path) -> dict[Source, int | None]:
    """The recorded ranks of the members of cached groups (one meta.json read per group)."""
    out: dict[Source, int | None] = {}
    for unit in units:
        metas = cache.member_metas(cache_root / cache.group_key(unit), len(unit)) if len(unit) > 1 else None
        out.update((s, _as_rank(m.get("rank"))) for s, m in zip(unit, metas or []))
    return out


def _cheap_rank(source: Source, cache_root: Path | None) -> int | None:
    """Recorded rank of `source` without parsing it: its cache entry's meta.json, else the file headers."""
    if cache_root is not None:
        meta_file = cache_root / cache.key(source) / cache.META_FILE
        try:
            return _as_rank(orjson.loads(meta_file.read_bytes())["meta"].get("rank"))
        except (OSError, KeyError, TypeError, AttributeError, orjson.JSONDecodeError):
            pass
    return recorded_rank(source)


def _as_rank(value) -> int | None:
    """A recorded rank read from a cache's meta.json: an integer, else None."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _assemble_selected(
    source: str,
    sources: list[Source],
    parsed: dict[Source, ParsedRank],
    skipped: dict[Source, int],
    wanted: Selection,
    failures: list[str],
    first_error: TraceError | None,
    rules: RuleSet,
) -> tuple[Trace, list[Source]]:
    """Number every rank source as a whole load would (skipped ones by their recorded rank), keep
    the parsed ones whose number is selected (the Trace and those sources, in its rank order);
    TraceError when none is, a warning when some are missing."""
    candidates = [s for s in sources if s in parsed or s in skipped]
    recorded = [parsed[s].meta.get("rank") if s in parsed else skipped[s] for s in candidates]
    names = [path_text(s.path) for s in candidates]
    numbering: list[str] = []
    numbers = rank_numbers(recorded, names, numbering)
    present = set(numbers)
    keep = [(s, n) for s, n in zip(candidates, numbers) if s in parsed and n in wanted]
    if not keep:
        if first_error is not None:  # the asked rank may be in the source that failed
            raise first_error
        raise TraceError(
            None, f"no {wanted.describe('rank')} in this profile", f"{source} has {listing('rank', present)}"
        )
    kept_names = [path_text(s.path) + ": " for s, _ in keep]
    warnings = [w for w in numbering if any(w.startswith(name) for name in kept_names)]
    missing = wanted.missing(present)
    if missing is not None:
        warnings.append(
            f"{source}: no {missing.describe('rank')} in this profile (it has {listing('rank', present)}); "
            f"loaded the others"
        )
    trace = assemble(source, [(s, parsed[s]) for s, _ in keep], failures, [n for _, n in keep], warnings, rules)
    return trace, [s for s, _ in keep]


class _Store:
    """The cache as one load uses it: read entries, write the new ones, keep it under its size
    limit; a cache that cannot be written (read-only, a full disk) is used no further in this load
    and `problem` says so, once (the load itself goes on: the cache only saves time)."""

    def __init__(self, root: Path):
        self.root = root
        self.problem: str | None = None
        self.used: set[str] = set()
        self.wrote = False
        #: ranks parsed alone without their rank-local analyses by a load that wants them: written
        #: by `store_analyses` with the driver's (once, not twice), else by `finish`
        self.pending: dict[Source, ParsedRank] = {}
        #: each unit's entry name as first computed (`_name`)
        self.names: dict[tuple[Source, ...], str] = {}
        try:
            root.mkdir(parents=True, exist_ok=True)
            self.writable = os.access(root, os.W_OK)
        except OSError as exc:
            self.writable = False
            self._fail(exc)
        else:
            if not self.writable:
                self.problem = (
                    f"cache {root} is not writable: this load was not cached (--cache-dir elsewhere, or --no-cache)"
                )

    def _name(self, unit: list[Source]) -> str:
        """The unit's entry name, as first computed in this load: an entry written at its end holds
        what was read or parsed at its start, so it goes under the key of the files as they were
        then (a file rewritten meanwhile gets a new key, and is parsed again next time)."""
        name = self.names.get(tuple(unit))
        if name is None:
            name = cache.key(unit[0]) if len(unit) == 1 else cache.group_key(unit)
            self.names[tuple(unit)] = name
        return name

    def read(self, unit: list[Source]) -> ParsedRank | RankGroup | None:
        """The cached entry of a unit (one source, or a group of small ones), or None."""
        try:
            name = self._name(unit)
        except OSError:
            return None  # the parser says what is wrong with the file
        self.used.add(name)
        entry = cache.read_entry(self.root / name)
        if isinstance(entry, RankGroup) != (len(unit) > 1):
            return None
        if isinstance(entry, RankGroup) and (len(entry.errors) != len(unit) or not entry.complete):
            return None
        return entry

    def read_all(self, units: list[list[Source]]) -> list[ParsedRank | RankGroup | None]:
        """`read` of every unit, in order, several at once (reading and verifying an entry is
        file reads, hashing and Parquet decoding, which release the GIL)."""
        if len(units) < 2:
            return [self.read(u) for u in units]
        with ThreadPoolExecutor(min(READ_THREADS, len(units))) as pool:
            return list(pool.map(self.read, units))

    def write(self, unit: list[Source], result: ParsedRank | RankGroup) -> None:
        if not self.writable:
            return
        try:
            name = self._name(unit)
            files = result.packed or (cache.pack_group(result) if isinstance(result, RankGroup) else cache.pack(result))
            cache.write_files(files, self.root / name)
        except OSError as exc:
            self.writable = False
            self._fail(exc)
            return
        self.used.add(name)
        self.wrote = True

    def refill(self, unit: list[Source], entry: ParsedRank | RankGroup, rules: RuleSet) -> ParsedRank | RankGroup:
        """A cached group written without the rank-local analyses (by `traceview info`, or a load
        without `analyse`) or with other rules, read by a load that wants them: computed now with
        `rules` for the group at once, as the process that parses it would have, and the entry
        rewritten with them, so that later opens read them. (A rank cached alone gets them from
        `store_analyses`.)"""
        if not self.writable or not isinstance(entry, RankGroup):
            return entry
        members = list(zip(unit, entry.members()))
        group_trace = assemble(path_text(unit[0].path), members, [], list(range(len(unit))), rules=rules)
        entry.analyses = per_rank.compute(group_trace)
        entry.analyses_rules = rules.digest
        entry.packed = None
        self.write(unit, entry)
        return entry

    def store_analyses(self, trace: Trace, ranks: list[ParsedRank], sources: list[Source]) -> None:
        """Ranks cached alone without their rank-local analyses (ranks under
        `executors.ANALYSE_MIN_BYTES`, whose analyses the workers leave to the driver; an entry
        written by `traceview info`): the Trace computes them now for all its ranks at once (its
        memo keeps them for the caller, who asked for them) and each such rank's share is added
        to its entry, so that the next open reads them instead of computing them again.
        `ranks`/`sources`: the Trace's ranks, in its order."""
        lacking = [i for i, p in enumerate(ranks) if p.group is None and p.analyses is None]
        numbers = trace.ranks["rank"].to_list()
        shares = per_rank.shares(trace, [numbers[i] for i in lacking]) if lacking and self.writable else None
        for i in lacking if shares is not None else []:
            parsed = ranks[i]
            self.pending.pop(sources[i], None)
            try:
                name = self._name([sources[i]])
                files = cache.with_analyses(parsed.packed or cache.pack(parsed), shares[numbers[i]], trace.rules.digest)
                cache.write_files(files, self.root / name)
            except OSError as exc:
                self.writable = False
                self._fail(exc)
                return
            self.used.add(name)
            self.wrote = True

    def finish(self) -> None:
        """After writing: the ranks still pending (parsed, waiting for the driver's analyses, which
        were not computed) written as they are; then keep the cache under its size limit (never
        evicting this load's entries)."""
        for source, parsed in list(self.pending.items()):
            self.write([source], parsed)
        self.pending.clear()
        if self.wrote:
            cache.evict(self.root, keep=self.used)

    def _fail(self, exc: OSError) -> None:
        self.problem = (
            f"cache {self.root}: {exc.strerror or exc}: this load was not cached "
            "(free space there, --cache-dir elsewhere, or --no-cache)"
        )
