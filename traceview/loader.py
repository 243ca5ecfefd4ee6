"""`load(path)`: find the ranks under a path, parse them (in parallel, cached), return a `Trace`."""

from __future__ import annotations

import multiprocessing
import os
import tempfile
from collections import Counter
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import Callable

import polars as pl

from parsers import ParsedRank, Source, discover, parse_source
from traceview import cache, schema
from traceview.errors import TraceError
from traceview.trace import Trace

#: progress(done, total, label): called as rank sources finish.
Progress = Callable[[int, int, str], None]

#: Below this many bytes of uncached input, parsing in-process beats starting worker processes.
PARALLEL_MIN_BYTES = 16 * 1024 * 1024


def load(
    path: str | os.PathLike,
    *,
    cache_dir: str | os.PathLike | None = None,
    use_cache: bool = True,
    jobs: int | None = None,
    progress: Progress | None = None,
) -> Trace:
    """Load the profile at `path` (a file, a rank folder, or a folder of ranks) into a `Trace`.

    Ranks are parsed in parallel worker processes when there are several large ones (`jobs`,
    default: the number of CPUs) and cached as Parquet (see `traceview.cache`), so a second load of
    an unchanged profile reads only Parquet. A rank that cannot be read is listed in
    `Trace.failures` while the others load; if none can be read, the first error is raised
    (`TraceError`, one line naming the file, the problem and the fix).
    """
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

        for source, result in _parse_all(todo, folder_for, use_cache, jobs):
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


def _parse_all(todo: list[Source], folder_for: Callable[[Source], Path], write_cache: bool, jobs: int | None):
    """Yield (source, ParsedRank | TraceError) for each source, in parallel when worth it.

    In-process parsing writes a cache entry only when `write_cache`; worker processes always write
    their result to `folder_for(source)` (the cache, or a scratch folder) and hand back only that
    path, so frames never travel through pickle.
    """
    total_bytes = sum(_size(s) for s in todo)
    workers = min(jobs or os.cpu_count() or 1, len(todo))
    if workers <= 1 or total_bytes < PARALLEL_MIN_BYTES:
        for source in todo:
            try:
                result = parse_source(source)
            except TraceError as exc:
                yield source, exc
                continue
            if write_cache:
                _write_quietly(result, folder_for(source))
            yield source, result
        return
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=workers, mp_context=ctx) as pool:
        futures = {pool.submit(_parse_to_folder, s, str(folder_for(s))): s for s in todo}
        for fut in as_completed(futures):
            source = futures[fut]
            error = fut.result()
            entry = cache.read_entry(folder_for(source)) if error is None else None
            if error is None and entry is None:
                error = f"cannot read {source.path}: the parser process wrote no result"
            yield source, entry if entry is not None else TraceError(None, error)


def _write_quietly(parsed: ParsedRank, folder: Path) -> None:
    """Write a cache entry; a full disk or a read-only cache only costs the next load its speed-up."""
    if folder.exists():
        return
    try:
        cache.write_entry(parsed, folder)
    except OSError:
        pass


def _parse_to_folder(source: Source, folder: str) -> str | None:
    """Worker-process entry: parse one source into a Parquet folder; return an error line or None."""
    try:
        parsed = parse_source(source)
    except TraceError as exc:
        return str(exc)
    if not Path(folder).exists():
        cache.write_entry(parsed, Path(folder))
    return None


def _size(source: Source) -> int:
    try:
        return sum(p.stat().st_size for p in cache.input_files(source))
    except OSError:
        return 0


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
