"""A cache entry is used only when it is whole and the rank's own; a damaged one is replaced once;
the cache degrades to "not cached" (one warning) when it cannot be written, and stays under its
size limit (issue 14: "a damaged cache gives silent zeros").

Each test damages the cache the way it was reported and checks that the numbers equal a load
without the cache, that the damage is repaired once (the next load parses nothing), and that the
load says what happened where it matters.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import orjson
import pytest
from polars.testing import assert_frame_equal

import traceview as tv
from tests.conftest import SAMPLES
from traceview import cache, executors, parsers, rank_groups
from traceview.errors import TraceError
from traceview.summary import build_summary

PROFILE = SAMPLES / "dp4_nccl"


@pytest.fixture(autouse=True)
def ranks_alone(monkeypatch):
    """Each rank its own entry, as large ranks are cached (the sample's small ranks would share one
    group entry, whose trust is tested in tests/integration/test_rank_groups.py)."""
    monkeypatch.setattr(rank_groups, "SMALL_RANK_BYTES", 0)


@pytest.fixture
def profile(tmp_path):
    """A private copy of the 4-rank sample (its files may be rewritten by a test)."""
    return Path(shutil.copytree(PROFILE, tmp_path / "dp4"))


def _entries(root: Path) -> list[Path]:
    return sorted(p for p in root.iterdir() if cache.ENTRY_NAME.match(p.name))


def _count_parses(monkeypatch) -> list:
    calls = []
    real = parsers.parse_source
    monkeypatch.setattr(executors, "parse_source", lambda s, *a: calls.append(s) or real(s, *a))
    return calls


def _same_numbers(trace, reference) -> None:
    assert build_summary(trace)["ranks"] == build_summary(reference)["ranks"]


@pytest.mark.parametrize("table", ["device_tasks", "steps", "host_events"])
def test_an_entry_missing_a_table_is_parsed_again_and_repaired(profile, tmp_path, monkeypatch, table):
    root = tmp_path / "cache"
    reference = tv.load(profile, use_cache=False)
    tv.load(profile, cache_dir=root)
    victim = _entries(root)[1]
    (victim / f"{table}.parquet").unlink()
    calls = _count_parses(monkeypatch)
    _same_numbers(tv.load(profile, cache_dir=root), reference)
    assert len(calls) == 1, "only the damaged rank is parsed again"
    assert (victim / f"{table}.parquet").is_file(), "the entry was rewritten"
    calls.clear()
    _same_numbers(tv.load(profile, cache_dir=root), reference)
    assert calls == [], "repaired once: the next load reads the cache"


def test_files_swapped_between_ranks_are_not_accepted(profile, tmp_path, monkeypatch):
    root = tmp_path / "cache"
    reference = tv.load(profile, use_cache=False)
    monkeypatch.setattr(executors, "ANALYSE_MIN_BYTES", 0)
    tv.load(profile, cache_dir=root, analyse=True, jobs=1)
    a, b = _entries(root)[:2]
    assert list(a.glob("analysis.*.parquet"))
    # analysis files of another rank (same names, same shapes), then a whole entry's contents
    for f in a.glob("analysis.*.parquet"):
        shutil.copy(b / f.name, f)
    calls = _count_parses(monkeypatch)
    trace = tv.load(profile, cache_dir=root)
    _same_numbers(trace, reference)
    assert len(calls) == 1
    for f in a.iterdir():
        f.unlink()
    for f in b.iterdir():
        shutil.copy(f, a / f.name)
    calls.clear()
    _same_numbers(tv.load(profile, cache_dir=root), reference)
    assert len(calls) == 1, "an entry holding another rank's files (its meta.json too) is not this rank's"


def test_a_truncated_file_and_a_bad_manifest_are_not_accepted(profile, tmp_path, monkeypatch):
    root = tmp_path / "cache"
    reference = tv.load(profile, use_cache=False)
    tv.load(profile, cache_dir=root)
    first, second = _entries(root)[:2]
    data = (first / "device_tasks.parquet").read_bytes()
    (first / "device_tasks.parquet").write_bytes(data[: len(data) // 2])
    blob = orjson.loads((second / cache.META_FILE).read_bytes())
    blob["files"]["steps.parquet"]["rows"] += 1
    (second / cache.META_FILE).write_bytes(orjson.dumps(blob))
    calls = _count_parses(monkeypatch)
    _same_numbers(tv.load(profile, cache_dir=root), reference)
    assert len(calls) == 2


def test_a_damaged_entry_is_repaired_on_the_process_pool_path(profile, tmp_path, monkeypatch):
    """Reported: workers skipped the existing (damaged) folder, so the rank failed on every run."""
    root = tmp_path / "cache"
    reference = tv.load(profile, use_cache=False)
    monkeypatch.setattr(executors, "PARALLEL_MIN_BYTES", 0)
    tv.load(profile, cache_dir=root, jobs=2)
    victim = _entries(root)[2]
    (victim / "steps.parquet").unlink()
    trace = tv.load(profile, cache_dir=root, jobs=2)
    assert trace.failures == []
    _same_numbers(trace, reference)
    assert cache.read_entry(victim) is not None


def test_a_rewrite_with_the_same_size_and_mtime_misses_the_cache(profile, tmp_path, monkeypatch):
    root = tmp_path / "cache"
    tv.load(profile, cache_dir=root)
    rank = sorted(profile.glob("*.pt.trace.json*"))[0]
    st = rank.stat()
    data = rank.read_bytes()
    rank.write_bytes(data)  # same bytes, same size: only ctime (and maybe inode) tell
    os.utime(rank, ns=(st.st_atime_ns, st.st_mtime_ns))
    calls = _count_parses(monkeypatch)
    tv.load(profile, cache_dir=root)
    assert len(calls) == 1


def test_the_cache_stays_under_its_limit_least_recently_used_first(tmp_path, monkeypatch):
    root = tmp_path / "cache"
    profiles = [Path(shutil.copytree(SAMPLES / name, tmp_path / name)) for name in ("dp4_nccl", "pp4_1f1b")]
    tv.load(profiles[0], cache_dir=root)
    first = {p.name for p in _entries(root)}
    size_first = sum(f.stat().st_size for e in _entries(root) for f in e.iterdir())
    tv.load(profiles[1], cache_dir=root)
    both = {p.name for p in _entries(root)}
    assert len(both) == 8
    # reading the first profile again makes it the most recently used ...
    past = os.stat(root).st_mtime - 100
    for entry in _entries(root):
        os.utime(entry, (past, past))
    tv.load(profiles[0], cache_dir=root)
    # ... so a limit that holds one profile evicts the second's entries, never the ones in use
    monkeypatch.setenv(cache.MAX_ENV, str(size_first + 1000))
    removed = cache.evict(root)
    assert set(removed) == both - first
    assert {p.name for p in _entries(root)} == first
    monkeypatch.setenv(cache.MAX_ENV, "1K")
    tv.load(profiles[1], cache_dir=root)
    assert {p.name for p in _entries(root)} == both - first, "a load keeps its own entries, evicts the others"
    monkeypatch.setenv(cache.MAX_ENV, "lots")
    with pytest.raises(TraceError, match="TRACEVIEW_CACHE_MAX"):
        cache.max_bytes()


@pytest.fixture
def full_disk(tmp_path):
    """A 1 MiB tmpfs, filled: writing there fails with ENOSPC (needs root to mount)."""
    mount = tmp_path / "full"
    mount.mkdir()
    res = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mount)], capture_output=True)
    if res.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here (needs root): {res.stderr.decode().strip()}")
    try:
        with open(mount / "filler", "wb") as f:
            try:
                f.write(b"\0" * (2 << 20))
            except OSError:
                pass
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], capture_output=True)


@pytest.mark.parametrize("pool", [False, True], ids=["in_process", "process_pool"])
def test_a_full_disk_under_the_cache_loads_uncached_with_one_warning(profile, full_disk, monkeypatch, pool):
    reference = tv.load(profile, use_cache=False)
    if pool:
        monkeypatch.setattr(executors, "PARALLEL_MIN_BYTES", 0)
    trace = tv.load(profile, cache_dir=full_disk / "cache", jobs=2)
    assert trace.failures == []
    _same_numbers(trace, reference)
    lines = [w for w in trace.warnings if "not cached" in w]
    assert len(lines) == 1 and "No space left on device" in lines[0]


def test_a_full_temporary_folder_changes_nothing(profile, full_disk, tmp_path):
    res = subprocess.run(
        [os.sys.executable, "-m", "traceview", "summary", str(profile), "--format", "json", "-q"],
        capture_output=True,
        text=True,
        env={**os.environ, "TMPDIR": str(full_disk), "TRACEVIEW_CACHE_DIR": str(tmp_path / "c")},
    )
    assert res.returncode == 0, res.stderr
    reference = build_summary(tv.load(profile, use_cache=False))
    assert orjson.loads(res.stdout)["ranks"] == reference["ranks"]


def test_a_read_only_cache_says_so_once(profile, tmp_path):
    root = tmp_path / "cache"
    root.mkdir()
    (root / "x").write_text("")
    trace = tv.load(profile, cache_dir=root / "x")  # a file where the cache folder should be
    assert trace.failures == []
    assert len([w for w in trace.warnings if "not cached" in w]) == 1


def test_unpack_refuses_files_the_manifest_does_not_vouch_for(profile):
    parsed = parsers.parse_source(parsers.discover(profile)[0])
    files = cache.pack(parsed)
    back = cache.unpack(files)
    for table, df in parsed.frames.items():
        assert_frame_equal(back.frames[table], df)
    broken = dict(files)
    del broken["device_tasks.parquet"]
    with pytest.raises(KeyError):
        cache.unpack(broken)
    with pytest.raises(KeyError):
        cache.unpack(files, entry_key="0" * 32)
