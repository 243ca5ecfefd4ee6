"""PyTorch CUDA memory snapshots (`parsers/snapshot.py`): the allocator's history replayed back from
its state at the snapshot, the peak and what held it by stack frame, and a pickle that asks to run
anything refused before it runs. The file is built from the documented schema
(tests/data/snapshot/make_snapshot.py says what it holds and why the numbers below are right)."""

from __future__ import annotations

import pickle
import shutil

import polars as pl
import pytest

import traceview as tv
from tests.conftest import DATA, run_cli
from traceview.analysis.memory import BEFORE_TRACE, NO_OPERATOR
from traceview.errors import TraceError
from traceview.parsers.snapshot import NO_TIME, STATE_ONLY

MiB = 1 << 20
SNAPSHOT = DATA / "snapshot" / "memory_snapshot.pickle"


def _load(path):
    return tv.load(path, use_cache=False)


def test_history_replays_back_from_the_state_at_the_snapshot():
    t = _load(SNAPSHOT)
    assert t.ranks.select("format", "device_type").row(0) == ("snapshot", "gpu")
    line = t.memory()
    assert line["ts_ns"].to_list() == [10_000, 20_000, 25_000, 30_000, 41_000, 50_000]
    assert line["allocated_bytes"].to_list() == [v * MiB for v in (320, 448, 448, 960, 448, 384)]
    assert line["reserved_bytes"].to_list() == [v * MiB for v in (512, 512, 1536, 1536, 1536, 1536)]
    # the history ends exactly at the snapshot's state: 384 MiB in live blocks, 1.5 GiB of segments
    peak = t.memory_peaks().row(0, named=True)
    assert (peak["peak_allocated_bytes"], peak["peak_ns"], peak["peak_reserved_bytes"]) == (
        960 * MiB,
        30_000,
        1536 * MiB,
    )


def test_what_held_the_peak_by_the_user_code_that_asked():
    held = _load(SNAPSHOT).memory_at_peak()
    assert held.select("operator", "live_bytes").rows() == [
        ("backward (/work/train.py:55)", 512 * MiB),
        ("loss (/work/train.py:40)", 128 * MiB),
        ("forward (/work/train.py:30)", 64 * MiB),  # the user frame under torch's linear.py
        (BEFORE_TRACE, 256 * MiB),  # the weights, allocated before the history
    ]
    blocks = _load(SNAPSHOT).frame("memory_allocations")
    assert blocks["op"][0] == "forward (/usr/lib/python3/site-packages/torch/nn/modules/linear.py:125)"
    assert blocks["release_ns"].to_list() == [50_000, None, 41_000]  # released on free_completed


def test_a_pickle_that_asks_to_run_code_is_refused_before_it_runs(tmp_path):
    marker = tmp_path / "ran"

    class Hostile:
        def __reduce__(self):
            import os

            return (os.system, (f"touch {marker}",))

    path = tmp_path / "evil.pickle"
    path.write_bytes(pickle.dumps({"segments": [], "x": Hostile()}))
    with pytest.raises(TraceError, match=r"refused without running it: it refers to (posix|os)\.system"):
        tv.load(path, use_cache=False)
    out = run_cli("summary", str(path))
    assert out.returncode == 1 and len(out.stderr.strip().splitlines()) == 1
    assert not marker.exists()


@pytest.mark.parametrize(
    ("data", "says"),
    [
        (pickle.dumps({"model": 1}), "not a PyTorch memory snapshot: no 'segments' list (model)"),
        (pickle.dumps([1, 2]), "not a PyTorch memory snapshot: no 'segments' list (list)"),
        (pickle.dumps({"segments": []})[:-3], "not a readable pickle"),
    ],
    ids=["other dict", "a list", "truncated"],
)
def test_other_pickles_are_one_line(tmp_path, data, says):
    path = tmp_path / "x.pickle"
    path.write_bytes(data)
    out = run_cli("summary", str(path))
    assert out.returncode == 1 and says in out.stderr and "Traceback" not in out.stderr


def test_a_snapshot_without_history_shows_its_state(tmp_path):
    doc = pickle.loads(SNAPSHOT.read_bytes())
    del doc["device_traces"]
    path = tmp_path / "state.pickle"
    path.write_bytes(pickle.dumps(doc))
    t = _load(path)
    assert t.memory().select("ts_ns", "allocated_bytes", "reserved_bytes").rows() == [(0, 384 * MiB, 1536 * MiB)]
    assert any(STATE_ONLY in w for w in t.warnings)
    held = dict(t.memory_at_peak().select("operator", "live_bytes").iter_rows())
    assert held == {"init_weights (/work/model.py:12)": 256 * MiB, "loss (/work/train.py:40)": 128 * MiB}


def test_entries_without_time_count_as_their_number(tmp_path):
    doc = pickle.loads(SNAPSHOT.read_bytes())
    for e in doc["device_traces"][0]:
        del e["time_us"]
    path = tmp_path / "old.pickle"
    path.write_bytes(pickle.dumps(doc))
    t = _load(path)
    assert t.memory()["ts_ns"].to_list() == [0, 1, 2, 3, 5, 6]
    assert any(NO_TIME in w for w in t.warnings)


def test_in_a_folder_a_pickle_is_not_a_rank(tmp_path):
    shutil.copy(DATA / "kineto_minimal.json", tmp_path / "rank3.pt.trace.json")
    shutil.copy(SNAPSHOT, tmp_path / "memory_snapshot.pickle")
    assert _load(tmp_path).ranks["format"].to_list() == ["kineto"]


@pytest.mark.integration
def test_report_and_summary_of_a_snapshot(tmp_path):
    out = run_cli("report", str(SNAPSHOT), "-o", str(tmp_path / "r.html"))
    assert out.returncode == 0, out.stderr
    html = (tmp_path / "r.html").read_text()
    assert 'id="memory-table"' in html and "backward (/work/train.py:55)" in html
    text = run_cli("summary", str(SNAPSHOT)).stdout
    assert "memory cuda:0: peak allocated 960.00 MiB, reserved 1.50 GiB" in text


def test_a_device_without_history_keeps_its_state_and_blocks_without_stack_are_named(tmp_path):
    doc = pickle.loads(SNAPSHOT.read_bytes())
    doc["segments"].append(
        {
            "device": 1,
            "address": 1,
            "total_size": 100,
            "blocks": [{"address": 1, "size": 50, "state": "active_allocated"}],
        }
    )
    for entry in doc["device_traces"][0]:
        entry["frames"] = []  # recorded without stacks
    path = tmp_path / "two.pickle"
    path.write_bytes(pickle.dumps(doc))
    t = _load(path)
    quiet = t.memory().filter(pl.col("device") == 1)
    assert quiet.select("ts_ns", "allocated_bytes", "reserved_bytes").rows() == [(10_000, 50, 100)]
    held = t.memory_at_peak().filter(pl.col("device") == 0)
    assert held.select("operator", "live_bytes").rows() == [(NO_OPERATOR, 704 * MiB), (BEFORE_TRACE, 256 * MiB)]
    text = run_cli("summary", str(path)).stdout
    assert f"{NO_OPERATOR} 704.00 MiB" in text


def test_a_malformed_snapshot_is_one_line(tmp_path):
    doc = pickle.loads(SNAPSHOT.read_bytes())
    doc["segments"][0]["blocks"] = 5
    doc["device_traces"][0][0]["frames"] = [{"name": ["deep"], "filename": {"x": 1}, "line": None}]
    path = tmp_path / "odd.pickle"
    path.write_bytes(pickle.dumps(doc))
    t = _load(path)  # the odd values are skipped or shown as "?", never a traceback
    assert t.memory().height == 6
