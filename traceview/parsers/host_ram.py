"""Host memory: what a load may use, what a parse costs per input byte, what a process has used.

The estimate of a load's peak memory (`traceview.parsers.load_guard` applies it before parsing;
`parsers.jsonio` bounds a single file by it), from the input sizes only:

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
holds no more rows), any other file (JSON, Ascend CSV, MindSpore JSON) its bytes.

Available memory: `$TRACEVIEW_MEMORY_LIMIT` (bytes, with an optional K/M/G/T suffix, or `off` to
skip the checks), else the smaller of /proc/meminfo MemAvailable (or `SC_AVPHYS_PAGES x
SC_PAGE_SIZE`) and the cgroup v2 limit left.

This module imports nothing else of the parsers, so every reader may use it.
"""

from __future__ import annotations

import os
import struct
import sys
from pathlib import Path

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


def estimate(sizes: list[int], workers: int, peaks: list[int] | None = None) -> int:
    """Peak bytes to parse ranks of these input sizes with `workers` at once (module docstring);
    `peaks`: each rank's parse peak (`load_guard.parse_peak`), default PARSE_FACTOR x its size."""
    if peaks is None:
        peaks = [int(PARSE_FACTOR * n) for n in sizes]
    largest = sorted(peaks, reverse=True)[: max(workers, 1)]
    return int(sum(largest) + KEEP_FACTOR * sum(sizes))


def fit_workers(sizes: list[int], workers: int, limit: int, peaks: list[int] | None = None) -> int:
    """The most workers (<= `workers`) whose estimate fits in `limit` bytes; 0 if not even one."""
    while workers >= 1 and estimate(sizes, workers, peaks) > limit:
        workers -= 1
    return workers


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


def vm_hwm(pid: int | str = "self") -> int | None:
    """VmHWM of process `pid` in bytes (/proc/PID/status: the high-water mark of the memory map
    its program started with); None where /proc does not say (not Linux, the process gone)."""
    try:
        with open(f"/proc/{pid}/status", "rb") as f:
            for line in f:
                if line.startswith(b"VmHWM:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def peak_rss() -> int:
    """This process' peak resident memory in bytes since it started its program (0 where unknown).

    Linux: `vm_hwm`, the high-water mark of the memory map exec made. Not ru_maxrss, which also
    holds the peak of the map before exec: a child forked from a 2 GB parent (a notebook kernel,
    a test runner) starts with a ru_maxrss of 2 GB, so growth measured against it stays unseen
    until the child outgrows its parent. Elsewhere ru_maxrss."""
    hwm = vm_hwm()
    if hwm is not None:
        return hwm
    try:
        import resource
    except ImportError:  # not on this platform
        return 0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(peak) if sys.platform == "darwin" else int(peak) * 1024


def gb_text(n: float) -> str:
    """Bytes as "1.2 GB" (from 0.1 GB) or "12.3 MB"."""
    return f"{n / 1e9:.1f} GB" if n >= 1e8 else f"{n / 1e6:.1f} MB"
