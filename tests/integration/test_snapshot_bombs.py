"""Pickle bombs given as a memory snapshot (issue 30): each ends within 20 s with one line (exit 1)
and under 1.5 GB, and SIGTERM ends it within 3 s, in a fresh process under that memory limit
(tests/support/bounded.py). Before the pre-scan (`parsers/pickle_scan.py`) and the snapshot walk's
sharing checks: the memo slot took 2.2 GB (2**30: 16 GB), the shared history 23 s and 3.1 GB, the
colliding keys 40 s in one uninterruptible opcode. The small variants are unit tests in
tests/unit/test_snapshot.py.
"""

from __future__ import annotations

import pickle

import pytest

from tests.support import bounded

#: Python hashes integers modulo this: its multiples all hash to 0.
MODULUS = (1 << 61) - 1


def _memo_slot(slot: int) -> bytes:
    """9 bytes: an empty list stored in memo slot `slot` (LONG_BINPUT)."""
    return b"\x80\x04]r" + slot.to_bytes(4, "little") + b"."


def _shared_history() -> bytes:
    """100 kB: one history of 2,000 entries referred to by 2,000 devices."""
    history = [
        {"action": "alloc", "addr": k, "size": 512, "stream": 0, "time_us": k, "frames": []} for k in range(2000)
    ]
    return pickle.dumps({"segments": [], "device_traces": [history] * 2000})


def _colliding_keys() -> bytes:
    """760 kB: one dict of 40,000 integer keys that all hash to 0 (LONG1 of 16 bytes each)."""
    keys = b"".join(b"\x8a\x10" + (k * MODULUS).to_bytes(16, "little") + b"N" for k in range(1, 40_001))
    return b"\x80\x04}(\x8c\x08segments](" + b"e" + b"\x8c\x01x}(" + keys + b"uu."


def _dense_dicts() -> bytes:
    """3 MB of empty dicts in a list: 192 MB once loaded, more than TRACEVIEW_MEMORY_LIMIT=100M."""
    return b"\x80\x04}(\x8c\x08segments](" + b"}" * 3_000_000 + b"eu."


CASES = {
    "memo slot 2**27": (_memo_slot, (1 << 27,), "LONG_BINPUT at byte 3 names memo slot 134,217,728", {}),
    "memo slot 2**32 - 1": (_memo_slot, ((1 << 32) - 1,), "names memo slot 4,294,967,295", {}),
    "shared history": (_shared_history, (), "the history of device 1 is the same object as one read before", {}),
    "colliding keys": (_colliding_keys, (), "more than 4,096 of its dict keys are tuples, floats or integers", {}),
    "binbytes8 of 2**62": (
        lambda: b"\x80\x05\x8e" + (1 << 62).to_bytes(8, "little") + b"x.",
        (),
        "BINBYTES8 at byte 2 declares 4,611,686,018,427,387,904 bytes but 2 remain",
        {},
    ),
    "dense dicts": (
        _dense_dicts,
        (),
        "the dicts, lists and tuples it builds take 183.1 MiB at least once loaded, more than the 100.0 MiB",
        {"TRACEVIEW_MEMORY_LIMIT": "100M"},
    ),
}


@pytest.fixture(params=list(CASES))
def bomb(request, tmp_path):
    build, args, says, env = CASES[request.param]
    path = tmp_path / "memory_snapshot.pickle"
    path.write_bytes(build(*args))
    return path, says, env


def test_a_pickle_bomb_ends_at_once_with_one_line(bomb):
    path, says, env = bomb
    out = bounded.run(["info", str(path), "--no-cache"], env=env)
    assert out.returncode == 1, (out.returncode, out.seconds, out.lines)
    assert len(out.lines) == 1 and says in out.lines[0], out.lines
    assert out.lines[0].startswith(f"traceview: error: cannot read {path}: ")
    assert out.seconds < 20 and out.peak_rss_bytes < bounded.MEMORY_LIMIT


def test_sigterm_ends_a_pickle_bomb_within_3_s(bomb):
    """The signal comes 2 s after the start: the bomb has ended with its line by then, or the
    signal ends it (exit 143 with `traceview: terminated`; -15: still starting, before traceview
    takes the signal) within 3 s. Before: the colliding keys ran on in C for 40 s."""
    path, _, env = bomb
    out, after_signal = bounded.terminate(["info", str(path), "--no-cache"], after_s=2.0, env=env)
    if after_signal is None:
        assert out.returncode == 1 and len(out.lines) == 1, out.lines
    else:
        assert out.returncode in (1, 143, -15) and after_signal < 3, (out.returncode, after_signal, out.lines)


def test_deeply_nested_containers_load_without_recursion(tmp_path):
    """2,000,000 nested lists as a history, and a frame of 1,000,000 nested dicts: the unpickler
    and the walk never recurse (no RecursionError, no crash), so the snapshot loads. Passed before
    too: kept so that a recursive walk added later is caught."""
    depth = 2_000_000
    lists = b"]" * depth + b"a" * (depth - 1)
    frame = b"}" + b"\x8c\x04name}" * 1_000_000 + b"s" * 1_000_000
    entry = b"}(\x8c\x06action\x8c\x05alloc\x8c\x04size\x4a\x00\x01\x00\x00\x8c\x06frames](" + frame + b"eu"
    history = b"](" + entry + b"e"
    path = tmp_path / "memory_snapshot.pickle"
    path.write_bytes(b"\x80\x04}(\x8c\x08segments]\x8c\x0ddevice_traces](" + lists + history + b"eu.")
    out = bounded.run(["info", str(path), "--no-cache"])
    assert out.returncode == 0, (out.returncode, out.lines)
    assert "snapshot" in out.stdout and out.seconds < 20 and out.peak_rss_bytes < bounded.MEMORY_LIMIT
