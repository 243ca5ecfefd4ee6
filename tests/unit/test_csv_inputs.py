"""CSV profiles that are wide, or whose files are not what their names say (issue 30).

A 12.7 MB kernel_details.csv with 100,000 extra columns took 2.4 GB (190x its size) and, under a
memory limit, aborted with a Rust allocator message; rocprofv3 CSVs alike. Only the columns used
are read now (`parsers/csvio.py`: the header first; a header over 512 columns is streamed keeping
only the wanted cells), so a wide file costs what its useful columns do, within the memory
guard's estimate. A rocprofv3 `agent_info.csv` that holds a kernel trace, and API records written
twice, loaded without a word; both are warnings now.

This file holds the topic's unit tests; the others are in tests/integration/test_csv_inputs.py.
"""

from __future__ import annotations

import json
import shutil

import polars as pl

import traceview as tv
from tests.conftest import SAMPLES
from tests.support.csv_inputs_shared import ROCPROF, wide_ascend, wide_rocprof  # noqa: F401 - fixtures
from traceview.parsers import csvio
from traceview.parsers.rocprof import DUPLICATE_CALLS, NOT_SIBLING


def _tasks(t) -> pl.DataFrame:
    return t.device_tasks.drop("rank").sort("start_ns", "name")


def test_a_wide_kernel_details_reads_as_the_narrow_one(wide_ascend):
    t = tv.load(wide_ascend, use_cache=False)
    want = tv.load(SAMPLES / "ascend_2rank" / "rank0_ascend_pt", use_cache=False)
    assert t.device_tasks.height > 0 and _tasks(t).equals(_tasks(want))
    assert [w.split(": ", 1)[1] for w in t.warnings] == [w.split(": ", 1)[1] for w in want.warnings]


def test_a_wide_rocprof_kernel_trace_reads_as_the_narrow_one(wide_rocprof):
    t = tv.load(wide_rocprof, use_cache=False)
    want = tv.load(ROCPROF / "omp_output" / "omp_kernel_trace.csv", use_cache=False)
    assert t.device_tasks.height > 0 and _tasks(t).equals(_tasks(want))
    assert t.ranks["device_name"].to_list() == want.ranks["device_name"].to_list()


def test_the_streaming_reader_reads_as_polars_does(tmp_path):
    """Quoted cells with commas and newlines, empty cells, a blank line, short and long rows, a
    repeated header name, a 200,000-character cell: the wide reader gives what polars gives on the
    same columns."""
    path = tmp_path / "t.csv"
    path.write_text(
        'a,b,a,c\n1,"x, y",3,\n4,,6,"two\nlines"\n\n7\n8,9,10,11,12\n' + "z" * 200_000 + ",1,2,3\n", encoding="utf-8"
    )
    header = csvio.csv_header(path)
    narrow = csvio.read_text_columns(path, header, [0, 1, 2, 3])
    old, csvio.WIDE_COLUMNS = csvio.WIDE_COLUMNS, 2
    try:
        wide = csvio.read_text_columns(path, header, [0, 1, 2, 3])
    finally:
        csvio.WIDE_COLUMNS = old
    assert wide.columns == narrow.columns and wide.rows() == narrow.rows()


def test_an_agent_info_holding_a_kernel_trace_is_a_warning(tmp_path):
    for f in (ROCPROF / "omp_output").iterdir():
        shutil.copy(f, tmp_path / f.name)
    shutil.copy(ROCPROF / "omp_output" / "omp_kernel_trace.csv", tmp_path / "omp_agent_info.csv")
    t = tv.load(tmp_path / "omp_kernel_trace.csv", use_cache=False)
    assert t.ranks["device_name"].to_list() == [None]
    assert [w.split(": ", 1)[1] for w in t.warnings] == [f"1 {NOT_SIBLING}: omp_agent_info.csv (no Agent_Type column)"]
    want = tv.load(ROCPROF / "omp_output" / "omp_kernel_trace.csv", use_cache=False)
    assert t.device_tasks.height == want.device_tasks.height


def test_rocprof_api_records_written_twice_are_dropped_and_counted(tmp_path):
    doc = json.loads((ROCPROF / "built" / "omp_results.json").read_text())
    records = doc["rocprofiler-sdk-tool"][0]["buffer_records"]
    records["hip_api"] += records["hip_api"][:3]
    path = tmp_path / "omp_results.json"
    path.write_text(json.dumps(doc))
    t = tv.load(path, use_cache=False)
    want = tv.load(ROCPROF / "built" / "omp_results.json", use_cache=False)
    assert f"{path}: 3 {DUPLICATE_CALLS}" in t.warnings
    assert t.host_events.height == want.host_events.height
