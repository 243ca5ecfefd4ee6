"""The Ascend DB reader (`parsers/ascend/db.py`) scans each table once and joins in polars (issue 30.
The unit tests; the topic's description and its other tests: tests/corpus/test_ascend_db.py.
"""

from __future__ import annotations

import sqlite3

import traceview as tv
from tests.support.ascend_db_shared import MSPROF  # noqa: F401
from tests.support.hostile_db import msprof_copy, repeated_string_ids, untyped


def test_an_id_written_twice_takes_its_first_row_and_is_counted(tmp_path):
    """STRING_IDS and COMPUTE_TASK_INFO declare their id the primary key. Written twice, the SQL
    joins multiplied each task by every copy of each of its six names (the copies of a task then
    dropped as exact duplicates, 693 of them, or the whole file past the row budget), and a
    globalTaskId given two COMPUTE_TASK_INFO rows made two tasks. The first row of each id is
    now used, the others counted."""
    path = msprof_copy(tmp_path)
    repeated_string_ids(path, copies=2)
    untyped(path, "COMPUTE_TASK_INFO", {"globalTaskId"})  # (the primary key refuses a copy)
    with sqlite3.connect(path) as db:
        (task, name) = db.execute("SELECT globalTaskId, name FROM COMPUTE_TASK_INFO ORDER BY rowid LIMIT 1").fetchone()
        other = db.execute("SELECT MAX(id) FROM STRING_IDS").fetchone()[0]
        db.execute(
            "INSERT INTO COMPUTE_TASK_INFO (name, globalTaskId, taskType, opType) "
            "SELECT ?, globalTaskId, taskType, opType FROM COMPUTE_TASK_INFO WHERE globalTaskId = ?",
            (other, task),
        )
        (first_name,) = db.execute("SELECT value FROM STRING_IDS WHERE id = ?", (name,)).fetchone()
    clean = tv.load(MSPROF, use_cache=False)
    t = tv.load(path, use_cache=False)
    assert t.warnings == [
        f"{path}: 1,405 rows of STRING_IDS that repeat an earlier row's id ignored (the first is used)",
        f"{path}: 1 rows of COMPUTE_TASK_INFO that repeat an earlier row's globalTaskId ignored (the first is used)",
    ]
    assert t.device_tasks.equals(clean.device_tasks)
    assert first_name in t.device_tasks["name"].to_list()


def test_a_task_id_that_is_not_an_integer_is_counted(tmp_path):
    """A COMPUTE_TASK_INFO or TASK row whose globalTaskId is not an integer matches no row of the
    other table: its task was lost without a word. It is still lost (nothing says which task it
    was), now counted."""
    path = msprof_copy(tmp_path)
    untyped(path, "COMPUTE_TASK_INFO", {"globalTaskId"})
    untyped(path, "TASK", {"globalTaskId"})
    with sqlite3.connect(path) as db:
        first, second = (r[0] for r in db.execute("SELECT globalTaskId FROM COMPUTE_TASK_INFO LIMIT 2"))
        db.execute("UPDATE COMPUTE_TASK_INFO SET globalTaskId = 'x' WHERE globalTaskId = ?", (first,))
        db.execute("UPDATE TASK SET globalTaskId = ? + 0.5 WHERE globalTaskId = ?", (second, second))
    t = tv.load(path, use_cache=False)
    assert t.warnings == [
        f"{path}: 1 values of TASK.globalTaskId that are not integers read as missing (text, real or blob)",
        f"{path}: 1 values of COMPUTE_TASK_INFO.globalTaskId that are not integers read as missing (text, real or blob)",
    ]
    assert t.device_tasks.height == 11 - 2
