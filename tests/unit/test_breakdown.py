"""Step-time decomposition against the reference tools' own numbers on real data, the shipped samples'
by-construction values, and the interval identities on every real trace. The unit tests; the topic's
description and its other tests: tests/corpus/test_breakdown.py.
"""

from __future__ import annotations

import json

import polars as pl
import pytest

import traceview as tv
from tests.conftest import SAMPLES
from tests.support.breakdown_shared import ASCEND_COLUMNS, _check_identities  # noqa: F401
from tests.support.intervals import WINDOW_TERMS
from tests.support.samples import shared_sample
from tests.support.tolerance import close
from traceview.analysis.breakdown import step_breakdown


def test_ascend_sample_matches_its_step_trace_time():
    trace = shared_sample("ascend_2rank")
    got = step_breakdown(trace.device_tasks, trace.steps)
    for want in trace.ascend_step_trace.to_dicts():
        row = got.filter((pl.col("rank") == want["rank"]) & (pl.col("step") == want["step"])).row(0, named=True)
        for col in ASCEND_COLUMNS.values():
            assert close(row[col], want[col], rel=0, floor_us=0.0015), (col, row[col], want[col])


def test_dp4_sample_steps_equal_construction():
    exp = json.loads((SAMPLES / "dp4_nccl" / "expected.json").read_text())
    trace = shared_sample("dp4_nccl")
    got = step_breakdown(trace.device_tasks, trace.steps)
    assert set(got["window_rule"]) == {"gpu_annotation"}
    for rank, e in exp["ranks"].items():
        for step_name, want in e["steps"].items():
            step = int(step_name.split("#")[1])
            row = got.filter((pl.col("rank") == int(rank)) & (pl.col("step") == step)).row(0, named=True)
            for term in WINDOW_TERMS:
                assert row[f"{term}_us"] * 1000 == pytest.approx(want[f"{term}_ns"], abs=0.5), (rank, step, term)
            assert row["duration_us"] * 1000 == pytest.approx(want["window_ns"], abs=0.5)
    _check_identities(got)


def test_gpu_pipeline_bubble_in_step_breakdown():
    """On the 1F1B sample every stage's pipeline_bubble_us is the constructed bubble (the pipeline
    step minus its compute), in a column of its own: the reference columns keep torch_npu's rule
    (no receive ops: bubble 0, stage = the busy span, the exclude-receive term = exposed comm). A
    data-parallel profile has no pipeline bubble at all."""
    exp = json.loads((SAMPLES / "pp4_1f1b" / "expected.json").read_text())
    got = shared_sample("pp4_1f1b").step_breakdown()
    assert set(got["bubble_rule"]) == {"pipeline"}
    for step_name, step in exp["steps"].items():
        n = int(step_name.split("#")[1])
        for rank, e in step["ranks"].items():
            row = got.filter((pl.col("rank") == int(rank)) & (pl.col("step") == n)).row(0, named=True)
            assert row["pipeline_bubble_us"] * 1000 == pytest.approx(e["bubble_ns"], abs=0.5)
            assert row["bubble_us"] == 0
            assert row["stage_us"] * 1000 == pytest.approx(row["last_busy_ns"] - row["first_busy_ns"], abs=0.5)
            assert row["communication_not_overlapped_exclude_receive_us"] == row["communication_not_overlapped_us"]
    dp = shared_sample("dp4_nccl").step_breakdown()
    assert set(dp["bubble_rule"]) == {"none"} and (dp["bubble_us"] == 0).all()
    assert dp["pipeline_bubble_us"].is_null().all()


def test_a_profile_without_busy_device_time_has_every_column(tmp_path):
    """Steps whose only device task lasts 0 ns: all-idle rows with the same columns (the derived
    ones included) as any other breakdown (found by tests/integration/test_properties.py)."""
    from tests.support.kineto import complete_event, write_trace

    events = [
        complete_event("user_annotation", "ProfilerStep#1", 0, 1, 0, 10_000),
        complete_event("cuda_runtime", "cudaLaunchKernel", 0, 1, 1_000, 1_000, {"correlation": 5}),
        complete_event("kernel", "gemm", 1, 7, 5_000, 0, {"correlation": 5, "stream": 7}),
    ]
    idle = tv.load(write_trace(tmp_path / "t.pt.trace.json", events), use_cache=False).step_breakdown()
    busy = shared_sample("dp4_nccl").step_breakdown()
    assert idle.columns == busy.columns
    assert idle.height == 1 and idle["computing_not_overlapped_us"][0] == 0
