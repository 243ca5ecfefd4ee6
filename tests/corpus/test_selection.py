"""Rank and step selection. The corpus tests; the topic's description and its other tests:
tests/unit/test_selection.py.
"""

from __future__ import annotations

import orjson
import polars as pl
from polars.testing import assert_frame_equal

import traceview as tv
from tests.conftest import SHARED_TRACES, needs_shared
from tests.support.selection_shared import TABLES, cli, count_parses  # noqa: F401
from traceview.summary import TERM_COLUMNS

DLRM8 = SHARED_TRACES / "param/et_replay/tests/inputs/dlrm_kineto.tar.gz.extracted/dlrm_kineto"


ASCEND_LEVEL1 = SHARED_TRACES / "msinsight/test/data/pytorch/text/level1"


MSINSIGHT_RANKS = SHARED_TRACES / "msinsight/server/src/test/test_data"


DF_INDEX = SHARED_TRACES / "hta/tests/data/df_index_resolver/df_index_resolver.json.gz"


@needs_shared
def test_real_kineto_8_ranks(monkeypatch):
    seen = count_parses(monkeypatch)
    t = tv.load(DLRM8, ranks="2,5-6", use_cache=False, jobs=1)
    assert t.ranks["rank"].to_list() == [2, 5, 6]
    assert sorted(s.path.name.split("_")[0] for s in seen) == ["worker2", "worker5", "worker6"]
    whole = tv.load(DLRM8, use_cache=False)
    for table in TABLES:
        assert_frame_equal(t.frame(table), whole.frame(table).filter(pl.col("rank").is_in([2, 5, 6])))
    assert_frame_equal(t.step_breakdown(), whole.step_breakdown().filter(pl.col("rank").is_in([2, 5, 6])))


@needs_shared
def test_real_ascend_2_ranks(monkeypatch):
    seen = count_parses(monkeypatch)
    t = tv.load(ASCEND_LEVEL1, ranks=[1], use_cache=False, jobs=1)
    assert t.ranks["rank"].to_list() == [1] and [s.path.name for s in seen] == ["rank1_ascend_pt"]
    whole = tv.load(ASCEND_LEVEL1, use_cache=False)
    for table in TABLES:
        assert_frame_equal(t.frame(table), whole.frame(table).filter(pl.col("rank") == 1))


@needs_shared
def test_real_renumbered_rank_is_found_by_its_number(monkeypatch):
    # msinsight's test_data: test_rank_0/1 record ranks 0 and 1 (profiler_info); heatMap/ (first in
    # order) records none, so a whole load numbers it 2, with a warning
    whole = tv.load(MSINSIGHT_RANKS, use_cache=False)
    assert whole.ranks["rank"].to_list() == [2, 0, 1]
    seen = count_parses(monkeypatch)
    for n in (0, 1, 2):
        seen.clear()
        t = tv.load(MSINSIGHT_RANKS, ranks=[n], use_cache=False, jobs=1)
        assert t.ranks["source"].to_list() == whole.ranks.filter(pl.col("rank") == n)["source"].to_list()
        for table in TABLES:
            assert_frame_equal(t.frame(table), whole.frame(table).filter(pl.col("rank") == n))
        # heatMap's rank is only known by parsing it; the other unselected folder is skipped
        assert sorted(s.path.name for s in seen) == sorted({"heatMap", f"test_rank_{n}"} if n < 2 else {"heatMap"})
        # its own file's warnings (test_rank_1's memory_record.csv has spreadsheet-rounded times), and
        # heatMap's numbering only when heatMap is the rank chosen
        source = whole.ranks.filter(pl.col("rank") == n)["source"][0]
        assert t.warnings == [w for w in whole.warnings if w.startswith(source + ":")]


@needs_shared
def test_real_trace_summary_steps_equal_the_whole_load():
    full = cli("summary", str(DF_INDEX), "--format", "json", "-q")
    part = cli("summary", str(DF_INDEX), "--steps", "3-4", "--format", "json", "-q")
    assert full.exit_code == 0 and part.exit_code == 0, part.output
    full_doc, part_doc = orjson.loads(full.stdout), orjson.loads(part.stdout)
    terms = lambda doc: {
        (r["rank"], s["step"]): {k: s[k] for k in TERM_COLUMNS}  # noqa: E731
        for r in doc["ranks"]
        for s in r["steps"]
    }
    whole_terms = terms(full_doc)
    assert sorted(terms(part_doc)) == [(1, 3), (1, 4)]
    assert terms(part_doc) == {k: v for k, v in whole_terms.items() if k[1] in (3, 4)}
    # and the API agrees
    whole = tv.load(DF_INDEX)
    assert_frame_equal(
        tv.load(DF_INDEX, steps="3-4").step_breakdown(), whole.step_breakdown().filter(pl.col("step").is_in([3, 4]))
    )
