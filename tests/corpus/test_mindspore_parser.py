"""parsers.mindspore on MindInsight's real timeline samples and on tiny hand-written timelines.

Ground truth: the `*timeline_summary_*.json` MindSpore wrote beside each timeline
(op_exe_times, num_of_streams, num_of_ops); counts are also made here with the json module.

This file holds the topic's corpus tests; the others are in tests/unit/test_mindspore_parser.py.
"""

from __future__ import annotations

import json
from decimal import ROUND_HALF_UP, Decimal

import pytest

from tests.conftest import SHARED_TRACES
from traceview.parsers.mindspore import parse_mindspore_timeline

TRACES = SHARED_TRACES


RESOURCE = TRACES / "mindinsight" / "tests" / "utils" / "resource"


needs_traces = pytest.mark.skipif(
    not TRACES.is_dir(), reason=f"real-trace corpus not found at {TRACES} (only in the development checkout)"
)


#: (timeline, its summary) pairs whose summary describes the display file.
MATCHED = [
    ("run_1/normal_run/profiler/timeline_display_1.json", "run_1/normal_run/profiler/timeline_summary_1.json"),
    (
        "run_2/normal_run/profiler/ascend_timeline_display_1.json",
        "run_2/normal_run/profiler/ascend_timeline_summary_1.json",
    ),
]


#: Hand-trimmed samples (2-3 events) whose summaries describe the untrimmed runs.
TRIMMED = ["profiler/ascend_timeline_display_0.json", "profiler/gpu_timeline_display_0.json"]


@needs_traces
@pytest.mark.parametrize("display,summary", MATCHED)
def test_op_and_stream_counts_equal_summary(display, summary):
    truth = json.loads((RESOURCE / summary).read_text())
    tasks = parse_mindspore_timeline(RESOURCE / display).frames["device_tasks"]
    assert tasks.height == truth["op_exe_times"]
    assert tasks["stream"].n_unique() == truth["num_of_streams"]
    assert tasks["stream"].null_count() == 0


@needs_traces
def test_distinct_op_names_equal_num_of_ops_on_run_1():
    display, summary = MATCHED[0]
    truth = json.loads((RESOURCE / summary).read_text())
    tasks = parse_mindspore_timeline(RESOURCE / display).frames["device_tasks"]
    assert tasks["name"].n_unique() == truth["num_of_ops"] == 199
    # the summary's total_time is the sum of op durations (µs)
    assert abs(tasks["dur_ns"].sum() / 1000 - truth["total_time"]) < 1e-3


@needs_traces
@pytest.mark.parametrize("display", [d for d, _ in MATCHED] + TRIMMED)
def test_tasks_match_json_events(display):
    events = json.loads((RESOURCE / display).read_text())
    ops = [e for e in events if e.get("ph") == "X" and e.get("pid") != 10000]
    result = parse_mindspore_timeline(RESOURCE / display)
    tasks, annotations = result.frames["device_tasks"], result.frames["device_annotations"]
    assert tasks.height + annotations.height == len(ops)
    on_stream = sorted((e["ts"], e["name"]) for e in ops if str(e["tid"]).isdigit())
    assert tasks.height == len(on_stream)
    starts = sorted(zip(tasks["start_ns"], tasks["name"]))
    for (ts, name), (start_ns, got_name) in zip(on_stream, starts):
        assert name == got_name
        # the float's decimal text in µs -> ns, rounded half up (exact, no float arithmetic)
        assert start_ns == int((Decimal(repr(ts)) * 1000).quantize(Decimal(1), rounding=ROUND_HALF_UP))
    assert (tasks["end_ns"] - tasks["start_ns"] == tasks["dur_ns"]).all()
    assert result.warnings == []


@needs_traces
def test_meta_and_exact_times():
    result = parse_mindspore_timeline(RESOURCE / MATCHED[1][0])
    assert result.meta["format"] == "mindspore"
    assert result.meta["rank"] == 1
    assert result.meta["device_type"] == "npu"
    tasks = result.frames["device_tasks"]
    row = tasks.filter(tasks["name"] == "AssignAdd-op142").row(0, named=True)
    assert row["start_ns"] == 6042909560  # ts 6042909.559994936 µs
    assert row["dur_ns"] == 3100 and row["op_type"] == "AssignAdd" and row["stream"] == 519
    assert row["input_shapes"] == "1;1"
    gpu = parse_mindspore_timeline(RESOURCE / TRIMMED[1])
    assert gpu.meta["device_type"] == "gpu" and gpu.meta["rank"] == 0
    kernel = gpu.frames["device_tasks"].row(0, named=True)
    assert kernel["grid"] == "8,1,1" and kernel["block"] == "1024,1,1" and kernel["op_type"] == "ApplyMomentum"
    assert gpu.frames["device_annotations"]["name"].to_list() == ["Default/InitDataSetQueue-op0"]
