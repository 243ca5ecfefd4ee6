"""Where ranks are parsed: `local` (this machine, a process pool; the default) or `ray` (a Ray cluster).

Per-rank parsing is independent, so an executor only maps `parse_source` over the sources still to
parse and yields `(source, ParsedRank | TraceError)` as each finishes. Frames never travel as
pickled objects: a worker process (local or a Ray task) returns the rank's cache-entry files,
Parquet + meta.json bytes (`cache.pack`), which the driver verifies, reads, and writes to the
cache itself (`traceview.loader`), so workers write nothing to disk and need no filesystem shared
with the driver (they do need to read the profile at the same absolute path, and the same
traceview installed); a cache that cannot be written (a full disk) costs only the cache. Ray is an
optional extra (`traceview[ray]`), imported only when the `ray` executor is asked for. Local
workers die with the driver and leave Ctrl-C to it (`traceview.subprocesses`); Ray tasks still
running when the driver stops are cancelled.

With `analyse=True`, the process that parses a rank (a Ray task, or a local worker process)
also runs the rank-local analyses on it (`traceview.per_rank`) and stores them in the
rank's cache entry with its frames, so the driver only combines small per-rank results and runs
the cross-rank steps, and a second open reads them back.
"""

from __future__ import annotations

import ast
import logging
import os
import sys
from collections.abc import Iterator
from pathlib import Path

from traceview import cache, digest, subprocesses
from traceview.errors import TraceError
from traceview.parsers import ParsedRank, Source, memory, parse_source
from traceview.safe_text import path_text

NAMES = ("local", "ray")

#: Below this many bytes of uncached input, parsing in-process beats starting worker processes.
PARALLEL_MIN_BYTES = 16 * 1024 * 1024

#: Below this mean rank input, the local executor leaves the rank-local analyses to the Trace even
#: when asked to compute them where ranks are parsed: each rank's analyses have a fixed cost that
#: the Trace, computing all ranks at once, pays once (measurements: docs/benchmarks.md, "Tuning
#: constants").
ANALYSE_MIN_BYTES = 32 * 1024 * 1024

Results = Iterator[tuple[Source, "ParsedRank | TraceError"]]


def get(name: str = "local", *, jobs: int | None = None, address: str | None = None, analyse: bool = False):
    """The executor called `name` ("local" or "ray"); TraceError if Ray is asked for but not installed.
    `analyse`: where a rank is parsed, also compute its rank-local analyses."""
    if name == "local":
        return LocalExecutor(jobs, analyse)
    if name == "ray":
        try:
            import ray  # noqa: F401
        except ImportError:
            raise TraceError(
                None, "--executor ray needs Ray, which is not installed", "pip install 'traceview[ray]'"
            ) from None
        return RayExecutor(address, jobs, analyse)
    raise ValueError(f"unknown executor {name!r}: choose one of {', '.join(NAMES)}")


class LocalExecutor:
    """Parse in this process when the work is small, else in a spawn process pool of `jobs` workers
    (default: the CPUs), as many as the memory guard (`traceview.parsers.memory`) lets fit. `analyse`: the
    workers also compute each rank's rank-local analyses when the ranks are large
    (`ANALYSE_MIN_BYTES`; in this process: only when they go to the cache); else the Trace
    computes them on first use, on all ranks at once."""

    def __init__(self, jobs: int | None = None, analyse: bool = False):
        self.jobs = jobs
        self.analyse = analyse

    def run(self, todo: list[Source], analyse_here: bool = False) -> Results:
        """Parse `todo`; `analyse_here`: ranks parsed in this process get their rank-local
        analyses too (the loader asks for them when the rank goes to the cache)."""
        sizes = [memory.input_bytes(s) for s in todo]
        analyse = self.analyse and bool(sizes) and sum(sizes) / len(sizes) >= ANALYSE_MIN_BYTES
        workers = min(self.jobs or os.cpu_count() or 1, len(todo))
        if sum(sizes) < PARALLEL_MIN_BYTES:
            workers = 1
        can_spawn = spawn_can_start()
        # A single rank is parsed here, where a large Kineto file may spread its chunks over the CPUs.
        inner = (self.jobs or os.cpu_count() or 1) if len(todo) == 1 and can_spawn else 1
        peaks = [memory.parse_peak(s, n, inner) for s, n in zip(todo, sizes)]
        workers = memory.check(
            sizes, workers, jobs_given=self.jobs is not None, peaks=peaks, names=[path_text(s.path) for s in todo]
        )
        if workers <= 1 or not can_spawn:
            yield from self._in_process(todo, inner, analyse and analyse_here)
            return
        with subprocesses.finish(subprocesses.pool(workers)) as pool:
            futures = {pool.submit(parse_packed, s.format, str(s.path), analyse, s.task_kinds): s for s in todo}
            for fut in subprocesses.completed(futures):
                source = futures[fut]
                yield source, received(fut.result(), source)

    @staticmethod
    def _in_process(todo: list[Source], jobs: int = 1, analyse: bool = False) -> Results:
        for source in todo:
            try:
                result = parse_source(source, jobs)
            except TraceError as exc:
                yield source, exc
                continue
            if analyse:
                result.analyses = rank_analyses(source, result)
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

    def run(self, todo: list[Source], analyse_here: bool = False) -> Results:
        import ray

        if not ray.is_initialized():
            local = {} if self.address or os.environ.get("RAY_ADDRESS") else {"include_dashboard": False}
            ray.init(address=self.address, logging_level=logging.WARNING, log_to_driver=False, **local)
        task = ray.remote(parse_packed)
        pending: dict = {}
        queue = list(todo)
        limit = self.jobs or len(todo)
        try:
            while queue or pending:
                while queue and len(pending) < limit:
                    source = queue.pop(0)
                    pending[task.remote(source.format, str(source.path.resolve()), self.analyse, source.task_kinds)] = (
                        source
                    )
                (ref,), _ = ray.wait(list(pending), num_returns=1)
                source = pending.pop(ref)
                try:
                    answer = ray.get(ref)
                except ray.exceptions.RayError as exc:
                    first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
                    yield source, TraceError(source.path, f"the Ray task failed: {first}")
                    continue
                yield source, received(answer, source, where="the Ray worker")
        finally:  # stopped early (Ctrl-C, an error): the tasks still running are not needed
            for ref in pending:
                try:
                    ray.cancel(ref, force=True)
                except Exception:  # noqa: BLE001 - best effort: a finished task cannot be cancelled
                    pass


def received(answer: tuple, source: Source, where: str = "the worker process") -> ParsedRank | TraceError:
    """The parsed rank (verified, `cache.unpack`) or the error of a worker's `parse_packed` answer."""
    version, error, files = answer
    if version != digest.ingestion_digest():
        return TraceError(
            source.path,
            f"{where} parsed it with other ingestion code (digest {version}, this "
            f"driver's {digest.ingestion_digest()})",
            "install the same traceview on the cluster",
        )
    if error is not None:
        return TraceError(None, error)
    try:
        return cache.unpack(files)
    except Exception as exc:  # noqa: BLE001 - bytes from another process: any decode error
        return TraceError(source.path, f"{where} returned a damaged result ({type(exc).__name__})")


def rank_analyses(source: Source, parsed: ParsedRank) -> dict[str, bytes]:
    """The rank-local analyses of one parsed rank (`traceview.per_rank.compute`)."""
    from traceview import per_rank
    from traceview.assemble import one_rank_trace

    return per_rank.compute(one_rank_trace(source, parsed))


def parse_packed(fmt: str, path: str, analyse: bool = False, task_kinds: str = ""):
    """Worker entry (a local worker process or a Ray task): parse one source (and run its rank-local analyses when `analyse`); return
    (ingestion digest, error line or None, the rank's cache entry files: `cache.pack` bytes, with the
    analyses when computed, stamped with this worker's code digest so a driver running other code
    ignores them)."""
    source = Source(fmt, Path(path), task_kinds)
    try:
        parsed = parse_source(source)
    except TraceError as exc:
        return digest.ingestion_digest(), str(exc), None
    if analyse:
        parsed.analyses = rank_analyses(source, parsed)
    return digest.ingestion_digest(), None, cache.pack(parsed)
