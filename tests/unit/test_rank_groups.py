"""Small ranks parsed, cached and assembled in groups (`traceview.rank_groups`). The unit tests; the
topic's description and its other tests: tests/integration/test_rank_groups.py.
"""

from __future__ import annotations

import pytest

import traceview as tv
from tests.conftest import SAMPLES
from tests.support.rank_groups_shared import _frames, _same  # noqa: F401
from traceview import cache, executors, rank_groups
from traceview.parsers import discover

MIB = 2**20


def test_plan_groups_consecutive_small_ranks_within_the_limits(monkeypatch):
    monkeypatch.setattr(rank_groups, "GROUP_RANKS", 3)
    big, small = 5 * MIB, MIB
    assert rank_groups.plan([]) == []
    assert rank_groups.plan([small]) == [[0]]
    # a large rank ends a run; a run of one small rank is a unit of its own
    assert rank_groups.plan([big, small, big, small, small]) == [[0], [1], [2], [3, 4]]
    # at most GROUP_RANKS ranks and GROUP_BYTES bytes a group
    assert rank_groups.plan([small] * 7) == [[0, 1, 2], [3, 4, 5], [6]]
    assert rank_groups.plan([3 * MIB] * 6) == [[0, 1, 2], [3, 4, 5]]
    monkeypatch.setattr(rank_groups, "GROUP_RANKS", 256)
    assert rank_groups.plan([3 * MIB] * 6) == [[0, 1, 2, 3, 4], [5]]


def test_one_entry_per_group_read_back_without_parsing(monkeypatch, tmp_path):
    cache_dir = tmp_path / "c"
    first = tv.load(SAMPLES / "dp4_nccl", cache_dir=cache_dir)
    (entry,) = cache_dir.iterdir()
    assert entry.name == cache.group_key(discover(SAMPLES / "dp4_nccl"))

    def fail(_source, *args):
        raise AssertionError("parsed again instead of reading the group's entry")

    monkeypatch.setattr(executors, "parse_source", fail)
    _same(tv.load(SAMPLES / "dp4_nccl", cache_dir=cache_dir), first)


def test_a_damaged_group_entry_is_parsed_again(tmp_path):
    cache_dir = tmp_path / "c"
    first = tv.load(SAMPLES / "dp4_nccl", cache_dir=cache_dir)
    (entry,) = cache_dir.iterdir()
    (entry / "device_tasks.parquet").write_bytes(b"PAR1 damaged")
    again = tv.load(SAMPLES / "dp4_nccl", cache_dir=cache_dir)
    _same(again, first)
    assert (entry / "device_tasks.parquet").read_bytes() != b"PAR1 damaged"  # replaced


def test_a_selection_caches_its_part_of_a_group_and_finds_it_again(monkeypatch, tmp_path):
    """`--ranks 1,2` on a cold cache parses only those two of the four-rank group and caches them
    under their own key; the same selection again reads that entry and parses nothing."""
    cache_dir = tmp_path / "c"
    first = tv.load(SAMPLES / "dp4_nccl", ranks="1,2", cache_dir=cache_dir)

    def fail(_source, *args):
        raise AssertionError("parsed again instead of reading the selection's entry")

    monkeypatch.setattr(executors, "parse_source", fail)
    _same(tv.load(SAMPLES / "dp4_nccl", ranks="1,2", cache_dir=cache_dir), first)


def test_a_load_that_fails_after_parsing_still_caches_what_it_parsed(monkeypatch, tmp_path):
    """Ranks parsed alone wait for the driver's analyses before they are written; a load that
    stops after parsing (here: an analysis that raises) writes them anyway, without analyses."""
    from traceview import per_rank

    monkeypatch.setattr(rank_groups, "SMALL_RANK_BYTES", 0)
    monkeypatch.setattr(per_rank, "shares", lambda *a: (_ for _ in ()).throw(RuntimeError("stop")))
    cache_dir = tmp_path / "c"
    with pytest.raises(RuntimeError, match="stop"):
        tv.load(SAMPLES / "dp4_nccl", cache_dir=cache_dir, analyse=True)
    assert len(list(cache_dir.iterdir())) == 4
