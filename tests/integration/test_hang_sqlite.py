"""SQLite databases built to never end (issue 30): each case ends within 20 s with one line (or
loads with one warning) in under 1.5 GB, and SIGTERM / Ctrl-C end a query running inside SQLite
within 3 s. The databases are copies of the real test databases (`tests/support/hostile_db.py`);
`parsers/sqlite_ro.py` has the guards, `parsers/sqlite_columns.py` the typed columns."""

from __future__ import annotations

import json
import os
import resource
import signal
import sqlite3
import subprocess
import sys
import time

import pytest

from tests.support import bounded
from tests.support.hostile_db import ENDLESS, as_view, msprof_copy, nsys_copy, repeated_string_ids

DEADLINE_S = 20.0


def _within_bounds(out: bounded.Outcome) -> None:
    assert out.returncode is not None, f"still running after {DEADLINE_S} s: {out.stderr[-500:]}"
    assert out.seconds < DEADLINE_S and out.peak_rss_bytes < bounded.MEMORY_LIMIT
    assert "Traceback" not in out.stderr and "internal error" not in out.stderr


def _one_error(out: bounded.Outcome, path, *phrases: str) -> None:
    _within_bounds(out)
    assert out.returncode == 1 and len(out.lines) == 1, out.stderr
    assert out.lines[0].startswith(f"traceview: error: cannot read {path}: ")
    for phrase in phrases:
        assert phrase in out.lines[0]


def test_an_nsys_kernel_table_that_is_an_endless_view_is_not_run(tmp_path):
    """It grew memory by ~160 MB/s for ever. The view is not read: the export loads from its
    stored tables (the memcpy tasks) with one warning naming it."""
    path = nsys_copy(tmp_path)
    as_view(path, "CUPTI_ACTIVITY_KIND_KERNEL", endless=True)
    out = bounded.run(["info", str(path), "--format", "json", "--no-cache"], DEADLINE_S)
    _within_bounds(out)
    assert out.returncode == 0, out.stderr
    assert out.lines == [
        f"traceview: warning: {path}: 1 views or computed tables named like tables traceview reads ignored "
        "(only stored tables are read: a view runs a query, which can run forever): CUPTI_ACTIVITY_KIND_KERNEL"
    ]
    (rank,) = json.loads(out.stdout)["ranks"]
    assert (rank["kernel"], rank["memcpy"]) == (0, 15)


def test_an_msprof_string_table_that_is_an_endless_view_is_one_line(tmp_path):
    """It looped for ever and ignored SIGTERM. Without its STRING_IDS table nothing is left to
    read: one line naming the view."""
    path = msprof_copy(tmp_path)
    as_view(path, "STRING_IDS", endless=True)
    out = bounded.run(["summary", str(path), "--no-cache"], DEADLINE_S)
    _one_error(out, path, "STRING_IDS is a view or computed table, which traceview does not read")


def test_a_computed_column_is_not_run(tmp_path):
    """A VIRTUAL generated column runs its expression on every read: here CANN_API's startNs, a
    20 MB string (about 0.1 s) for each of 20,000 rows. It ran for ever and ignored SIGTERM; the
    table is now ignored like a view, and the tasks load without their launches."""
    path = msprof_copy(tmp_path)
    with sqlite3.connect(path) as db:
        db.execute("DROP TABLE CANN_API")
        db.execute(
            "CREATE TABLE CANN_API (endNs INTEGER, type INTEGER, globalTid INTEGER, name INTEGER, connectionId INTEGER)"
        )
        db.execute(
            "INSERT INTO CANN_API WITH RECURSIVE r(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM r LIMIT 20000) "
            "SELECT 30000000, 1, 1, 1, x FROM r"
        )
        db.execute(  # added after the rows: an INSERT would compute it too
            "ALTER TABLE CANN_API ADD COLUMN startNs INTEGER GENERATED ALWAYS AS "
            "(length(printf('%.*c', 20000000 + connectionId % 2, 'x'))) VIRTUAL"
        )
    out = bounded.run(["info", str(path), "--format", "json", "--no-cache"], DEADLINE_S)
    _within_bounds(out)
    assert out.returncode == 0, out.stderr
    assert out.lines == [
        f"traceview: warning: {path}: 1 views or computed tables named like tables traceview reads ignored "
        "(only stored tables are read: a view runs a query, which can run forever): CANN_API"
    ]
    assert json.loads(out.stdout)["ranks"][0]["device_tasks"] == 11


REPEATS = "rows of STRING_IDS that repeat an earlier row's id ignored (the first is used)"


@pytest.mark.parametrize("pad", [0, 1000])
def test_repeated_string_ids_load_with_one_warning(tmp_path, pad):
    """STRING_IDS without its primary key, every id written 16 times: the six SQL string lookups
    of a compute task multiplied its row 16**6 (16.8 million) times, until the row budget (or,
    with 1 kB names, the memory available: TRACEVIEW_MEMORY_LIMIT=300M) ended the read with one
    line. Each table is now scanned once and an id's first row used: the tasks load, the copies
    counted in one warning."""
    path = msprof_copy(tmp_path)
    if pad:
        with sqlite3.connect(path) as db:
            db.execute("UPDATE STRING_IDS SET value = value || printf('%.*c', ?, 'x')", (pad,))
    repeated_string_ids(path, copies=16)
    out = bounded.run(
        ["info", str(path), "--format", "json", "--no-cache"], DEADLINE_S, env={"TRACEVIEW_MEMORY_LIMIT": "300M"}
    )
    _within_bounds(out)
    assert out.returncode == 0 and out.lines == [f"traceview: warning: {path}: 21,075 {REPEATS}"], out.stderr
    assert json.loads(out.stdout)["ranks"][0]["device_tasks"] == 11
    assert out.peak_rss_bytes < 1 << 30


def test_a_query_past_its_row_budget_ends_with_one_line(tmp_path):
    """The row budget ends a query that returns more rows than the database's bytes can hold
    (no reader joins tables in SQL any more: this is the guard's own test, with a cross join of
    its own: 1,405 x 1,405 rows from a 106 kB database)."""
    from traceview.errors import TraceError
    from traceview.parsers.sqlite_ro import Database

    path = msprof_copy(tmp_path)
    with Database(path) as db, pytest.raises(TraceError, match="a query returned more than .* rows") as error:
        db.rows("SELECT a.id FROM STRING_IDS a, STRING_IDS b")
    assert str(error.value).startswith(f"cannot read {path}: ")


#: Fetches 1,405 x 1,405 pairs of 1 kB names (4 GB) under the memory guard; prints how it ended.
MEMORY_HUNGRY = """
import sys
from traceview.errors import TraceError
from traceview.parsers.sqlite_ro import Database
with Database(sys.argv[1]) as db:
    try:
        db.rows("SELECT a.value, b.value FROM STRING_IDS a, STRING_IDS b")
    except TraceError as exc:
        print(exc)
"""


def test_rows_past_the_memory_available_stop_with_one_line(tmp_path):
    """Rows fetched stop when the process has grown by the memory available (here
    TRACEVIEW_MEMORY_LIMIT=300M), long before the row budget (the guard's own test: a cross join
    of 1 kB names, in a process whose address space is limited to 1.5 GB)."""
    path = msprof_copy(tmp_path)
    with sqlite3.connect(path) as db:
        db.execute("UPDATE STRING_IDS SET value = value || printf('%.*c', 1000, 'x')")
    out = subprocess.run(
        [sys.executable, "-c", MEMORY_HUNGRY, str(path)],
        cwd=bounded.ROOT,
        capture_output=True,
        text=True,
        timeout=DEADLINE_S,
        env={**os.environ, "TRACEVIEW_MEMORY_LIMIT": "300M"},
        preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_AS, (bounded.MEMORY_LIMIT, bounded.MEMORY_LIMIT)),
    )
    assert out.returncode == 0 and out.stderr == "", out.stderr
    assert out.stdout.startswith(f"cannot read {path}: reading it took more than the 0.3 GB of memory available")


#: A parent of 800 MB that forks (preexec_fn forces fork) a child printing the memory guard's
#: baseline, in bytes.
BIG_PARENT = """
import subprocess, sys
ballast = b"x" * (800 << 20)
code = "from traceview.parsers.host_ram import peak_rss; print(peak_rss())"
subprocess.run([sys.executable, "-c", code], preexec_fn=lambda: None, check=True)
"""


def test_the_memory_guard_measures_the_process_not_the_parent_it_was_forked_from():
    """The guard's baseline is the peak of the process' own program: a child of an 800 MB parent (a
    notebook kernel, a test runner) starts near 0, not at 800 MB (ru_maxrss counts the map forked
    before exec, which hid every growth below the parent's size: the first CI run's failure of
    the test above)."""
    out = subprocess.run(
        [sys.executable, "-c", BIG_PARENT], cwd=bounded.ROOT, capture_output=True, text=True, timeout=DEADLINE_S
    )
    assert out.returncode == 0, out.stderr
    assert 0 < int(out.stdout) < 400 << 20, out.stdout


#: A query that never ends inside SQLite (no row comes back to Python until it does).
ENDLESS_COUNT = f"{ENDLESS} SELECT count(*) FROM r"


def test_a_query_past_its_step_budget_ends_with_one_line(tmp_path):
    """The step budget ends a query that would run for ever inside SQLite (every object a reader
    queries is a stored table, so this is the guard's own test, with an endless query of its own)."""
    from traceview.errors import TraceError
    from traceview.parsers.sqlite_ro import STEPS_FLOOR, Database

    path = msprof_copy(tmp_path)
    with Database(path) as db, pytest.raises(TraceError, match="a query ran more than .* SQLite steps") as error:
        db.rows(ENDLESS_COUNT)
    assert str(error.value).startswith(f"cannot read {path}: ") and db.steps > STEPS_FLOOR


#: Runs ENDLESS_COUNT without a step budget, with the CLI's SIGTERM handler, exiting as the CLI
#: does (143 for SIGTERM, 130 for Ctrl-C); says "querying" just before the query.
SIGNALLED = """
import signal, sys
from traceview.cli.main import Terminated, _terminated
from traceview.parsers import sqlite_ro
sqlite_ro.STEPS_FLOOR = 10 ** 15
signal.signal(signal.SIGTERM, _terminated)
with sqlite_ro.Database(sys.argv[1]) as db:
    print("querying", flush=True)
    try:
        db.rows(sys.argv[2])
    except Terminated:
        sys.exit(143)
    except KeyboardInterrupt:
        sys.exit(130)
"""


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_signal_ends_a_query_running_inside_sqlite_within_3_s(tmp_path, signum, code):
    """SQLite never returned to Python, so SIGTERM and Ctrl-C waited for the query (for ever). The
    progress handler ends the query and the signal's own handler runs: exit 143 / 130."""
    path = msprof_copy(tmp_path)
    proc = subprocess.Popen(
        [sys.executable, "-c", SIGNALLED, str(path), ENDLESS_COUNT], cwd=bounded.ROOT, stdout=subprocess.PIPE
    )
    try:
        assert proc.stdout.readline() == b"querying\n"
        time.sleep(1.0)  # well inside the query
        assert proc.poll() is None
        sent = time.monotonic()
        proc.send_signal(signum)
        assert proc.wait(timeout=3.0) == code
        assert time.monotonic() - sent < 3.0
    finally:
        proc.kill()
        proc.wait()
