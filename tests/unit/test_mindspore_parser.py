"""parsers.mindspore on MindInsight's real timeline samples and on tiny hand-written timelines. The
unit tests; the topic's description and its other tests: tests/corpus/test_mindspore_parser.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from traceview.errors import TraceError
from traceview.parsers.mindspore import parse_mindspore_timeline


def write_timeline(tmp_path: Path, events: list, name: str = "ascend_timeline_display_3.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(events))
    return path


def test_hand_written_timeline_rules(tmp_path):
    events = [
        {"name": "MatMul-op1", "ph": "X", "tid": 5, "ts": 0.0, "dur": 2.5, "pid": 1, "args": {"type": "MatMul"}},
        {"name": "AllReduce-op2", "ph": "X", "tid": 7, "ts": 1.0, "dur": 4.0, "pid": 1, "args": {"type": "AllReduce"}},
        {"name": "Receive-op3", "ph": "X", "tid": 7, "ts": 6.0, "dur": 1.0, "pid": 1},
        {"name": "stream_5_parallel_0", "ph": "X", "tid": 6, "ts": 0.0, "dur": 2.5, "pid": 10000},
        {"name": "GetNext", "ph": "X", "tid": "0", "ts": 0.5, "dur": 0.25, "pid": 9000},
    ]
    result = parse_mindspore_timeline(write_timeline(tmp_path, events))
    tasks = result.frames["device_tasks"]
    assert result.meta["rank"] == 3
    assert tasks["name"].to_list() == ["MatMul-op1", "GetNext", "AllReduce-op2", "Receive-op3"]
    assert tasks["kind"].to_list() == ["kernel", "kernel", "communication", "communication"]
    assert tasks["op_type"].to_list() == ["MatMul", "GetNext", "AllReduce", "Receive"]
    assert tasks["stream"].to_list() == [5, 0, 7, 7]
    assert tasks["start_ns"].to_list() == [0, 500, 1000, 6000]
    assert tasks["dur_ns"].to_list() == [2500, 250, 4000, 1000]


def test_bad_times_are_dropped_and_counted(tmp_path):
    events = [
        {"name": "A-op1", "ph": "X", "tid": 1, "ts": 0.0, "dur": 1.0, "pid": 1},
        {"name": "B-op2", "ph": "X", "tid": 1, "ts": "soon", "dur": 1.0, "pid": 1},
        {"name": "C-op3", "ph": "X", "tid": 1, "ts": 2.0, "dur": -1.0, "pid": 1},
    ]
    result = parse_mindspore_timeline(write_timeline(tmp_path, events))
    assert result.frames["device_tasks"]["name"].to_list() == ["A-op1"]
    assert len(result.warnings) == 2
    assert any("non-numeric" in w for w in result.warnings)
    assert any("negative" in w for w in result.warnings)


def test_not_an_array_is_an_error(tmp_path):
    path = tmp_path / "timeline_display_0.json"
    path.write_text('{"a": 1}')
    with pytest.raises(TraceError, match="timeline_display_0.json"):
        parse_mindspore_timeline(path)


def test_exponent_floats_are_read_exactly(tmp_path):
    # json writes tiny floats with an exponent (2e-05); they are numbers, not bad input
    events = [{"name": "A-op1", "ph": "X", "tid": 1, "ts": 1e-3, "dur": 2e-05, "pid": 1}]
    result = parse_mindspore_timeline(write_timeline(tmp_path, events))
    tasks = result.frames["device_tasks"]
    assert tasks["start_ns"].to_list() == [1] and tasks["dur_ns"].to_list() == [0]
    assert result.warnings == []
