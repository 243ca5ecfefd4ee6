"""A user's rules file for all tables (`traceview.load(rules=...)`, `--rules`), read once into a
`RuleSet`. The integration tests; the topic's description and its other tests:
tests/unit/test_user_rules.py.
"""

from __future__ import annotations

import shutil

import traceview as tv
from tests.conftest import run_cli
from tests.support.user_rules_shared import DP4, GEMM, RULES, SAMPLES, _gemms, _kinds, rules_file  # noqa: F401
from traceview import executors, ruleset
from traceview.cache import unpack
from traceview.parsers import jsonio, kineto


def test_the_parallel_decode_workers_get_the_users_task_kinds(rules_file, tmp_path, monkeypatch):
    """A large file decoded in pieces by spawned processes: each piece is classified with the
    user's rules, same as the whole file parsed in this process."""
    rank = sorted(DP4.glob("*.pt.trace.json*"))[0]
    monkeypatch.setattr(jsonio, "CHUNK_BYTES", 1 << 14)
    monkeypatch.setattr(kineto, "PARALLEL_FILE_BYTES", 0)
    calls = []
    real = kineto._streamed_parallel
    monkeypatch.setattr(kineto, "_streamed_parallel", lambda *a: calls.append(1) or real(*a))
    parallel = tv.load(rank, use_cache=False, jobs=2, rules=rules_file)
    assert calls, "the parallel decode did not run"
    serial = tv.load(rank, use_cache=False, jobs=1, rules=rules_file)
    assert _kinds(parallel) == _kinds(serial)
    assert set(_gemms(parallel)["kind"]) == {"communication"}


def test_worker_processes_compute_the_analyses_with_the_users_rules(tmp_path):
    """Ranks parsed in worker processes with their rank-local analyses: the workers get the
    rules as data (they open no rules file) and give what the driver gives; the cache keeps the
    analyses of those rules, and a load with other rules computes its own."""
    mine = tmp_path / "mine.toml"
    mine.write_text('[[compute_classes.rule]]\nclass = "normalization"\nname = "elementwise"\n')
    rules = ruleset.build(mine)
    rank = sorted(DP4.glob("*.pt.trace.json*"))[0]
    _, error, files = executors.parse_packed([("kineto", str(rank), "")], True, rules.documents)
    assert error is None
    parsed = unpack(files)
    assert parsed.analyses_rules == rules.digest and parsed.analyses is not None
    here = executors.parse_unit([tv.parsers.Source("kineto", rank)], analyse=True, rules=rules)
    assert here.analyses_rules == rules.digest
    from traceview.per_rank import _read

    assert _read(parsed.analyses["compute_classes"]).equals(_read(here.analyses["compute_classes"]))
    cache_dir = tmp_path / "c"
    expected = tv.load(DP4, use_cache=False, rules=mine).compute_classes()
    for _ in range(2):  # parsed and stored, then read back with its analyses
        cached = tv.load(DP4, cache_dir=cache_dir, rules=mine, analyse=True)
        assert cached.compute_classes().equals(expected)
    shipped = tv.load(DP4, cache_dir=cache_dir, analyse=True)  # the same entries, other rules
    assert shipped.compute_classes().equals(tv.load(DP4, use_cache=False).compute_classes())
    assert not shipped.compute_classes().equals(expected)


def test_cli_rules_option(rules_file, tmp_path):
    profile = tmp_path / "p"
    shutil.copytree(DP4, profile)
    env = {"TRACEVIEW_CACHE_DIR": str(tmp_path / "c")}
    shipped = run_cli("summary", str(profile), "--format", "json", "-q", env=env)
    user = run_cli("summary", str(profile), "--format", "json", "-q", "--rules", str(rules_file), env=env)
    assert shipped.returncode == 0 and user.returncode == 0, user.stderr
    assert shipped.stdout != user.stdout
    bad = tmp_path / "bad.toml"
    bad.write_text("x = 1\n")
    failed = run_cli("summary", str(profile), "-q", "--rules", str(bad), env=env)
    assert failed.returncode == 1
    assert failed.stderr.count("\n") == 1 and "unknown top-level key(s) x" in failed.stderr
    assert "Traceback" not in failed.stderr
