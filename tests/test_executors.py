"""Executors and the memory guard: Ray gives the local executor's frames exactly; a missing Ray is
one line and exit 1; a load that does not fit in memory fails early with the size and the ways out."""

from __future__ import annotations

import builtins
import gzip
import subprocess
import sys

import pytest
from polars.testing import assert_frame_equal

import traceview as tv
from tests.conftest import DATA, ROOT
from traceview import executors, memory
from traceview.errors import TraceError

SAMPLES = ROOT / "sample_traces"
TABLES = ("device_tasks", "host_events", "steps", "ranks")


def run(*args: str, env_extra: dict | None = None) -> subprocess.CompletedProcess:
    import os

    env = dict(os.environ, **(env_extra or {}))
    return subprocess.run([sys.executable, "-m", "traceview", *args], capture_output=True, text=True, cwd=ROOT,
                          env=env)


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
    out = run("info", str(DATA / "kineto_minimal.json"), "--executor", "ray", "--no-cache",
              env_extra={"PYTHONPATH": f"{tmp_path}:{ROOT}"})
    assert out.returncode == 1, out.stderr
    lines = out.stderr.strip().splitlines()
    assert lines == ["traceview: error: --executor ray needs Ray, which is not installed "
                     "(pip install 'traceview[ray]')"]


def test_default_load_does_not_import_ray():
    code = ("import sys, traceview as tv; tv.load(sys.argv[1], use_cache=False); "
            "print('ray' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code, str(SAMPLES / "dp4_nccl")], capture_output=True, text=True,
                         cwd=ROOT)
    assert out.stdout.strip() == "False", out.stderr


def test_memory_guard_fails_early_with_the_way_out():
    path = str(SAMPLES / "dp4_nccl")
    out = run("info", path, "--no-cache", "--jobs", "2", env_extra={"TRACEVIEW_MEMORY_LIMIT": "1M"})
    assert out.returncode == 1
    (line,) = out.stderr.strip().splitlines()
    assert line.startswith("traceview: error: loading 4 rank(s) of ")
    assert "needs about" in line and "1.0 MB is available" in line
    assert "--executor ray" in line and "load fewer ranks" in line and "TRACEVIEW_MEMORY_LIMIT=off" in line
    ok = run("info", path, "--no-cache", env_extra={"TRACEVIEW_MEMORY_LIMIT": "1G"})
    assert ok.returncode == 0, ok.stderr
    assert "rank" in ok.stdout


def test_memory_guard_lowers_default_workers_but_not_given_jobs():
    sizes = [100, 100, 100, 100]
    one = memory.estimate(sizes, 1)
    two = memory.estimate(sizes, 2)
    assert one < two
    assert memory.fit_workers(sizes, 4, two) == 2
    assert memory.fit_workers(sizes, 4, one - 1) == 0


def test_memory_guard_suggests_fewer_jobs(monkeypatch):
    sizes = [10_000_000] * 4
    monkeypatch.setenv(memory.LIMIT_ENV, str(memory.estimate(sizes, 2)))
    assert memory.check(sizes, 4, jobs_given=False) == 2
    with pytest.raises(TraceError, match="use --jobs 2, load fewer ranks"):
        memory.check(sizes, 4, jobs_given=True)
    monkeypatch.setenv(memory.LIMIT_ENV, "off")
    assert memory.check(sizes, 4, jobs_given=True) == 4


def test_gzip_size_comes_from_the_trailer(tmp_path):
    raw = (DATA / "kineto_minimal.json").read_bytes() * 50
    gz = tmp_path / "t.json.gz"
    gz.write_bytes(gzip.compress(raw))
    assert memory.uncompressed_size(gz) == len(raw)
    plain = tmp_path / "t.json"
    plain.write_bytes(raw)
    assert memory.uncompressed_size(plain) == len(raw)


def test_unknown_executor_is_refused():
    with pytest.raises(ValueError, match="unknown executor"):
        executors.get("dask")
