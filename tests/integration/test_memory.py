"""Memory. The integration tests; the topic's description and its other tests:
tests/unit/test_memory.py, tests/corpus/test_memory.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import traceview as tv
from tests.conftest import DATA, run_cli
from tests.support.memory_shared import MEMORY_TRACE, MiB, _load  # noqa: F401


def _less_memory(tmp_path, mib: int) -> Path:
    """The tiny trace with `mib` MiB less allocated on the device at every record."""
    doc = json.loads(MEMORY_TRACE.read_text())
    for e in doc["traceEvents"]:
        if e["name"] == "[memory]" and e["args"]["Device Type"] == 1:
            e["args"]["Total Allocated"] -= mib * MiB
    path = tmp_path / "less.json"
    path.write_text(json.dumps(doc))
    return path


def test_diff_and_compare_show_the_peak_of_each_run(tmp_path):
    base, new = _load(MEMORY_TRACE), _load(_less_memory(tmp_path, 200))
    rows = tv.diff(base, new).memory
    assert rows.select("rank", "series", "base_peak_allocated_bytes", "new_peak_allocated_bytes").rows() == [
        (0, "cuda:0", 1160 * MiB, 960 * MiB),
        (None, None, 1160 * MiB, 960 * MiB),
    ]
    assert rows["allocated_delta_bytes"].to_list() == [-200 * MiB] * 2
    assert rows["reserved_delta_bytes"].to_list() == [0, 0]
    # a run without memory records: nulls on its side, never a zero peak
    none = tv.diff(_load(DATA / "kineto_minimal.json"), new).memory
    assert none["base_peak_allocated_bytes"].null_count() == none.height == 2  # rank 0 and all ranks
    assert tv.diff(_load(DATA / "kineto_minimal.json"), _load(DATA / "kineto_minimal.json")).memory.is_empty()
    table = tv.compare([base, new]).table
    assert table["peak_allocated_bytes"].to_list() == [1160 * MiB, 960 * MiB]
    text = run_cli("diff", str(MEMORY_TRACE), str(_less_memory(tmp_path, 200))).stdout
    assert "cuda:0  1.13 GiB   960.00 MiB  -200.00 MiB" in text
