"""parsers.ascend on the real torch_npu samples of ../shared/traces and on tiny hand-written files. The
unit tests; the topic's description and its other tests: tests/corpus/test_ascend_parser.py.
"""

from __future__ import annotations

import gc
import json
from pathlib import Path

import pytest

from traceview import parsers
from traceview.errors import TraceError
from traceview.parsers import detect
from traceview.parsers.ascend import is_ascend_rank_dir, parse_ascend_rank


def test_is_ascend_rank_dir_rejects_others(tmp_path):
    assert not is_ascend_rank_dir(tmp_path)
    (tmp_path / "x.pt.trace.json").write_text("{}")
    assert not is_ascend_rank_dir(tmp_path)
    assert not is_ascend_rank_dir(tmp_path / "x.pt.trace.json")
    (tmp_path / "ASCEND_PROFILER_OUTPUT").mkdir()
    assert is_ascend_rank_dir(tmp_path)


def test_is_ascend_rank_dir_is_discoverys_rule(tmp_path):
    assert parsers.ascend.is_ascend_rank_dir is detect.is_ascend_rank_dir  # one definition
    out = tmp_path / "rank0_ascend_pt" / "ASCEND_PROFILER_OUTPUT"
    out.mkdir(parents=True)
    assert not is_ascend_rank_dir(out)  # an empty output folder holds nothing to read
    (out / "ascend_pytorch_profiler_0.db").write_bytes(b"")
    assert is_ascend_rank_dir(out)  # ASCEND_PROFILER_OUTPUT given directly, DB export
    assert is_ascend_rank_dir(out.parent)
    assert is_ascend_rank_dir(str(out))  # a str path is accepted
    loose = tmp_path / "loose"
    loose.mkdir()
    (loose / "ascend_pytorch_profiler.sqlite").write_bytes(b"")
    assert not is_ascend_rank_dir(loose)
    (loose / "trace_view.json").write_text("[]")
    assert is_ascend_rank_dir(loose)


def test_folder_without_data_files_is_an_error(tmp_path):
    (tmp_path / "ASCEND_PROFILER_OUTPUT").mkdir()
    with pytest.raises(TraceError, match="kernel_details.csv"):
        parse_ascend_rank(tmp_path)


HEADER = "Step Id,Model ID,Stream ID,Name,Type,Accelerator Core,Start Time(us),Duration(us),aic_mac_time(us)\n"


def write_kernel_details(folder: Path, body: str, header: str = HEADER) -> Path:
    out = folder / "rank0_ascend_pt" / "ASCEND_PROFILER_OUTPUT"
    out.mkdir(parents=True)
    (out / "kernel_details.csv").write_text(header + body)
    return out.parent


def test_kind_rules_on_three_rows(tmp_path):
    rank = write_kernel_details(
        tmp_path,
        "3,4294967295,N/A,hcom_allReduce__1_0_1,hcom_allReduce_,HCCL,100.5\t,10.25,N/A\n"
        '3,4294967295,2,aclnnMm_MatMulCommon_MemSet,MemSet,AI_VECTOR_CORE,"200.000\t",1,0\n'
        "3,4294967295,2,MatMul1,MatMulV2,AI_CORE,300.0004,2.0005,1.5\n",
    )
    tasks = parse_ascend_rank(rank).frames["device_tasks"]
    assert tasks["kind"].to_list() == ["communication", "memset", "kernel"]
    assert tasks["start_ns"].to_list() == [100500, 200000, 300000]
    assert tasks["dur_ns"].to_list() == [10250, 1000, 2001]  # 2.0005 µs rounds half up
    assert tasks["stream"].to_list() == [None, 2, 2]
    assert tasks["aic_mac_ns"].to_list() == [None, 0, 1500]
    assert tasks["step"].to_list() == [3, 3, 3]


@pytest.mark.parametrize(
    "name,core,kind",
    [
        ("HcomAllGather", "COMMUNICATION", "communication"),
        ("HCOM_BROADCAST_7", "AI_CORE", "communication"),
        ("MEMCPY_ASYNC", "N/A", "memcpy"),
        ("Add", "AI_VECTOR_CORE", "kernel"),
    ],
)
def test_kind_rule_table(tmp_path, name, core, kind):
    rank = write_kernel_details(tmp_path, f"1,0,1,{name},N/A,{core},1.0,1.0,N/A\n")
    assert parse_ascend_rank(rank).frames["device_tasks"]["kind"].to_list() == [kind]


def test_renamed_time_headers_are_accepted(tmp_path):
    header = "Name,Start Time (us),Duration (us)\n"
    rank = write_kernel_details(tmp_path, "k,10.5,1\n", header=header)
    tasks = parse_ascend_rank(rank).frames["device_tasks"]
    assert tasks["start_ns"].to_list() == [10500]
    assert tasks["step"].to_list() == [None]


def test_missing_required_column_names_file_and_column(tmp_path):
    rank = write_kernel_details(tmp_path, "k,1.0\n", header="Name,Start Time(us)\n")
    with pytest.raises(TraceError) as info:
        parse_ascend_rank(rank)
    message = str(info.value)
    assert "kernel_details.csv" in message
    assert "Duration(us)" in message
    assert info.value.fix


def test_non_numeric_start_drops_the_row_with_a_warning(tmp_path):
    rank = write_kernel_details(
        tmp_path,
        "1,0,1,a,Add,AI_CORE,1.0,1.0,N/A\n1,0,1,b,Add,AI_CORE,garbage,1.0,N/A\n1,0,1,c,Add,AI_CORE,3.0,1.0,N/A\n",
    )
    result = parse_ascend_rank(rank)
    assert result.frames["device_tasks"]["name"].to_list() == ["a", "c"]
    assert len(result.warnings) == 1
    assert "1 kernel_details.csv rows with a non-numeric start time" in result.warnings[0]


def test_rank_from_profiler_info_file_name(tmp_path):
    rank = write_kernel_details(tmp_path, "1,0,1,a,Add,AI_CORE,1.0,1.0,N/A\n")
    (rank / "profiler_info_5.json").write_text(json.dumps({"config": {}}))
    (rank / "profiler_metadata.json").write_text(json.dumps({"distributed_args": {"world_size": 8}}))
    meta = parse_ascend_rank(rank).meta
    assert meta["rank"] == 5 and meta["world_size"] == 8


def test_step_trace_time_with_empty_step_and_no_preparing(tmp_path):
    rank = write_kernel_details(tmp_path, "1,0,1,a,Add,AI_CORE,1.0,1.0,N/A\n")
    (rank / "ASCEND_PROFILER_OUTPUT" / "step_trace_time.csv").write_text(
        "Step,Computing,Communication(Not Overlapped),Overlapped,Communication,Free,Stage,Bubble,"
        "Communication(Not Overlapped and Exclude Receive)\n,1.5,2,0,2,0.25,3.75,0,2\n"
    )
    row = parse_ascend_rank(rank).frames["ascend_step_trace"].row(0, named=True)
    assert row["step"] is None and row["preparing_us"] is None
    assert row["computing_us"] == 1.5 and row["free_us"] == 0.25


def test_gc_paused_during_parse_and_restored_after(tmp_path, monkeypatch):
    rank = write_kernel_details(tmp_path, "1,0,1,a,Add,AI_CORE,1.0,1.0,N/A\n")
    (rank / "ASCEND_PROFILER_OUTPUT" / "trace_view.json").write_text("[]")
    seen = []
    real = parsers.ascend.read_trace_view

    def spy(path, warnings):
        seen.append(gc.isenabled())
        return real(path, warnings)

    monkeypatch.setattr(parsers.ascend, "read_trace_view", spy)
    assert gc.isenabled()
    parse_ascend_rank(rank)
    assert seen == [False] and gc.isenabled()
    (rank / "ASCEND_PROFILER_OUTPUT" / "trace_view.json").write_text("[1, ")
    with pytest.raises(TraceError):
        parse_ascend_rank(rank)
    assert gc.isenabled()  # re-enabled after an error too


def write_communication(tmp_path: Path, doc: dict) -> Path:
    """communication.json of `doc`, with "START" replaced by a start time as torch_npu writes it."""
    rank = write_kernel_details(tmp_path, "1,0,1,a,Add,AI_CORE,1.0,1.0,N/A\n")
    text = json.dumps(doc).replace('"START"', "1736408883704643.212")
    (rank / "ASCEND_PROFILER_OUTPUT" / "communication.json").write_text(text)
    return rank


def test_communication_group_from_the_op_key(tmp_path):
    info = {"Communication Time Info": {"Start Timestamp(us)": "START", "Elapse Time(ms)": 0.5}}
    doc = {
        "step3": {
            "collective": {"hcom_allReduce__1_0_1@123@4": info, "Total Op Info": info},
            "p2p": {"hcom_send__2_0_1": info, "hcom_receive__3_0_1@": info},
        },
        "step4": {"hcom_broadcast__4_0_1@77": info},  # no collective/p2p level
    }
    comm = parse_ascend_rank(write_communication(tmp_path, doc)).frames["ascend_communication"]
    assert comm["op_name"].to_list() == [
        "hcom_allReduce__1_0_1",
        "hcom_send__2_0_1",
        "hcom_receive__3_0_1",
        "hcom_broadcast__4_0_1",
    ]
    assert comm["comm_group"].to_list() == ["123@4", None, None, "77"]
    assert comm["group"].to_list() == ["collective", "p2p", "p2p", None]
    assert comm["step"].to_list() == [3, 3, 3, 4]
    assert comm["start_ns"].to_list() == [1736408883704643212] * 4  # exact from the JSON text
    assert comm["elapse_ms"].to_list() == [0.5] * 4


def trace_view_events() -> list:
    """A tiny trace_view: a CANN launch, an Ascend Hardware task, its HostToDevice flow, a step."""
    return [
        {"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "args": {"name": "CANN"}},
        {"ph": "M", "name": "process_labels", "pid": 1, "tid": 0, "args": {"labels": "CPU"}},
        {"ph": "M", "name": "process_name", "pid": 2, "tid": 0, "args": {"name": "Ascend Hardware"}},
        {"ph": "M", "name": "process_labels", "pid": 2, "tid": 0, "args": {"labels": "NPU"}},
        {"ph": "M", "name": "process_name", "pid": 3, "tid": 0, "args": {"name": "Python"}},
        {
            "ph": "X",
            "name": "ProfilerStep#7",
            "pid": 3,
            "tid": 3,
            "ts": "1736408883704000.000",
            "dur": 900,
            "cat": "cpu_op",
        },
        {
            "ph": "X",
            "name": "AscendCL@launch",
            "pid": 1,
            "tid": 9,
            "ts": "1736408883704100.000",
            "dur": 5.25,
            "args": {"connection_id": 41},
        },
        {
            "ph": "s",
            "name": "HostToDevice41",
            "id": 41,
            "pid": 1,
            "tid": 9,
            "ts": "1736408883704100.000",
            "cat": "HostToDevice",
        },
        {
            "ph": "f",
            "name": "HostToDevice41",
            "id": 41,
            "pid": 2,
            "tid": 5,
            "ts": "1736408883704643.212",
            "cat": "HostToDevice",
            "bp": "e",
        },
        {
            "ph": "X",
            "name": "MatMul1",
            "pid": 2,
            "tid": 5,
            "ts": "1736408883704643.212",
            "dur": 22.5995,
            "args": {"Task Type": "AI_CORE", "connection_id": 41},
        },
        {
            "ph": "X",
            "name": "MEMCPY_ASYNC",
            "pid": 2,
            "tid": 5,
            "ts": "1736408883704700.000",
            "dur": 1,
            "args": {"Task Type": "MEMCPY_ASYNC"},
        },
        {"ph": "C", "name": "AI Core Freq", "pid": 4, "tid": 0, "ts": "1736408883704000.000", "args": {"MHz": 1800}},
    ]


def write_trace_view(tmp_path: Path, events: list) -> Path:
    (tmp_path / "trace_view.json").write_text(json.dumps(events))
    return tmp_path


@pytest.mark.parametrize("bad", [None, "not an event", {"ph": "X", "name": "x", "pid": 2, "tid": 5, "ts": {"a": 1}}])
def test_trace_view_tasks_exact_with_or_without_malformed_events(tmp_path, bad):
    events = trace_view_events() + ([] if bad is None else [bad])
    result = parse_ascend_rank(write_trace_view(tmp_path, events))
    tasks = result.frames["device_tasks"]
    assert tasks["name"].to_list() == ["MatMul1"]  # MEMCPY_ASYNC is not a kernel_details op
    assert tasks["start_ns"].to_list() == [1736408883704643212]  # exact from the text
    assert tasks["dur_ns"].to_list() == [22600]  # 22599.5 ns rounds half up (float math gives 22599)
    assert tasks["stream"].to_list() == [5] and tasks["core_type"].to_list() == ["AI_CORE"]
    assert tasks["correlation"].to_list() == [41] and tasks["step"].to_list() == [7]
    steps = result.frames["steps"].row(0, named=True)
    assert steps["host_start_ns"] == 1736408883704000000 and steps["host_end_ns"] == 1736408883704900000
    assert steps["window_rule"] == "correlation"
    host = result.frames["host_events"]
    assert host["name"].to_list() == ["ProfilerStep#7", "AscendCL@launch"]
    assert host["kind"].to_list() == ["annotation", "runtime"]
    assert host["correlation"].to_list() == [None, 41] and host["dur_ns"].to_list() == [900000, 5250]
    if bad is None:
        assert result.warnings == []
    elif isinstance(bad, str):
        assert [w.split(": ", 1)[1] for w in result.warnings] == [
            "1 trace_view.json entries that are not JSON objects skipped"
        ]
    else:
        assert sorted(w.split(": ", 1)[1] for w in result.warnings) == [
            "1 trace_view.json complete events with a non-numeric ts or dur dropped",
            "1 trace_view.json event fields holding an object or array read as null",
        ]


def test_trace_view_malformed_args_are_read_leniently(tmp_path):
    events = trace_view_events()
    events[9]["args"]["Task Type"] = ["AI_CORE"]  # an array where text is expected
    result = parse_ascend_rank(write_trace_view(tmp_path, events))
    tasks = result.frames["device_tasks"]
    assert tasks["name"].to_list() == ["MatMul1"] and tasks["core_type"].to_list() == [None]
    assert tasks["correlation"].to_list() == [41]
    assert [w.split(": ", 1)[1] for w in result.warnings] == [
        "1 trace_view.json event fields holding an object or array read as null"
    ]
