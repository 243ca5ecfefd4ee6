"""PyTorch CUDA memory snapshots (`parsers/snapshot.py`): the allocator's history replayed back from
its state at the snapshot, the peak and what held it by stack frame, and a pickle that asks to run
anything refused before it runs. The file is built from the documented schema
(tests/data/snapshot/make_snapshot.py says what it holds and why the numbers below are right).

This file holds the topic's unit tests; the others are in tests/integration/test_snapshot.py.
"""

from __future__ import annotations

import pickle
import shutil

import polars as pl
import pytest

import traceview as tv
from tests.conftest import DATA, run_cli
from tests.support.snapshot_shared import SNAPSHOT  # noqa: F401
from traceview.analysis.memory import BEFORE_TRACE, NO_OPERATOR
from traceview.errors import TraceError
from traceview.parsers import snapshot as snapshot_module
from traceview.parsers.snapshot import FIELD_CUT, NO_TIME, ODD_ACTION, STATE_ONLY, load_plain

MiB = 1 << 20


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


def _error(tmp_path, data: bytes) -> str:
    """The one-line TraceError of loading the pickle `data`."""
    path = tmp_path / "x.pickle"
    path.write_bytes(data)
    with pytest.raises(TraceError) as err:
        tv.load(path, use_cache=False)
    assert "\n" not in str(err.value)
    return str(err.value)


def _doc_with(mutate) -> bytes:
    doc = pickle.loads(SNAPSHOT.read_bytes())
    mutate(doc)
    return pickle.dumps(doc)


@pytest.mark.parametrize("protocol", range(2, 6))
def test_a_snapshot_pickled_with_any_protocol_reads_the_same(tmp_path, protocol):
    """The pre-scan's bounds (memo slots, lengths, keys) refuse none of pickle's own output
    (protocols 0 and 1 have no PROTO opcode: such a file is not taken for a pickle)."""
    path = tmp_path / "p.pickle"
    path.write_bytes(pickle.dumps(pickle.loads(SNAPSHOT.read_bytes()), protocol=protocol))
    assert _load(path).memory().equals(_load(SNAPSHOT).memory())


@pytest.mark.parametrize(
    ("data", "says"),
    [
        (
            b"\x80\x04]r" + (10_000).to_bytes(4, "little") + b".",
            "LONG_BINPUT at byte 3 names memo slot 10,000, but a 9-byte pickle stores at most 4 values",
        ),
        (b"\x80\x02(lp99999\n.", "PUT at byte 4 names memo slot 99,999"),
    ],
    ids=["LONG_BINPUT", "PUT"],
)
def test_a_memo_slot_beyond_the_file_is_refused_before_loading(tmp_path, data, says):
    """pickle grows its memo to twice the slot named (2**27: 2 GiB from 9 bytes)."""
    message = _error(tmp_path, data)
    assert "a pickle bomb, refused before loading: " + says in message


def test_a_memo_slot_never_filled_is_one_line(tmp_path):
    message = _error(tmp_path, b"\x80\x04]h\x05.")
    assert "not a readable pickle (UnpicklingError: Memo value not found at index 5)" in message


@pytest.mark.parametrize(
    ("opcode", "width"),
    [(b"\x8e", 8), (b"\x8d", 8), (b"\x96", 8), (b"B", 4), (b"X", 4), (b"\x95", 8)],
    ids=["BINBYTES8", "BINUNICODE8", "BYTEARRAY8", "BINBYTES", "BINUNICODE", "FRAME"],
)
def test_a_length_beyond_the_file_is_refused_before_anything_is_allocated(tmp_path, opcode, width):
    size = (1 << 40) if width == 8 else (1 << 32) - 1
    message = _error(tmp_path, b"\x80\x05" + opcode + size.to_bytes(width, "little") + b"abc.")
    assert "not a readable pickle (pickle data was truncated: " in message
    assert f"at byte 2 declares {size:,} bytes but 4 remain)" in message


def test_a_set_is_refused(tmp_path):
    """A snapshot holds none; protocol 4's EMPTY_SET builds one without naming builtins.set."""
    message = _error(tmp_path, pickle.dumps({"segments": [], "x": {1, 2}}, protocol=4))
    assert "not a memory snapshot: EMPTY_SET at byte" in message and "builds a set" in message


@pytest.mark.parametrize(
    "keys",
    [
        [k * ((1 << 61) - 1) for k in range(1, 4200)],  # all hash to 0
        [(k, -k) for k in range(4200)],
        [k + 0.5 for k in range(4200)],
    ],
    ids=["integers of 2**61 or more", "tuples", "floats"],
)
def test_dict_keys_whose_hashes_a_pickle_can_choose_are_refused(tmp_path, keys):
    """40,000 integer keys that all hash to 0 took 40 s in one SETITEMS (760 kB, not interruptible)."""
    message = _error(tmp_path, pickle.dumps({"segments": [], "x": dict.fromkeys(keys)}))
    assert "a pickle bomb, refused before loading: more than 4,096 of its dict keys are tuples, floats" in message


@pytest.mark.parametrize("protocol", range(6))
def test_tuples_floats_and_large_integers_as_values_are_read(tmp_path, protocol):
    """PyTorch writes a tuple per segment (segment_pool_id): only keys are refused. Over 4,096 such
    values the stack is followed to tell keys from values, through every protocol's opcodes."""
    doc = pickle.loads(SNAPSHOT.read_bytes())
    doc["segments"][0]["values"] = [(k, k) for k in range(5000)] + [k << 62 for k in range(5000)] + [0.5] * 5000
    doc["segments"][0]["keyed"] = {"a": (1 << 62, 0.25), 1: 2}
    path = tmp_path / "v.pickle"
    path.write_bytes(pickle.dumps(doc, protocol=protocol))
    assert load_plain(path) == doc


def test_the_unpickler_reads_in_pieces_so_a_signal_is_taken_mid_load(tmp_path, monkeypatch):
    """pickle's C unpickler runs a whole in-memory file without taking a signal (40 MB: ~2 s); it
    is given the bytes a frame or 128 KiB at a time, and a Ctrl-C or SIGTERM raised at an ask
    (`Terminated` is a KeyboardInterrupt) ends the load there instead of being swallowed."""
    doc = pickle.loads(SNAPSHOT.read_bytes())
    doc["device_traces"][0] += [{"action": "free_requested", "addr": k, "size": 1} for k in range(50_000)]
    path = tmp_path / "long.pickle"
    path.write_bytes(pickle.dumps(doc))
    asks = []

    def peek(self, n=0):
        asks.append(self._at)
        if len(asks) == 3:
            raise KeyboardInterrupt
        return self._data[self._at : self._at + max(n, 1)]

    monkeypatch.setattr(snapshot_module._Chunks, "peek", peek)
    with pytest.raises(KeyboardInterrupt):
        load_plain(path)
    assert 0 < asks[-1] < path.stat().st_size // 2


@pytest.mark.parametrize(
    ("share", "says"),
    [
        (lambda doc: doc["device_traces"].append(doc["device_traces"][0]), "the history of device 1"),
        (lambda doc: doc["device_traces"][0].append(doc["device_traces"][0][0]), "entry 7 of the history of device 0"),
        (lambda doc: doc["segments"].append(doc["segments"][0]), "segment 2"),
        (lambda doc: doc["segments"][0]["blocks"].append(doc["segments"][0]["blocks"][0]), "block 3 of segment 0"),
        (
            lambda doc: doc["segments"].append(dict(doc["segments"][0], blocks=doc["segments"][0]["blocks"])),
            "the block list of segment 2",
        ),
    ],
    ids=["history", "entry", "segment", "block", "block list"],
)
def test_a_record_shared_by_reference_is_refused(tmp_path, share, says):
    """2,000 references to one history of 2,000 entries (100 kB) were 4 M entries: 23 s, 3.1 GB."""
    message = _error(tmp_path, _doc_with(share))
    assert f"{says} is the same object as one read before: a snapshot written by PyTorch never shares" in message


def test_a_stack_shared_by_many_entries_is_read_once_and_long_names_are_cut(tmp_path):
    """A frame of 10 MB shared by every allocation made every row 10 MB of text; PyTorch shares
    frames and stacks, so sharing is read (once), and a field is cut to 500 characters."""
    long = "n" * 100_000

    def add(doc):
        stack = [{"filename": "/work/train.py", "line": 7, "name": long}]
        history = doc["device_traces"][0]
        for k in range(1000):
            history.append({"action": "alloc", "addr": 1 << 40 | k, "size": 1, "time_us": 60 + k, "frames": stack})

    path = tmp_path / "stacks.pickle"
    path.write_bytes(_doc_with(add))
    t = _load(path)
    ops = t.frame("memory_allocations")["top_op"].to_list()[-1000:]
    assert set(ops) == {"n" * 499 + "… (/work/train.py:7)"}
    assert any(FIELD_CUT in w and ": 1 stack frame" in w for w in t.warnings)


@pytest.mark.parametrize(
    ("mutate", "warning"),
    [
        (lambda e: e.__setitem__("time_us", 2**70), NO_TIME),  # was: internal error (polars overflow)
        (lambda e: e.__setitem__("action", ["alloc"]), ODD_ACTION),  # was: internal error
        (lambda e: e["frames"][0].__setitem__("line", 10**5000), None),  # was: ValueError (int to text)
    ],
    ids=["time beyond Int64", "action a list", "line of 5,000 digits"],
)
def test_values_out_of_range_are_read_as_missing(tmp_path, mutate, warning):
    path = tmp_path / "odd.pickle"
    path.write_bytes(_doc_with(lambda doc: mutate(doc["device_traces"][0][0])))
    t = _load(path)
    assert t.memory().height >= 5
    assert warning is None or any(warning in w for w in t.warnings)


def test_more_device_histories_than_gpus_is_one_line(tmp_path):
    """Each history makes a device with its own rows: 10 M empty ones (10 MB) were 10 M devices."""
    message = _error(tmp_path, _doc_with(lambda doc: doc["device_traces"].extend([] for _ in range(5000))))
    assert "not a PyTorch memory snapshot: 5,001 device histories (device_traces holds one per GPU" in message
