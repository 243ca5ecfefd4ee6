"""Small ranks parsed, cached and assembled in groups (`traceview.rank_groups`): the same numbers
as ranks parsed alone, one cache entry per group, a failed member or a damaged entry handled.

This file holds the topic's integration tests; the others are in tests/unit/test_rank_groups.py.
"""

from __future__ import annotations

import shutil

import pytest

import traceview as tv
from tests.conftest import DATA, SAMPLES, SHARED_TRACES
from tests.support.rank_groups_shared import _frames, _same  # noqa: F401
from tests.support.samples import shared_sample
from traceview import cache, executors, rank_groups
from traceview.summary import build_summary

DLRM = SHARED_TRACES / "param/et_replay/tests/inputs/dlrm_kineto.tar.gz.extracted/dlrm_kineto"


@pytest.mark.parametrize(
    "profile",
    [SAMPLES / "dp4_nccl", SAMPLES / "pp4_1f1b", DLRM],
    ids=["dp4_nccl", "pp4_1f1b", "dlrm_8rank"],
)
def test_grouped_ranks_give_the_frames_and_summary_of_ranks_parsed_alone(profile, monkeypatch, tmp_path):
    if not profile.exists():
        pytest.skip(f"real-trace corpus not found at {SHARED_TRACES} (present in CI; absent in a user's clone)")
    monkeypatch.setattr(rank_groups, "GROUP_RANKS", 3)  # groups of 3 and a remainder
    grouped = tv.load(profile, cache_dir=tmp_path / "c", analyse=True)
    cached = tv.load(profile, cache_dir=tmp_path / "c", analyse=True)
    monkeypatch.setattr(rank_groups, "SMALL_RANK_BYTES", 0)
    alone = tv.load(profile, use_cache=False)
    _same(grouped, alone)
    _same(cached, alone)
    expected = build_summary(alone)
    assert build_summary(grouped) == expected and build_summary(cached) == expected


@pytest.mark.parametrize("workers", [True, False], ids=["worker processes", "in-process"])
def test_a_member_that_fails_is_listed_the_others_load_and_the_group_is_not_cached(monkeypatch, tmp_path, workers):
    profile = tmp_path / "p"
    profile.mkdir()
    for r in range(3):
        shutil.copy(DATA / "kineto_minimal.json", profile / f"rank{r}.pt.trace.json")
    (profile / "rank3.pt.trace.json").write_text('{"traceEvents": [')
    if workers:
        monkeypatch.setattr(executors, "PARALLEL_MIN_BYTES", 0)
        monkeypatch.setattr(rank_groups, "GROUP_RANKS", 2)  # two groups: two units for the workers
    cache_dir = tmp_path / "c"
    trace = tv.load(profile, cache_dir=cache_dir)
    assert trace.ranks.height == 3
    assert len(trace.failures) == 1 and "rank3.pt.trace.json" in trace.failures[0]
    units = rank_groups.plan([1] * 4) if not workers else [[0, 1], [2, 3]]
    complete = [u for u in units if 3 not in u]
    assert len(list(cache_dir.iterdir())) == len(complete)  # only groups whose members all parsed


@pytest.mark.parametrize("grouped", [True, False], ids=["a group", "a large rank"])
def test_an_entry_cached_without_analyses_is_refilled_once(monkeypatch, tmp_path, grouped):
    """`traceview info` caches frames only; the next load that wants the analyses computes them
    once (a group's on the group, a lone rank's share of the driver's) and rewrites the entry, so
    the loads after it read them (nothing computed again)."""
    from traceview import per_rank, registry

    plain = build_summary(shared_sample("dp4_nccl"))  # the reference, parsed before the patches below
    if not grouped:  # the samples' ranks stand for large ones: alone, and analysed where parsed
        monkeypatch.setattr(rank_groups, "SMALL_RANK_BYTES", 0)
        monkeypatch.setattr(executors, "ANALYSE_MIN_BYTES", 0)
    cache_dir = tmp_path / "c"
    tv.load(SAMPLES / "dp4_nccl", cache_dir=cache_dir)  # as `traceview info` loads
    entries = sorted(cache_dir.iterdir())
    assert entries and not any((e / cache.STAMP_FILE).exists() for e in entries)
    keys = [registry.memo_key(n, {}) for n in per_rank.ANALYSES]
    refilled = tv.load(SAMPLES / "dp4_nccl", cache_dir=cache_dir, analyse=True)
    assert all(k in refilled._memo for k in keys) and build_summary(refilled) == plain
    assert sorted(cache_dir.iterdir()) == entries and all((e / cache.STAMP_FILE).is_file() for e in entries)

    def fail(*_args):
        raise AssertionError("computed again instead of read from the refilled entry")

    monkeypatch.setattr(per_rank, "compute", fail)  # a group's refill
    monkeypatch.setattr(per_rank, "shares", fail)  # a lone rank's share of the driver's analyses
    again = tv.load(SAMPLES / "dp4_nccl", cache_dir=cache_dir, analyse=True)
    assert all(k in again._memo for k in keys) and build_summary(again) == plain
