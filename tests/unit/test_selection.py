"""Rank and step selection: `load(ranks=, steps=)`, `Trace.select_steps`, `--ranks` / `--steps`.

What is proved here: SPECs parse (and bad ones are refused with one line, exit 2 on the CLI);
unselected ranks whose rank is known cheaply are never parsed (nor read from the cache, nor counted
by the memory guard); rank numbers are those of a whole load; a selected step's `step_breakdown`
rows equal the whole load's (samples and real traces); ranks or steps asked for but absent give a
TraceError naming those present, or a warning when some are present.

This file holds the topic's unit tests; the others are in tests/corpus/test_selection.py.
"""

from __future__ import annotations

import gzip
import json
import shutil

import orjson
import polars as pl
import pytest
from polars.testing import assert_frame_equal

import traceview as tv
from tests.conftest import DATA, SAMPLES
from tests.support.selection_shared import TABLES, cli, count_parses  # noqa: F401
from traceview import cache
from traceview.errors import TraceError
from traceview.parsers import Source, discover, host_ram, load_guard
from traceview.parsers.recorded_rank import recorded_rank
from traceview.selection import Selection, format_spec
from traceview.step_selection import select_steps

DP4 = SAMPLES / "dp4_nccl"


PP4 = SAMPLES / "pp4_1f1b"


ASCEND2 = SAMPLES / "ascend_2rank"


def kineto_file(path, rank: int | None, base=DATA / "kineto_minimal.json"):
    """A copy of a hand-written Kineto trace recording `rank` (None: no distributedInfo)."""
    doc = json.loads(base.read_text())
    if rank is None:
        doc.pop("distributedInfo")
    else:
        doc["distributedInfo"]["rank"] = rank
    path.write_text(json.dumps(doc))
    return path


@pytest.mark.parametrize(
    "spec, ranges",
    [
        ("0-7,12,16-19", [(0, 7), (12, 12), (16, 19)]),
        ("3", [(3, 3)]),
        (" 1 , 2-3 ,5 ", [(1, 3), (5, 5)]),  # spaces allowed; adjacent ranges merge
        ("7,0-3,2", [(0, 3), (7, 7)]),  # any order, overlaps merge
        ("4-4", [(4, 4)]),
        ("0-1000000000", [(0, 1_000_000_000)]),  # held as a range, never expanded
    ],
)
def test_spec_parses(spec, ranges):
    assert Selection.parse(spec).ranges == ranges


@pytest.mark.parametrize(
    "spec", ["", "  ", "a", "3-1", "1,,2", "-1", "1-", "0-7;12", "1.5", "1 2", ",3", "0x3", "99999999999999999999"]
)
def test_bad_spec_is_one_line_value_error(spec):
    with pytest.raises(ValueError) as err:
        Selection.parse(spec, "ranks")
    assert "\n" not in str(err.value) and str(err.value)


def test_selection_from_values_and_back():
    assert Selection.of(None) is None
    assert Selection.of(3).ranges == [(3, 3)]
    assert Selection.of([5, 0, 1, 2]).ranges == [(0, 2), (5, 5)]
    assert Selection.of(range(4, 8)).ranges == [(4, 7)]
    assert str(Selection.of("16-19,0-7,12")) == "0-7,12,16-19"
    assert format_spec([0, 1, 2, 3, 7, 9, 10]) == "0-3,7,9-10"
    for bad in ([], [-1], [True], ["1"], [1.0]):
        with pytest.raises(ValueError):
            Selection.of(bad)
    sel = Selection.parse("0-10")
    assert str(sel.missing([0, 1, 2, 5, 42])) == "3-4,6-10"
    assert sel.missing(range(11)) is None
    assert 7 in sel and 11 not in sel and "7" not in sel
    assert Selection.of(9).describe("rank") == "rank 9" and Selection.of([8, 9]).describe("rank") == "ranks 8-9"


def test_selection_expression_small_and_huge():
    df = pl.DataFrame({"x": [0, 5, 12, None, 2_000_000_000]})
    assert df.filter(Selection.parse("0-7,12").expr("x"))["x"].to_list() == [0, 5, 12]
    assert df.filter(Selection.parse("1-1000000000").expr("x"))["x"].to_list() == [5, 12]


def test_recorded_rank_without_parsing(tmp_path):
    for n, f in enumerate(sorted(DP4.glob("*.json.gz"))):  # gzip: read through the gzip stream
        assert recorded_rank(Source("kineto", f)) == n
    for n in (0, 1):
        assert recorded_rank(Source("ascend", ASCEND2 / f"rank{n}_ascend_pt")) == n
        assert recorded_rank(Source("ascend", ASCEND2 / f"rank{n}_ascend_pt" / "ASCEND_PROFILER_OUTPUT")) == n
    assert recorded_rank(Source("kineto", kineto_file(tmp_path / "a.json", 5))) == 5
    assert recorded_rank(Source("kineto", kineto_file(tmp_path / "b.json", None))) is None
    # a distributedInfo after the events start may be an event's: not trusted (the parser decides)
    late = tmp_path / "late.json"
    late.write_text('{"traceEvents": [], "distributedInfo": {"rank": 4}}')
    assert recorded_rank(Source("kineto", late)) is None
    # cut off by the 64 KiB peek: not trusted
    cut = tmp_path / "cut.json.gz"
    cut.write_bytes(
        gzip.compress(b'{"distributedInfo": {"rank": 2, "pad": "' + b"x" * 70_000 + b'"}, "traceEvents": []}')
    )
    assert recorded_rank(Source("kineto", cut)) is None
    ms = tmp_path / "ascend_timeline_display_6.json"
    ms.write_text("[]")
    assert recorded_rank(Source("mindspore", ms)) == 6


def test_unselected_ranks_are_never_parsed(monkeypatch):
    seen = count_parses(monkeypatch)
    t = tv.load(DP4, ranks="1,3", use_cache=False, jobs=1)
    assert t.ranks["rank"].to_list() == [1, 3]
    assert sorted(s.path.name.split(".")[0] for s in seen) == ["rank1", "rank3"]
    whole = tv.load(DP4, use_cache=False, jobs=1)
    for table in TABLES:
        assert_frame_equal(t.frame(table), whole.frame(table).filter(pl.col("rank").is_in([1, 3])))
    assert t.warnings == whole.warnings == []


def test_a_corrupt_unselected_rank_is_not_read(tmp_path):
    for f in DP4.glob("*.json.gz"):
        shutil.copy(f, tmp_path / f.name)
    rank2 = next(tmp_path.glob("rank2.*"))
    head = gzip.decompress(rank2.read_bytes())[:3000]  # the header (distributedInfo rank 2), then garbage
    assert b'"rank": 2' in head
    rank2.write_bytes(gzip.compress(head + b"\x00garbage{{{"))
    whole = tv.load(tmp_path, use_cache=False)
    assert len(whole.failures) == 1 and rank2.name in whole.failures[0]
    t = tv.load(tmp_path, ranks="0-1,3", use_cache=False)
    assert t.failures == [] and t.ranks["rank"].to_list() == [0, 1, 3]


def test_memory_guard_counts_only_selected_ranks(monkeypatch):
    sizes_seen = []
    real = load_guard.check

    def spy(sizes, workers, jobs_given, **kwargs):
        sizes_seen.append(list(sizes))
        return real(sizes, workers, jobs_given, **kwargs)

    monkeypatch.setattr(load_guard, "check", spy)
    tv.load(DP4, ranks=[2], use_cache=False)
    rank2 = next(DP4.glob("rank2.*"))
    assert sizes_seen == [[load_guard.input_bytes(Source("kineto", rank2))]]


def test_cached_unselected_ranks_are_not_parsed(monkeypatch, tmp_path):
    tv.load(DP4, cache_dir=tmp_path)  # fills the cache
    read = []
    real = cache.read_entry
    monkeypatch.setattr(cache, "read_entry", lambda folder: read.append(folder) or real(folder))
    seen = count_parses(monkeypatch)
    t = tv.load(DP4, ranks="2", cache_dir=tmp_path)
    assert t.ranks["rank"].to_list() == [2] and seen == []
    # the four small ranks were cached as one group: its entry is read, rank 2 taken from it
    group = discover(DP4)
    assert read == [tmp_path / cache.group_key(group)]


def test_a_cached_group_gives_its_ranks_without_reading_the_files(monkeypatch, tmp_path):
    """Selecting ranks of a folder whose small ranks were cached as groups reads each group's
    meta.json for its members' ranks, not every rank file's header (10,000 gzip headers: seconds)."""
    from traceview import loader

    tv.load(DP4, cache_dir=tmp_path)
    monkeypatch.setattr(loader, "recorded_rank", lambda source: pytest.fail(f"read {source.path.name}'s header"))
    t = tv.load(DP4, ranks="1,3", cache_dir=tmp_path)
    assert t.ranks["rank"].to_list() == [1, 3]


def test_ranks_unknown_before_parsing_are_parsed_then_judged_by_their_number(monkeypatch, tmp_path):
    # a records no rank, b rank 0, c rank 1: a whole load numbers a as rank 2
    kineto_file(tmp_path / "a.json", None)
    kineto_file(tmp_path / "b.json", 0)
    kineto_file(tmp_path / "c.json", 1)
    whole = tv.load(tmp_path, use_cache=False)
    assert dict(zip(whole.ranks["source"].str.split("/").list.last(), whole.ranks["rank"])) == {
        "a.json": 2,
        "b.json": 0,
        "c.json": 1,
    }
    seen = count_parses(monkeypatch)
    t = tv.load(tmp_path, ranks=[2], use_cache=False)
    assert t.ranks["rank"].to_list() == [2] and t.ranks["source"][0].endswith("a.json")
    assert [s.path.name for s in seen] == ["a.json"]  # b and c skipped before parsing
    assert t.warnings == whole.warnings  # a's "records no rank; numbered rank 2"
    seen.clear()
    t = tv.load(tmp_path, ranks=[0], use_cache=False)
    assert t.ranks["source"].to_list() == [str(tmp_path / "b.json")]
    assert sorted(s.path.name for s in seen) == ["a.json", "b.json"]  # a parsed, then dropped
    assert t.warnings == []


def test_repeated_ranks_are_numbered_as_in_a_whole_load(tmp_path):
    kineto_file(tmp_path / "a.json", 3)
    kineto_file(tmp_path / "b.json", 3)
    whole = tv.load(tmp_path, use_cache=False)
    assert whole.ranks["rank"].to_list() == [3, 0]  # b repeats rank 3: numbered 0
    t = tv.load(tmp_path, ranks="0", use_cache=False)
    assert t.ranks["rank"].to_list() == [0] and t.ranks["source"][0].endswith("b.json")
    assert len(t.warnings) == 1 and "repeats rank 3; numbered rank 0" in t.warnings[0]
    t = tv.load(tmp_path, ranks="3", use_cache=False)
    assert t.ranks["source"].to_list() == [str(tmp_path / "a.json")] and t.warnings == []


def test_missing_ranks_error_or_warning():
    with pytest.raises(TraceError) as err:
        tv.load(DP4, ranks="9", use_cache=False)
    assert str(err.value) == f"no rank 9 in this profile ({DP4} has ranks 0-3)"
    with pytest.raises(TraceError, match=r"no ranks 4-7,9 in this profile \(.* has ranks 0-3\)"):
        tv.load(DP4, ranks="4-7,9", use_cache=False)
    t = tv.load(DP4, ranks="2-5,1000000", use_cache=False)
    assert t.ranks["rank"].to_list() == [2, 3]
    assert t.warnings == [f"{DP4}: no ranks 4-5,1000000 in this profile (it has ranks 0-3); loaded the others"]


@pytest.mark.parametrize("path, steps", [(DP4, [4]), (DP4, [3, 5]), (PP4, [2]), (ASCEND2, [9])])
def test_selected_steps_break_down_as_in_the_whole_load(path, steps):
    whole = tv.load(path)
    t = whole.select_steps(steps)
    assert t is not whole and t._memo == {}
    assert_frame_equal(t.steps, whole.steps.filter(pl.col("step").is_in(steps)))
    assert_frame_equal(t.step_breakdown(), whole.step_breakdown().filter(pl.col("step").is_in(steps)))
    assert_frame_equal(t.bubbles(), whole.bubbles().filter(pl.col("step").is_in(steps)))
    assert_frame_equal(t.step_skew(), whole.step_skew().filter(pl.col("step").is_in(steps)))
    assert_frame_equal(t.stream_idle(by_step=True), whole.stream_idle(by_step=True).filter(pl.col("step").is_in(steps)))
    assert_frame_equal(t.ranks, whole.ranks)
    assert_frame_equal(t.ascend_step_trace, whole.ascend_step_trace.filter(pl.col("step").is_in(steps)))
    # every device task of a chosen step is kept, and nothing outside the chosen windows
    assert (
        t.device_tasks.filter(pl.col("step").is_in(steps)).height
        == whole.device_tasks.filter(pl.col("step").is_in(steps)).height
    )
    assert t.device_tasks.height < whole.device_tasks.height
    assert 0 < t.host_events.height < whole.host_events.height
    # the analyses run on the selected trace
    t.findings(), t.collectives(), t.iteration_gaps(), t.launch_delays(), t.info()


def test_select_steps_by_spec_and_via_load():
    whole = tv.load(DP4)
    a = whole.select_steps("4-5")
    b = tv.load(DP4, steps="4-5")
    c = select_steps(whole, Selection.parse("4-5"))
    for table in TABLES:
        assert_frame_equal(a.frame(table), b.frame(table))
        assert_frame_equal(a.frame(table), c.frame(table))
    assert whole.steps["step"].n_unique() == 3  # the whole trace is not modified


def test_host_events_and_annotations_follow_the_windows():
    whole = tv.load(DP4)
    t = whole.select_steps([4])
    w = t.steps.select("rank", "host_start_ns", "host_end_ns", "device_start_ns", "device_end_ns")
    host = t.host_events.join(w, on="rank")
    inside = (pl.col("start_ns") >= pl.col("host_start_ns")) & (pl.col("start_ns") < pl.col("host_end_ns"))
    outside = host.filter(~inside)
    # the only host events outside the host window are launch calls of kept device tasks
    assert (
        outside.join(t.device_tasks.select("rank", "correlation"), on=["rank", "correlation"], how="anti").height == 0
    )
    assert set(t.host_events.filter(pl.col("name").str.starts_with("ProfilerStep#"))["name"]) == {"ProfilerStep#4"}
    ann = t.device_annotations.join(w, on="rank")
    assert (
        ann.filter(
            (pl.col("start_ns") < pl.col("device_start_ns")) | (pl.col("start_ns") >= pl.col("device_end_ns"))
        ).height
        == 0
    )
    assert set(t.device_annotations.filter(pl.col("name").str.starts_with("ProfilerStep#"))["name"]) == {
        "ProfilerStep#4"
    }


def test_missing_steps_error_or_warning():
    whole = tv.load(DP4)
    with pytest.raises(TraceError) as err:
        whole.select_steps([99])
    assert str(err.value) == f"no step 99 in this profile ({DP4} has steps 3-5)"
    t = whole.select_steps("5-7")
    assert t.steps["step"].unique().to_list() == [5]
    assert t.warnings == [f"{DP4}: no steps 6-7 in this profile (it has steps 3-5); loaded the others"]
    flat = tv.Trace("x", whole.ranks, {k: v.clear() for k, v in whole._frames.items()}, [], [])
    with pytest.raises(TraceError, match=r"no step 1 in this profile \(x has no steps\)"):
        flat.select_steps([1])


@pytest.mark.parametrize("command", ["info", "summary", "report", "serve"])
@pytest.mark.parametrize("option, spec", [("--ranks", "3-1"), ("--steps", "x"), ("--ranks", "")])
def test_cli_bad_spec_is_a_usage_error(command, option, spec):
    out = cli(command, str(DP4), option, spec)
    assert out.exit_code == 2
    (line,) = [x for x in out.stderr.splitlines() if x.startswith("Error:")]
    assert f"Invalid value for '{option}'" in line


def test_cli_diff_bad_spec_and_both_runs_selected():
    assert cli("diff", str(DP4), str(DP4), "--steps", "4-").exit_code == 2
    out = cli("diff", str(DP4), str(DP4), "--ranks", "1-2", "--steps", "4", "--format", "json", "-q")
    assert out.exit_code == 0, out.output
    doc = orjson.loads(out.stdout)
    for run in ("base", "new"):
        assert doc[run]["ranks"] == [1, 2] and doc[run]["step_numbers"] == [4]


def test_cli_selection_and_missing():
    out = cli("info", str(DP4), "--ranks", "1,3", "--steps", "4", "--format", "json", "-q")
    assert out.exit_code == 0, out.output
    ranks = orjson.loads(out.stdout)["ranks"]
    assert [r["rank"] for r in ranks] == [1, 3] and all(r["step_numbers"] == [4] for r in ranks)
    out = cli("info", str(DP4), "--ranks", "9")
    assert out.exit_code == 1
    assert out.stderr.strip() == f"traceview: error: no rank 9 in this profile ({DP4} has ranks 0-3)"
    out = cli("summary", str(DP4), "--steps", "42")
    assert out.exit_code == 1
    assert out.stderr.strip() == f"traceview: error: no step 42 in this profile ({DP4} has steps 3-5)"
    out = cli("info", str(DP4), "--ranks", "3-4", "--format", "json", "-q")
    assert out.exit_code == 0
    doc = orjson.loads(out.stdout)
    assert [r["rank"] for r in doc["ranks"]] == [3] and any("no rank 4" in w for w in doc["warnings"])


def test_memory_guard_names_ranks_as_a_way_out(monkeypatch):
    sizes = [10_000_000] * 4
    monkeypatch.setenv(host_ram.LIMIT_ENV, "1M")
    with pytest.raises(TraceError, match="load fewer ranks") as err:
        load_guard.check(sizes, 1, jobs_given=False)
    assert "--ranks" in str(err.value)
