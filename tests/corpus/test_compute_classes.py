"""Compute classes (traceview.analysis.classes). The corpus tests; the topic's description and its
other tests: tests/unit/test_compute_classes.py, tests/integration/test_compute_classes.py.
"""

from __future__ import annotations

import polars as pl
import pytest

from tests.conftest import SHARED_TRACES, needs_shared
from tests.support.compute_classes_shared import RULES, _agrees_with_external_ids, _load  # noqa: F401
from tests.support.corpus import ASCEND_DIRS, KINETO, ROWS
from traceview.analysis import classes as cc

#: HTA's CUDA event-sync test: 71 % of its 5 tasks is torch.cuda._sleep's spin_kernel (no work),
#: which a rule puts in class "other" on purpose: classified, so not in the unclassified share.
SLEEP_TRACE = "hta/tests/data/critical_path/cuda_event_sync/event_sync_trace.json.gz"


ASCEND_RANKS = sorted(set(ASCEND_DIRS) | {p for p, fmt in ROWS if fmt.startswith("ascend pt")})


@needs_shared
def test_corpus_lists_what_this_file_checks():
    assert len(KINETO) >= 50 and len(ASCEND_RANKS) >= 8
    assert SLEEP_TRACE in KINETO


@needs_shared
@pytest.mark.parametrize("rel", KINETO + ASCEND_RANKS)
def test_real_traces_unclassified_under_5_percent(rel):
    trace = _load(SHARED_TRACES / rel)
    out = cc.classify(trace.device_tasks, trace.host_events, RULES)
    assert out.height == trace.device_tasks.height
    if out.height == 0:  # CPU-only / MTIA traces: nothing to classify, the columns still exist
        assert {"launch_op", "compute_class", "compute_group", "classified"} <= set(out.columns)
        return
    if rel == SLEEP_TRACE:
        spin = out.filter(pl.col("name").str.contains("spin_kernel"))
        assert spin.height > 0 and set(spin["compute_class"]) == {"other"} and spin["classified"].all()
    shares = cc.unclassified_share(out)
    worst = shares["unclassified_share"].max()
    if worst >= 0.05:
        top = cc.top_kernels(out.filter(~pl.col("classified")), n=5, by=())
        pytest.fail(f"{worst:.1%} unclassified; top unclassified kernels:\n{top}")
    assert set(out["compute_class"]) <= set(cc.CLASSES)


@needs_shared
@pytest.mark.parametrize(
    "rel",
    [
        "tracelens/tests/traces/h100/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz",
        "tracelens/tests/traces/mi300/google_owlv2-large-patch14-ensemble__1016001.json.gz",
        "kineto-tb_plugin/tb_plugin/samples/resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz",
    ],
)
def test_launch_op_agrees_with_external_ids_on_real_traces(rel):
    assert _agrees_with_external_ids(_load(SHARED_TRACES / rel)) > 100


@needs_shared
def test_old_traces_find_launch_ops_by_thread_and_time():
    """2023 HTA traces: kernel External id = correlation, so only the thread-and-time rule works."""
    rel = "hta/tests/data/critical_path/alexnet/benchmark_result_2869224_1695835535_trace.json.gz"
    trace = _load(SHARED_TRACES / rel)
    out = cc.classify(trace.device_tasks, trace.host_events, RULES)
    kernels = out.filter(pl.col("kind") == "kernel")
    assert kernels["launch_op"].null_count() == 0
    convs = kernels.filter(pl.col("launch_op").str.contains("conv"))
    assert convs.height > 0 and (convs["compute_class"] == "convolution").all()
