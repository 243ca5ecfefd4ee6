"""A database whose own planner statistics lie (issue 30): `sqlite_stat1` rewritten to say that
100k-row tables hold one row, over a STRING_IDS and a TASK rebuilt without their primary keys.
SQLite then skipped its automatic indexes and joined COMPUTE_TASK_INFO x TASK x STRING_IDS as
nested loops (10**10 steps): the step budget stopped it after 4.7 s on a 3.2 MB file, about three
minutes on a 100 MB one. The Ascend reader now scans each table once and joins in polars
(`parsers/ascend/db.py`), so the statistics change nothing: the database loads within seconds."""

from __future__ import annotations

import json

from tests.support import bounded
from tests.support.hostile_db import msprof_copy, poisoned_planner

DEADLINE_S = 20.0
ROWS = 100_000


def test_lying_planner_statistics_do_not_turn_the_reads_into_nested_loops(tmp_path):
    """The old reader ran out of its step budget (or the deadline): one line, no tasks. The
    copy's 11 tasks and the 100,000 generated ones load, with nothing to warn about."""
    path = msprof_copy(tmp_path)
    poisoned_planner(path, ROWS)
    out = bounded.run(["info", str(path), "--format", "json", "--no-cache"], DEADLINE_S)
    assert out.returncode is not None, f"still running after {DEADLINE_S} s: {out.stderr[-500:]}"
    assert out.returncode == 0 and out.lines == [], out.stderr
    assert out.seconds < DEADLINE_S and out.peak_rss_bytes < bounded.MEMORY_LIMIT
    (rank,) = json.loads(out.stdout)["ranks"]
    assert rank["device_tasks"] == 11 + ROWS
