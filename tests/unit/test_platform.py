"""Advice that fits the run (traceview.analysis.platform, findings' advice_when) and CUDA/HIP graph
replays: their kernels go with the launch that replayed it (its step and phase), the launch delay
counts a replay once, and a finding says how much of the device time the graphs cover.

This file holds the topic's unit tests; the others are in tests/corpus/test_platform.py.
"""

from __future__ import annotations

import polars as pl
import pytest

import traceview as tv
from tests.support.kineto import complete_event, write_trace
from traceview import ruleset
from traceview.analysis import findings as F
from traceview.analysis import gaps
from traceview.analysis.fact_table import FACTS
from traceview.errors import TraceError


def _x(cat, name, start_us, dur_us, tid=1, **args):
    pid = 1 if cat == "kernel" else 0
    return complete_event(cat, name, pid, tid, round(start_us * 1000), round(dur_us * 1000), args or None)


def _graph_run(tmp_path):
    """One step: a kernel launched alone (100 µs), then Optimizer.step replays a graph of three
    100 µs kernels with one cudaGraphLaunch (the kernels carry its correlation id)."""
    events = [
        _x("user_annotation", "ProfilerStep#1", 0, 2_000),
        _x("cpu_op", "aten::mm", 10, 20),
        _x("cuda_runtime", "cudaLaunchKernel", 15, 5, correlation=1),
        _x("kernel", "gemm", 30, 100, tid=7, correlation=1, stream=7),
        _x("cpu_op", "Optimizer.step#AdamW.step", 200, 50),
        _x("cuda_runtime", "cudaGraphLaunch", 210, 10, correlation=2),
        *[_x("kernel", f"adam_{i}", 300 + 100 * i, 100, tid=7, correlation=2, stream=7) for i in range(3)],
    ]
    return tv.load(write_trace(tmp_path / "g.pt.trace.json", events, device="NVIDIA H100"), use_cache=False)


def test_graph_kernels_go_with_their_launch(tmp_path):
    trace = _graph_run(tmp_path)
    row = trace.iteration_breakdown().row(0, named=True)
    assert row["device_optimizer_us"] == pytest.approx(300)
    assert row["device_forward_us"] == pytest.approx(100)
    # the launch delay counts the replay once, by its first kernel (300 - 220 µs)
    delays = gaps.launch_delays(trace.device_tasks, trace.host_events)
    assert sorted(delays["launch_delay_us"].to_list()) == pytest.approx([10, 80])
    stats = trace.launch_delays().row(0, named=True)
    assert (stats["tasks"], stats["count"], stats["max_us"]) == (4, 2, pytest.approx(80))
    found = trace.findings().filter(pl.col("rule") == "graphs_in_use").row(0, named=True)
    assert found["value"] == pytest.approx(0.75)
    assert "75.0%" in found["message"] and "1.0 graph launches per step" in found["message"]


def _facts(**values) -> pl.DataFrame:
    row = {name: values.get(name) for name in FACTS}
    return pl.DataFrame([row], schema={name: dtype for name, (dtype, _) in FACTS.items()})


EXPOSED = {"rank": 0, "exposed_comm_excl_p2p_frac": 0.4, "exposed_comm_excl_p2p_ms": 5.0, "step_ms": 12.0}


HOST_BOUND = {"rank": 0, "host_wait_frac": 0.9, "device_idle_frac": 0.5, "device_idle_ms": 3.0, "step_ms": 6.0}


GPU, NPU = {"device_type": "gpu", "graph_frac": 0.0, "graph_capture": False}, {"device_type": "npu"}


@pytest.mark.parametrize(
    "rule, facts, present, absent",
    [
        ("exposed_communication", {**EXPOSED, **GPU, "ddp_seen": True}, ["bucket_cap_mb", "NCCL"], ["HCCL", "FSDP"]),
        ("exposed_communication", {**EXPOSED, **NPU, "fsdp_seen": True}, ["HCCL", "FSDP"], ["NCCL", "bucket_cap_mb"]),
        ("host_bound", {**HOST_BOUND, **GPU}, ["Capture the step"], ["already replay", "TASK_QUEUE_ENABLE"]),
        ("host_bound", {**HOST_BOUND, **GPU, "graph_frac": 0.6}, ["already replay"], ["Capture the step"]),
        ("host_bound", {**HOST_BOUND, **GPU, "graph_capture": True}, [], ["Capture the step"]),
        ("host_bound", {**HOST_BOUND, **NPU}, ["TASK_QUEUE_ENABLE"], ["CUDA"]),
    ],
)
def test_advice_fits_the_platform_and_what_the_trace_shows(rule, facts, present, absent):
    """DDP advice only with DDP, FSDP only with FSDP, NCCL on GPU and HCCL on Ascend, CUDA graphs
    suggested only on a GPU that replays none and is no capture trace (and never on Ascend)."""
    found = F.evaluate(_facts(**facts), F.finding_rules())
    advice = found.filter(pl.col("rule") == rule)["advice"][0]
    assert all(word in advice for word in present), advice
    assert not any(word in advice for word in absent), advice


def test_a_bad_advice_when_is_one_line(tmp_path):
    rules = tmp_path / "r.toml"
    rules.write_text('[[rule]]\nid = "host_bound"\n[[rule.advice_when]]\nwhen = "no_such_fact"\ntext = "x"\n')
    with pytest.raises(TraceError, match="advice_when 1"):
        ruleset.build(findings=rules)
