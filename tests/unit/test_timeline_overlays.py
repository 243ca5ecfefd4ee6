"""The canvas timeline's overlays (/api/timeline/overlays, dashboards/timeline/overlays.py):
collectives split into wait and transfer equal `Trace.collectives()`, bubble regions sum to
`Trace.bubbles()`, findings mark their ranks' step windows; windows slice, the answer is
bounded, bad parameters answer 400.

This file holds the topic's unit tests; the others are in tests/corpus/test_timeline_overlays.py.
"""

from __future__ import annotations

import polars as pl
import pytest

import traceview as tv
from tests.conftest import SAMPLES
from tests.support.pipeline import hand_steps, hand_tasks, write_1f1b
from tests.support.timeline_overlays_shared import _check_collectives, _drawn_collectives, _served, _whole  # noqa: F401
from traceview.analysis import timeline_overlays as to
from traceview.analysis.bubbles import gpu_bubbles
from traceview.dashboards.app import create_app
from traceview.dashboards.timeline import overlays as timeline_overlays


@pytest.fixture(scope="module")
def dp4():
    return _served(SAMPLES / "dp4_nccl")


@pytest.fixture(scope="module")
def pp4():
    return _served(SAMPLES / "pp4_1f1b")


def test_collectives_equal_the_collectives_analysis_on_dp4(dp4):
    trace, _, client, meta = dp4
    o, got = _check_collectives(trace, client, meta)
    assert o["collective_kinds"] == ["allreduce"] and set(o["collectives"]["p2p"]) == {0}
    # the slow rank 2 arrives last: it never waits, the others wait for it
    waits = got.group_by("rank").agg(pl.col("wait_us").sum()).sort("rank")["wait_us"].to_list()
    assert waits[2] == 0 and min(waits[0], waits[1], waits[3]) > 0


def test_bubble_regions_sum_to_the_bubbles_analysis_on_pp4(pp4):
    trace, _, client, meta = pp4
    o = _whole(client, meta)
    b = pl.DataFrame(o["bubbles"])
    assert o["bubbles_left_out"] == 0 and b.height == o["bubbles_total"] > 0
    drawn = b.group_by("rank", "step").agg(((pl.col("end") - pl.col("start")).sum() / 1000).alias("drawn_us"))
    want = trace.run("bubbles").filter(pl.col("bubble_us") > 0).select("rank", "step", "bubble_us")
    both = want.join(drawn, on=["rank", "step"], how="full", coalesce=True)
    assert both.height == 8 and (both["bubble_us"] - both["drawn_us"]).abs().max() < 1e-6
    assert both["bubble_us"].to_list() == [10914.0] * 8  # the sample's known bubble: 3 x 3.6 ms + 114 µs
    # regions are compute-idle: no compute task of the rank (in the step) starts inside one
    origin = int(meta["origin_ns"])
    comp = trace.device_tasks.filter(pl.col("kind") == "kernel").select("rank", "start_ns", "end_ns")
    for r in b.head(20).iter_rows(named=True):
        inside = comp.filter(
            (pl.col("rank") == r["rank"])
            & (pl.col("start_ns") < r["end"] + origin)
            & (pl.col("end_ns") > r["start"] + origin)
        )
        assert inside.is_empty(), r
    # the pipeline's sends and receives are point-to-point: sent flagged (the client splits none)
    assert set(o["collective_kinds"]) == {"send", "recv", "coalesced"}
    assert set(o["collectives"]["p2p"]) == {1}


def _region_sums(tasks: pl.DataFrame, bubbles: pl.DataFrame) -> pl.DataFrame:
    regions = to.bubble_regions(tasks, bubbles)
    sums = regions.group_by("rank", "step").agg((pl.col("end_ns") - pl.col("start_ns")).sum().alias("drawn_ns"))
    want = bubbles.filter(pl.col("bubble_us") > 0).select("rank", "step", (pl.col("bubble_us") * 1000).alias("ns"))
    return want.join(sums, on=["rank", "step"], how="full", coalesce=True)


@pytest.mark.parametrize("p, m, tau", [(2, 2, 0), (4, 8, 6_000), (8, 16, 6_000)])
def test_1f1b_regions_are_each_stages_idle_time_in_the_pipeline_step(tmp_path, p, m, tau):
    known = write_1f1b(tmp_path, p, m, transfer=tau)
    trace = tv.load(tmp_path)
    both = _region_sums(trace.device_tasks, trace.run("bubbles"))
    assert both.height == 2 * p and (both["ns"] - both["drawn_ns"]).abs().max() < 0.5
    assert sorted(set(both["ns"].round(0))) == sorted(set(known["bubble_ns"].values()))
    # on the shared clock every stage's regions lie in one window: stage 0's compute span
    regions = to.bubble_regions(trace.device_tasks, trace.run("bubbles"))
    spans = regions.group_by("step").agg(pl.col("start_ns").min(), pl.col("end_ns").max())
    assert ((spans["end_ns"] - spans["start_ns"]) == known["step_ns"]).all()


def test_regions_sum_to_the_bubble_when_no_stage_spans_the_group_or_clocks_disagree():
    """Group b: rank 2 computes [0, 50), rank 3 [60, 80): L = 50 but the group's compute spans 80;
    rank 3's window is the 50 ns ending at its last compute end. Shifting rank 1's clock by 5 s
    changes no bubble and no region's length."""
    K, C, S = "kernel", "communication", "ncclDevKernel_SendRecv"
    rows = [
        (0, 1, K, "gemm", 0, 100, "a"),
        (0, 1, C, S, 100, 130, "a"),
        (0, 1, K, "gemm", 130, 200, "a"),
        (1, 1, C, S, 0, 100, "a"),
        (1, 1, K, "gemm", 100, 160, "a"),
        (1, 1, K, "gemm", 150, 170, "a"),
        (2, 1, K, "gemm", 0, 50, "b"),
        (2, 1, C, S, 50, 60, "b"),
        (3, 1, C, S, 0, 60, "b"),
        (3, 1, K, "gemm", 60, 80, "b"),
    ]
    steps = hand_steps([0, 1, 2, 3])
    for shift in (0, 5_000_000_000):
        tasks = hand_tasks(rows).with_columns(
            pl.when(pl.col("rank") == 1).then(pl.col(c) + shift).otherwise(pl.col(c)).alias(c)
            for c in ("start_ns", "end_ns")
        )
        bubbles = gpu_bubbles(tasks, steps)
        both = _region_sums(tasks, bubbles)
        assert sorted(both.select("rank", "ns", "drawn_ns").rows()) == [(0, 30, 30), (1, 130, 130), (3, 30, 30)]
    regions = to.bubble_regions(hand_tasks(rows), gpu_bubbles(hand_tasks(rows), steps))
    assert regions.filter(pl.col("rank") == 3).select("start_ns", "end_ns").rows() == [(30, 60)]
    assert regions.filter(pl.col("rank") == 1).select("start_ns", "end_ns").rows() == [(0, 100), (170, 200)]


def test_no_bubbles_without_a_pipeline(dp4):
    _, _, client, meta = dp4
    o = _whole(client, meta)
    assert o["bubbles_total"] == 0 and o["bubbles"]["rank"] == []


def test_findings_mark_the_step_windows_of_their_ranks(dp4):
    trace, summary, client, meta = dp4
    o = _whole(client, meta)
    kinds = o["finding_kinds"]
    f = pl.DataFrame(o["findings"])
    windows = trace.iteration_breakdown()
    origin = int(meta["origin_ns"])
    for k, kind in enumerate(kinds):
        ranks = {
            x["rank"] for x in summary["findings"] if (x["rule"], x["severity"]) == (kind["rule"], kind["severity"])
        }
        marked = f.filter(pl.col("kinds").list.contains(k))
        assert set(marked["rank"]) == ranks
        mine = windows.filter(pl.col("rank").is_in(list(ranks)))
        assert sorted(marked["start"]) == sorted(s - origin for s in mine["iteration_start_ns"])
        assert sorted(marked["end"]) == sorted(e - origin for e in mine["iteration_end_ns"])
    assert {k["title"] for k in kinds} == {x["title"] for x in summary["findings"]}
    assert "Straggler" in {kinds[k]["title"] for r, ks in zip(f["rank"], f["kinds"]) if r == 2 for k in ks}


def test_a_profile_wide_finding_marks_every_rank():
    found = pl.DataFrame({"rank": [None, 1]}, schema={"rank": pl.Int64})
    windows = pl.DataFrame({"rank": [0, 1], "start_ns": [0, 5], "end_ns": [10, 15]})
    extents = pl.DataFrame({"rank": [0, 1, 2], "start_ns": [0, 5, 3], "end_ns": [10, 15, 30]})
    r = to.finding_regions(found, windows, extents)
    assert r.rows() == [(0, 0, 0, 10), (0, 2, 3, 30), (0, 1, 5, 15), (1, 1, 5, 15)]


def test_a_window_holds_what_overlaps_it_on_the_ranks_asked(dp4):
    trace, _, client, meta = dp4
    whole = _drawn_collectives(_whole(client, meta), meta)
    origin = int(meta["origin_ns"])
    a, b = meta["end"] // 3, meta["end"] // 2
    o = client.get(f"/api/timeline/overlays?start={a}&end={b}&ranks=1,2").get_json()
    got = _drawn_collectives(o, meta)
    want = whole.filter(
        (pl.col("start_ns") < b + origin) & (pl.col("end_ns") > a + origin) & pl.col("rank").is_in([1, 2])
    )
    assert 0 < got.height < whole.height
    assert sorted(got.select("collective_id", "rank").rows()) == sorted(want.select("collective_id", "rank").rows())
    assert set(o["findings"]["rank"]) <= {1, 2}


def test_the_answer_is_bounded_longest_whole_instances_first(dp4, monkeypatch):
    trace, summary, _, meta = dp4
    monkeypatch.setattr(timeline_overlays, "MAX_COLLECTIVES", 10)
    monkeypatch.setattr(timeline_overlays, "MAX_FINDING_REGIONS", 3)
    client = create_app(trace, summary).server.test_client()  # a fresh model and overlays
    o = _whole(client, meta)
    got = _drawn_collectives(o, meta)
    assert got.height == 8 and o["collectives_left_out"] == o["collectives_total"] - 8 == 40  # 2 instances x 4 ranks
    assert (got.group_by("collective_id").len()["len"] == 4).all()  # whole instances: links keep both ends
    dur = trace.run("collectives").group_by("collective_id").agg(pl.col("dur_us").max()).sort("dur_us", descending=True)
    assert set(got["collective_id"]) == set(dur["collective_id"].head(2))
    assert len(o["findings"]["rank"]) == 3 and o["findings_left_out"] == o["findings_total"] - 3


def test_largest_keeps_the_order_of_the_rows():
    f = pl.DataFrame({"g": [1, 1, 2, 3, 3], "size": [5, 1, 9, 2, 2]})
    assert to.largest(f, 3, pl.col("size"))["size"].to_list() == [5, 9, 2]
    assert to.largest(f, 3, pl.col("size"), group="g")["g"].to_list() == [1, 1, 2]
    assert to.largest(f, 9, pl.col("size")).equals(f)


@pytest.mark.parametrize(
    "query",
    [
        "overlays?start=5&end=1",
        "overlays?start=x&end=10",
        "overlays?start=0",
        "overlays?end=10",
        "overlays?start=0&end=99999999999999999999999",
        "overlays?start=-99999999999999999999&end=10",
        "overlays?start=0&end=10&ranks=a",
        "overlays?start=0&end=10&ranks=1;2",
    ],
)
def test_bad_parameters_answer_400_in_one_line(dp4, query):
    _, _, client, _ = dp4
    r = client.get("/api/timeline/" + query)
    assert r.status_code == 400 and r.mimetype == "text/plain"
    assert "\n" not in r.get_data(as_text=True) and "Traceback" not in r.get_data(as_text=True)


def test_the_overlay_script_and_route_are_served(dp4):
    _, _, client, _ = dp4
    assert client.get("/assets/tv_timeline_4_overlays.js").status_code == 200
    assert client.post("/api/timeline/overlays?start=0&end=10").status_code in (404, 405)
