"""The Parquet cache. The integration tests; the topic's description and its other tests:
tests/unit/test_cache.py.
"""

from __future__ import annotations

from polars.testing import assert_frame_equal

import traceview as tv
from tests.conftest import DATA
from traceview import executors


def test_parallel_workers_match_in_process(tmp_path, monkeypatch):
    for r in range(3):
        (tmp_path / f"rank{r}.pt.trace.json").write_bytes((DATA / "kineto_minimal.json").read_bytes())
    serial = tv.load(tmp_path, use_cache=False, jobs=1)
    monkeypatch.setattr(executors, "PARALLEL_MIN_BYTES", 0)
    parallel = tv.load(tmp_path, use_cache=False, jobs=2)
    for table in ("device_tasks", "host_events", "steps", "ranks"):
        assert_frame_equal(serial.frame(table), parallel.frame(table))
    assert serial.ranks["rank"].to_list() == [3, 0, 1]  # rank 3 recorded three times: the repeats renumbered
