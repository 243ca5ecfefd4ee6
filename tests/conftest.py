"""Shared test fixtures: where the real-trace corpus and the shipped samples are, a CLI runner, and
the test sets.

Every test belongs to one set: the folder it is in, which also marks it (pyproject.toml lists
the marks):

- `tests/unit/`: fast tests of one function or one load of a small input (the default run);
- `tests/integration/`: whole commands in fresh processes, servers, signals, file-system faults,
  property tests, slow reference computations;
- `tests/browser/`: drives chromium through playwright (skipped, with the reason, without it);
- `tests/corpus/`: reads the real profiles in ../shared/traces (skipped, with the reason, when
  ../shared is absent).

`python -m pytest -q -n auto` with no path runs the unit set (~80 s on 2 cores; ~2.5 minutes
in one process); `python -m pytest -q --all` runs every set (what `.ci/run` does, with `-n auto`);
`-m` picks by mark (`-m "unit or corpus"`), and naming folders, files or tests runs them whatever
their set. What several test modules share is in `tests/support/`; a test module never imports
another.
"""

from __future__ import annotations

import faulthandler
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

# pytest keeps the test modules it rewrites (and Python the package's bytecode) only where bytecode
# may be written. With PYTHONDONTWRITEBYTECODE=1 (the default on the machines here) every run and
# every xdist worker rewrote ~100 test modules again, and every `python -m traceview` a test starts
# compiled the package again: collection took 15 s per process instead of 7.
sys.dont_write_bytecode = False
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"
SAMPLES = ROOT / "sample_traces"
SHARED_TRACES = ROOT.parent / "shared" / "traces"

needs_shared = pytest.mark.skipif(
    not SHARED_TRACES.is_dir(),
    reason=f"real-trace corpus not found at {SHARED_TRACES} (present in CI; absent in a user's clone)",
)

SETS = ("unit", "integration", "browser", "corpus")


def pytest_addoption(parser):
    parser.addoption(
        "--all",
        action="store_true",
        help="run every test set (unit, integration, browser, corpus): what .ci/run does",
    )


def set_of(item) -> str:
    """The set `item` belongs to: the folder under tests/ it is in (see the module docstring)."""
    parts = Path(str(item.path)).relative_to(ROOT / "tests").parts
    if len(parts) < 2 or parts[0] not in SETS:
        raise pytest.UsageError(f"{item.nodeid}: a test module lives in one of tests/{{{','.join(SETS)}}}/")
    return parts[0]


def pytest_collection_modifyitems(config, items):
    for item in items:
        chosen = set_of(item)
        item.add_marker(chosen)
        if chosen == "corpus" and not SHARED_TRACES.is_dir():
            item.add_marker(needs_shared)
    explicit = config.args_source != pytest.Config.ArgsSource.TESTPATHS
    if config.getoption("--all") or config.option.markexpr or explicit:
        return
    keep = [item for item in items if set_of(item) == "unit"]
    if len(keep) < len(items):
        config.hook.pytest_deselected(items=[item for item in items if set_of(item) != "unit"])
        items[:] = keep


def pytest_report_header(config):
    if config.getoption("--all"):
        return "traceview: every test set (unit, integration, browser, corpus)"
    if config.option.markexpr or config.args_source != pytest.Config.ArgsSource.TESTPATHS:
        return None
    return "traceview: the unit set only; --all runs everything (what CI runs)"


def run_cli(
    *args: str, env: dict | None = None, timeout: float = 180, fresh: bool = False, cwd: Path = ROOT
) -> subprocess.CompletedProcess:
    """`traceview ARGS` from `cwd` (the repository root), with `env` added to the environment; exit
    code and output (stdout, stderr) captured as text.

    In this process by default, through click's test runner: the command's own code, without an
    interpreter start and a second import of everything (a fresh process costs ~1.5 s here). It
    reads as a real process would: an exception the command lets escape is a traceback on stderr
    and exit code 1, and the warnings Python shows by default are on stderr. Past `timeout`
    seconds the whole test run is stopped with every thread's stack (a hang must not stall CI).
    `fresh=True` runs `python -m traceview` in a new process, for what only a process has: signal
    handlers, process-wide settings read at start-up, a crash."""
    if fresh:
        return subprocess.run(
            [sys.executable, "-m", "traceview", *args],
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=timeout,
            env={**os.environ, **(env or {})},
        )
    import traceback

    from click.testing import CliRunner

    from traceview.cli.main import main

    try:
        runner = CliRunner(mix_stderr=False)  # click 8.1; later versions keep stderr apart always
    except TypeError:
        runner = CliRunner()
    here = os.getcwd()
    os.chdir(cwd)
    faulthandler.dump_traceback_later(timeout, exit=True)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            result = runner.invoke(main, list(args), env=env, prog_name="traceview")
    finally:
        faulthandler.cancel_dump_traceback_later()
        os.chdir(here)
    stderr = result.stderr
    for w in caught:  # those a fresh process shows (its default filters hide these categories)
        if not issubclass(w.category, (DeprecationWarning, PendingDeprecationWarning, ImportWarning, ResourceWarning)):
            stderr += warnings.formatwarning(w.message, w.category, w.filename, w.lineno)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        stderr += "".join(traceback.format_exception(result.exception))
    return subprocess.CompletedProcess(["traceview", *args], result.exit_code, result.stdout, stderr)


@pytest.fixture(scope="session", autouse=True)
def _run_cache(tmp_path_factory):
    """The Parquet cache folder of loads made outside a test (module and session fixtures, the
    samples loaded once per process): one folder for the run, shared by the pytest-xdist workers
    (a worker's base temp folder is inside the run's), never ~/.cache. The cache writes
    atomically: two workers storing one profile is safe."""
    base = tmp_path_factory.getbasetemp()
    folder = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "run-cache"
    folder.mkdir(exist_ok=True)
    before = os.environ.get("TRACEVIEW_CACHE_DIR")
    os.environ["TRACEVIEW_CACHE_DIR"] = str(folder)
    yield folder
    if before is None:
        os.environ.pop("TRACEVIEW_CACHE_DIR", None)
    else:
        os.environ["TRACEVIEW_CACHE_DIR"] = before


@pytest.fixture(autouse=True)
def _isolated_cache(request, tmp_path_factory, monkeypatch, _run_cache):
    """Every test gets its own Parquet cache folder (tests never touch ~/.cache or each other),
    except the corpus set's: they check analyses on the real profiles, not their parsing (which
    tests/corpus/test_corpus_goldens.py and the decode tests check with the cache off), so they
    use the run's folder, and each profile is parsed once per run instead of once per module."""
    folder = _run_cache if set_of(request.node) == "corpus" else tmp_path_factory.mktemp("cache")
    monkeypatch.setenv("TRACEVIEW_CACHE_DIR", str(folder))


def timeline_segments(trace) -> list[tuple[str, float, float]]:
    """(lane, first x, last x) of each task segment of a raw timeline trace: vertices on one lane,
    x non-decreasing, each segment ended by a NaN x / None y (`dashboards.timeline_page.segment_points`)."""
    out, xs, ys = [], list(trace.x), list(trace.y)
    start = 0
    for i, y in enumerate(ys):
        if y is None:
            seg_x, seg_y = xs[start:i], ys[start:i]
            assert len(seg_x) >= 2 and len(set(seg_y)) == 1, (seg_x, seg_y)
            assert all(a <= b for a, b in zip(seg_x, seg_x[1:])), seg_x
            out.append((seg_y[0], seg_x[0], seg_x[-1]))
            start = i + 1
    assert start == len(ys), "the last segment is not ended"
    return out
