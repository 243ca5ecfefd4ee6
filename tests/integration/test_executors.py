"""Executors and the memory guard: Ray gives the local executor's frames exactly; a missing Ray is
one line and exit 1; a load that does not fit in memory fails early with the size and the ways out."""

from __future__ import annotations

import builtins
import gzip
import os
import subprocess
import sys
import tempfile
import textwrap

import pytest
from polars.testing import assert_frame_equal

import traceview as tv
from tests.conftest import DATA, ROOT, run_cli
from traceview import cache, digest, executors
from traceview.errors import TraceError
from traceview.parsers import host_ram, load_guard

SAMPLES = ROOT / "sample_traces"
TABLES = ("device_tasks", "host_events", "steps", "ranks")


@pytest.fixture(scope="module")
def local_ray():
    ray = pytest.importorskip("ray", reason="Ray not installed (pip install 'traceview[ray]'): Ray executor untested")
    ray.init(num_cpus=2, include_dashboard=False, logging_level="error", log_to_driver=False)
    yield ray
    ray.shutdown()


@pytest.mark.parametrize("sample", ["dp4_nccl", "ascend_2rank"])
def test_ray_matches_local(sample, local_ray, tmp_path):
    local = tv.load(SAMPLES / sample, use_cache=False)
    cache_dir = tmp_path / "cache"
    remote = tv.load(SAMPLES / sample, executor="ray", cache_dir=cache_dir)
    for table in TABLES:
        assert local.frame(table).equals(remote.frame(table)), table
        assert_frame_equal(local.frame(table), remote.frame(table))
    assert (local.warnings, local.failures) == (remote.warnings, remote.failures)
    # the driver cached what the Ray tasks sent back: a local re-load reads it and still matches
    assert any(cache_dir.rglob("*.parquet"))
    again = tv.load(SAMPLES / sample, cache_dir=cache_dir)
    assert again.device_tasks.equals(local.device_tasks)


def test_ray_reports_a_bad_rank_like_local(local_ray, tmp_path):
    (tmp_path / "rank0.pt.trace.json").write_bytes((DATA / "kineto_minimal.json").read_bytes())
    (tmp_path / "rank1.pt.trace.json").write_bytes(b'{"traceEvents": [')
    local = tv.load(tmp_path, use_cache=False)
    remote = tv.load(tmp_path, use_cache=False, executor="ray", jobs=1)
    assert local.failures == remote.failures and len(remote.failures) == 1
    assert local.device_tasks.equals(remote.device_tasks)


def test_missing_ray_is_one_clear_error(monkeypatch):
    real_import = builtins.__import__

    def no_ray(name, *args, **kwargs):
        if name == "ray" or name.startswith("ray."):
            raise ImportError("No module named 'ray'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_ray)
    with pytest.raises(TraceError, match=r"pip install 'traceview\[ray\]'"):
        tv.load(SAMPLES / "dp4_nccl", executor="ray", use_cache=False)


def test_cli_missing_ray_exits_1_with_one_line(tmp_path):
    # a `ray` that fails to import, first on the path: the CLI must say how to install it
    (tmp_path / "ray.py").write_text("raise ImportError('No module named ray')\n")
    out = run_cli(
        "info",
        str(DATA / "kineto_minimal.json"),
        "--executor",
        "ray",
        "--no-cache",
        env={"PYTHONPATH": f"{tmp_path}:{ROOT}"},
        fresh=True,  # the path is read when the interpreter starts
    )
    assert out.returncode == 1, out.stderr
    lines = out.stderr.strip().splitlines()
    assert lines == [
        "traceview: error: --executor ray needs Ray, which is not installed (pip install 'traceview[ray]')"
    ]


def test_default_load_does_not_import_ray():
    code = "import sys, traceview as tv; tv.load(sys.argv[1], use_cache=False); print('ray' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", code, str(SAMPLES / "dp4_nccl")], capture_output=True, text=True, cwd=ROOT
    )
    assert out.stdout.strip() == "False", out.stderr


def test_a_script_read_from_stdin_loads_in_process(tmp_path):
    """Spawned workers re-run the main script by path; `python - < script` has none, so the ranks
    are parsed in-process instead of every worker dying (BrokenProcessPool)."""
    script = (
        "import sys, traceview as tv\n"
        "from traceview import executors\n"
        "executors.PARALLEL_MIN_BYTES = 0  # the 4 small ranks would otherwise be parsed in-process anyway\n"
        "print(executors.spawn_can_start())\n"
        f"t = tv.load({str(SAMPLES / 'dp4_nccl')!r}, cache_dir={str(tmp_path)!r})\n"
        "print(t.ranks.height, t.device_tasks.height)\n"
    )
    out = subprocess.run([sys.executable, "-"], input=script, capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    expected = shared_sample("dp4_nccl")
    assert out.stdout.split() == ["False", "4", str(expected.device_tasks.height)]


LOAD_SCRIPT = """\
import sys, traceview as tv
from traceview import cache, digest, executors, rank_groups
executors.PARALLEL_MIN_BYTES = 0  # the 4 small ranks would otherwise be parsed in-process anyway
rank_groups.GROUP_RANKS = 2  # two groups of two small ranks: two units for the workers
print("top", flush=True)  # run again by each spawned worker: counts the script's re-runs
def load():
    print(executors.spawn_can_start())
    t = tv.load({samples!r}, cache_dir={cache!r})
    print(t.ranks.height, t.device_tasks.height, len(t.failures))
"""


@pytest.mark.parametrize("guarded", [False, True])
def test_a_script_file_loads_with_or_without_a_main_guard(tmp_path, guarded):
    """`t = tv.load(...)` at a script's top level: spawned workers would re-run it and die
    (BrokenProcessPool, a traceback per worker), so it parses in-process; under the guard the
    workers run. Same frames either way."""
    script = tmp_path / "script.py"
    body = LOAD_SCRIPT.format(samples=str(SAMPLES / "dp4_nccl"), cache=str(tmp_path / "cache"))
    body += 'if __name__ == "__main__":\n    load()\n' if guarded else "load()\n"
    script.write_text(body)
    out = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr
    expected = shared_sample("dp4_nccl")
    lines = out.stdout.splitlines()
    runs = lines.count("top")  # the script's own run, then its workers' imports of it
    assert runs > 1 if guarded else runs == 1, out.stdout
    assert [x for x in lines if x != "top"] == [str(guarded), f"4 {expected.device_tasks.height} 0"]


def test_an_unguarded_module_run_with_dash_m_loads_in_process(tmp_path):
    """`python -m pkg.job` is re-imported by name in each worker, top level included."""
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    body = LOAD_SCRIPT.format(samples=str(SAMPLES / "dp4_nccl"), cache=str(tmp_path / "cache")) + "load()\n"
    (tmp_path / "pkg" / "job.py").write_text(body)
    out = subprocess.run(
        [sys.executable, "-m", "pkg.job"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": f"{tmp_path}:{ROOT}"},
    )
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr
    assert out.stdout.splitlines()[:2] == ["top", "False"]


def test_the_main_guard_check_reads_the_script():
    src = textwrap.dedent("""\
        import x
        a = 1
        if __name__ == "__main__":
            b = 2
            c = (3,
                 4)
        if "__main__" == __name__:
            d = 5
        if __name__ != "__main__":
            e = 6
        """)
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as fh:
        fh.write(src)
    try:
        guarded = [n for n in range(1, 11) if executors._under_main_guard(fh.name, n)]
    finally:
        os.unlink(fh.name)
    assert guarded == [4, 5, 6, 8]
    assert executors._under_main_guard("/nonexistent/script.py", 1) is False


def test_memory_guard_fails_early_with_the_way_out():
    path = str(SAMPLES / "dp4_nccl")
    out = run_cli("info", path, "--no-cache", "--jobs", "2", env={"TRACEVIEW_MEMORY_LIMIT": "1M"})
    assert out.returncode == 1
    (line,) = out.stderr.strip().splitlines()
    assert line.startswith("traceview: error: loading 4 rank(s) of ")
    assert "needs about" in line and "1.0 MB is available" in line
    assert "--executor ray" in line and "load fewer ranks" in line and "TRACEVIEW_MEMORY_LIMIT=off" in line
    ok = run_cli("info", path, "--no-cache", env={"TRACEVIEW_MEMORY_LIMIT": "1G"})
    assert ok.returncode == 0, ok.stderr
    assert "rank" in ok.stdout


def test_memory_guard_lowers_default_workers_but_not_given_jobs():
    sizes = [100, 100, 100, 100]
    one = host_ram.estimate(sizes, 1)
    two = host_ram.estimate(sizes, 2)
    assert one < two
    assert host_ram.fit_workers(sizes, 4, two) == 2
    assert host_ram.fit_workers(sizes, 4, one - 1) == 0


def test_memory_guard_suggests_fewer_jobs(monkeypatch):
    sizes = [10_000_000] * 4
    monkeypatch.setenv(host_ram.LIMIT_ENV, str(host_ram.estimate(sizes, 2)))
    assert load_guard.check(sizes, 4, jobs_given=False) == 2
    with pytest.raises(TraceError, match="use --jobs 2, load fewer ranks"):
        load_guard.check(sizes, 4, jobs_given=True)
    monkeypatch.setenv(host_ram.LIMIT_ENV, "off")
    assert load_guard.check(sizes, 4, jobs_given=True) == 4


def test_streamed_kineto_is_estimated_by_its_streaming_peak():
    """Kineto JSON streams: a 1 GB file's parse peak is budgeted at ~1.85 GB (measured 1.71 GB),
    not 10 GB; formats read whole keep PARSE_FACTOR; a file decoded by 2 processes adds theirs."""
    from pathlib import Path

    from traceview.parsers import Source

    gb = 1_000_000_000
    kineto, ascend = Source("kineto", Path("r.json")), Source("ascend", Path("r_ascend_pt"))
    assert load_guard.parse_peak(kineto, gb) == host_ram.STREAM_FIXED + host_ram.STREAM_FACTOR * gb < 2 * gb
    assert load_guard.parse_peak(kineto, gb, jobs=2) == load_guard.parse_peak(kineto, gb) + 2 * host_ram.STREAM_FIXED
    assert load_guard.parse_peak(kineto, 10_000_000, jobs=2) == load_guard.parse_peak(
        kineto, 10_000_000
    )  # small: serial
    assert load_guard.parse_peak(ascend, gb) == host_ram.PARSE_FACTOR * gb
    peaks = [load_guard.parse_peak(kineto, gb)]
    assert host_ram.estimate([gb], 1, peaks) == peaks[0] + host_ram.KEEP_FACTOR * gb


def test_gzip_size_comes_from_the_trailer(tmp_path):
    raw = (DATA / "kineto_minimal.json").read_bytes() * 50
    gz = tmp_path / "t.json.gz"
    gz.write_bytes(gzip.compress(raw))
    assert host_ram.uncompressed_size(gz) == len(raw)
    plain = tmp_path / "t.json"
    plain.write_bytes(raw)
    assert host_ram.uncompressed_size(plain) == len(raw)


def test_unknown_executor_is_refused():
    with pytest.raises(ValueError, match="unknown executor"):
        executors.get("dask")


# ---- rank-local analyses (traceview.per_rank) ----------------------------------------

from tests.conftest import SHARED_TRACES  # noqa: E402
from tests.support.samples import shared_sample  # noqa: E402

RANK_LOCAL_PROFILES = [
    SAMPLES / "dp4_nccl",
    SAMPLES / "pp4_1f1b",
    SAMPLES / "ascend_2rank",
    SHARED_TRACES / "param/et_replay/tests/inputs/dlrm_kineto.tar.gz.extracted/dlrm_kineto",
]


def _sorted(frame):
    return frame.sort(frame.columns, nulls_last=True)


@pytest.mark.parametrize("profile", RANK_LOCAL_PROFILES, ids=lambda p: p.name)
def test_rank_local_analyses_equal_the_whole_profile_ones(profile):
    """Each analysis declared rank-local, run on every rank alone and concatenated, equals the
    same analysis run on all ranks at once: what makes running them in the Ray tasks correct."""
    from traceview import per_rank, registry
    from traceview.assemble import one_rank_trace
    from traceview.parsers import discover, parse_source

    if not profile.exists():
        pytest.skip(f"real-trace corpus not found at {SHARED_TRACES} (present in CI; absent in a user's clone)")
    whole = tv.load(profile, use_cache=False)
    results = [per_rank.compute(one_rank_trace(s, parse_source(s))) for s in discover(profile)]
    seeded = tv.load(profile, use_cache=False)
    assert per_rank.seed(seeded, results)
    for name in per_rank.ANALYSES:
        expected = whole.run(name)
        try:
            # float sums may differ in the last bits (summation order), never more
            got = seeded._memo[registry.memo_key(name, {})]
            assert_frame_equal(_sorted(got), _sorted(expected), rel_tol=1e-12, abs_tol=1e-9)
        except AssertionError as exc:
            raise AssertionError(f"{name}: {exc}") from None
    assert not per_rank.seed(seeded, results[:-1] + [None])  # a rank without results: nothing seeded


def test_ray_runs_the_rank_local_analyses_and_the_summary_matches_local(local_ray, tmp_path):
    from traceview import per_rank, registry
    from traceview.summary import build_summary

    local = shared_sample("dp4_nccl")
    remote = tv.load(SAMPLES / "dp4_nccl", executor="ray", analyse=True, cache_dir=tmp_path / "cache")
    assert all(registry.memo_key(n, {}) in remote._memo for n in per_rank.ANALYSES)
    assert build_summary(remote) == build_summary(local)
    # a second load reads the ranks and their analyses from the cache
    again = tv.load(SAMPLES / "dp4_nccl", executor="ray", analyse=True, cache_dir=tmp_path / "cache")
    assert all(registry.memo_key(n, {}) in again._memo for n in per_rank.ANALYSES)
    assert build_summary(again) == build_summary(local)


@pytest.mark.parametrize("grouped", [False, True], ids=["ranks alone", "small ranks grouped"])
@pytest.mark.parametrize("workers", [True, False], ids=["worker processes", "in-process"])
def test_local_analyse_caches_the_rank_local_analyses(tmp_path, monkeypatch, workers, grouped):
    """analyse=True: the process that parses a rank (or a group of small ranks) computes its
    rank-local analyses and caches them; the first and the second open hold them ready, and the
    summary is the plain one."""
    from traceview import per_rank, rank_groups, registry
    from traceview.summary import build_summary

    plain = build_summary(shared_sample("dp4_nccl"))  # the reference, parsed before the patches below
    monkeypatch.setattr(executors, "ANALYSE_MIN_BYTES", 0)  # the samples' ranks are small
    if grouped:
        monkeypatch.setattr(rank_groups, "GROUP_RANKS", 2)  # two groups of two
    else:
        monkeypatch.setattr(rank_groups, "SMALL_RANK_BYTES", 0)  # each rank its own unit
    if workers:
        monkeypatch.setattr(executors, "PARALLEL_MIN_BYTES", 0)
    cache_dir = tmp_path / "cache"
    keys = [registry.memo_key(n, {}) for n in per_rank.ANALYSES]
    for _ in range(2):  # parsed, then cached
        trace = tv.load(SAMPLES / "dp4_nccl", cache_dir=cache_dir, analyse=True)
        assert all(key in trace._memo for key in keys)
        assert build_summary(trace) == plain
    entries = list(cache_dir.iterdir())
    assert len(entries) == (2 if grouped else 4) and all((e / cache.STAMP_FILE).is_file() for e in entries)
    # selected ranks are renumbered as in a whole load, analyses included (a group partly
    # selected leaves them to the Trace)
    sub = tv.load(SAMPLES / "dp4_nccl", cache_dir=cache_dir, ranks="1,3")
    assert all(key in sub._memo for key in keys) != grouped
    assert build_summary(sub)["ranks"] == [r for r in plain["ranks"] if r["rank"] in (1, 3)]
    both = tv.load(SAMPLES / "dp4_nccl", cache_dir=cache_dir, ranks="2,3")  # a whole group (or two ranks)
    assert all(key in both._memo for key in keys)
    assert build_summary(both)["ranks"] == [r for r in plain["ranks"] if r["rank"] in (2, 3)]


def test_cached_analyses_of_other_code_or_damaged_are_recomputed(tmp_path, monkeypatch):
    from traceview.summary import build_summary

    cache_dir = tmp_path / "cache"
    plain = build_summary(shared_sample("dp4_nccl"))
    monkeypatch.setattr(executors, "ANALYSE_MIN_BYTES", 0)
    tv.load(SAMPLES / "dp4_nccl", cache_dir=cache_dir, analyse=True)
    monkeypatch.setattr(digest, "analysis_digest", lambda: "another-version")
    stale = tv.load(SAMPLES / "dp4_nccl", cache_dir=cache_dir)
    assert not stale._memo and build_summary(stale) == plain
    monkeypatch.undo()
    entry = next(cache_dir.iterdir())
    (entry / f"{cache.PREFIX}classified_tasks.parquet").write_bytes(b"PAR1 not parquet")
    damaged = tv.load(SAMPLES / "dp4_nccl", cache_dir=cache_dir)
    assert not damaged._memo and build_summary(damaged) == plain


@pytest.mark.parametrize("workers", [True, False], ids=["worker processes", "in-process"])
def test_small_ranks_alone_get_their_analyses_from_the_driver_and_no_analyse_none(tmp_path, monkeypatch, workers):
    """Ranks parsed alone under ANALYSE_MIN_BYTES with analyse=True: the workers leave the
    rank-local analyses to the driver, whose Trace computes them at once for all ranks and stores
    each rank's share in its entry (the next open reads them, computing nothing); without analyse
    (`traceview info`) the entries hold the frames only and the Trace computes on first use."""
    from traceview import per_rank, rank_groups, registry
    from traceview.summary import build_summary

    plain_summary = build_summary(shared_sample("dp4_nccl"))
    keys = [registry.memo_key(n, {}) for n in per_rank.ANALYSES]
    if workers:
        monkeypatch.setattr(executors, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(rank_groups, "SMALL_RANK_BYTES", 0)  # each rank its own unit
    small = tv.load(SAMPLES / "dp4_nccl", cache_dir=tmp_path / "small", analyse=True)
    assert all(k in small._memo for k in keys) and build_summary(small) == plain_summary
    entries = list((tmp_path / "small").iterdir())
    assert len(entries) == 4 and all((e / cache.STAMP_FILE).is_file() for e in entries)
    monkeypatch.setattr(per_rank, "compute", lambda *a: pytest.fail("computed again"))
    monkeypatch.setattr(per_rank, "shares", lambda *a: pytest.fail("computed again"))
    again = tv.load(SAMPLES / "dp4_nccl", cache_dir=tmp_path / "small", analyse=True)
    assert all(k in again._memo for k in keys) and build_summary(again) == plain_summary
    monkeypatch.undo()
    if workers:
        monkeypatch.setattr(executors, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(executors, "ANALYSE_MIN_BYTES", 0)
    plain = tv.load(SAMPLES / "dp4_nccl", cache_dir=tmp_path / "plain", analyse=False)  # one group
    assert not plain._memo
    entries = list((tmp_path / "plain").iterdir())
    assert len(entries) == 1 and not (entries[0] / cache.STAMP_FILE).exists()


def test_ray_tasks_still_running_are_cancelled_when_the_load_stops(local_ray, monkeypatch):
    """Ctrl-C (or any error) while Ray tasks run: the driver cancels the ones it no longer needs."""
    from traceview.executors import RayExecutor
    from traceview.parsers import discover

    cancelled = []
    monkeypatch.setattr(local_ray, "cancel", lambda ref, force=False: cancelled.append((ref, force)))
    sources = discover(SAMPLES / "dp4_nccl")
    results = RayExecutor(jobs=2).run([[s] for s in sources])
    next(results)  # one rank back, others in flight or queued
    results.close()  # what the loader does when it stops early
    assert cancelled and all(force for _, force in cancelled)


def test_workers_get_their_share_of_the_cpus_for_polars(monkeypatch):
    """Each spawned worker's polars pool is sized to its share of the CPUs (two workers on N CPUs:
    N // 2 threads each); a POLARS_MAX_THREADS the user set is kept; the parent's environment is
    left as it was."""
    from traceview import subprocesses

    monkeypatch.delenv("POLARS_MAX_THREADS", raising=False)
    with subprocesses.finish(subprocesses.pool(2)) as pool:
        got = pool.submit(os.getenv, "POLARS_MAX_THREADS").result(timeout=120)
    assert got == str(max(1, len(os.sched_getaffinity(0)) // 2))
    assert "POLARS_MAX_THREADS" not in os.environ
    monkeypatch.setenv("POLARS_MAX_THREADS", "7")
    with subprocesses.finish(subprocesses.pool(2)) as pool:
        assert pool.submit(os.getenv, "POLARS_MAX_THREADS").result(timeout=120) == "7"
    assert os.environ["POLARS_MAX_THREADS"] == "7"
