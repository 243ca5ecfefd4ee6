"""Where ranks are parsed: `local` (this machine, a process pool; the default) or `ray` (a Ray cluster).

Per-rank parsing is independent, so an executor only maps `parse_unit` over the units still to
parse (a rank, or a group of small ranks: `traceview.rank_groups`) and yields
`(unit, ParsedRank | RankGroup | TraceError)` as each finishes. Frames never travel as
pickled objects: a worker process (local or a Ray task) returns the unit's cache-entry files,
Parquet + meta.json bytes (`cache.pack`, `cache.pack_group`), which the driver verifies, reads, and writes to the
cache itself (`traceview.loader`), so workers write nothing to disk and need no filesystem shared
with the driver (they do need to read the profile at the same absolute path, and the same
traceview installed); a cache that cannot be written (a full disk) costs only the cache. Ray is an
optional extra (`traceview[ray]`), imported only when the `ray` executor is asked for. Local
workers die with the driver and leave Ctrl-C to it (`traceview.subprocesses`); Ray tasks still
running when the driver stops are cancelled.

With `analyse=True`, the process that parses a group, or a large rank (`analyses_where_parsed`;
a Ray task, or a local worker process) also runs the rank-local analyses on it
(`traceview.per_rank`) and stores them in the unit's cache entry with its frames, so the driver only combines small per-rank results and runs
the cross-rank steps, and a second open reads them back.
"""

from __future__ import annotations

import ast
import logging
import os
import sys
from collections.abc import Iterator
from pathlib import Path

from traceview import cache, digest, rank_groups, ruleset, subprocesses
from traceview.errors import TraceError
from traceview.parsers import ParsedRank, RankGroup, Source, load_guard, parse_source
from traceview.parsers.host_ram import STREAM_FACTOR
from traceview.ruleset import RuleSet
from traceview.safe_text import path_text

NAMES = ("local", "ray")

#: Below this many bytes of uncached input, parsing in-process beats starting worker processes.
PARALLEL_MIN_BYTES = 16 * 1024 * 1024

#: Below this mean rank input, the local executor leaves the rank-local analyses to the Trace even
#: when asked to compute them where ranks are parsed: each rank's analyses have a fixed cost that
#: the Trace, computing all ranks at once, pays once (measurements: docs/benchmarks.md, "Tuning
#: constants").
ANALYSE_MIN_BYTES = 32 * 1024 * 1024

#: A unit of work: one rank source, or a group of small ones (`traceview.rank_groups`).
Unit = list[Source]
Results = Iterator[tuple[Unit, "ParsedRank | RankGroup | TraceError"]]


def get(
    name: str = "local",
    *,
    jobs: int | None = None,
    address: str | None = None,
    analyse: bool = False,
    rules: RuleSet | None = None,
):
    """The executor called `name` ("local" or "ray"); TraceError if Ray is asked for but not installed.
    `analyse`: where a rank is parsed, also compute its rank-local analyses, with `rules` (None:
    the shipped ones; a worker gets `rules.documents` and builds the same RuleSet)."""
    if name == "local":
        return LocalExecutor(jobs, analyse, rules)
    if name == "ray":
        try:
            import ray  # noqa: F401
        except ImportError:
            raise TraceError(
                None, "--executor ray needs Ray, which is not installed", "pip install 'traceview[ray]'"
            ) from None
        return RayExecutor(address, jobs, analyse, rules)
    raise ValueError(f"unknown executor {name!r}: choose one of {', '.join(NAMES)}")


def analyses_where_parsed(unit: Unit, size: int, analyse: bool) -> bool:
    """Whether the process that parses `unit` (of `size` input bytes) computes its rank-local
    analyses: for a group always (its fixed cost is paid once for all its ranks), for a rank alone
    when it is large (`ANALYSE_MIN_BYTES`)."""
    return analyse and (len(unit) > 1 or size >= ANALYSE_MIN_BYTES)


class LocalExecutor:
    """Parse in this process when the work is small, else in a spawn process pool of `jobs` workers
    (default: the CPUs), as many as the memory guard (`traceview.parsers.load_guard`) lets fit. `analyse`: the
    workers also compute the rank-local analyses of each group and of each large rank
    (`analyses_where_parsed`; in this process: only when they go to the cache); else the Trace
    computes them on first use, on all ranks at once."""

    def __init__(self, jobs: int | None = None, analyse: bool = False, rules: RuleSet | None = None):
        self.jobs = jobs
        self.analyse = analyse
        self.rules = rules or ruleset.shipped()

    def run(self, units: list[Unit], analyse_here: bool = False, sizes: dict[Source, int] | None = None) -> Results:
        """Parse `units` (each one source or a group); `analyse_here`: units parsed in this process
        get their rank-local analyses too (the loader asks for them when they go to the cache).
        `sizes`: the sources' input bytes when the caller has them (`load_guard.input_bytes`)."""
        size_of = sizes.get if sizes is not None else (lambda s: None)
        member_sizes = [
            [n if (n := size_of(s)) is not None else load_guard.input_bytes(s) for s in unit] for unit in units
        ]
        sizes = [sum(m) for m in member_sizes]
        workers = min(self.jobs or os.cpu_count() or 1, len(units))
        if sum(sizes) < PARALLEL_MIN_BYTES:
            workers = 1
        can_spawn = spawn_can_start()
        # A single rank is parsed here, where a large Kineto file may spread its chunks over the CPUs.
        inner = (self.jobs or os.cpu_count() or 1) if len(units) == 1 and len(units[0]) == 1 and can_spawn else 1
        peaks = [_unit_peak(unit, m, inner) for unit, m in zip(units, member_sizes)]
        names = [
            path_text(u[0].path) + (f" (in a group with {len(u) - 1} more small ranks)" if len(u) > 1 else "")
            for u in units
        ]
        workers = load_guard.check(
            sizes, workers, jobs_given=self.jobs is not None, peaks=peaks, names=names, ranks=sum(map(len, units))
        )
        analyse = [analyses_where_parsed(u, n, self.analyse) for u, n in zip(units, sizes)]
        if workers <= 1 or not can_spawn:
            for unit, wanted in zip(units, analyse):
                yield unit, parse_unit(unit, inner, wanted and analyse_here, self.rules)
            return
        with subprocesses.finish(subprocesses.pool(workers)) as pool:
            documents = self.rules.documents
            futures = {pool.submit(parse_packed, _items(u), a, documents): u for u, a in zip(units, analyse)}
            for fut in subprocesses.completed(futures):
                unit = futures[fut]
                yield unit, received(fut.result(), unit)


def _unit_peak(unit: Unit, sizes: list[int], jobs: int) -> int:
    """Peak bytes of parsing a unit: its largest member's parse, plus the group's frames so far."""
    peak = max(load_guard.parse_peak(s, n, jobs) for s, n in zip(unit, sizes))
    return peak if len(unit) == 1 else int(peak + STREAM_FACTOR * sum(sizes))


def _items(unit: Unit) -> list[tuple[str, str, str]]:
    """A unit as plain values for a worker process or a Ray task."""
    return [(s.format, str(s.path.resolve()), s.task_kinds) for s in unit]


def parse_unit(
    unit: Unit, jobs: int = 1, analyse: bool = False, rules: RuleSet | None = None
) -> ParsedRank | RankGroup | TraceError:
    """Parse a unit in this process: a ParsedRank or its TraceError for one source, a RankGroup for
    several (with each failed source's error line). `analyse`: with the rank-local analyses,
    computed with `rules` (None: the shipped ones)."""
    rules = rules or ruleset.shipped()
    if len(unit) > 1:
        return rank_groups.build(unit, [_parsed_or_error(s) for s in unit], analyse, rules)
    result = _parsed_or_error(unit[0], jobs)
    if analyse and not isinstance(result, TraceError):
        result.analyses = rank_analyses(unit[0], result, rules)
        result.analyses_rules = rules.digest
    return result


def _parsed_or_error(source: Source, jobs: int = 1) -> ParsedRank | TraceError:
    try:
        return parse_source(source, jobs)
    except TraceError as exc:
        return exc


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
    """One Ray task per unit (a rank, or a group of small ranks) on the cluster at `address` (default: `$RAY_ADDRESS`, else a local Ray
    instance started here), at most `jobs` in flight (default: all). Uses an already initialised Ray
    as it is. The memory guard does not apply: Ray schedules the tasks on its nodes."""

    def __init__(
        self, address: str | None = None, jobs: int | None = None, analyse: bool = False, rules: RuleSet | None = None
    ):
        self.address = address
        self.jobs = jobs
        self.analyse = analyse
        self.rules = rules or ruleset.shipped()

    def run(self, units: list[Unit], analyse_here: bool = False, sizes: dict[Source, int] | None = None) -> Results:
        import ray

        if not ray.is_initialized():
            local = {} if self.address or os.environ.get("RAY_ADDRESS") else {"include_dashboard": False}
            ray.init(address=self.address, logging_level=logging.WARNING, log_to_driver=False, **local)
        task = ray.remote(parse_packed)
        pending: dict = {}
        queue = list(units)
        limit = self.jobs or len(units)
        try:
            while queue or pending:
                while queue and len(pending) < limit:
                    unit = queue.pop(0)
                    pending[task.remote(_items(unit), self.analyse, self.rules.documents)] = unit
                (ref,), _ = ray.wait(list(pending), num_returns=1)
                unit = pending.pop(ref)
                try:
                    answer = ray.get(ref)
                except ray.exceptions.RayError as exc:
                    first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
                    yield unit, TraceError(unit[0].path, f"the Ray task failed: {first}")
                    continue
                yield unit, received(answer, unit, where="the Ray worker")
        finally:  # stopped early (Ctrl-C, an error): the tasks still running are not needed
            for ref in pending:
                try:
                    ray.cancel(ref, force=True)
                except Exception:  # noqa: BLE001 - best effort: a finished task cannot be cancelled
                    pass


def received(answer: tuple, unit: Unit, where: str = "the worker process") -> ParsedRank | RankGroup | TraceError:
    """The parsed rank or group (verified, `cache.unpack`) or the error of a worker's `parse_packed` answer."""
    version, error, files = answer
    if version != digest.ingestion_digest():
        return TraceError(
            unit[0].path,
            f"{where} parsed it with other ingestion code (digest {version}, this "
            f"driver's {digest.ingestion_digest()})",
            "install the same traceview on the cluster",
        )
    if error is not None:
        return TraceError(None, error)
    try:
        result = cache.unpack(files)
    except Exception as exc:  # noqa: BLE001 - bytes from another process: any decode error
        return TraceError(unit[0].path, f"{where} returned a damaged result ({type(exc).__name__})")
    if isinstance(result, RankGroup) != (len(unit) > 1) or (
        isinstance(result, RankGroup) and len(result.errors) != len(unit)
    ):
        return TraceError(unit[0].path, f"{where} returned the result of another unit of work")
    return result


def rank_analyses(source: Source, parsed: ParsedRank, rules: RuleSet | None = None) -> dict[str, bytes]:
    """The rank-local analyses of one parsed rank with `rules` (`traceview.per_rank.compute`)."""
    from traceview import per_rank
    from traceview.assemble import one_rank_trace

    return per_rank.compute(one_rank_trace(source, parsed, rules))


def parse_packed(items: list[tuple[str, str, str]], analyse: bool = False, rules: str = ""):
    """Worker entry (a local worker process or a Ray task): parse one unit, given as (format, path,
    task kinds) per source: one rank, or a group of small ones (`traceview.rank_groups`), with their
    rank-local analyses when `analyse`, computed with the rules of the user's documents `rules`
    (`RuleSet.documents`: the worker reads no rules file). Returns (ingestion digest, error line
    or None, the unit's cache entry files: `cache.pack` / `cache.pack_group` bytes, with the
    analyses when computed, stamped with this worker's code digest so a driver running other code
    ignores them, and with the rules' digest)."""
    unit = [Source(fmt, Path(path), kinds) for fmt, path, kinds in items]
    try:
        chosen = ruleset.from_documents(rules)
    except ValueError as exc:
        return digest.ingestion_digest(), f"{path_text(unit[0].path)}: the worker could not read its rules: {exc}", None
    result = parse_unit(unit, 1, analyse, chosen)
    if isinstance(result, TraceError):
        return digest.ingestion_digest(), str(result), None
    packed = cache.pack_group(result) if isinstance(result, RankGroup) else cache.pack(result)
    return digest.ingestion_digest(), None, packed
