"""Phases (traceview.analysis.phases): forward, backward, optimizer and other, for device time
(each task through its launch) and wall time, on hand-made schedules whose answer is known, the
task queue of torch_npu, the rules, and the real profiles (the identities are checked on every
sample and real profile in test_iteration.py).

This file holds the topic's unit tests; the others are in tests/corpus/test_phases.py.
"""

from __future__ import annotations

import polars as pl
import pytest

import traceview as tv
from tests.support.kineto import complete_event, write_trace
from traceview import ruleset
from traceview.analysis import iteration, phases
from traceview.errors import TraceError


def _x(cat, name, start_us, dur_us, tid=1, **args):
    pid = 1 if cat == "kernel" else 0
    return complete_event(cat, name, pid, tid, round(start_us * 1000), round(dur_us * 1000), args or None)


def _launched(start_us, corr, kernel_start_us, kernel_us, tid=1):
    return [
        _x("cuda_runtime", "cudaLaunchKernel", start_us, 5, tid=tid, correlation=corr),
        _x("kernel", f"k{corr}", kernel_start_us, kernel_us, tid=7, correlation=corr, stream=7),
    ]


def _one_step(tmp_path, extra=()):
    """One 10 ms step: data loading [0, 1 ms); forward kernels launched from the main thread (2 ms
    of device time); backward on the autograd thread (tid 2), one kernel launched inside an
    evaluate_function span and one from another op of that thread (3 ms); the optimizer's kernel
    launched inside Optimizer.step (0.5 ms); then host work after the backward (other)."""
    events = [
        _x("user_annotation", "ProfilerStep#1", 0, 10_000),
        _x("user_annotation", "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 0, 1_000),
        _x("cpu_op", "aten::mm", 1_000, 50),
        *_launched(1_010, 1, 1_100, 1_000),
        _x("cpu_op", "aten::mm", 1_050, 50),
        *_launched(1_060, 2, 2_100, 1_000),
        _x("cpu_op", "autograd::engine::evaluate_function: MmBackward0", 3_000, 200, tid=2),
        *_launched(3_050, 3, 3_200, 2_000, tid=2),
        _x("cpu_op", "aten::mm", 3_300, 100, tid=2),
        *_launched(3_310, 4, 5_200, 1_000, tid=2),
        _x("cpu_op", "Optimizer.step#AdamW.step", 6_300, 300),
        *_launched(6_310, 5, 6_400, 500),
        _x("cpu_op", "aten::item", 7_000, 100),
        *extra,
    ]
    return tv.load(write_trace(tmp_path / "t.pt.trace.json", events), use_cache=False)


def test_phases_of_a_known_schedule(tmp_path):
    row = _one_step(tmp_path).iteration_breakdown().row(0, named=True)
    assert row["iteration_us"] == pytest.approx(10_000)
    device = {c: row[f"{c}_us"] for c in phases.DEVICE_COLUMNS}
    assert device == pytest.approx(
        {"device_forward": 2_000, "device_backward": 3_000, "device_optimizer": 500, "device_other": 0}
    )
    # idle instants by the host: [1000, 1100) forward region, [3100, 3200) in evaluate_function
    # (backward), [6300, 6400) in Optimizer.step; data loading and [6200, 6300) + [6900, 10000)
    # (after the last backward, no phase span) are other
    wall = {c: row[f"{c}_us"] for c in phases.WALL_COLUMNS}
    assert wall == pytest.approx(
        {"wall_forward": 2_100, "wall_backward": 3_100, "wall_optimizer": 600, "wall_other": 4_200}
    )


def test_a_users_forward_rule_and_the_priority(tmp_path):
    """A user's forward span (a module scope) inside the optimizer's span loses to the optimizer;
    the same span over host time after the backward makes that time forward."""
    rules = tmp_path / "rules.toml"
    rules.write_text('[[phases.phase]]\nphase = "forward"\nhost = "^nn\\\\.Module: "\n')
    events = [_x("cpu_op", "nn.Module: Head", 8_000, 1_000), _x("cpu_op", "nn.Module: Opt", 6_300, 300)]
    trace = _one_step(tmp_path, events)
    path = trace.source
    with_rules = tv.load(path, use_cache=False, rules=rules).iteration_breakdown().row(0, named=True)
    assert with_rules["wall_forward_us"] == pytest.approx(2_100 + 1_000)
    assert with_rules["wall_optimizer_us"] == pytest.approx(600)
    assert with_rules["wall_other_us"] == pytest.approx(4_200 - 1_000)


@pytest.mark.parametrize(
    "text, message",
    [
        (
            '[[phases.phase]]\nphase = "warmup"\nhost = "x"\n',
            "phase 'warmup' is not one of optimizer, backward, forward",
        ),
        ('[[phases.phase]]\nphase = "forward"\nhost = "x"\ntask = "y"\n', "one of 'host' or 'task'"),
        ('[[phases.phase]]\nphase = "forward"\nhost = "("\n', "invalid regex for 'host'"),
    ],
)
def test_bad_phase_rules_are_one_line(tmp_path, text, message):
    rules = tmp_path / "rules.toml"
    rules.write_text(text)
    with pytest.raises(TraceError, match=message.replace("(", r"\(")):
        ruleset.build(rules)


def test_the_task_queue_issue_point_is_the_paired_enqueue():
    """torch_npu: the operator thread records Enqueue, a worker Dequeue@op with the launch inside;
    the k-th Enqueue pairs with the k-th Dequeue. A launch outside any Dequeue keeps its start."""
    host = pl.DataFrame(
        {
            "rank": [0] * 4,
            "name": ["Enqueue", "Enqueue", "Dequeue@MatMul", "Dequeue@Add"],
            "start_ns": [100, 200, 150, 250],
            "end_ns": [110, 210, 190, 290],
        }
    )
    launches = pl.DataFrame({"rank": [0, 0, 0], "correlation": [1, 2, 3], "launch_start_ns": [160, 260, 400]})
    got = phases.issue_points(host, launches, ("^Enqueue$",), ("^Dequeue@",)).sort("correlation")
    assert got["issue_ns"].to_list() == [100, 200, 400]
    # unequal counts (a queue cut by the profile's start): no pairing, the launch starts stay
    cut = phases.issue_points(host.slice(1), launches, ("^Enqueue$",), ("^Dequeue@",)).sort("correlation")
    assert cut["issue_ns"].to_list() == [160, 260, 400]


def test_device_phases_are_null_without_anything_to_say_them(tmp_path):
    """Device tasks alone (no host events, no task rule match): phases unknown, not 'other'."""
    events = [_x("kernel", "gemm", 0, 100, tid=7, stream=7), _x("gpu_user_annotation", "ProfilerStep#1", 0, 200, tid=7)]
    frame = tv.load(write_trace(tmp_path / "t.pt.trace.json", events), use_cache=False).iteration_breakdown()
    assert frame.height == 1
    assert all(frame[f"{c}_us"][0] is None for c in iteration.PHASE_COLUMNS)
