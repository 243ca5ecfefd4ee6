"""What discovery does with what is not a profile file: only regular files are opened, and one bad
entry among many ranks is a failure while the others load (issue 14: a FIFO hung `info`, a link to
/dev/zero grew memory without bound, a non-UTF-8 name or an unreadable folder was an internal
error for the whole load)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import orjson
import pytest

import traceview as tv
import traceview.parsers.detect
from tests.conftest import ROOT, SAMPLES
from traceview import parsers

PROFILE = SAMPLES / "dp4_nccl"
ASCEND = SAMPLES / "ascend_2rank"


def _cli(*args, timeout=60):
    return subprocess.run([sys.executable, "-m", "traceview", *args], cwd=ROOT, capture_output=True, timeout=timeout)


@pytest.fixture
def ranks(tmp_path):
    folder = tmp_path / "ranks"
    shutil.copytree(PROFILE, folder)
    (folder / "expected.json").unlink()
    return folder


def test_a_fifo_and_a_link_to_dev_zero_are_failures_not_hangs(ranks):
    os.mkfifo(ranks / "rank8.pt.trace.json")
    (ranks / "rank9.pt.trace.json.gz").symlink_to("/dev/zero")
    res = _cli("info", str(ranks), "--format", "json", "-q", "--no-cache", timeout=60)
    assert res.returncode == 1
    doc = orjson.loads(res.stdout)
    assert len(doc["ranks"]) == 4
    assert sorted(doc["failures"]) == [
        f"cannot read {ranks / 'rank8.pt.trace.json'}: a FIFO (named pipe): traceview reads only regular files "
        "(point it at the profile files themselves)",
        f"cannot read {ranks / 'rank9.pt.trace.json.gz'}: a link to a device: traceview reads only regular files "
        "(point it at the profile files themselves)",
    ]
    for name in ("rank8.pt.trace.json", "rank9.pt.trace.json.gz"):  # named directly: one line, exit 1
        res = _cli("summary", str(ranks / name), timeout=30)
        assert res.returncode == 1 and res.stderr.decode().count("\n") == 1 and "regular files" in res.stderr.decode()


def test_a_fifo_inside_an_ascend_rank_folder_is_never_opened(tmp_path):
    folder = tmp_path / "asc"
    shutil.copytree(ASCEND, folder)
    out = next(folder.glob("rank1_ascend_pt/ASCEND_PROFILER_OUTPUT"))
    (out / "kernel_details.csv").unlink()
    os.mkfifo(out / "kernel_details.csv")
    trace = tv.load(folder, use_cache=False)
    assert trace.ranks.height == 1
    assert len(trace.failures) == 1 and "a FIFO" in trace.failures[0]


def test_a_file_name_that_is_not_utf8_loads_and_prints(ranks):
    first = sorted(ranks.glob("*.pt.trace.json.gz"))[0]
    odd = os.path.join(os.fsencode(ranks), b"rank\xff\xfe.pt.trace.json.gz")
    os.rename(first, odd)
    res = _cli("summary", str(ranks), "--format", "json", "-q")
    assert res.returncode == 0, res.stderr
    doc = orjson.loads(res.stdout)
    assert len(doc["ranks"]) == 4
    text = _cli("info", str(ranks), "-q")
    assert text.returncode == 0 and b"Traceback" not in text.stderr
    trace = tv.load(ranks)
    assert any("rank\\xff\\xfe.pt.trace.json.gz" in (s or "") for s in trace.ranks["source"].to_list())


def test_an_unreadable_folder_among_ranks_is_a_failure(tmp_path, monkeypatch):
    """As root every folder is readable, so the permission check is what the test stands in for."""
    root = tmp_path / "job"
    for name in ("a", "b"):
        shutil.copytree(PROFILE, root / name)
    locked = root / "b"
    real = os.access
    monkeypatch.setattr(
        parsers.detect.os, "access", lambda p, mode: real(p, mode) and os.fspath(p) != os.fspath(locked)
    )
    trace = tv.load(root, use_cache=False)
    assert trace.ranks.height == 4
    assert len(trace.failures) == 1 and str(locked) in trace.failures[0]
