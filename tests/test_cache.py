"""The Parquet cache: a second load reads only Parquet, a changed file misses, nothing is pickled."""

from __future__ import annotations

import os

import pytest
from polars.testing import assert_frame_equal

import traceview as tv
from tests.conftest import DATA
from traceview import executors, parsers


@pytest.fixture
def trace_file(tmp_path):
    p = tmp_path / "rank0.pt.trace.json"
    p.write_bytes((DATA / "kineto_minimal.json").read_bytes())
    return p


def test_second_load_comes_from_cache(trace_file, tmp_path, monkeypatch):
    cache_dir = tmp_path / "cache"
    first = tv.load(trace_file, cache_dir=cache_dir)

    def fail(_source):
        raise AssertionError("parsed again instead of reading the cache")

    monkeypatch.setattr(executors, "parse_source", fail)
    second = tv.load(trace_file, cache_dir=cache_dir)
    for table in ("device_tasks", "host_events", "steps", "ranks"):
        assert_frame_equal(first.frame(table), second.frame(table))
    files = {p.suffix for p in cache_dir.rglob("*") if p.is_file()}
    assert files == {".parquet", ".json"}  # never pickle


def test_changed_file_misses_the_cache(trace_file, tmp_path, monkeypatch):
    cache_dir = tmp_path / "cache"
    tv.load(trace_file, cache_dir=cache_dir)
    calls = []
    real = parsers.parse_source
    monkeypatch.setattr(executors, "parse_source", lambda s, *a: calls.append(s) or real(s, *a))
    st = trace_file.stat()
    os.utime(trace_file, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    tv.load(trace_file, cache_dir=cache_dir)
    assert len(calls) == 1


def test_no_cache_writes_nothing(trace_file, tmp_path):
    cache_dir = tmp_path / "cache"
    tv.load(trace_file, cache_dir=cache_dir, use_cache=False)
    assert not any(cache_dir.rglob("*.parquet"))


@pytest.mark.integration
def test_parallel_workers_match_in_process(tmp_path, monkeypatch):
    for r in range(3):
        (tmp_path / f"rank{r}.pt.trace.json").write_bytes((DATA / "kineto_minimal.json").read_bytes())
    serial = tv.load(tmp_path, use_cache=False, jobs=1)
    monkeypatch.setattr(executors, "PARALLEL_MIN_BYTES", 0)
    parallel = tv.load(tmp_path, use_cache=False, jobs=2)
    for table in ("device_tasks", "host_events", "steps", "ranks"):
        assert_frame_equal(serial.frame(table), parallel.frame(table))
    assert serial.ranks["rank"].to_list() == [3, 0, 1]  # rank 3 recorded three times: the repeats renumbered
