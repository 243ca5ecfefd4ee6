"""Worker processes that never outlive traceview and never print a traceback on Ctrl-C.

Every process pool of traceview (ranks parsed in parallel, one large file's chunks) is made by
`pool(workers)` and left through `finish(pool)`, which covers every way out: each worker ignores
SIGINT (the parent alone handles Ctrl-C: no worker prints a KeyboardInterrupt traceback), dies
with its parent (Linux `PR_SET_PDEATHSIG`, and a watchdog thread that sees the parent gone within
a second elsewhere: a SIGTERM'd or killed parent leaves no worker behind), and when the parent
stops early (Ctrl-C, SIGTERM, an error, a generator closed) the workers are killed at once rather
than waited for, and the pool's queues are closed (no leaked semaphore).

Waiting for results goes through `completed` and `result`, which wake up every POLL_S: a signal
may be delivered to any thread of the process, and a main thread blocked on a lock without a
timeout sees its KeyboardInterrupt only when the next result arrives (seconds later).
"""

from __future__ import annotations

import contextlib
import ctypes
import multiprocessing
import os
import signal
import sys
import threading
import time
from collections.abc import Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures import TimeoutError as FutureTimeout

#: prctl(2) option: the signal a process gets when its parent dies.
PR_SET_PDEATHSIG = 1
WATCH_S = 0.5
#: How often a wait for results looks up, to take a pending Ctrl-C or SIGTERM.
POLL_S = 0.1


def _init_worker(parent: int) -> None:
    """In each worker, first: ignore Ctrl-C (the terminal sends it to the whole process group)
    and die with the parent. Then run polars queries on its in-memory engine: a worker's queries
    are many and small (a rank's chunk, a group of small ranks), and polars' default engine choice
    costs ~0.4 ms a query (a small rank's parse: 20.7 ms of CPU instead of 25.6 ms); the workers
    are traceview's own processes, so no user's setting is changed (and one the user made in the
    environment, POLARS_ENGINE_AFFINITY, is kept)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if sys.platform.startswith("linux"):
        try:
            ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        except (OSError, AttributeError):
            pass
    if os.getppid() != parent:  # the parent died before the prctl took effect
        os._exit(1)
    threading.Thread(target=_watch_parent, args=(parent,), daemon=True, name="traceview-parent-watch").start()
    if "POLARS_ENGINE_AFFINITY" not in os.environ:  # a user's choice is kept
        import polars as pl

        pl.Config.set_engine_affinity("in-memory")


def _watch_parent(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(WATCH_S)
    os._exit(1)


class _Pool(ProcessPoolExecutor):
    """A process pool whose workers are born with SIGINT blocked.

    A Ctrl-C sent to the whole process group while a worker is still starting (importing, before
    `_init_worker` ignores SIGINT) would print that worker's KeyboardInterrupt traceback. The
    signal mask survives fork and exec, so SIGINT is blocked in the parent's spawning thread while
    a worker is started: the worker starts with it blocked (a pending one is discarded when
    `_init_worker` ignores it), and the parent gets any Ctrl-C that came meanwhile as soon as the
    mask is restored (blocked, not lost)."""

    def _spawn_process(self):
        with _worker_threads(max(1, _cpus() // self._max_workers)):
            if not hasattr(signal, "pthread_sigmask"):
                return super()._spawn_process()
            old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
            try:
                return super()._spawn_process()
            finally:
                signal.pthread_sigmask(signal.SIG_SETMASK, old)


def _cpus() -> int:
    """The CPUs this process may run on (its affinity mask where the platform has one)."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):
        return os.cpu_count() or 1


#: The environment variable that sizes polars' thread pool, read once when polars is imported.
POLARS_THREADS_ENV = "POLARS_MAX_THREADS"


@contextlib.contextmanager
def _worker_threads(threads: int):
    """While a worker is spawned, `POLARS_MAX_THREADS` = its share of the CPUs (the worker
    imports polars before any of traceview's code runs in it, so only its environment can size
    polars' pool): `workers` processes each with a pool of every CPU would oversubscribe them
    (a 40 MB rank's parse spends ~10 % more CPU). A value the user set is kept."""
    if POLARS_THREADS_ENV in os.environ:
        yield
        return
    os.environ[POLARS_THREADS_ENV] = str(threads)
    try:
        yield
    finally:
        os.environ.pop(POLARS_THREADS_ENV, None)


def pool(workers: int) -> ProcessPoolExecutor:
    """A spawn process pool of `workers` whose workers die with this process (module docstring)."""
    return _Pool(
        max_workers=workers,
        mp_context=multiprocessing.get_context("spawn"),
        initializer=_init_worker,
        initargs=(os.getpid(),),
    )


@contextlib.contextmanager
def finish(executor: ProcessPoolExecutor):
    """`with finish(pool):` - on a normal exit wait for the workers; on any exception (Ctrl-C,
    SystemExit from SIGTERM, GeneratorExit) kill them first, then shut the pool down."""
    try:
        yield executor
    except BaseException:
        kill(executor)
        raise
    else:
        executor.shutdown(wait=True)


def kill(executor: ProcessPoolExecutor) -> None:
    """Kill the pool's workers now and shut it down without running what is queued."""
    for proc in list((getattr(executor, "_processes", None) or {}).values()):
        with contextlib.suppress(OSError, AttributeError):
            proc.kill()
    with contextlib.suppress(Exception):
        executor.shutdown(wait=True, cancel_futures=True)


def completed(futures: Iterable[Future]) -> Iterator[Future]:
    """The futures as they complete (like `concurrent.futures.as_completed`), taking signals
    within POLL_S (module docstring)."""
    pending = set(futures)
    while pending:
        done, pending = wait(pending, timeout=POLL_S, return_when=FIRST_COMPLETED)
        yield from done


def result(future: Future):
    """`future.result()`, taking signals within POLL_S while waiting."""
    while True:
        try:
            return future.result(timeout=POLL_S)
        except FutureTimeout:
            continue
