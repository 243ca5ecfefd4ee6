"""The Parquet cache: a second load reads only Parquet, a changed file misses, nothing is pickled.

This file holds the topic's unit tests; the others are in tests/integration/test_cache.py.
"""

from __future__ import annotations

import os
from pathlib import Path

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


@pytest.fixture(scope="module")
def cache_dir_of_a_module_fixture():
    """TRACEVIEW_CACHE_DIR as a module-scoped fixture sees it (set up before any test's own)."""
    return os.environ.get("TRACEVIEW_CACHE_DIR")


def test_loads_outside_a_test_never_cache_in_the_users_folder(cache_dir_of_a_module_fixture, tmp_path_factory):
    """A module or session fixture that loads a profile caches into the run's folder
    (tests/conftest.py `_run_cache`), not ~/.cache/traceview: before, the unit set left two
    entries there per run."""
    assert cache_dir_of_a_module_fixture is not None
    folder = Path(cache_dir_of_a_module_fixture)
    assert folder.name == "run-cache" and folder.is_relative_to(tmp_path_factory.getbasetemp().parent)
