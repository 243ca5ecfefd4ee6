"""Load guard: refuse a load that would not fit in memory before parsing starts, with the way out.

The estimate and the memory available are `traceview.parsers.host_ram`'s; this module sizes each
rank source (`input_bytes`, `parse_peak`: it knows the formats) and decides (`check`).
"""

from __future__ import annotations

from traceview.errors import TraceError
from traceview.parsers import kineto
from traceview.parsers.detect import Source, input_files
from traceview.parsers.host_ram import (
    LIMIT_ENV,
    PARSE_FACTOR,
    STREAM_FACTOR,
    STREAM_FIXED,
    available,
    estimate,
    fit_workers,
    gb_text,
    uncompressed_size,
)
from traceview.parsers.sqlite_ro import database_bytes

#: Formats whose source is one SQLite database.
DATABASE_FORMATS = ("nsys", "msprof")


def input_bytes(source: Source) -> int:
    """Uncompressed bytes a parser reads for one rank source (as `host_ram`'s docstring counts
    them; 0 if its files cannot be stat'ed)."""
    try:
        return sum(
            database_bytes(p) if source.format in DATABASE_FORMATS or p.name.endswith(".db") else uncompressed_size(p)
            for p in input_files(source)
        )
    except OSError:
        return 0


def parse_peak(source: Source, size: int, jobs: int = 1) -> int:
    """Peak bytes of parsing one rank source of `size` input bytes (`host_ram`'s estimate); `jobs`:
    processes that decode its chunks (a single large Kineto file parsed in-process)."""
    if source.format == "kineto":
        extra = jobs if jobs > 1 and size >= kineto.PARALLEL_FILE_BYTES else 0
        return int(STREAM_FIXED * (1 + extra) + STREAM_FACTOR * size)
    return int(PARSE_FACTOR * size)


def check(
    sizes: list[int],
    workers: int,
    jobs_given: bool,
    peaks: list[int] | None = None,
    names: list[str] | None = None,
    ranks: int | None = None,
) -> int:
    """Workers to parse with: `workers`, or fewer when they would not fit and the user did not set
    `--jobs`. `sizes`: the input bytes of each unit of work (a rank, or a group of small ranks:
    `ranks` in all, default one per size). Raises TraceError (one line: the size, the largest
    unit's file when `names` (one per size) are given, what is available, the ways out) when the
    load does not fit, with one worker or with the user's `--jobs`."""
    limit = available()
    if limit is None or not sizes:
        return workers
    fits = fit_workers(sizes, workers, limit, peaks)
    if fits == workers or (fits >= 1 and not jobs_given):
        return max(fits, 1)
    need = estimate(sizes, workers, peaks)
    ways = [f"--jobs {fits}"] if fits >= 1 else []
    ways += ["load fewer ranks (--ranks SPEC, e.g. --ranks 0-7, or point at a sub-folder)", "--executor ray"]
    largest = f": {names[sizes.index(max(sizes))]}" if names and len(names) == len(sizes) else ""
    raise TraceError(
        None,
        f"loading {ranks or len(sizes)} rank(s) of {gb_text(sum(sizes))} uncompressed needs about {gb_text(need)} of memory "
        f"({workers} parallel parse(s), largest {gb_text(max(sizes))}{largest}) but {gb_text(limit)} is available",
        f"use {', '.join(ways)}; {LIMIT_ENV}=off skips this check",
    )
