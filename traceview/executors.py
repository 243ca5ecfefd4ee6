"""Where ranks are parsed: `local` (this machine, a process pool; the default) or `ray` (a Ray cluster).

Per-rank parsing is independent, so an executor only maps `parse_source` over the sources still to
parse and yields `(source, ParsedRank | TraceError)` as each finishes. Frames never travel through
pickle: local workers write a Parquet cache folder that the parent reads; Ray tasks return the
rank's Parquet + meta.json bytes (`cache.pack`) through the object store, so workers need no
filesystem shared with the driver for their output (they do need to read the profile at the same
absolute path, and the same traceview installed). Ray is an optional extra (`traceview[ray]`),
imported only when the `ray` executor is asked for.

With `analyse=True`, the process that parses a rank (a Ray task, or a local worker process)
also runs the rank-local analyses on it (`traceview.analysis.per_rank`) and stores them in the
rank's cache entry with its frames, so the driver only combines small per-rank results and runs
the cross-rank steps, and a second open reads them back.
"""

from __future__ import annotations

import ast
import logging
import multiprocessing
import os
import sys
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import Callable, Iterator

from parsers import ParsedRank, Source, parse_source
from parsers.base import PARSER_VERSION
from traceview import cache, memory
from traceview.errors import TraceError

NAMES = ("local", "ray")

#: Below this many bytes of uncached input, parsing in-process beats starting worker processes.
PARALLEL_MIN_BYTES = 16 * 1024 * 1024

#: Below this mean rank input, the local executor leaves the rank-local analyses to the Trace even
#: when asked to compute them where ranks are parsed: each rank's analyses have a fixed cost
#: (~0.07 s of CPU: a one-rank Trace, ~9 analyses, their Parquet files) that the Trace, computing
#: all ranks at once, pays once. Measured (bench/bench_peers.py inputs, 2 cores): 64 ranks x 5 MB,
#: cold summary 4.9 s -> 6.6 s with them; 8 ranks x 40 MB, 4.0 s either way, and the cached
#: summary 1.1 s -> 0.6 s.
ANALYSE_MIN_BYTES = 32 * 1024 * 1024

Results = Iterator[tuple[Source, "ParsedRank | TraceError"]]
FolderFor = Callable[[Source], Path]


def get(name: str = "local", *, jobs: int | None = None, address: str | None = None, analyse: bool = False):
    """The executor called `name` ("local" or "ray"); TraceError if Ray is asked for but not installed.
    `analyse`: where a rank is parsed, also compute its rank-local analyses."""
    if name == "local":
        return LocalExecutor(jobs, analyse)
    if name == "ray":
        try:
            import ray  # noqa: F401
        except ImportError:
            raise TraceError(None, "--executor ray needs Ray, which is not installed",
                             "pip install 'traceview[ray]'") from None
        return RayExecutor(address, jobs, analyse)
    raise ValueError(f"unknown executor {name!r}: choose one of {', '.join(NAMES)}")


class LocalExecutor:
    """Parse in this process when the work is small, else in a spawn process pool of `jobs` workers
    (default: the CPUs), as many as the memory guard (`traceview.memory`) lets fit. `analyse`: the
    workers also compute each rank's rank-local analyses when the ranks are large
    (`ANALYSE_MIN_BYTES`; in this process: only when they go to the cache); else the Trace
    computes them on first use, on all ranks at once."""

    def __init__(self, jobs: int | None = None, analyse: bool = False):
        self.jobs = jobs
        self.analyse = analyse

    def run(self, todo: list[Source], folder_for: FolderFor, write_cache: bool) -> Results:
        """In-process parsing writes a cache entry only when `write_cache`; worker processes always
        write to `folder_for(source)` (the cache, or a scratch folder) and hand back only an error
        line or None."""
        sizes = [memory.input_bytes(s) for s in todo]
        analyse = self.analyse and bool(sizes) and sum(sizes) / len(sizes) >= ANALYSE_MIN_BYTES
        workers = min(self.jobs or os.cpu_count() or 1, len(todo))
        if sum(sizes) < PARALLEL_MIN_BYTES:
            workers = 1
        can_spawn = spawn_can_start()
        # A single rank is parsed here, where a large Kineto file may spread its chunks over the CPUs.
        inner = (self.jobs or os.cpu_count() or 1) if len(todo) == 1 and can_spawn else 1
        peaks = [memory.parse_peak(s, n, inner) for s, n in zip(todo, sizes)]
        workers = memory.check(sizes, workers, jobs_given=self.jobs is not None, peaks=peaks,
                               names=[str(s.path) for s in todo])
        if workers <= 1 or not can_spawn:
            yield from self._in_process(todo, folder_for, write_cache, inner, analyse and write_cache)
            return
        ctx = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(max_workers=workers, mp_context=ctx) as pool:
            futures = {pool.submit(_parse_to_folder, s, str(folder_for(s)), analyse): s for s in todo}
            for fut in as_completed(futures):
                source = futures[fut]
                error = fut.result()
                entry = cache.read_entry(folder_for(source)) if error is None else None
                if error is None and entry is None:
                    error = f"cannot read {source.path}: the parser process wrote no result"
                yield source, entry if entry is not None else TraceError(None, error)

    @staticmethod
    def _in_process(todo: list[Source], folder_for: FolderFor, write_cache: bool, jobs: int = 1,
                    analyse: bool = False) -> Results:
        for source in todo:
            try:
                result = parse_source(source, jobs)
            except TraceError as exc:
                yield source, exc
                continue
            if analyse:
                result.analyses = rank_analyses(source, result)
            if write_cache:
                write_quietly(folder_for(source), result)
            yield source, result


def spawn_can_start() -> bool:
    """Whether spawned workers can start here. A spawned worker first re-runs the parent's main
    script (by path, or by name for `python -m module`) as `__mp_main__`, which skips the code
    under `if __name__ == "__main__":`.
    Workers cannot start, and ranks are parsed in this process instead (slower, same results), when:
    - the script was read from standard input (`python - < script.py`, `__file__` is `<stdin>`):
      there is no path to re-run, and every worker would die before parsing;
    - the load is called from the script's top level outside a `__main__` guard (a plain
      `t = tv.load(...)` script): every worker would run that load again and die on starting
      workers of its own (and run whatever the script does before it)."""
    main = sys.modules.get("__main__")
    name = getattr(getattr(main, "__spec__", None), "name", None) or ""
    if name == "__main__" or name.endswith(".__main__"):  # python -m package: not re-run
        return True
    path = getattr(main, "__file__", None)
    if path is None:  # an interactive session, a notebook, python -c: nothing is re-run
        return True
    if not os.path.isfile(path):
        return False
    line = _main_body_line(main)
    return line is None or _under_main_guard(path, line)


def _main_body_line(main) -> int | None:
    """The line of the main script's top-level code that this call runs under, if it does."""
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_globals is vars(main) and frame.f_code.co_name == "<module>":
            return frame.f_lineno
        frame = frame.f_back
    return None


def _under_main_guard(path: str, line: int) -> bool:
    """Whether `line` of the script at `path` lies inside an `if __name__ == "__main__":` block
    (either operand order); False when the script cannot be read back."""
    try:
        tree = ast.parse(Path(path).read_bytes(), path)
    except (OSError, SyntaxError, ValueError):
        return False
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and _is_main_test(node.test):
            first, last = node.body[0].lineno, node.body[-1].end_lineno or node.body[-1].lineno
            if first <= line <= last:
                return True
    return False


def _is_main_test(test: ast.expr) -> bool:
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)):
        return False
    sides = [test.left, test.comparators[0]]
    names = [s for s in sides if isinstance(s, ast.Name) and s.id == "__name__"]
    texts = [s for s in sides if isinstance(s, ast.Constant) and s.value == "__main__"]
    return len(names) == 1 and len(texts) == 1


class RayExecutor:
    """One Ray task per rank on the cluster at `address` (default: `$RAY_ADDRESS`, else a local Ray
    instance started here), at most `jobs` in flight (default: all). Uses an already initialised Ray
    as it is. The memory guard does not apply: Ray schedules the tasks on its nodes."""

    def __init__(self, address: str | None = None, jobs: int | None = None, analyse: bool = False):
        self.address = address
        self.jobs = jobs
        self.analyse = analyse

    def run(self, todo: list[Source], folder_for: FolderFor, write_cache: bool) -> Results:
        import ray

        if not ray.is_initialized():
            local = {} if self.address or os.environ.get("RAY_ADDRESS") else {"include_dashboard": False}
            ray.init(address=self.address, logging_level=logging.WARNING, log_to_driver=False, **local)
        task = ray.remote(_parse_packed)
        pending: dict = {}
        queue = list(todo)
        limit = self.jobs or len(todo)
        while queue or pending:
            while queue and len(pending) < limit:
                source = queue.pop(0)
                pending[task.remote(source.format, str(source.path.resolve()), self.analyse)] = source
            (ref,), _ = ray.wait(list(pending), num_returns=1)
            source = pending.pop(ref)
            yield source, self._result(ray, ref, source, folder_for, write_cache)

    @staticmethod
    def _result(ray, ref, source: Source, folder_for: FolderFor, write_cache: bool) -> ParsedRank | TraceError:
        try:
            version, error, files = ray.get(ref)
        except ray.exceptions.RayError as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            return TraceError(source.path, f"the Ray task failed: {first}")
        if version != PARSER_VERSION:
            return TraceError(source.path, f"the Ray worker parsed it with parser version {version}, this "
                              f"driver has {PARSER_VERSION}", "install the same traceview on the cluster")
        if error is not None:
            return TraceError(None, error)
        if write_cache:
            write_quietly(folder_for(source), files)
        return cache.unpack(files)


def write_quietly(folder: Path, entry: ParsedRank | dict[str, bytes]) -> None:
    """Write a cache entry (a parsed rank, or `cache.pack`'s files); a full disk or a read-only
    cache only costs the next load its speed-up."""
    if folder.exists():
        return
    try:
        cache.write_files(entry if isinstance(entry, dict) else cache.pack(entry), folder)
    except OSError:
        pass


def _parse_to_folder(source: Source, folder: str, analyse: bool = False) -> str | None:
    """Worker-process entry: parse one source (and compute its rank-local analyses when `analyse`)
    into a cache folder; return an error line or None."""
    try:
        parsed = parse_source(source)
    except TraceError as exc:
        return str(exc)
    if not Path(folder).exists():
        if analyse:
            parsed.analyses = rank_analyses(source, parsed)
        cache.write_entry(parsed, Path(folder))
    return None


def rank_analyses(source: Source, parsed: ParsedRank) -> dict[str, bytes]:
    """The rank-local analyses of one parsed rank (`traceview.analysis.per_rank.compute`)."""
    from traceview.analysis import per_rank
    from traceview.loader import one_rank_trace

    return per_rank.compute(one_rank_trace(source, parsed))


def _parse_packed(fmt: str, path: str, analyse: bool = False):
    """Ray task: parse one source (and run its rank-local analyses when `analyse`); return
    (parser version, error line or None, the rank's cache entry files: `cache.pack` bytes, with the
    analyses when computed, stamped with this worker's code digest so a driver running other code
    ignores them)."""
    source = Source(fmt, Path(path))
    try:
        parsed = parse_source(source)
    except TraceError as exc:
        return PARSER_VERSION, str(exc), None
    if analyse:
        parsed.analyses = rank_analyses(source, parsed)
    return PARSER_VERSION, None, cache.pack(parsed)
