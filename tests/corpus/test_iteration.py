"""The iteration (traceview.analysis.iteration). The corpus tests; the topic's description and its
other tests: tests/unit/test_iteration.py.
"""

from __future__ import annotations

import re

import orjson
import polars as pl
import pytest

import traceview as tv
from tests.conftest import SHARED_TRACES, needs_shared
from tests.support.iteration import check_identity_and_tiling

PLUGIN = "kineto-tb_plugin/tb_plugin"


PLUGIN_TRACE = f"{PLUGIN}/samples/resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz"


PLUGIN_COLUMNS = ["Kernel", "Memcpy", "Memset", "Runtime", "DataLoader", "CPU Exec", "Other"]


def _plugin_rows() -> dict[int, dict]:
    """The plugin's Overview per step (µs): result_check_file.txt line 1."""
    first = (SHARED_TRACES / PLUGIN / "test/result_check_file.txt").read_text().splitlines()[0]
    doc = orjson.loads(first)
    out = {}
    for row in doc["steps"]["rows"]:
        values = [v for v in row[1:] if not isinstance(v, str)]
        total = int(re.search(r"Total: (\d+)us", row[2]).group(1))
        out[int(row[0])] = {"Total": total, **dict(zip(PLUGIN_COLUMNS, values))}
    return out


@needs_shared
def test_the_tensorboard_plugins_overview_per_step():
    """Iteration time per step = the plugin's step total, data loading = its DataLoader, host
    runtime = Runtime, host framework = CPU Exec, other idle = Other, device computing = Kernel +
    Memset, exposed memcpy = Memcpy (the plugin rounds to the µs)."""
    expected = _plugin_rows()
    frame = tv.load(SHARED_TRACES / PLUGIN_TRACE, use_cache=False).iteration_breakdown()
    assert sorted(frame["step"].to_list()) == sorted(expected)
    for row in frame.iter_rows(named=True):
        plugin = expected[row["step"]]
        ours = {
            "Total": row["iteration_us"],
            "Kernel+Memset": row["iteration_computing_us"],
            "Memcpy": row["iteration_exposed_memcpy_us"],
            "Runtime": row["host_runtime_us"],
            "DataLoader": row["data_loading_us"],
            "CPU Exec": row["host_framework_us"],
            "Other": row["other_idle_us"],
        }
        theirs = {**plugin, "Kernel+Memset": plugin["Kernel"] + plugin["Memset"]}
        for key, value in ours.items():
            assert value == pytest.approx(theirs[key], abs=1.0), (row["step"], key)


@needs_shared
def test_identity_and_tiling_on_every_real_profile():
    from tests.support.corpus import corpus_paths
    from traceview.errors import TraceError

    checked = 0
    for rel in corpus_paths():
        try:
            trace = tv.load(SHARED_TRACES / rel, use_cache=False, jobs=1)
        except TraceError:
            continue
        check_identity_and_tiling(trace.iteration_breakdown(), rel)
        checked += 1
    assert checked > 50


@needs_shared
def test_input_bound_fires_on_the_plugins_num_workers_0_sample():
    """The plugin's own DataLoader numbers put a third of every step in data loading: the finding
    fires, critical, with that share (Σ DataLoader / Σ step total of the plugin)."""
    expected = _plugin_rows()
    share = sum(r["DataLoader"] for r in expected.values()) / sum(r["Total"] for r in expected.values())
    found = tv.load(SHARED_TRACES / PLUGIN_TRACE, use_cache=False).findings()
    fired = found.filter(pl.col("rule") == "input_bound").row(0, named=True)
    assert fired["severity"] == "critical"
    assert fired["value"] == pytest.approx(share, abs=1e-5)
    assert "33.4%" in fired["message"]
