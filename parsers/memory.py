"""Memory guard: refuse a load that would not fit in memory before parsing starts, with the way out.

Estimate of a load's peak memory, from the input sizes only (stats and a 4-byte read per file):

    peak = sum of the `workers` largest per-rank parse peaks                # ranks being parsed at once
         + KEEP_FACTOR x (sum of all per-rank inputs)                      # frames kept for the Trace

    parse peak of a rank = STREAM_FIXED + STREAM_FACTOR x its input        # Kineto JSON (streamed)
                           (+ STREAM_FIXED per extra process decoding one large file's chunks)
                         = PARSE_FACTOR x its input                        # other formats (read whole)

where a rank's input is its uncompressed bytes: a `.gz` file's size comes from its gzip trailer
(ISIZE, the uncompressed size mod 2**32: a member over 4 GiB reads as its size mod 4 GiB, so a
value below the compressed size is raised by 4 GiB steps until it is not, when the file is large
enough to inflate to 4 GiB at deflate's best ratio, ~1032:1 (a small file whose gzip overhead
exceeds its data keeps its ISIZE); a multi-member gzip reports its last member only, so the estimate
can be low there: `parsers.jsonio` bounds the inflating itself), a SQLite database (an `nsys` or
`msprof` source, an Ascend rank's `.db` files) the bytes its pages use (`sqlite_ro.database_bytes`:
the header's page count x page size, at most the file's allocated blocks: a sparse or padded file
holds no more rows), any other file (JSON, Ascend CSV, MindSpore JSON) its bytes. Available memory: `$TRACEVIEW_MEMORY_LIMIT` (bytes, with an
optional K/M/G/T suffix, or `off` to skip the check), else the smaller of /proc/meminfo
MemAvailable (or `SC_AVPHYS_PAGES x SC_PAGE_SIZE`) and the cgroup v2 limit left.
"""

from __future__ import annotations

import os
import struct
from pathlib import Path

from traceview.errors import TraceError
from traceview.parsers.detect import Source, input_files
from traceview.parsers.sqlite_ro import database_bytes
from traceview.sizes import parse_size

#: Peak resident memory of parsing one rank, per byte of uncompressed input, for the formats read
#: whole (Ascend, MindSpore): 10x covers the worst case measured (docs/benchmarks.md, "Tuning
#: constants").
PARSE_FACTOR = 10.0

#: Kineto JSON is streamed (`parsers.jsonio.ChromeEvents`, 8 MiB chunks): its parse peak is a
#: fixed part (one chunk's decoded events, imports) plus a part per input byte (the frames being
#: built, their sort and joins); every profile measured stays under STREAM_FIXED + STREAM_FACTOR x
#: input (docs/benchmarks.md, "Tuning constants").
STREAM_FIXED = 150e6
STREAM_FACTOR = 1.7

#: Memory of the parsed frames kept per byte of input (`estimated_size` of a rank's frames / its
#: uncompressed bytes: 0.09 to 0.42 on the same traces; rounded up).
KEEP_FACTOR = 0.5

#: Deflate's best compression ratio is about 1032:1 (258-byte matches at ~2 bits each); a little
#: more here so that no file that could hold 4 GiB keeps a wrapped ISIZE.
MAX_GZIP_RATIO = 1100

LIMIT_ENV = "TRACEVIEW_MEMORY_LIMIT"


def uncompressed_size(path: Path) -> int:
    """Bytes of `path` once decompressed: the gzip ISIZE for `.gz` (see module docstring), else its size."""
    size = path.stat().st_size
    if not path.name.endswith(".gz") or size < 18:
        return size
    with path.open("rb") as f:
        f.seek(-4, os.SEEK_END)
        isize = struct.unpack("<I", f.read(4))[0]
    if size * MAX_GZIP_RATIO >= 1 << 32:  # else it cannot hold 4 GiB: ISIZE < size is gzip overhead
        while isize < size:
            isize += 1 << 32
    return isize


#: Formats whose source is one SQLite database.
DATABASE_FORMATS = ("nsys", "msprof")


def input_bytes(source: Source) -> int:
    """Uncompressed bytes a parser reads for one rank source (module docstring; 0 if its files
    cannot be stat'ed)."""
    try:
        return sum(
            database_bytes(p) if source.format in DATABASE_FORMATS or p.name.endswith(".db") else uncompressed_size(p)
            for p in input_files(source)
        )
    except OSError:
        return 0


def parse_peak(source: Source, size: int, jobs: int = 1) -> int:
    """Peak bytes of parsing one rank source of `size` input bytes (module docstring); `jobs`:
    processes that decode its chunks (a single large Kineto file parsed in-process)."""
    if source.format == "kineto":
        from traceview.parsers import kineto

        extra = jobs if jobs > 1 and size >= kineto.PARALLEL_FILE_BYTES else 0
        return int(STREAM_FIXED * (1 + extra) + STREAM_FACTOR * size)
    return int(PARSE_FACTOR * size)


def estimate(sizes: list[int], workers: int, peaks: list[int] | None = None) -> int:
    """Peak bytes to parse ranks of these input sizes with `workers` at once (module docstring);
    `peaks`: each rank's parse peak (`parse_peak`), default PARSE_FACTOR x its size."""
    if peaks is None:
        peaks = [int(PARSE_FACTOR * n) for n in sizes]
    largest = sorted(peaks, reverse=True)[: max(workers, 1)]
    return int(sum(largest) + KEEP_FACTOR * sum(sizes))


def available() -> int | None:
    """Bytes this load may use (module docstring), or None when unknown or the check is off."""
    env = os.environ.get(LIMIT_ENV, "").strip()
    if env:
        return parse_size(env, LIMIT_ENV)
    found = [v for v in (_meminfo_available(), _cgroup_left()) if v is not None]
    return min(found) if found else None


def _meminfo_available() -> int | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        return None


def _cgroup_left() -> int | None:
    try:
        limit = Path("/sys/fs/cgroup/memory.max").read_text().strip()
        if limit == "max":
            return None
        return int(limit) - int(Path("/sys/fs/cgroup/memory.current").read_text())
    except (OSError, ValueError):
        return None


def fit_workers(sizes: list[int], workers: int, limit: int, peaks: list[int] | None = None) -> int:
    """The most workers (<= `workers`) whose estimate fits in `limit` bytes; 0 if not even one."""
    while workers >= 1 and estimate(sizes, workers, peaks) > limit:
        workers -= 1
    return workers


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
        f"loading {ranks or len(sizes)} rank(s) of {_gb(sum(sizes))} uncompressed needs about {_gb(need)} of memory "
        f"({workers} parallel parse(s), largest {_gb(max(sizes))}{largest}) but {_gb(limit)} is available",
        f"use {', '.join(ways)}; {LIMIT_ENV}=off skips this check",
    )


def _gb(n: float) -> str:
    return f"{n / 1e9:.1f} GB" if n >= 1e8 else f"{n / 1e6:.1f} MB"
