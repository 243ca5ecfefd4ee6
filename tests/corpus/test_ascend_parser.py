"""parsers.ascend on the real torch_npu samples of ../shared/traces and on tiny hand-written files.

Expected values are computed here independently (csv / json / sqlite3 modules, integer arithmetic
on the CSV text), never by the parser's own helpers.

This file holds the topic's corpus tests; the others are in tests/unit/test_ascend_parser.py.
"""

from __future__ import annotations

import csv
import json
import shutil
import sqlite3
from functools import cache
from pathlib import Path

import pytest

from tests.conftest import SHARED_TRACES
from traceview.parsers.ascend import is_ascend_rank_dir, parse_ascend_rank

TRACES = SHARED_TRACES


needs_traces = pytest.mark.skipif(
    not TRACES.is_dir(), reason=f"real-trace corpus not found at {TRACES} (only in the development checkout)"
)


MSI_TEXT = "msinsight/test/data/pytorch/text"


MSI_SERVER = "msinsight/server/src/test/test_data"


MSI_DB = "msinsight/test/data/pytorch/db/level2"


ADVISOR = "msprof-analyze/test/ut/advisor"


#: Rank folders with a kernel_details.csv: (folder, expected rank from profiler_info).
KERNEL_DETAILS_RANKS = [
    (f"{MSI_TEXT}/level0/rank0_ascend_pt", 0),
    (f"{MSI_TEXT}/level0/rank1_ascend_pt", 1),
    (f"{MSI_TEXT}/level1/rank0_ascend_pt", 0),
    (f"{MSI_TEXT}/level1/rank1_ascend_pt", 1),
    (f"{MSI_SERVER}/test_rank_0", 0),
    (f"{MSI_SERVER}/test_rank_1", 1),
    (f"{ADVISOR}/advisor_backend/compute_advice", None),
    (f"{ADVISOR}/compute_advice/data", None),
]


#: Rank folders with trace_view.json + kernel_details.csv + step_trace_time.csv (one run each).
FULL_RANKS = [f"{MSI_TEXT}/level{lvl}/rank{r}_ascend_pt" for lvl in (0, 1) for r in (0, 1)]


DB_RANKS = [f"{MSI_DB}/rank0_ascend_pt", f"{MSI_DB}/rank1_ascend_pt"]


@cache
def parsed(rel: str):
    """Parse a corpus folder once per test session."""
    return parse_ascend_rank(TRACES / rel)


def output_dir(rel: str) -> Path:
    folder = TRACES / rel
    return folder / "ASCEND_PROFILER_OUTPUT" if (folder / "ASCEND_PROFILER_OUTPUT").is_dir() else folder


def csv_rows(path: Path, distinct: bool = True) -> list[dict[str, str]]:
    """The CSV's rows; `distinct`: a row repeated exactly is kept once (the parser drops the copies
    of a duplicated task, as in msprof-analyze's advisor test data, which repeats one row 4 times)."""
    with open(path, newline="", encoding="utf-8-sig") as fh:
        rows = list(csv.DictReader(fh))
    if not distinct:
        return rows
    seen: set = set()
    return [r for r in rows if not (tuple(r.items()) in seen or seen.add(tuple(r.items())))]


def us_text_to_ns_reference(text: str) -> int:
    """Decimal µs text -> ns by string manipulation (no float): '1736408883704643.212\\t' -> ...643212."""
    text = text.strip()
    whole, _, frac = text.partition(".")
    frac = (frac + "0000")[:4]
    return int(whole) * 1000 + int(frac[:3]) + (1 if int(frac[3]) >= 5 else 0)


def within_tolerance(ours_us: float, truth_us: float) -> bool:
    """docs/metrics.md tolerance: max(1 µs, 0.05 %)."""
    return abs(ours_us - truth_us) <= max(1.0, 0.0005 * abs(truth_us))


@needs_traces
@pytest.mark.parametrize("rel,rank", KERNEL_DETAILS_RANKS)
def test_device_tasks_one_per_csv_row(rel, rank):
    rows = csv_rows(output_dir(rel) / "kernel_details.csv")
    tasks = parsed(rel).frames["device_tasks"]
    assert tasks.height == len(rows) > 0
    assert tasks["name"].to_list() == [r["Name"].strip() for r in rows]
    copies = len(csv_rows(output_dir(rel) / "kernel_details.csv", distinct=False)) - len(rows)
    dropped = [w for w in parsed(rel).warnings if "exact duplicate device tasks" in w]
    assert dropped == (
        [f"{TRACES / rel}: {copies:,} exact duplicate device tasks (same name, stream, start and end) dropped"]
        if copies
        else []
    )


@needs_traces
@pytest.mark.parametrize("rel,rank", KERNEL_DETAILS_RANKS)
def test_start_and_duration_exact_from_csv_text(rel, rank):
    rows = csv_rows(output_dir(rel) / "kernel_details.csv")
    tasks = parsed(rel).frames["device_tasks"]
    starts = [us_text_to_ns_reference(r["Start Time(us)"]) for r in rows]
    durs = [us_text_to_ns_reference(r["Duration(us)"]) for r in rows]
    assert tasks["start_ns"].to_list() == starts
    assert tasks["dur_ns"].to_list() == durs
    assert tasks["end_ns"].to_list() == [s + d for s, d in zip(starts, durs)]


@needs_traces
def test_start_is_not_rounded_through_float64():
    # 1736408883704643.212 as float64 is ...643.25: the exact text must survive.
    tasks = parsed(f"{MSI_TEXT}/level1/rank0_ascend_pt").frames["device_tasks"]
    assert tasks["start_ns"][0] == 1736408883704643212


@needs_traces
@pytest.mark.parametrize("rel,rank", KERNEL_DETAILS_RANKS)
def test_step_stream_and_kind_columns(rel, rank):
    rows = csv_rows(output_dir(rel) / "kernel_details.csv")
    tasks = parsed(rel).frames["device_tasks"]
    assert tasks["step"].to_list() == [int(r["Step Id"]) for r in rows]
    if "Stream ID" in rows[0]:
        want = [None if r["Stream ID"].strip() == "N/A" else int(r["Stream ID"]) for r in rows]
        assert tasks["stream"].to_list() == want
    comm = [
        r["Accelerator Core"].strip() in ("HCCL", "COMMUNICATION") or r["Name"].lower().startswith("hcom_")
        for r in rows
    ]
    kinds = tasks["kind"].to_list()
    assert [k == "communication" for k in kinds] == comm
    memset = [r.get("Type", "").strip() == "MemSet" for r in rows]
    assert all(k == "memset" for k, m in zip(kinds, memset) if m)
    assert set(kinds) <= {"kernel", "memset", "memcpy", "communication"}


@needs_traces
def test_input_shapes_and_pmu_columns():
    rel = f"{MSI_TEXT}/level1/rank0_ascend_pt"
    rows = csv_rows(output_dir(rel) / "kernel_details.csv")
    tasks = parsed(rel).frames["device_tasks"]
    assert tasks["input_shapes"][0] == "32,3,224,224"  # CSV cell """32,3,224,224"""
    assert tasks["core_type"][2] == "AI_CORE" and tasks["op_type"][2] == "Conv2D"
    assert tasks["aic_mac_ns"][2] == us_text_to_ns_reference(rows[2]["aic_mac_time(us)"]) == 162056
    assert tasks["aiv_vec_ns"][0] == 9406
    hccl = tasks.filter(tasks["kind"] == "communication")
    assert hccl["aic_mac_ns"].null_count() == hccl.height  # N/A -> null, never -1


@needs_traces
@pytest.mark.parametrize("rel,rank", KERNEL_DETAILS_RANKS)
def test_rank_and_meta(rel, rank):
    meta = parsed(rel).meta
    assert meta["rank"] == rank
    assert meta["format"] == "ascend" and meta["device_type"] == "npu"
    assert meta["source"] == str(TRACES / rel)
    assert meta["device_name"] is None and meta["world_size"] is None


def load_trace_view(rel: str) -> list[dict]:
    return json.loads((output_dir(rel) / "trace_view.json").read_text())


@needs_traces
@pytest.mark.parametrize("rel", FULL_RANKS)
def test_steps_from_trace_view(rel):
    events = load_trace_view(rel)
    prof = [e for e in events if e.get("ph") == "X" and str(e.get("name", "")).startswith("ProfilerStep#")]
    steps = parsed(rel).frames["steps"]
    assert steps.height == len(prof) == 1
    row = steps.row(0, named=True)
    assert row["step"] == int(prof[0]["name"].split("#")[1])
    assert row["host_start_ns"] == us_text_to_ns_reference(prof[0]["ts"])
    assert row["host_end_ns"] == row["host_start_ns"] + us_text_to_ns_reference(repr(prof[0]["dur"]))
    tasks = parsed(rel).frames["device_tasks"]
    assert row["device_start_ns"] == tasks["start_ns"].min()
    assert row["device_end_ns"] == tasks["end_ns"].max()
    assert row["window_rule"] == "step_id"


@needs_traces
@pytest.mark.parametrize("rel", FULL_RANKS)
def test_step_window_reproduces_torch_npu_stage_and_preparing(rel):
    truth = csv_rows(output_dir(rel) / "step_trace_time.csv")[0]
    row = parsed(rel).frames["steps"].row(0, named=True)
    stage_us = (row["device_end_ns"] - row["device_start_ns"]) / 1000
    preparing_us = (row["device_start_ns"] - row["host_start_ns"]) / 1000
    assert within_tolerance(stage_us, float(truth["Stage"]))
    assert within_tolerance(preparing_us, float(truth["Preparing"]))


@needs_traces
@pytest.mark.parametrize("rel", FULL_RANKS[2:])
def test_host_events_from_trace_view(rel):
    events = load_trace_view(rel)
    names = {e["pid"]: e["args"]["name"] for e in events if e.get("ph") == "M" and e["name"] == "process_name"}
    cats = {"cpu_op", "python_function", "enqueue", "dequeue"}
    host = [e for e in events if e.get("ph") == "X" and (e.get("cat") in cats or names.get(e["pid"]) == "CANN")]
    frame = parsed(rel).frames["host_events"]
    assert frame.height == len(host)
    counts = dict(frame["kind"].value_counts().iter_rows())
    assert counts["python"] == sum(e.get("cat") == "python_function" for e in host)
    assert counts["annotation"] == 1  # ProfilerStep#50
    assert counts["operator"] == sum(e.get("cat") == "cpu_op" for e in host) - 1
    cann = frame.filter(frame["cat"] == "CANN")
    assert cann.height > 0 and cann["correlation"].null_count() == 0


@needs_traces
@pytest.mark.parametrize("rel", FULL_RANKS)
def test_device_tasks_linked_to_their_launch(rel):
    tasks = parsed(rel).frames["device_tasks"]
    # every kernel_details row has its trace_view task, so it gets the launch's connection id
    assert tasks["correlation"].null_count() == 0


@needs_traces
@pytest.mark.parametrize("rel", FULL_RANKS)
def test_trace_view_alone_gives_the_kernel_details_tasks(rel, tmp_path):
    """Without kernel_details.csv, Ascend Hardware + HCCL group lanes rebuild the same task set."""
    shutil.copy(output_dir(rel) / "trace_view.json", tmp_path / "trace_view.json")
    alone = parse_ascend_rank(tmp_path)
    reference = parsed(rel).frames["device_tasks"]
    tasks = alone.frames["device_tasks"]
    assert tasks.height == reference.height
    ours = sorted(zip(tasks["name"], tasks["start_ns"], tasks["kind"], tasks["step"]))
    want = sorted(zip(reference["name"], reference["start_ns"], reference["kind"], reference["step"]))
    for (n1, s1, k1, st1), (n2, s2, k2, st2) in zip(ours, want):
        assert (n1, k1, st1) == (n2, k2, st2)
        assert abs(s1 - s2) <= 1  # HCCL lane and CSV round the same start 1 ns apart
    assert alone.frames["steps"]["window_rule"].to_list() == ["correlation"]
    assert tasks.filter(tasks["kind"] == "communication")["stream"].null_count() == 4


@needs_traces
@pytest.mark.parametrize("rel", FULL_RANKS + [f"{MSI_SERVER}/test_rank_0", f"{MSI_SERVER}/test_rank_1"])
def test_step_trace_time_values_as_written(rel):
    rows = csv_rows(output_dir(rel) / "step_trace_time.csv")
    frame = parsed(rel).frames["ascend_step_trace"]
    assert frame.height == len(rows)
    columns = {
        "computing_us": "Computing",
        "communication_not_overlapped_us": "Communication(Not Overlapped)",
        "overlapped_us": "Overlapped",
        "communication_us": "Communication",
        "free_us": "Free",
        "stage_us": "Stage",
        "bubble_us": "Bubble",
        "communication_not_overlapped_exclude_receive_us": "Communication(Not Overlapped and Exclude Receive)",
        "preparing_us": "Preparing",
    }
    for i, row in enumerate(rows):
        got = frame.row(i, named=True)
        assert got["step"] == (int(row["Step"]) if row["Step"].strip() else None)
        for col, header in columns.items():
            assert got[col] == (float(row[header]) if header in row else None), col


@needs_traces
@pytest.mark.parametrize(
    "rel,ops",
    [
        (f"{MSI_TEXT}/level1/rank0_ascend_pt", 4),
        (f"{MSI_TEXT}/level1/rank1_ascend_pt", 4),
        (f"{MSI_SERVER}/test_rank_0", 28),
        (f"{MSI_SERVER}/test_rank_1", 28),
    ],
)
def test_communication_json_rows(rel, ops):
    doc = json.loads((output_dir(rel) / "communication.json").read_text())
    expected = [
        (step, group, op, info["Communication Time Info"])
        for step, groups in doc.items()
        for group, entries in groups.items()
        for op, info in entries.items()
        if op != "Total Op Info"
    ]
    frame = parsed(rel).frames["ascend_communication"]
    assert frame.height == len(expected) == ops
    for i, (step, group, op, info) in enumerate(expected):
        got = frame.row(i, named=True)
        assert got["step"] == int(step.removeprefix("step"))
        assert got["group"] == group
        assert got["op_name"] == op.split("@")[0]
        assert got["comm_group"] == op.split("@", 1)[1]  # the communicator group of the key
        assert got["elapse_ms"] == info["Elapse Time(ms)"]
        assert got["idle_ms"] == info["Idle Time(ms)"]
        assert got["start_ns"] == us_text_to_ns_reference(repr(info["Start Timestamp(us)"]))


@needs_traces
def test_communication_ops_are_the_hccl_tasks():
    rel = f"{MSI_TEXT}/level1/rank0_ascend_pt"
    comm = parsed(rel).frames["ascend_communication"]
    tasks = parsed(rel).frames["device_tasks"]
    assert sorted(comm["op_name"]) == sorted(tasks.filter(tasks["kind"] == "communication")["name"])


def db_counts(rel: str) -> tuple[int, int]:
    db = next((TRACES / rel / "ASCEND_PROFILER_OUTPUT").glob("ascend_pytorch_profiler_*.db"))
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        compute = con.execute(
            "SELECT count(*) FROM COMPUTE_TASK_INFO c JOIN TASK t ON t.globalTaskId = c.globalTaskId"
        ).fetchone()[0]
        comm = con.execute("SELECT count(*) FROM COMMUNICATION_OP").fetchone()[0]
    finally:
        con.close()
    return compute, comm


@needs_traces
@pytest.mark.parametrize("rel,rank", [(DB_RANKS[0], 0), (DB_RANKS[1], 1)])
def test_db_export(rel, rank):
    result = parsed(rel)
    tasks = result.frames["device_tasks"]
    compute, comm = db_counts(rel)
    assert tasks.height == compute + comm
    assert (tasks["kind"] == "communication").sum() == comm
    assert result.meta["rank"] == rank
    assert result.meta["device_name"] == "Ascend910B"
    assert (tasks["dur_ns"] == tasks["end_ns"] - tasks["start_ns"]).all()
    assert tasks["step"].null_count() == 0


@needs_traces
@pytest.mark.parametrize("rel", DB_RANKS)
def test_db_export_reproduces_analysis_db_step_trace(rel):
    con = sqlite3.connect(f"file:{TRACES / rel / 'ASCEND_PROFILER_OUTPUT' / 'analysis.db'}?mode=ro", uri=True)
    try:
        step, stage, preparing = con.execute("SELECT step, stage, preparing FROM StepTraceTime").fetchone()
    finally:
        con.close()
    result = parsed(rel)
    row = result.frames["steps"].row(0, named=True)
    assert row["step"] == int(step) and row["window_rule"] == "correlation"
    assert abs((row["device_end_ns"] - row["device_start_ns"]) / 1000 - stage) < 1e-6
    assert abs((row["device_start_ns"] - row["host_start_ns"]) / 1000 - preparing) < 1e-6
    truth = result.frames["ascend_step_trace"]
    assert truth["stage_us"].to_list() == [stage]
    assert result.frames["ascend_communication"].height == 4


@needs_traces
@pytest.mark.parametrize("rel", DB_RANKS)
def test_db_export_communication_group(rel):
    con = sqlite3.connect(f"file:{TRACES / rel / 'ASCEND_PROFILER_OUTPUT' / 'analysis.db'}?mode=ro", uri=True)
    try:
        want = con.execute("SELECT hccl_op_name, group_name FROM CommAnalyzerTime").fetchall()
    finally:
        con.close()
    comm = parsed(rel).frames["ascend_communication"]
    assert list(zip(comm["op_name"], comm["comm_group"])) == want
    assert comm["comm_group"].null_count() == 0


@needs_traces
@pytest.mark.parametrize(
    "rel", [r for r, _ in KERNEL_DETAILS_RANKS] + DB_RANKS + [f"{ADVISOR}/advisor_backend/timeline_advice"]
)
def test_is_ascend_rank_dir_on_real_folders(rel):
    assert is_ascend_rank_dir(TRACES / rel)


@needs_traces
def test_is_ascend_rank_dir_on_output_folder_given_directly():
    assert is_ascend_rank_dir(output_dir(f"{MSI_TEXT}/level1/rank0_ascend_pt"))
    assert is_ascend_rank_dir(output_dir(DB_RANKS[0]))


@needs_traces
def test_lenient_trace_view_path_gives_the_same_frames(tmp_path):
    """A non-object entry forces the per-field fallback: the frames must not change."""
    rel = f"{MSI_TEXT}/level1/rank0_ascend_pt"
    shutil.copy(output_dir(rel) / "trace_view.json", tmp_path / "trace_view.json")
    fast = parse_ascend_rank(tmp_path)
    events = load_trace_view(rel) + [42]
    (tmp_path / "trace_view.json").write_text(json.dumps(events))
    lenient = parse_ascend_rank(tmp_path)
    for table in ("device_tasks", "host_events", "steps"):
        assert lenient.frames[table].equals(fast.frames[table]), table
    assert fast.warnings == []
    skipped = "1 trace_view.json entries that are not JSON objects skipped"
    assert [w.split(": ", 1)[1] for w in lenient.warnings] == [skipped]
