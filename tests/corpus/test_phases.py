"""Phases (traceview.analysis.phases). The corpus tests; the topic's description and its other tests:
tests/unit/test_phases.py.
"""

from __future__ import annotations

import polars as pl
import pytest

import traceview as tv
from tests.conftest import SHARED_TRACES, needs_shared
from traceview.analysis import phases

PLUGIN_TRACE = "kineto-tb_plugin/tb_plugin/samples/resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz"


@needs_shared
def test_resnet50_phases_follow_its_launches():
    """The plugin's resnet50 (2021 trace: backward nodes on the autograd thread named
    `...Backward`): the device time of each phase is the time of the kernels launched in it, the
    backward about twice the forward (convolution backward computes two gradients), SGD's update
    small, nothing left over."""
    trace = tv.load(SHARED_TRACES / PLUGIN_TRACE, use_cache=False)
    frame = trace.iteration_breakdown()
    assert frame["device_other_us"].max() == 0
    ratio = frame["device_backward_us"] / frame["device_forward_us"]
    assert ratio.min() > 1.5 and ratio.max() < 2.5
    assert (frame["device_optimizer_us"] / frame["iteration_us"]).max() < 0.02
    # the data loading is all wall 'other' (with the short idle after the backward)
    assert (frame["wall_other_us"] - frame["data_loading_us"]).min() >= 0


ASCEND_WITH_DATA = [
    "msinsight/test/data/pytorch/text/level0/rank0_ascend_pt",
    "msinsight/test/data/pytorch/text/level1/rank0_ascend_pt",
    "msinsight/test/data/pytorch/db/level2/rank0_ascend_pt",
]


@needs_shared
@pytest.mark.parametrize("rel", ASCEND_WITH_DATA)
def test_the_ascend_iteration_from_the_framework_step(rel):
    """torch_npu profiles (text and DB exports) with a DataLoader span in their framework layer:
    the iteration is the framework's ProfilerStep#50 range (the device work ends inside it), and
    its data loading is the DataLoader span, the device idle meanwhile (every one of its instants:
    the first device task starts after it ends), less the runtime calls inside it."""
    trace = tv.load(SHARED_TRACES / rel, use_cache=False)
    row = trace.iteration_breakdown().row(0, named=True)
    step = trace.steps.row(0, named=True)
    assert row["iteration_us"] * 1000 == pytest.approx(step["host_end_ns"] - step["host_start_ns"], abs=1)
    host = trace.host_events
    loader = host.filter(pl.col("name").str.starts_with("enumerate(DataLoader)#")).row(0, named=True)
    assert loader["end_ns"] <= step["device_start_ns"]
    runtime = host.filter(
        (pl.col("kind") == "runtime")
        & (pl.col("start_ns") >= loader["start_ns"])
        & (pl.col("end_ns") <= loader["end_ns"])
    )
    frames = host.filter(pl.col("name").str.starts_with("torch/utils/data/"))
    low = (loader["dur_ns"] - runtime["dur_ns"].sum()) / 1000
    high = (
        max(loader["end_ns"], frames["end_ns"].max() or 0) - min(loader["start_ns"], frames["start_ns"].min() or 0)
    ) / 1000
    assert low - 1 <= row["data_loading_us"] <= high + 1
    # the phases: an optimizer and a backward (DDP on the autograd thread), and every wall instant once
    assert row["device_backward_us"] > 0 or rel.endswith("level0/rank0_ascend_pt")
    assert sum(row[f"{c}_us"] for c in phases.WALL_COLUMNS) == pytest.approx(row["iteration_us"])


MINDSPORE = "mindinsight/tests/utils/resource/run_1/normal_run/profiler/timeline_display_1.json"


@needs_shared
def test_mindspore_phases_from_the_op_scopes():
    """A MindSpore timeline (no steps, no host): each op's phase from its scope (`Gradients/...`
    backward, `.../optimizer_d-Adam/...` optimizer, the rest of `Default/` forward); the whole-trace
    device phases add up to the device's busy time."""
    trace = tv.load(SHARED_TRACES / MINDSPORE, use_cache=False)
    tasks = trace.device_tasks
    assert tasks["scope"].str.starts_with("Gradients/").sum() > 1000
    row = trace.device_phases().row(0, named=True)
    busy = trace.trace_breakdown().row(0, named=True)
    assert sum(row[f"{c}_us"] for c in phases.DEVICE_COLUMNS) == pytest.approx(
        busy["computing_us"] + busy["communication_not_overlapped_us"] + busy["exposed_memcpy_us"], abs=1e-3
    )
    backward = tasks.filter(pl.col("scope").str.starts_with("Gradients/"))
    assert row["device_backward_us"] == pytest.approx(
        tv.analysis.intervals.union_length(backward, ["rank"])["union_ns"][0] / 1000, abs=1e-3
    )
    assert row["device_optimizer_us"] > 0 and row["device_forward_us"] > 0


@needs_shared
def test_an_inference_trace_without_steps_is_forward():
    """vLLM's piecewise graph replays: no steps, no backward, no optimizer: all device time forward."""
    trace = tv.load(
        SHARED_TRACES / "tracelens/tests/traces/inference/vllm_prefilldecode_piecewise/graph_execution.json.gz"
    )
    row = trace.device_phases().row(0, named=True)
    assert row["device_forward_us"] > 0
    assert row["device_backward_us"] == row["device_optimizer_us"] == row["device_other_us"] == 0
