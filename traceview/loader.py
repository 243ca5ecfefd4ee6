"""`load(path)`: find the ranks under a path, parse them (in parallel, cached), return a `Trace`."""

from __future__ import annotations

import os
import tempfile
from collections import Counter
from pathlib import Path
from typing import Callable

import polars as pl

from parsers import ParsedRank, Source, discover
from traceview import cache, executors, schema
from traceview.errors import TraceError
from traceview.trace import Trace

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
) -> Trace:
    """Load the profile at `path` (a file, a rank folder, or a folder of ranks) into a `Trace`.

    Ranks are parsed in parallel worker processes when there are several large ones (`jobs`,
    default: the number of CPUs) and cached as Parquet (see `traceview.cache`), so a second load of
    an unchanged profile reads only Parquet. A rank that cannot be read is listed in
    `Trace.failures` while the others load; if none can be read, the first error is raised
    (`TraceError`, one line naming the file, the problem and the fix).

    `executor="ray"` parses the ranks as Ray tasks instead (`ray_address`: the cluster, default
    `$RAY_ADDRESS` or a local Ray instance; needs `traceview[ray]`), with identical results; see
    `traceview.executors`. Before a local parse, `traceview.memory` checks that the load fits in the
    available memory (fewer workers if not, else a TraceError naming the size and the ways out).
    """
    runner = executors.get(executor, jobs=jobs, address=ray_address)
    sources = discover(path)
    root = Path(cache_dir) if cache_dir else cache.default_root()
    if use_cache and not _writable(root):
        use_cache = False
    parsed: dict[Source, ParsedRank] = {}
    errors: dict[Source, TraceError] = {}
    todo = []
    for source in sources:
        entry = cache.read_entry(root / cache.key(source)) if use_cache else None
        if entry is not None:
            parsed[source] = entry
        else:
            todo.append(source)
    done = len(parsed)
    if progress and done:
        progress(done, len(sources), "cached")

    with tempfile.TemporaryDirectory(prefix="traceview-") as scratch:
        def folder_for(source: Source) -> Path:
            return (root if use_cache else Path(scratch)) / cache.key(source)

        for source, result in runner.run(todo, folder_for, use_cache):
            done += 1
            if isinstance(result, TraceError):
                errors[source] = result
            else:
                parsed[source] = result
            if progress:
                progress(done, len(sources), source.path.name)

    if not parsed:
        raise errors[sources[0]]
    ordered = [(s, parsed[s]) for s in sources if s in parsed]
    return _assemble(str(path), ordered, [str(errors[s]) for s in sources if s in errors])


def _writable(root: Path) -> bool:
    try:
        root.mkdir(parents=True, exist_ok=True)
        return os.access(root, os.W_OK)
    except OSError:
        return False


def _assemble(source: str, ranks: list[tuple[Source, ParsedRank]], failures: list[str]) -> Trace:
    """Concatenate per-rank frames, giving every rank a distinct number."""
    warnings: list[str] = []
    numbers = _rank_numbers([p.meta.get("rank") for _, p in ranks], [str(s.path) for s, _ in ranks], warnings)
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
    combined = {t: pl.concat([schema.conform(d, t) for d in dfs]) if dfs else schema.empty(t) for t, dfs in frames.items()}
    return Trace(source, ranks_df, combined, warnings, failures)


def _rank_numbers(recorded: list[int | None], names: list[str], warnings: list[str]) -> list[int]:
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
