"""The Ascend DB reader (`parsers/ascend/db.py`) scans each table once and joins in polars (issue
30: a SQL join's plan is the planner's choice from statistics the file itself holds, see
tests/integration/test_hang_sqlite_planner.py): no query joins, the frames equal a SQL join of the real
export's tables, and ids that repeat or are not integers are counted.

This file holds the topic's corpus tests; the others are in tests/unit/test_ascend_db.py.
"""

from __future__ import annotations

import re
import sqlite3

import polars as pl
import pytest

from tests.conftest import SHARED_TRACES, needs_shared
from tests.support.ascend_db_shared import MSPROF  # noqa: F401
from traceview.errors import Warnings
from traceview.parsers import sqlite_ro
from traceview.parsers.ascend.db import read_profiler_db
from traceview.parsers.timeconv import us_text_to_ns

LEVEL2 = "msinsight/test/data/pytorch/db/level2/rank0_ascend_pt/ASCEND_PROFILER_OUTPUT/ascend_pytorch_profiler_0.db"


def _queries(monkeypatch, path) -> list[str]:
    """The SQL the DB reader runs on `path`."""
    seen: list[str] = []
    rows = sqlite_ro.Database.rows

    def recording(self, sql, params=()):
        seen.append(sql)
        return rows(self, sql, params)

    monkeypatch.setattr(sqlite_ro.Database, "rows", recording)
    read_profiler_db(path, Warnings(path))
    return seen


@pytest.mark.parametrize("path", [MSPROF, pytest.param(SHARED_TRACES / LEVEL2, marks=needs_shared)])
def test_every_table_is_read_by_a_plain_scan(monkeypatch, path):
    """The tasks were COMPUTE_TASK_INFO JOIN TASK with six LEFT JOINs of STRING_IDS, the host
    events, launches and memory rows joins too: each query now reads one table."""
    queries = [q for q in _queries(monkeypatch, path) if "sqlite_master" not in q and "PRAGMA" not in q]
    assert len(queries) >= 5
    for sql in queries:
        assert not re.search(r"\bJOIN\b", sql, re.IGNORECASE), sql
        (source,) = re.findall(r"\bFROM\s+(\S+)", sql)  # one table, one FROM (no subquery)
        assert "," not in source.strip('"'), sql


@needs_shared
def test_compute_tasks_equal_a_sql_join_of_the_real_export():
    """Every compute task's names, times, stream, correlation, launch and PMU times are those a
    SQL join of the (clean) level-2 export's tables gives."""
    path = SHARED_TRACES / LEVEL2
    db = sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True)
    want = pl.DataFrame(
        db.execute(
            """SELECT n.value, t.startNs, t.endNs, t.streamId, t.deviceId, o.value, k.value, s.value,
                  t.connectionId, dt.value, os.value, a.startNs,
                  (SELECT p.value FROM TASK_PMU_INFO p JOIN STRING_IDS m ON m.id = p.name
                   WHERE p.globalTaskId = t.globalTaskId AND m.value = 'aic_mac_time'),
                  (SELECT p.value FROM TASK_PMU_INFO p JOIN STRING_IDS m ON m.id = p.name
                   WHERE p.globalTaskId = t.globalTaskId AND m.value = 'aiv_vec_time')
            FROM TASK t JOIN COMPUTE_TASK_INFO c ON c.globalTaskId = t.globalTaskId
            LEFT JOIN STRING_IDS n ON n.id = c.name LEFT JOIN STRING_IDS o ON o.id = c.opType
            LEFT JOIN STRING_IDS k ON k.id = c.taskType LEFT JOIN STRING_IDS s ON s.id = c.inputShapes
            LEFT JOIN STRING_IDS dt ON dt.id = c.inputDataTypes LEFT JOIN STRING_IDS os ON os.id = c.outputShapes
            LEFT JOIN CANN_API a ON a.connectionId = t.connectionId"""
        ).fetchall(),
        orient="row",
        schema=[
            "name",
            "start_ns",
            "end_ns",
            "stream",
            "device",
            "op_type",
            "core_type",
            "input_shapes",
            "correlation",
            "input_types",
            "output_shapes",
            "launch_ns",
            "aic_mac_us",
            "aiv_vec_us",
        ],
    )
    want = want.with_columns(
        pl.col("input_shapes", "input_types", "output_shapes").str.strip_chars('"'),
        us_text_to_ns(pl.col("aic_mac_us").cast(pl.String)).alias("aic_mac_ns"),
        us_text_to_ns(pl.col("aiv_vec_us").cast(pl.String)).alias("aiv_vec_ns"),
    ).drop("aic_mac_us", "aiv_vec_us")
    tasks = read_profiler_db(path, Warnings(path))["tasks"].filter(pl.col("core_type") != "HCCL")
    got = tasks.select(want.columns)
    assert got.height == want.height == 187 and got["aic_mac_ns"].null_count() < got.height
    key = ["start_ns", "stream", "name"]
    assert got.sort(key).equals(want.sort(key))
