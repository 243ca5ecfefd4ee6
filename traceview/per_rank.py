"""Rank-local analyses: computed where a rank is parsed (a Ray task or a worker process), handed to
the driver's Trace.

Which analyses are rank-local is the registry's `scope` (`traceview.registry.RANK_LOCAL`): a rank's
rows depend on that rank's frames only, so running it on each rank alone and concatenating the
results gives what it gives on all ranks at once (`tests/integration/test_executors.py` checks this equality
on real multi-rank profiles). They run with their default parameters; `classified_tasks` keeps only
the columns it adds (`classes.CLASS_COLUMNS`). Results travel as Parquet bytes, a few KB per rank
except `classified_tasks` and `launch_calls` (a few small columns per device task / launch).

Where they are computed (`load(..., analyse=True)`, which every CLI command but `info` asks for):
in the Ray task or local worker process that parses a group of small ranks (`traceview.rank_groups`,
on the whole group at once) or a large rank (`traceview.executors.analyses_where_parsed`); a rank
parsed alone below `traceview.executors.ANALYSE_MIN_BYTES` gets its share of the driver's Trace's
(`shares`, all ranks at once: cheaper than each alone). They are stored in the rank's or group's
cache entry (`traceview.cache`), so a second open of the profile reads them instead of recomputing
them, while the code that computed them is the same (`traceview.digest.analysis_digest`).
"""

from __future__ import annotations

import io
from concurrent.futures import ThreadPoolExecutor

import polars as pl

from traceview import registry

#: Threads that decode the stored results at once (`seed`).
READ_THREADS = 4

#: The analyses cached with a rank, in registry order.
ANALYSES = registry.RANK_LOCAL


def _stored(name: str, frame: pl.DataFrame) -> pl.DataFrame:
    columns = registry.REGISTRY[name].stored_columns
    return frame if columns is None else frame.select(columns)


def compute(trace) -> dict[str, bytes]:
    """Every rank-local analysis of a one-rank `trace`, as Parquet bytes by name."""
    return {name: _parquet(_stored(name, trace.run(name))) for name in ANALYSES}


def shares(trace, numbers: list[int]) -> dict[int, dict[str, bytes]] | None:
    """Each rank-local analysis of `trace` (computed at once for all its ranks, memoised), split
    by rank: for each rank number in `numbers`, its rows as Parquet bytes by name, as `compute`
    gives them for that rank alone (what `seed` reads back). None when an analysis has no `rank`
    column to split by."""
    out: dict[int, dict[str, bytes]] = {n: {} for n in numbers}
    for name in ANALYSES:
        frame = trace.run(name)
        if "rank" not in frame.columns:
            return None
        parts = frame.partition_by("rank", as_dict=True, maintain_order=True)
        for n in numbers:
            out[n][name] = _parquet(_stored(name, parts.get((n,), frame.clear())))
    return out


def _parquet(frame: pl.DataFrame) -> bytes:
    buf = io.BytesIO()
    frame.write_parquet(buf)
    return buf.getvalue()


def seed(
    trace,
    results: list[dict[str, bytes] | None],
    positions: list[int] | None = None,
    grouped: list[bool] | None = None,
    lookup: pl.Series | None = None,
) -> bool:
    """Fill `trace`'s memo with rank-local results computed elsewhere; each result's `rank` column
    becomes the rank's number in `trace`. By default `results` has one entry per row of
    `trace.ranks`, in order. `assemble` passes one per part instead: a rank alone, or a group of
    small ranks (`grouped`) whose results' `rank` is the member index; `positions[i]` is the
    position of part i's first member and `lookup` maps positions to rank numbers. Nothing is
    seeded unless every part has its results (a rank cached without them, e.g. by `traceview
    info`, has none) and all of them read back (a damaged cache file: the Trace computes them).
    True if seeded."""
    if not results or any(r is None or set(r) != set(ANALYSES) for r in results):
        return False
    positions = list(range(len(results))) if positions is None else positions
    grouped = [False] * len(results) if grouped is None else grouped
    lookup = trace.ranks["rank"] if lookup is None else lookup
    memo = {}
    try:
        with ThreadPoolExecutor(READ_THREADS) as pool:  # Parquet decoding releases the GIL
            frames_of = {n: list(pool.map(_read, [r[n] for r in results])) for n in ANALYSES}
        for name in ANALYSES:
            read = frames_of[name]
            dtype = next((f.schema["rank"] for f in read if "rank" in f.columns), None)
            frames = [_positioned(f, at, group) for f, at, group in zip(read, positions, grouped)]
            frame = pl.concat(frames, how="diagonal_relaxed")
            if "rank" in frame.columns:
                frame = frame.with_columns(lookup.gather(frame["rank"]).cast(dtype).alias("rank"))
            columns = registry.REGISTRY[name].stored_columns
            if columns is not None:
                if frame.height != trace.device_tasks.height or frame.columns != list(columns):
                    return False
                frame = trace.device_tasks.hstack(frame)
            memo[registry.memo_key(name, {})] = frame
    except (OSError, ValueError, pl.exceptions.PolarsError):
        return False
    trace._memo.update(memo)
    return True


def _read(data: bytes) -> pl.DataFrame:
    return pl.read_parquet(io.BytesIO(data))


def _positioned(frame: pl.DataFrame, position: int, group: bool) -> pl.DataFrame:
    """`rank` as a position: a group's member index + `position`, a lone rank's `position`."""
    if "rank" not in frame.columns:
        return frame
    value = pl.col("rank").cast(pl.Int64) + position if group else pl.lit(position, dtype=pl.Int64)
    return frame.with_columns(value.alias("rank"))
