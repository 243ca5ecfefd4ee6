"""Findings (`traceview.analysis.findings`, docs/findings.md). The corpus tests; the topic's
description and its other tests: tests/unit/test_findings.py, tests/integration/test_findings.py.
"""

from __future__ import annotations

import gzip

import orjson
import polars as pl

from tests.conftest import SHARED_TRACES, needs_shared
from tests.support.findings_shared import fired, load  # noqa: F401
from traceview.parsers.kineto import parse_kineto


@needs_shared
def test_exposed_communication_critical_on_ascend_allreduce_bound_ranks():
    got = fired(
        load(str(SHARED_TRACES / "msinsight/test/data/pytorch/text/level1/rank0_ascend_pt")), "exposed_communication"
    )
    assert got[0]["severity"] == "critical" and got[0]["value"] > 0.30


@needs_shared
def test_host_bound_on_a_real_resnet50_trace():
    path = (
        SHARED_TRACES
        / "kineto-tb_plugin/tb_plugin/samples/resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz"
    )
    got = fired(load(str(path)), "host_bound")
    assert got[0]["value"] > 0.9


@needs_shared
def test_tiny_kernels_on_a_real_eager_trace():
    got = fired(load(str(SHARED_TRACES / "tracelens/tests/traces/b200/eager_trace.json.gz")), "tiny_kernels")
    assert got[0]["value"] > 0.8


@needs_shared
def test_input_shapes_equal_the_launching_cpu_ops_input_dims():
    path = SHARED_TRACES / "tracelens/tests/traces/h100/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz"
    events = orjson.loads(gzip.decompress(path.read_bytes()))["traceEvents"]
    dims = {
        e["args"]["External id"]: e["args"].get("Input Dims")
        for e in events
        if e.get("cat") == "cpu_op" and "External id" in e.get("args", {})
    }

    def entries(x) -> list[str]:  # a tensor list ([[1, 2], [3, 4]]) is one entry per tensor
        if x and all(isinstance(t, list) for t in x):
            return [",".join(str(n) for n in t) for t in x]
        return [",".join(str(n) for n in x)] if isinstance(x, list) else [""]

    want = []
    for e in (e for e in events if e.get("cat") == "kernel"):
        d = dims.get(e["args"].get("External id"))
        want.append(None if d is None else ";".join(entry for x in d for entry in entries(x)))
    tasks = (
        parse_kineto(path).frames["device_tasks"].filter(pl.col("kind") != "memcpy").filter(pl.col("kind") != "memset")
    )
    assert sorted(map(str, tasks["input_shapes"].to_list())) == sorted(map(str, want))
    assert sum(w is not None for w in want) > 1000


@needs_shared
def test_gemm_unaligned_on_real_traces():
    h100 = SHARED_TRACES / "tracelens/tests/traces/h100"
    got = fired(load(str(h100 / "facebook_timesformer-base-finetuned-k400__1016002.json.gz")), "gemm_unaligned")
    assert "M=3137, N=3137, K=64" in got[0]["message"]  # 56 x 56 patches + a class token
    assert fired(load(str(h100 / "Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz")), "gemm_unaligned") == {}
