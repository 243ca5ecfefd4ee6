"""Rows no number can use, in the readers added after the first bad-input round (issue 30): an
Nsight kernel, an msprof task or a rocprofv3 dispatch that ends before it starts, or whose times
are near ±2**63 (their difference wraps around Int64), is dropped and counted with one warning,
and every number is that of the same profile without the row. Before, each entered every total:
a negative duration, a span of -0.000 ms, an msprof total of 50.780 µs instead of 663.872 µs, all
with no warning."""

from __future__ import annotations

import gzip
import shutil
import sqlite3

import polars as pl
import pytest

import traceview as tv
from tests.conftest import DATA
from traceview.errors import Warnings
from traceview.parsers.base import TIME_BOUND_NS, bad_time_warnings, drop_bad_times

NEGATIVE = bad_time_warnings("device tasks")[1]
HUGE = bad_time_warnings("device tasks")[2]


def _nsys_copy(folder):
    folder.mkdir(exist_ok=True)
    out = folder / "run.sqlite"
    with gzip.open(DATA / "nsys" / "perlmutter-cloverleaf-cuda.sqlite.gz") as src, open(out, "wb") as dst:
        shutil.copyfileobj(src, dst)
    return out


def _edit(path, sql: str, *args) -> None:
    con = sqlite3.connect(path)
    con.execute(sql, args)
    con.commit()
    con.close()


def _warned(t, message: str) -> int:
    found = [w for w in t.warnings if w.endswith(message)]
    assert len(found) == 1, t.warnings
    return int(found[0].rsplit(": ", 1)[1].split(" ", 1)[0].replace(",", ""))


def test_an_nsight_kernel_ending_before_it_starts_is_dropped_and_counted(tmp_path):
    clean = tv.load(_nsys_copy(tmp_path / "clean"), use_cache=False)
    path = _nsys_copy(tmp_path)
    con = sqlite3.connect(path)
    (rowid, start, end) = con.execute(
        'SELECT rowid, start, "end" FROM CUPTI_ACTIVITY_KIND_KERNEL ORDER BY start LIMIT 1 OFFSET 10'
    ).fetchone()
    con.close()
    _edit(path, 'UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET "end" = ? WHERE rowid = ?', start - 5000, rowid)
    t = tv.load(path, use_cache=False)
    assert _warned(t, NEGATIVE) == 1
    assert (t.device_tasks["dur_ns"] >= 0).all()
    kept = clean.device_tasks.filter(~((pl.col("start_ns") == start) & (pl.col("end_ns") == end)))
    assert t.device_tasks.height == kept.height == clean.device_tasks.height - 1
    assert t.device_tasks["dur_ns"].sum() == kept["dur_ns"].sum()


def test_nsight_times_near_the_int64_limits_are_dropped_not_wrapped(tmp_path):
    path = _nsys_copy(tmp_path)
    _edit(
        path,
        'UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET start = ?, "end" = ? WHERE rowid IN '
        "(SELECT rowid FROM CUPTI_ACTIVITY_KIND_KERNEL ORDER BY start LIMIT 2)",
        -(2**63) + 1,
        2**63 - 1,
    )
    t = tv.load(path, use_cache=False)
    assert _warned(t, HUGE) == 2
    whole = t.trace_breakdown().row(0, named=True)
    assert whole["computing_us"] > 0
    span = t.device_tasks["end_ns"].max() - t.device_tasks["start_ns"].min()
    assert 0 < span < 10**12  # the real run's seconds, not a wrapped span


def test_an_msprof_task_ending_before_it_starts_keeps_the_total(tmp_path):
    path = tmp_path / "msprof_0.db"
    shutil.copy(DATA / "msprof" / "msprof_0.db", path)
    clean = tv.load(DATA / "msprof" / "msprof_0.db", use_cache=False)
    assert clean.trace_breakdown()["computing_us"][0] == pytest.approx(663.872, abs=1e-3)
    con = sqlite3.connect(path)
    (task_id, start) = con.execute(
        "SELECT t.globalTaskId, t.startNs FROM TASK t JOIN COMPUTE_TASK_INFO c USING (globalTaskId) "
        "ORDER BY t.startNs DESC LIMIT 1"
    ).fetchone()
    con.close()
    _edit(path, "UPDATE TASK SET endNs = ? WHERE globalTaskId = ?", start - 10**9, task_id)
    t = tv.load(path, use_cache=False)
    assert _warned(t, NEGATIVE) == 1
    assert t.device_tasks.height == clean.device_tasks.height - 1
    dropped = clean.device_tasks.filter(pl.col("start_ns") == start)["dur_ns"].sum() / 1000
    assert t.trace_breakdown()["computing_us"][0] == pytest.approx(663.872 - dropped, abs=1e-3)


def test_a_rocprof_dispatch_ending_before_it_starts_is_dropped_and_counted(tmp_path):
    src = DATA / "rocprof" / "omp_output"
    for f in src.iterdir():
        shutil.copy(f, tmp_path / f.name)
    trace = tmp_path / "omp_kernel_trace.csv"
    lines = trace.read_text().splitlines()
    cells = lines[3].split(",")
    start, end = cells[6], cells[7]
    cells[7] = str(int(start) - 1000)
    lines[3] = ",".join(cells)
    trace.write_text("\n".join(lines) + "\n")
    clean = tv.load(src / "omp_kernel_trace.csv", use_cache=False)
    t = tv.load(trace, use_cache=False)
    assert _warned(t, NEGATIVE) == 1
    assert t.device_tasks.height == clean.device_tasks.height - 1
    assert t.device_tasks["dur_ns"].sum() == clean.device_tasks["dur_ns"].sum() - (int(end) - int(start))


def test_drop_bad_times_counts_each_kind():
    frame = pl.DataFrame(
        {
            "start_ns": [0, 10, None, 5, TIME_BOUND_NS, -TIME_BOUND_NS, 7, -(2**63), 1],
            "end_ns": [5, 9, 3, None, TIME_BOUND_NS + 1, 0, 7, 5, 2**63 - 1],
        }
    )
    warn = Warnings("x")
    kept = drop_bad_times(frame, "device tasks", warn)
    assert kept.rows() == [(0, 5), (7, 7)]
    missing, negative, huge = bad_time_warnings("device tasks")
    assert (warn.count(missing), warn.count(negative), warn.count(huge)) == (2, 1, 4)  # -2**63: abs() wraps


def test_a_time_at_the_int64_minimum_is_beyond_the_bound():
    """abs(-2**63) wraps to -2**63 in Int64, under the bound: a task starting there (ending at 0)
    was kept and its duration wrapped. Each bound is now compared on its own side of zero."""
    frame = pl.DataFrame({"start_ns": [-(2**63), 0], "end_ns": [0, 5]})
    warn = Warnings("x")
    assert drop_bad_times(frame, "device tasks", warn).rows() == [(0, 5)]
    assert warn.count(HUGE) == 1


def test_a_profiler_step_beyond_the_bound_in_trace_view_makes_no_step(tmp_path):
    """An Ascend rank's trace_view.json: a ProfilerStep#99 host event timed past ±2**62 ns is
    dropped before the host steps are built (it made a step 99 out of nothing)."""
    import json

    from tests.conftest import SAMPLES

    rank = tmp_path / "rank0_ascend_pt"
    shutil.copytree(SAMPLES / "ascend_2rank" / "rank0_ascend_pt", rank)
    view = rank / "ASCEND_PROFILER_OUTPUT" / "trace_view.json"
    events = json.loads(view.read_text())
    step = next(e for e in events if str(e.get("name", "")).startswith("ProfilerStep#"))
    events.append(dict(step, name="ProfilerStep#99", ts="9000000000000000.000"))  # 9e18 ns
    view.write_text(json.dumps(events))
    t = tv.load(rank, use_cache=False)
    assert 99 not in t.steps["step"].to_list()
    assert _warned(t, bad_time_warnings("host events")[2]) == 1
