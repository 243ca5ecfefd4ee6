"""Advice that fits the run (traceview.analysis.platform, findings' advice_when) and CUDA/HIP graph
replays. The corpus tests; the topic's description and its other tests: tests/unit/test_platform.py.
"""

from __future__ import annotations

import polars as pl
import pytest

import traceview as tv
from tests.conftest import SHARED_TRACES, needs_shared

VLLM = "tracelens/tests/traces/inference/vllm_prefilldecode_piecewise/graph_execution.json.gz"


ASCEND = "msinsight/test/data/pytorch/text/level1/rank0_ascend_pt"


@needs_shared
def test_graphs_in_use_on_a_real_vllm_replay():
    """vLLM's piecewise graphs: 25 hipGraphLaunch calls replay most of the device time."""
    trace = tv.load(SHARED_TRACES / VLLM, use_cache=False)
    tasks, host = trace.device_tasks, trace.host_events
    graph_ids = host.filter(pl.col("name") == "hipGraphLaunch")["correlation"].implode()
    expected = tasks.filter(pl.col("correlation").is_in(graph_ids))["dur_ns"].sum() / tasks["dur_ns"].sum()
    found = trace.findings().filter(pl.col("rule") == "graphs_in_use").row(0, named=True)
    assert found["value"] == pytest.approx(expected) and expected > 0.9
    assert "25.0 graph launches per step" in found["message"]


@needs_shared
def test_no_cuda_advice_on_ascend():
    found = tv.load(SHARED_TRACES / ASCEND, use_cache=False).findings()
    assert found.height > 0
    assert not any("CUDA" in a or "NCCL" in a for a in found["advice"])
