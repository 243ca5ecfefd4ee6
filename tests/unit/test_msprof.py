"""CANN msprof databases (`msprof_*.db`, `parsers.ascend.parse_msprof_db`) on a real public one
(tests/data/msprof, PROVENANCE.md): its tasks into the canonical frames, and msprof's own
OVERLAP_ANALYSIS as the reference numbers."""

from __future__ import annotations

import shutil
import sqlite3

import polars as pl
import pytest

import traceview as tv
from tests.conftest import DATA, run_cli
from tests.support.hostile_db import as_view, msprof_copy, untyped

MSPROF = DATA / "msprof" / "msprof_0.db"


def test_tasks_and_launches_of_a_real_msprof_database():
    t = tv.load(MSPROF, use_cache=False)
    assert t.ranks.select("format", "device_name", "device_type").row(0) == ("msprof", "Ascend910B", "npu")
    db = sqlite3.connect(f"file:{MSPROF}?mode=ro&immutable=1", uri=True)
    (computed,) = db.execute("SELECT COUNT(*) FROM TASK t JOIN COMPUTE_TASK_INFO c USING (globalTaskId)").fetchone()
    assert t.device_tasks.height == computed == 11
    assert set(t.device_tasks["device"]) == {2} and set(t.device_tasks["core_type"]) == {"AI_VECTOR_CORE"}
    assert (
        t.host_events.filter(pl.col("kind") == "runtime").height
        == db.execute("SELECT COUNT(*) FROM CANN_API").fetchone()[0]
    )


def test_computing_reproduces_msprof_overlap_analysis():
    """msprof's OVERLAP_ANALYSIS computing (type 0) equals traceview's computing exactly. Its free
    (type 3) runs on to the end of the database's last task of any kind, here an HCCL task whose
    communication op row the test database lacks (so neither side counts it as communication):
    traceview's free stops at the last busy task, 5,640.753 µs earlier: the difference is exactly
    that last stretch."""
    t = tv.load(MSPROF, use_cache=False)
    ref = t.ascend_step_trace.row(0, named=True)
    whole = t.trace_breakdown().row(0, named=True)
    assert ref["computing_us"] == pytest.approx(whole["computing_us"], abs=1e-3) == 663.872
    assert ref["communication_us"] == whole["communication_us"] == 0.0
    db = sqlite3.connect(f"file:{MSPROF}?mode=ro&immutable=1", uri=True)
    (last_end,) = db.execute("SELECT MAX(endNs) FROM TASK").fetchone()
    tail_us = (last_end - whole["last_busy_ns"]) / 1000
    assert ref["free_us"] - whole["free_us"] == pytest.approx(tail_us, abs=1e-3) == 5640.753


def test_found_by_content_and_summarised(tmp_path):
    shutil.copy(MSPROF, tmp_path / "renamed.db")
    assert tv.load(tmp_path, use_cache=False).ranks["format"].to_list() == ["msprof"]
    out = run_cli("summary", str(MSPROF))
    assert out.returncode == 0 and "Ascend910B" in out.stdout


def test_a_mindspore_rank_folder_with_only_its_database_is_read(tmp_path):
    """MindSpore 2.x writes `*_ascend_ms/ASCEND_PROFILER_OUTPUT/ascend_mindspore_profiler_<rank>.db`
    with msprof's tables (no public one exists: the real msprof database stands in for it, under
    MindSpore's name). It used to be 'no kernel_details.csv ... found'."""
    out = tmp_path / "worker0_ascend_ms" / "ASCEND_PROFILER_OUTPUT"
    out.mkdir(parents=True)
    shutil.copy(MSPROF, out / "ascend_mindspore_profiler_0.db")
    folder = tv.load(tmp_path, use_cache=False)
    direct = tv.load(MSPROF, use_cache=False)
    assert folder.ranks["format"].to_list() == ["ascend"]
    columns = ["name", "kind", "start_ns", "end_ns", "stream"]
    assert folder.device_tasks.select(columns).equals(direct.device_tasks.select(columns))
    assert folder.device_tasks.height > 0


def test_reading_a_wal_database_writes_nothing_beside_it(tmp_path):
    """msprof's database is in WAL mode: SQLite opened with mode=ro alone creates -wal and -shm
    files beside it (in the user's folder); traceview opens it immutable and leaves the folder as
    it was, a read-only folder included."""
    import os
    import stat

    folder = tmp_path / "prof"
    folder.mkdir()
    shutil.copy(MSPROF, folder / "msprof_0.db")
    header = (folder / "msprof_0.db").read_bytes()[:20]
    assert header[18:20] == b"\x02\x02"  # file format read/write version 2: WAL mode
    before = sorted(os.listdir(folder))
    t = tv.load(folder / "msprof_0.db", use_cache=False)
    assert t.device_tasks.height == 11 and sorted(os.listdir(folder)) == before
    folder.chmod(stat.S_IRUSR | stat.S_IXUSR)
    try:
        assert tv.load(folder, use_cache=False).device_tasks.height == 11
        assert sorted(os.listdir(folder)) == before
    finally:
        folder.chmod(stat.S_IRWXU)


def test_a_wal_file_left_beside_a_database_is_named(tmp_path):
    """Immutable opening does not read a -wal file; one that holds changes (an export that did not
    finish cleanly) is said, not silently left out."""
    from traceview.parsers.sqlite_ro import PENDING_WAL

    shutil.copy(MSPROF, tmp_path / "msprof_0.db")
    (tmp_path / "msprof_0.db-wal").write_bytes(b"\x37\x7f\x06\x82" + b"\x00" * 28)
    t = tv.load(tmp_path / "msprof_0.db", use_cache=False)
    assert any(PENDING_WAL in w for w in t.warnings) and t.device_tasks.height == 11


def _computing_us(t) -> float:
    return t.trace_breakdown().row(0, named=True)["computing_us"]


def test_task_values_of_the_wrong_storage_class_are_dropped_and_counted(tmp_path):
    """A TASK startNs of the wrong storage class made every integer of the column null, silently
    (the 612 µs task vanished from a total of 663.872). A text holding exactly an integer is now
    that integer (torch_npu writes PYTORCH_API times as TEXT); a text that is not one drops its
    task, counted; a blob in STRING_IDS leaves the name unknown, counted."""
    path = msprof_copy(tmp_path)
    untyped(path, "TASK", {"startNs"})
    untyped(path, "STRING_IDS", {"value"})
    with sqlite3.connect(path) as db:
        task = "SELECT t.globalTaskId, c.name FROM TASK t JOIN COMPUTE_TASK_INFO c USING (globalTaskId) WHERE {}"
        longest, _ = db.execute(task.format("t.endNs - t.startNs = 612092")).fetchone()
        cast, cast_name = db.execute(task.format("t.endNs - t.startNs = 2420")).fetchone()
        db.execute("UPDATE TASK SET startNs = CAST(startNs AS TEXT) WHERE globalTaskId = ?", (longest,))
        db.execute("UPDATE TASK SET startNs = 'soon' WHERE globalTaskId = ?", (cast,))
        (tril_name,) = db.execute(task.format("t.endNs - t.startNs = 9040")).fetchone()[1:]
        db.execute("UPDATE STRING_IDS SET value = x'00' WHERE id = ?", (tril_name,))
        assert tril_name != cast_name
    t = tv.load(path, use_cache=False)
    assert t.warnings == [
        f"{path}: 1 values of STRING_IDS.value that are not text read as missing (integer, real or blob)",
        f"{path}: 1 rows of TASK whose startNs is not an integer dropped (text, real or blob)",
    ]
    assert t.device_tasks.height == 10 and 612092 in t.device_tasks["dur_ns"].to_list()
    assert t.device_tasks.filter(pl.col("dur_ns") == 9040)["name"].to_list() == [None]
    assert _computing_us(t) == pytest.approx(663.872 - 2.420, abs=1e-3)


def test_time_rows_that_end_before_they_start_are_dropped_and_counted(tmp_path):
    """OVERLAP_ANALYSIS (msprof's own totals) and STEP_TIME (host step ranges) rows that end before
    they start took their negative length off the total, or made an inverted step."""
    path = msprof_copy(tmp_path)
    with sqlite3.connect(path) as db:
        db.execute("UPDATE OVERLAP_ANALYSIS SET endNs = startNs - 1000 WHERE id = 24")  # computing, 2.420 µs
        db.execute("CREATE TABLE STEP_TIME (id INTEGER, startNs INTEGER, endNs INTEGER)")
        first, last = db.execute("SELECT MIN(startNs), MAX(endNs) FROM CANN_API").fetchone()
        db.execute("INSERT INTO STEP_TIME VALUES (1, ?, ?), (2, ?, ?)", (first, last, last + 10, last))
    t = tv.load(path, use_cache=False)
    assert [w for w in t.warnings if "before their start" in w] == [
        f"{path}: 1 rows of STEP_TIME with an end before their start (a negative duration) dropped",
        f"{path}: 1 rows of OVERLAP_ANALYSIS with an end before their start (a negative duration) dropped",
    ]
    assert t.ascend_step_trace["computing_us"].to_list() == [pytest.approx(663.872 - 2.420, abs=1e-3)]
    assert t.steps.select("step", "host_start_ns", "host_end_ns").rows() == [(1, first, last)]


#: Times whose difference wraps around Int64 (2**64 - 20 reads as -20).
WRAPPING = (-(2**63) + 10, 2**63 - 10)


def _bad_times(t, table: str) -> list[str]:
    return [w.split(": ", 1)[1] for w in t.warnings if f"rows of {table} with" in w]


def test_step_time_rows_beyond_the_time_bound_or_without_a_time_are_dropped(tmp_path):
    """Only an end before the start was checked: a STEP_TIME row at ±2**63 made a step whose
    length wrapped (and held every task), one without an end a step with no range."""
    path = msprof_copy(tmp_path)
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE STEP_TIME (id INTEGER, startNs INTEGER, endNs INTEGER)")
        first, last = db.execute("SELECT MIN(startNs), MAX(endNs) FROM CANN_API").fetchone()
        db.execute("INSERT INTO STEP_TIME VALUES (1, ?, ?), (2, ?, ?), (3, ?, NULL)", (first, last, *WRAPPING, last))
    t = tv.load(path, use_cache=False)
    assert _bad_times(t, "STEP_TIME") == [
        "1 rows of STEP_TIME with a missing start or end time dropped",
        "1 rows of STEP_TIME with a time beyond ±2**62 ns (146 years from the clock's zero) dropped",
    ]
    assert t.steps.select("step", "host_start_ns", "host_end_ns").rows() == [(1, first, last)]


def test_overlap_analysis_rows_beyond_the_time_bound_are_dropped(tmp_path):
    """msprof's computing total summed end - start of each interval: one at ±2**63 wrapped to
    -20 ns (661.432 µs instead of 661.452 without it, and any total for other values)."""
    path = msprof_copy(tmp_path)
    with sqlite3.connect(path) as db:
        db.execute("UPDATE OVERLAP_ANALYSIS SET startNs = ?, endNs = ? WHERE id = 24", WRAPPING)  # 2.420 µs
    t = tv.load(path, use_cache=False)
    assert _bad_times(t, "OVERLAP_ANALYSIS") == [
        "1 rows of OVERLAP_ANALYSIS with a time beyond ±2**62 ns (146 years from the clock's zero) dropped"
    ]
    assert t.ascend_step_trace["computing_us"].to_list() == [pytest.approx(663.872 - 2.420, abs=1e-4)]


def test_op_memory_rows_beyond_the_time_bound_or_without_an_allocation_time_are_dropped(tmp_path):
    """OP_MEMORY blocks were checked for a release before the allocation only: one allocated at
    -2**63 (or released at 2**63 - 1) stayed, and its lifetime wrapped. A block with no release
    time (not released within the trace) stays; one with no allocation time is dropped."""
    path = msprof_copy(tmp_path)
    with sqlite3.connect(path) as db:
        (name,) = db.execute("SELECT id FROM STRING_IDS WHERE value = 'aclrtMemcpy'").fetchone()
        db.execute(
            "CREATE TABLE OP_MEMORY (name INTEGER, size INTEGER, allocationTime INTEGER, releaseTime INTEGER, deviceId INTEGER)"
        )
        db.executemany(
            "INSERT INTO OP_MEMORY VALUES (?, ?, ?, ?, 2)",
            [
                (name, 512, 1000, 2000),
                (name, 1024, 1500, None),  # not released within the trace: kept
                (name, 2048, None, 3000),
                (name, 4096, 2500, 2400),
                (name, 8192, -(2**63), 3000),
                (name, 16384, 3000, 2**63 - 1),
            ],
        )
    t = tv.load(path, use_cache=False)
    assert _bad_times(t, "OP_MEMORY") == [
        "1 rows of OP_MEMORY with a missing start or end time dropped",
        "1 rows of OP_MEMORY with an end before their start (a negative duration) dropped",
        "2 rows of OP_MEMORY with a time beyond ±2**62 ns (146 years from the clock's zero) dropped",
    ]
    blocks = t.frame("memory_allocations").select("op", "size_bytes", "alloc_ns", "release_ns")
    assert blocks.rows() == [("aclrtMemcpy", 512, 1000, 2000), ("aclrtMemcpy", 1024, 1500, None)]


def test_host_steps_come_from_host_events_whose_bad_times_are_dropped(tmp_path):
    """Without STEP_TIME the steps are the ProfilerStep#N host events' ranges, which were taken
    before the host events' bad times were dropped: a ProfilerStep#2 ending at 2**63 - 1 was
    dropped from the host events (counted) but still made a step 2, holding every later launch
    (the database's CANN_API holds one task's launch)."""
    path = msprof_copy(tmp_path)
    with sqlite3.connect(path) as db:
        first, last = db.execute("SELECT MIN(startNs), MAX(endNs) FROM CANN_API").fetchone()
        (top,) = db.execute("SELECT MAX(id) FROM STRING_IDS").fetchone()
        db.execute("INSERT INTO STRING_IDS VALUES (?, 'ProfilerStep#1'), (?, 'ProfilerStep#2')", (top + 1, top + 2))
        db.execute(
            "CREATE TABLE PYTORCH_API (startNs TEXT, endNs TEXT, globalTid INTEGER, connectionId INTEGER, "
            "name INTEGER, type INTEGER)"
        )
        db.execute(
            "INSERT INTO PYTORCH_API VALUES (?, ?, 1, NULL, ?, 30000), (?, ?, 1, NULL, ?, 30000)",
            (str(first), str(last), top + 1, str(last + 10), str(2**63 - 1), top + 2),
        )
    t = tv.load(path, use_cache=False)
    assert f"{path}: 1 host events with a time beyond ±2**62 ns (146 years from the clock's zero) dropped" in t.warnings
    assert t.steps.select("step", "host_start_ns", "host_end_ns").rows() == [(1, first, last)]


def test_a_string_table_that_is_a_view_is_one_line(tmp_path):
    """A view is not read (a recursive one never ends: tests/integration/test_hang_sqlite.py); without
    STRING_IDS no task can be named, so the database is refused, naming the view."""
    path = msprof_copy(tmp_path)
    as_view(path, "STRING_IDS")
    with pytest.raises(tv.TraceError, match="STRING_IDS is a view or computed table, which traceview does not read"):
        tv.load(path, use_cache=False)
