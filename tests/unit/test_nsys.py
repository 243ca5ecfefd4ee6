"""Nsight Systems SQLite exports (`parsers/nsys.py`) on real public exports (tests/data/nsys,
PROVENANCE.md), checked against an independent reading (pipit's GPU trace of the same run), and a
small export built from the documented schema for NVTX step ranges.

This file holds the topic's unit tests; the others are in tests/integration/test_nsys.py.
"""

from __future__ import annotations

import csv
import gzip
import shutil
import sqlite3
from collections import Counter

import polars as pl
import pytest

import traceview as tv
from tests.conftest import run_cli
from tests.support.hostile_db import as_view, nsys_copy, untyped
from tests.support.nsys_shared import NSYS, _unpacked, cloverleaf  # noqa: F401
from traceview.parsers.nsys import NO_CUDA


def test_every_kernel_and_copy_matches_an_independent_reading(cloverleaf):
    t = tv.load(cloverleaf, use_cache=False)
    assert t.ranks.select("format", "device_name", "device_memory_bytes").row(0) == (
        "nsys",
        "NVIDIA A100-SXM4-80GB",
        84_990_623_744,
    )
    with gzip.open(NSYS / "cloverleaf_gpu_trace.csv.gz", "rt") as f:
        enters = [r for r in csv.DictReader(f) if r["Event Type"] == "Enter"]
    want = Counter(
        (
            "kernel" if r["type"] == "kernel" else "memcpy",
            int(r["streamId"]),
            int(r["Timestamp (ns)"]),
            int(r["_matching_timestamp"]),
            int(r["bytes"]) if r["bytes"] else None,
        )
        for r in enters
    )
    got = Counter(t.device_tasks.select("kind", "stream", "start_ns", "end_ns", "bytes").iter_rows())
    assert got == want and sum(got.values()) == 1591
    names = set(t.device_tasks.filter(pl.col("kind") == "memcpy")["name"])
    assert names == {"Memcpy HtoD", "Memcpy DtoH"}  # pipit: CUDA_MEMCPY_KIND_HTOD / _DTOH


def test_launches_link_to_their_tasks_and_the_analyses_run(cloverleaf):
    t = tv.load(cloverleaf, use_cache=False)
    launches = t.host_events.filter(pl.col("kind") == "runtime")
    assert launches.height == 3048
    linked = t.device_tasks.join(launches.select("correlation"), on="correlation", how="semi")
    assert linked.height == t.device_tasks.height  # every task has its launch call
    delays = t.launch_delays().row(0, named=True)
    # every task has a delay but the copies of synchronous cudaMemcpy calls, counted apart
    sync = launches.filter(pl.col("name").str.starts_with("cudaMemcpy_"))["correlation"]
    copies = t.device_tasks.filter(pl.col("correlation").is_in(sync.implode())).height
    assert delays["synchronous"] == copies > 0 and set(launches["name"].unique()) >= {"cudaMemcpy_v3020"}
    assert delays["count"] + delays["synchronous"] == t.device_tasks.height and delays["p50_us"] > 0
    whole = t.trace_breakdown().row(0, named=True)
    assert whole["computing_us"] + whole["exposed_memcpy_us"] + whole["free_us"] == pytest.approx(
        (whole["last_busy_ns"] - whole["first_busy_ns"]) / 1000, abs=1e-3
    )


def test_nvtx_ranges_are_host_events(tmp_path):
    t = tv.load(_unpacked(tmp_path, "saxpy-mpi-cuda_nsys_perlmutter0.sqlite.gz"), use_cache=False)
    nvtx = t.host_events.filter(pl.col("cat") == "nvtx")
    assert nvtx.height == 22 and (nvtx["end_ns"] >= nvtx["start_ns"]).all()
    assert set(nvtx["name"]) == {"MPI_Init", "MPI_Send", "MPI_Recv", "MPI_Finalize", "saxpy"}
    assert t.device_tasks.group_by("kind").len().sort("kind").rows() == [("kernel", 5), ("memcpy", 15)]


def _tiny_export(path, steps: list[tuple[str, int, int]]):
    """An export built from the documented schema: one kernel launched inside each step range."""
    db = sqlite3.connect(path)
    db.executescript(
        """
        CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT);
        CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INT, end INT, deviceId INT, streamId INT,
            correlationId INT, demangledName INT, gridX INT, gridY INT, gridZ INT, blockX INT, blockY INT, blockZ INT);
        CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INT, end INT, globalTid INT, correlationId INT, nameId INT);
        CREATE TABLE NVTX_EVENTS (start INT, end INT, eventType INT, text TEXT, textId INT, globalTid INT);
        INSERT INTO StringIds VALUES (1, 'gemm_kernel'), (2, 'cudaLaunchKernel'),
            (3, 'ncclDevKernel_AllReduce_Sum_f32_RING_LL');
        """
    )
    tid = (42 << 24) + 7
    for k, (name, start, end) in enumerate(steps):
        db.execute("INSERT INTO NVTX_EVENTS VALUES (?, ?, 59, ?, NULL, ?)", (start, end, name, tid))
        db.execute("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?, ?, ?, ?, 2)", (start + 10, start + 20, tid, k))
        kernel = 3 if k == 1 else 1
        db.execute(
            "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (?, ?, 0, 7, ?, ?, 1, 1, 1, 128, 1, 1)",
            (start + 30, start + 530, k, kernel),
        )
    db.commit()
    db.close()
    return path


def test_nvtx_ranges_named_like_steps_are_steps(tmp_path):
    path = _tiny_export(
        tmp_path / "steps.sqlite", [("step 3", 1000, 2000), ("Step 4", 2000, 3000), ("forward", 3000, 4000)]
    )
    t = tv.load(path, use_cache=False)
    assert t.steps.select("step", "host_start_ns", "device_start_ns", "device_end_ns", "window_rule").rows() == [
        (3, 1000, 1030, 1530, "correlation"),
        (4, 2000, 2030, 2530, "correlation"),
    ]
    assert t.device_tasks["step"].to_list() == [3, 4, None]
    assert t.device_tasks["kind"].to_list() == ["kernel", "communication", "kernel"]  # the NCCL kernel
    assert t.host_events.filter(pl.col("cat") == "nvtx")["name"].to_list() == ["step 3", "Step 4", "forward"]
    assert t.device_tasks["grid"][0] == "1,1,1" and t.device_tasks["block"][0] == "128,1,1"


def test_an_export_without_cuda_activity_warns(tmp_path):
    path = tmp_path / "cpu.sqlite"
    db = sqlite3.connect(path)
    db.executescript(
        "CREATE TABLE TARGET_INFO_SESSION_START_TIME (utcEpochNs INT); INSERT INTO TARGET_INFO_SESSION_START_TIME VALUES (1);"
    )
    db.close()
    t = tv.load(path, use_cache=False)
    assert t.device_tasks.is_empty() and t.warnings == [f"{path}: 1 {NO_CUDA}"]


def test_an_export_in_a_folder_is_found_by_content(tmp_path):
    shutil.copy(_unpacked(tmp_path, "saxpy-mpi-cuda_nsys_perlmutter0.sqlite.gz"), tmp_path / "renamed.db")
    (tmp_path / "saxpy-mpi-cuda_nsys_perlmutter0.sqlite").unlink()
    assert tv.load(tmp_path, use_cache=False).ranks["format"].to_list() == ["nsys"]


def test_an_export_given_by_any_name_is_read(tmp_path):
    path = _unpacked(tmp_path, "saxpy-mpi-cuda_nsys_perlmutter0.sqlite.gz")
    for name in ("saxpy_export", "run.nsys-sqlite"):
        renamed = tmp_path / name
        shutil.copy(path, renamed)
        assert tv.load(renamed, use_cache=False).ranks["format"].to_list() == ["nsys"]


def test_cuda_memory_usage_events_are_the_device_memory_series(tmp_path):
    """`nsys --cuda-memory-usage=true` rows (built from the export's documented schema: the real
    exports here were recorded without it): device allocations and frees, their running sum as
    reserved memory, against the GPU's totalMemory."""
    mib = 1 << 20
    path = _tiny_export(tmp_path / "mem.sqlite", [("step 3", 1000, 2000), ("step 4", 2000, 3000)])
    db = sqlite3.connect(path)
    db.executescript(
        """
        CREATE TABLE CUDA_GPU_MEMORY_USAGE_EVENTS (start INT, globalPid INT, deviceId INT, contextId INT,
            address INT, pc INT, bytes INT, memKind INT, memoryOperationType INT, name TEXT, correlationId INT);
        CREATE TABLE TARGET_INFO_GPU (id INT, name TEXT, totalMemory INT);
        INSERT INTO TARGET_INFO_GPU VALUES (0, 'NVIDIA H100 80GB HBM3', 167772160);
        """
    )
    rows = [
        (1100, 0x1000, 100 * mib, 2, 0),  # device memory: allocated
        (1500, 0x2000, 50 * mib, 2, 0),
        (1600, 0x9000, 10 * mib, 1, 0),  # pinned host memory: not the device's
        (2500, 0x1000, 100 * mib, 2, 1),  # freed
    ]
    for start, addr, size, kind, op in rows:
        db.execute(
            "INSERT INTO CUDA_GPU_MEMORY_USAGE_EVENTS VALUES (?, 1, 0, 1, ?, 0, ?, ?, ?, NULL, NULL)",
            (start, addr, size, kind, op),
        )
    db.commit()
    db.close()
    t = tv.load(path, use_cache=False)
    assert t.memory().select("ts_ns", "reserved_bytes").rows() == [
        (1100, 100 * mib),
        (1500, 150 * mib),
        (2500, 50 * mib),
    ]
    peaks = t.memory_peaks().select("component", "step", "peak_reserved_bytes", "peak_device_frac").rows()
    assert peaks == [
        ("cudaMalloc", None, 150 * mib, 150 / 160),
        ("cudaMalloc", 3, 150 * mib, 150 / 160),
        ("cudaMalloc", 4, 150 * mib, 150 / 160),  # a step counts what it starts with
    ]
    assert t.memory_peaks()["peak_allocated_bytes"].null_count() == 3  # driver allocations are reserved memory
    found = t.findings().filter(pl.col("rule") == "memory_near_capacity")
    assert found.select("rank", "severity").rows() == [(0, "warning")]
    from traceview.analysis.memory import lane_series

    assert lane_series(t.memory_peaks())["component"].to_list() == ["cudaMalloc"]  # the timeline's memory lane
    text = run_cli("summary", str(path)).stdout
    assert "memory cuda:0 peak reserved: cudaMalloc 150.00 MiB (93.8 % of 160.00 MiB)" in text
    db = sqlite3.connect(path)  # a free of 300 MiB allocated before the capture started
    db.execute(
        "INSERT INTO CUDA_GPU_MEMORY_USAGE_EVENTS VALUES (2600, 1, 0, 1, 4096, 0, ?, 2, 1, NULL, NULL)", (300 * mib,)
    )
    db.commit()
    db.close()
    again = tv.load(path, use_cache=False).memory()["reserved_bytes"].to_list()
    assert again == [350 * mib, 400 * mib, 300 * mib, 0]  # 250 MiB more than it allocated: held from the start


KERNEL_COLUMNS = ["kind", "stream", "start_ns", "end_ns", "correlation", "name"]


def test_values_of_the_wrong_storage_class_are_dropped_and_counted(cloverleaf, tmp_path):
    """A kernel time of the wrong storage class (a writer that bypassed the INTEGER affinity) failed
    the whole rank with `internal error: ComputeError`. A time that is text, real or blob now drops
    its row, counted per table and column; a text holding exactly an integer is that integer; a
    blob in StringIds' value leaves the names using it unknown, counted."""
    clean = tv.load(cloverleaf, use_cache=False)
    path = nsys_copy(tmp_path / "edited", "perlmutter-cloverleaf-cuda.sqlite.gz")
    untyped(path, "CUPTI_ACTIVITY_KIND_KERNEL", {"start", "end"})
    untyped(path, "StringIds", {"value"})
    with sqlite3.connect(path) as db:
        first = [r[0] for r in db.execute("SELECT rowid FROM CUPTI_ACTIVITY_KIND_KERNEL ORDER BY start LIMIT 4")]
        edits = ("start = 'abc'", "start = 2.5", "\"end\" = x'00'", "start = CAST(start AS TEXT)")
        for rowid, edit in zip(first, edits):
            db.execute(f"UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET {edit} WHERE rowid = ?", (rowid,))
        assert db.execute(
            "SELECT typeof(start) FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE rowid = ?", (first[3],)
        ).fetchone() == ("text",)
        (name_id,) = db.execute(
            "SELECT demangledName FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE rowid = ?", (first[3],)
        ).fetchone()
        (name,) = db.execute("SELECT value FROM StringIds WHERE id = ?", (name_id,)).fetchone()
        db.execute("UPDATE StringIds SET value = x'01' WHERE id = ?", (name_id,))
    t = tv.load(path, use_cache=False)
    assert t.warnings == [
        f"{path}: 1 values of StringIds.value that are not text read as missing (integer, real or blob)",
        f"{path}: 2 rows of CUPTI_ACTIVITY_KIND_KERNEL whose start is not an integer dropped (text, real or blob)",
        f"{path}: 1 rows of CUPTI_ACTIVITY_KIND_KERNEL whose end is not an integer dropped (text, real or blob)",
    ]
    kernels = clean.device_tasks.filter(pl.col("kind") != "memcpy").sort("start_ns")
    want = (
        clean.device_tasks.join(kernels.head(3).select("start_ns", "stream"), on=["start_ns", "stream"], how="anti")
        .with_columns(pl.when(pl.col("name") == name).then(pl.lit("(unnamed)")).otherwise("name").alias("name"))
        .select(KERNEL_COLUMNS)
    )
    assert t.device_tasks.height == clean.device_tasks.height - 3
    assert t.device_tasks.select(KERNEL_COLUMNS).sort(KERNEL_COLUMNS).equals(want.sort(KERNEL_COLUMNS))


def test_a_view_named_like_a_table_is_not_read(tmp_path):
    """A view runs a query when read (a recursive one never ends: tests/integration/test_hang_sqlite.py): a
    view named like the kernel table is not read, and said; the stored tables load."""
    path = nsys_copy(tmp_path)
    as_view(path, "CUPTI_ACTIVITY_KIND_KERNEL")
    t = tv.load(path, use_cache=False)
    assert t.warnings == [
        f"{path}: 1 views or computed tables named like tables traceview reads ignored (only stored tables are "
        "read: a view runs a query, which can run forever): CUPTI_ACTIVITY_KIND_KERNEL"
    ]
    assert t.device_tasks.group_by("kind").len().rows() == [("memcpy", 15)]


def test_the_memory_guard_counts_the_pages_a_database_uses(tmp_path, monkeypatch):
    """A sparse 10 GB file holding a 1.6 MB export was refused as needing 112 GB: the guard sizes a
    database by its header's page count x page size (and, when the header's count is not current,
    by the blocks the file holds)."""
    from traceview.parsers import host_ram, load_guard
    from traceview.parsers.detect import Source

    path = nsys_copy(tmp_path)
    pages = path.stat().st_size
    with open(path, "r+b") as f:
        f.truncate(10 << 30)
    monkeypatch.setenv(host_ram.LIMIT_ENV, "2G")
    assert load_guard.input_bytes(Source("nsys", path)) == pages
    assert tv.load(path, use_cache=False).device_tasks.height == 20
    with open(path, "r+b") as f:  # the header's page count no longer current: the file's blocks
        f.seek(92)
        f.write(b"\xff\xff\xff\xff")
    if path.stat().st_blocks * 512 < pages * 2:  # the file system keeps the hole
        from traceview.parsers.sqlite_ro import database_bytes

        assert pages <= database_bytes(path) <= path.stat().st_blocks * 512
