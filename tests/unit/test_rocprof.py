"""rocprofv3 output (`parsers/rocprof.py`): the CSV kernel traces of two real public runs
(tests/data/rocprof/PROVENANCE.md) checked against a csv-module recount, and the JSON output
built from the documented schema around the same MI300A kernels, whose reading must equal the
CSV's.

This file holds the topic's unit tests; the others are in tests/integration/test_rocprof.py.
"""

from __future__ import annotations

import csv
import json
import shutil

import polars as pl
import pytest

import traceview as tv
from tests.conftest import run_cli
from tests.support.rocprof_shared import CSV_RUN, JSON_RUN, ROCPROF  # noqa: F401
from traceview.parsers.rocprof import NO_KERNELS

DOCS_RUN = ROCPROF / "sdk_docs" / "docs_kernel_trace.csv"


KERNEL_COLUMNS = ("name", "start_ns", "end_ns", "stream", "grid", "block", "device")


def _recount(path):
    """(name, start, end, queue, grid, block) of every dispatch, read with the csv module."""
    with open(path, newline="") as fh:
        return sorted(
            (
                r["Kernel_Name"],
                int(r["Start_Timestamp"]),
                int(r["End_Timestamp"]),
                int(r["Queue_Id"]),
                ",".join(r[f"Grid_Size_{a}"] for a in "XYZ"),
                ",".join(r[f"Workgroup_Size_{a}"] for a in "XYZ"),
            )
            for r in csv.DictReader(fh)
        )


@pytest.mark.parametrize("path", [CSV_RUN, DOCS_RUN], ids=["mi300a_omp", "sdk_docs"])
def test_every_dispatch_of_a_real_csv_trace_is_a_device_task(path):
    t = tv.load(path, use_cache=False)
    tasks = t.device_tasks.sort("start_ns")
    got = sorted(tasks.select("name", "start_ns", "end_ns", "stream", "grid", "block").iter_rows())
    assert got == _recount(path)
    assert (tasks["dur_ns"] == tasks["end_ns"] - tasks["start_ns"]).all()
    assert set(tasks["kind"]) == {"kernel"}
    assert t.ranks["format"].to_list() == ["rocprof"]


def test_agent_info_names_the_gpu_and_numbers_the_devices():
    t = tv.load(CSV_RUN, use_cache=False)
    assert t.ranks["device_name"].to_list() == ["AMD Instinct MI300A"]
    # Agent_Id 4 is the first of the four GPU agents (nodes 0-3 are CPUs): device 0
    assert set(t.device_tasks["device"]) == {0}
    docs = tv.load(DOCS_RUN, use_cache=False)  # no agent_info beside it: the agent id as written
    assert set(docs.device_tasks["device"]) == {1} and docs.ranks["device_name"].to_list() == [None]
    assert docs.device_tasks["stream"].n_unique() == 4


def test_the_json_output_reads_the_same_kernels_as_the_csv():
    from_csv = tv.load(CSV_RUN, use_cache=False).device_tasks.filter(pl.col("kind") == "kernel")
    from_json = tv.load(JSON_RUN, use_cache=False)
    kernels = from_json.device_tasks.filter(pl.col("kind") == "kernel")
    assert sorted(kernels.select(KERNEL_COLUMNS).iter_rows()) == sorted(from_csv.select(KERNEL_COLUMNS).iter_rows())
    assert from_json.ranks["device_name"].to_list() == ["AMD Instinct MI300A"]


def test_json_copies_launches_and_roctx_steps():
    t = tv.load(JSON_RUN, use_cache=False)
    doc = json.loads(JSON_RUN.read_text())["rocprofiler-sdk-tool"][0]
    copies = t.device_tasks.filter(pl.col("kind") == "memcpy").sort("start_ns")
    assert copies.select("name", "bytes", "device").rows() == [("Memcpy HtoD", 8 << 20, 0), ("Memcpy DtoH", 8 << 20, 0)]
    launches = t.host_events.filter(pl.col("kind") == "runtime")
    assert set(launches["name"]) == {"hipLaunchKernel"} and launches.height == 9
    kernels = t.device_tasks.filter(pl.col("kind") == "kernel")
    assert kernels.join(launches, on="correlation", how="semi").height == kernels.height
    # roctx "step 0" and "step 1" each hold the launches of four kernels; the ninth is outside
    assert t.steps["step"].to_list() == [0, 1]
    assert kernels.group_by("step").len().sort("step", nulls_last=True).rows() == [(0, 4), (1, 4), (None, 1)]
    ranges = {m["correlation_id"]["internal"]: m for m in doc["buffer_records"]["marker_api"]}
    step0 = t.steps.filter(pl.col("step") == 0).row(0, named=True)
    assert (step0["host_start_ns"], step0["host_end_ns"]) == (
        ranges[100]["start_timestamp"],
        ranges[100]["end_timestamp"],
    )


def test_found_by_content_in_a_folder_and_siblings_invalidate_the_cache(tmp_path):
    run = tmp_path / "run"
    shutil.copytree(ROCPROF / "omp_output", run / "omp_output")
    shutil.copy(JSON_RUN, run / "renamed.json")
    t = tv.load(run, use_cache=False)
    assert t.ranks["format"].to_list() == ["rocprof", "rocprof"]
    from traceview.parsers.detect import classify_file, input_files

    source = classify_file(run / "omp_output" / "omp_kernel_trace.csv")
    assert [p.name for p in input_files(source)] == ["omp_agent_info.csv", "omp_kernel_trace.csv"]
    assert classify_file(run / "omp_output" / "omp_agent_info.csv") is None  # a sibling is not a source


def test_an_output_without_kernels_warns(tmp_path):
    path = tmp_path / "empty_results.json"
    path.write_text('{"rocprofiler-sdk-tool": [{"metadata": {"pid": 1}}]}')
    t = tv.load(path, use_cache=False)
    assert t.device_tasks.is_empty() and t.warnings == [f"{path}: 1 {NO_KERNELS}"]


@pytest.mark.parametrize(
    "text, fragment",
    [
        ('{"rocprofiler-sdk-tool": {"x": 1}}', 'no "rocprofiler-sdk-tool" list'),
        ('{"rocprofiler-sdk-tool": [{"buffer_records": {"kernel_dispatch": [', "truncated JSON"),
    ],
)
def test_a_broken_json_output_is_one_line(tmp_path, text, fragment):
    path = tmp_path / "bad_results.json"
    path.write_text(text)
    out = run_cli("summary", str(path))
    assert out.returncode != 0 and fragment in out.stderr and "Traceback" not in out.stderr


def test_odd_values_in_a_csv_trace_are_skipped_not_guessed(tmp_path):
    from traceview.parsers.rocprof import NO_TIMES, NOT_INTEGER

    lines = CSV_RUN.read_text().splitlines()
    lines[2] = lines[2].replace("5329321976381800", "not-a-time")  # a dispatch without a start: dropped
    lines[3] = lines[3].replace('"KERNEL_DISPATCH",4,', '"KERNEL_DISPATCH","Agent 4",')  # later layouts
    lines[4] = lines[4].replace("5329321985289126", "5.329321985289126E+15")  # a spreadsheet's form: not 5
    lines[6] = lines[6].replace(",256,1,1,", ',"2,56",1,1,')  # a thousands separator in a size: not 2
    path = tmp_path / "odd_kernel_trace.csv"
    path.write_text("\n".join(lines) + "\n")
    t = tv.load(path, use_cache=False)
    assert t.device_tasks.height == 7 and set(t.device_tasks["device"]) == {4}
    assert t.device_tasks["start_ns"].min() > 5_000_000_000_000_000
    assert t.warnings == [f"{path}: 3 {NOT_INTEGER}", f"{path}: 2 {NO_TIMES}"]


def test_a_json_output_with_odd_values_loads_what_it_can(tmp_path):
    """Found by the tree fuzzer: kernel_symbols that is not a list, a marker key that is a list,
    a handle beyond Int64 (a uint64) each raised a raw exception."""
    doc = json.loads(JSON_RUN.read_text())
    process = doc["rocprofiler-sdk-tool"][0]
    process["strings"]["marker_api"].append({"key": [1], "value": "odd"})
    process["buffer_records"]["kernel_dispatch"][0]["dispatch_info"]["queue_id"]["handle"] = 2**64 - 1
    for odd_symbols in (5, None):
        process["kernel_symbols"] = odd_symbols
        path = tmp_path / "odd_results.json"
        path.write_text(json.dumps(doc))
        t = tv.load(path, use_cache=False)
        kernels = t.device_tasks.filter(pl.col("kind") == "kernel")
        assert kernels.height == 9 and set(kernels["name"]) == {"(unnamed)"}
        assert kernels.sort("start_ns")["stream"].to_list()[0] is None


def test_the_built_json_is_what_its_script_writes():
    import importlib.util

    spec = importlib.util.spec_from_file_location("make_rocprof_json", ROCPROF / "make_rocprof_json.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.build() == json.loads(JSON_RUN.read_text())
