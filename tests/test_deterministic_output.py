"""Identical inputs give byte-identical output in every format, whatever the cache, the number of
worker processes or the run (issue 14: ties in `cross_rank.collectives` came out in group_by
order; the report carried the time it was written)."""

from __future__ import annotations

import hashlib

import pytest

from tests.conftest import SAMPLES, SHARED_TRACES, needs_shared, run_cli

pytestmark = pytest.mark.integration

DLRM = SHARED_TRACES / "param/et_replay/tests/inputs/dlrm_kineto.tar.gz.extracted/dlrm_kineto"


def _outputs(profile, tmp_path, tag: str, *load: str) -> dict[str, str]:
    """Digest of each format's output for one run (`load`: cache and job options)."""
    out = {}
    for name, args in {
        "summary": ("summary", "--format", "json"),
        "summary_text": ("summary",),
        "info": ("info", "--format", "json"),
    }.items():
        res = run_cli(*args, str(profile), "-q", *load)
        assert res.returncode == 0, res.stderr
        out[name] = hashlib.sha256(res.stdout.encode()).hexdigest()
    for fmt in ("html", "csv"):
        target = tmp_path / f"{tag}.{fmt}"
        res = run_cli("report", str(profile), "-q", "--format", fmt, "-o", str(target), *load)
        assert res.returncode == 0, res.stderr
        if target.is_dir():
            parts = [f.name.encode() + f.read_bytes() for f in sorted(target.iterdir())]
        else:
            parts = [target.read_bytes()]
        out[fmt] = hashlib.sha256(b"".join(parts)).hexdigest()
    diff = run_cli("diff", str(SAMPLES / "dp4_nccl"), str(profile), "--format", "json", "-q", *load)
    out["diff"] = hashlib.sha256(diff.stdout.encode()).hexdigest()
    return out


@pytest.mark.parametrize("sample", ["dp4_nccl", "pp4_1f1b", "ascend_2rank"])
def test_every_format_is_byte_identical_across_runs_caches_and_workers(sample, tmp_path):
    profile = SAMPLES / sample
    cache = str(tmp_path / "cache")
    runs = [
        _outputs(profile, tmp_path, "cold", "--no-cache", "--jobs", "1"),
        _outputs(profile, tmp_path, "fill", "--cache-dir", cache, "--jobs", "2"),
        _outputs(profile, tmp_path, "cached", "--cache-dir", cache),
    ]
    assert runs[0] == runs[1] == runs[2]


@needs_shared
def test_a_real_multi_rank_profile_is_byte_identical(tmp_path):
    cache = str(tmp_path / "cache")
    first = _outputs(DLRM, tmp_path, "a", "--cache-dir", cache)
    assert _outputs(DLRM, tmp_path, "b", "--no-cache", "--jobs", "2") == first
