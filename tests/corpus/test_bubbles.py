"""GPU pipeline bubbles and stage inference (traceview.analysis.bubbles). The corpus tests; the topic's
description and its other tests: tests/unit/test_bubbles.py.
"""

from __future__ import annotations

import csv

import polars as pl
import pytest

import traceview as tv
from tests.conftest import SHARED_TRACES, needs_shared
from traceview.analysis.bubbles import gpu_bubbles, p2p_tasks


@needs_shared
@pytest.mark.parametrize(
    "rel",
    [
        "param/et_replay/tests/inputs/dlrm_kineto.tar.gz.extracted/dlrm_kineto",
        "hta/tests/data/trace_filter",
    ],
)
def test_sendrecv_collectives_are_not_pipeline_p2p(rel):
    """The real GPU SendRecv kernels are all-to-all / all-reduce / all-gather (the parser says so
    from `nccl:*` / record_param_comms): no pipeline, no bubble."""
    trace = tv.load(SHARED_TRACES / rel)
    sendrecv = trace.device_tasks.filter(pl.col("name").str.contains("SendRecv"))
    assert sendrecv.height > 0 and p2p_tasks(trace.device_tasks).is_empty()
    got = gpu_bubbles(trace.device_tasks, trace.steps)
    assert got.height > 0 and (got["bubble_us"] == 0).all() and not got["pipeline"].any()


CLUSTER = SHARED_TRACES / "mindinsight/tests/utils/resource/cluster_propose"


TICKS_PER_MS = 1e5  # step_trace_raw times are 10 ns ticks (MindInsight divides by 1e5 for ms)


def _read(name):
    with open(CLUSTER / name, newline="") as fh:
        return list(csv.DictReader(fh))


def _receive_columns(row):
    return [c for c in row if "_Receive-op" in c and not c.endswith("_point")]


@needs_shared
@pytest.mark.parametrize("rank", range(4))
def test_mindinsight_receive_columns_are_durations(rank):
    """step_trace_raw's per-step `stream_*_Receive-opN` columns are durations (end - start, 10 ns
    ticks) for the numbered steps; the last row (`-`) is an average, not a step."""
    rows = _read(f"step_trace_raw_{rank}_detail_time.csv")
    steps = [r for r in rows if r["step_num"].isdigit()]
    assert len(steps) == 5 and rows[-1]["step_num"] == "-"
    for row in steps:
        cols = _receive_columns(row)
        assert len(cols) == 4
        for c in cols:
            assert int(row[c]) == int(row[c + "_end_point"]) - int(row[c + "_start_point"]) > 0


@needs_shared
@pytest.mark.parametrize("rank", range(4))
def test_mindinsight_pipeline_identities(rank):
    """MindSpore's definitions (timeline generator `_get_cluster_timeline`): with t = step time,
    computation = t - communication_alone, stage = t - receive_alone, and communication_alone =
    receive_alone + collective_communication_alone (receive and collectives never overlap)."""
    for a in _read(f"ascend_cluster_analyse_pipeline-parallel_2_4_{rank}.csv"):
        v = {k: float(x) for k, x in a.items()}
        assert v["computation_time"] + v["communication_alone_time"] == pytest.approx(
            v["stage_time"] + v["receive_alone_time"], abs=2e-4
        )
        assert v["communication_alone_time"] == pytest.approx(
            v["receive_alone_time"] + v["collective_communication_alone_time"], abs=2e-4
        )


@needs_shared
@pytest.mark.parametrize("rank", range(4))
def test_mindinsight_receive_alone_is_not_the_raw_receive_sum(rank):
    """What is and is not reproducible. MindSpore's receive_alone = |U(Receive) - U(all other
    ops)| per step (the receive time *not overlapped*), which needs the compute op intervals that
    cluster_propose does not ship. docs/metrics.md's rule (torch_npu: Σ raw receive duration) is an upper
    bound of it, tight when receives are fully exposed (the first step of stage 2, 99.8 %) and 3x
    too big on stage 1 (ranks 0-1), whose gradient receives run under compute."""
    rows = [r for r in _read(f"step_trace_raw_{rank}_detail_time.csv") if r["step_num"].isdigit()]
    ana = _read(f"ascend_cluster_analyse_pipeline-parallel_2_4_{rank}.csv")
    for row, a in zip(rows, ana):
        raw_ms = sum(int(row[c]) for c in _receive_columns(row)) / TICKS_PER_MS
        alone_ms = float(a["receive_alone_time"])
        assert alone_ms <= raw_ms + 1e-3, (row["step_num"], alone_ms, raw_ms)
        if rank in (0, 1):
            assert raw_ms > 2.5 * alone_ms
    if rank in (2, 3):  # step 1: ~2 s of exposed receive while stage 1 compiles and runs
        first = sum(int(rows[0][c]) for c in _receive_columns(rows[0])) / TICKS_PER_MS
        assert float(ana[0]["receive_alone_time"]) == pytest.approx(first, rel=0.005)


@needs_shared
def test_mindinsight_stages_share_their_receive_ops():
    """Ranks of one stage run the same Receive ops (same op ids); that grouping is MindInsight's
    stage rule rank // (rank_size / stage_num) for the file's 2 stages x 4 ranks."""
    ops = {}
    for rank in range(4):
        row = _read(f"step_trace_raw_{rank}_detail_time.csv")[0]
        ops[rank] = frozenset(c.rsplit("_", 1)[1] for c in _receive_columns(row))
    groups = sorted({frozenset(r for r in ops if ops[r] == o) for o in ops.values()}, key=min)
    mindinsight_rule = [frozenset(r for r in range(4) if r // (4 // 2) == s) for s in (0, 1)]
    assert groups == [frozenset({0, 1}), frozenset({2, 3})] == mindinsight_rule
