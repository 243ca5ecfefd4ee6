"""The capture trace of a CUDA/HIP-graph run is that run's companion, never a rank (issue 30).

vLLM and SGLang write a capture trace (stream captures, no graph launch) beside the trace of the
run that replays the graphs, both as rank 0. Counted as a rank, the capture trace (99.9 % idle)
earned "device waits for the host 100 % ... capture the step as CUDA graphs" beside "graphs run
96.9 % of device time". Now it is listed in `Trace.companions` (info, summary), the profile has one
rank, and no advice recommends graphs to a run that captures them.

This file holds the topic's unit tests; the others are in tests/corpus/test_graph_capture.py.
"""

from __future__ import annotations

import json

import polars as pl

import traceview as tv
from tests.conftest import run_cli
from tests.support.graph_capture_shared import CAPTURE_ADVICE  # noqa: F401
from tests.support.kineto import complete_event, write_trace
from traceview.loader import LONE_CAPTURE


def _run(path, kind: str):
    """A tiny one-step trace: `replay` launches 40 short kernels with one cudaGraphLaunch, `capture`
    records a stream capture (cudaStreamBeginCapture ... EndCapture) of 3 kernels and no launch."""
    ev = [complete_event("user_annotation", "ProfilerStep#1", 1, 1, 0, 2_000_000)]
    if kind == "replay":
        ev.append(complete_event("cuda_runtime", "cudaGraphLaunch", 1, 1, 10_000, 500_000, {"correlation": 7}))
        for i in range(40):
            start = 20_000 + i * 5_000
            ev.append(
                complete_event("kernel", f"k{i}", 0, 7, start, 3_000, {"correlation": 7, "stream": 7, "device": 0})
            )
    else:
        ev.append(complete_event("cuda_runtime", "cudaStreamBeginCapture", 1, 1, 10_000, 2_000, {"correlation": 1}))
        for i in range(3):
            ev.append(complete_event("cuda_runtime", "cudaLaunchKernel", 1, 1, 20_000 + i * 10_000, 3_000,
                                     {"correlation": 10 + i}))  # fmt: skip
            ev.append(complete_event("kernel", f"k{i}", 0, 7, 1_500_000 + i * 5_000, 3_000,
                                     {"correlation": 10 + i, "stream": 7, "device": 0}))  # fmt: skip
        ev.append(complete_event("cuda_runtime", "cudaStreamEndCapture", 1, 1, 60_000, 2_000, {"correlation": 2}))
    return write_trace(path, ev, device="NVIDIA H100 80GB HBM3")


def test_a_capture_trace_beside_its_run_is_a_companion(tmp_path):
    _run(tmp_path / "run.pt.trace.json", "replay")
    (tmp_path / "capture_traces").mkdir()
    _run(tmp_path / "capture_traces" / "graph_capture_rank_0.pt.trace.json", "capture")
    t = tv.load(tmp_path, use_cache=False)
    assert t.ranks["rank"].to_list() == [0] and t.ranks["graph_capture"].to_list() == [False]
    assert t.ranks["source"][0].endswith("run.pt.trace.json")
    row = t.companions.row(0, named=True)
    assert (row["rank"], row["kind"], row["device_tasks"]) == (0, "graph capture", 3)
    assert row["source"].endswith("graph_capture_rank_0.pt.trace.json")
    assert not [w for w in t.warnings if "repeats rank" in w]
    info = json.loads(run_cli("info", str(tmp_path), "--format", "json").stdout)
    assert len(info["ranks"]) == 1 and info["companions"][0]["kind"] == "graph capture"
    text = run_cli("summary", str(tmp_path)).stdout
    assert "Companions (1):" in text and "not counted as a rank" in text
    assert CAPTURE_ADVICE not in text


def test_a_capture_trace_alone_stays_a_rank_with_a_warning_and_no_graph_advice(tmp_path):
    path = _run(tmp_path / "capture.pt.trace.json", "capture")
    t = tv.load(path, use_cache=False)
    assert t.ranks["graph_capture"].to_list() == [True] and t.companions.is_empty()
    assert any(w.endswith(LONE_CAPTURE) for w in t.warnings)
    assert CAPTURE_ADVICE not in " ".join(t.findings()["advice"].to_list())


def test_a_graph_launch_is_not_the_typical_launch_call(tmp_path):
    """The replay's 40 kernels share one 500 µs cudaGraphLaunch: weighted per kernel it read as
    "a launch call takes the host 500 us"; a graph launch pays for a whole graph."""
    t = tv.load(_run(tmp_path / "run.pt.trace.json", "replay"), use_cache=False)
    assert t.launch_calls()["graph"].to_list() == [True]
    assert t.facts().filter(pl.col("rank") == 0)["launch_us"].to_list() == [None]


def test_traces_that_record_no_rank_pair_only_when_alone(tmp_path):
    """Without recorded ranks (an Nsight export records none: each is a process), a capture trace
    is a companion only when the load holds it and one run; beside two runs it stays a rank."""
    import orjson

    folder = tmp_path / "pair"
    folder.mkdir()
    for name, kind in (("run.pt.trace.json", "replay"), ("capture.pt.trace.json", "capture")):
        path = _run(folder / name, kind)
        doc = orjson.loads(path.read_bytes())
        doc.pop("distributedInfo")
        path.write_bytes(orjson.dumps(doc))
    t = tv.load(folder, use_cache=False)
    assert t.ranks.height == 1 and t.companions.height == 1
    (folder / "run2.pt.trace.json").write_bytes((folder / "run.pt.trace.json").read_bytes())
    t = tv.load(folder, use_cache=False)
    assert t.ranks.height == 3 and t.companions.is_empty()
