"""The canvas timeline's JSON API (dashboards/timeline/api.py) through Flask's test client."""

from __future__ import annotations

import polars as pl
import pytest

from tests.support.samples import shared_sample
from traceview.dashboards.app import create_app
from traceview.summary import build_summary


@pytest.fixture(scope="module")
def dp4():
    trace = shared_sample("dp4_nccl")
    app = create_app(trace, build_summary(trace, details=False))
    client = app.server.test_client()
    return trace, client, client.get("/api/timeline/meta").get_json()


def test_meta_names_lanes_by_role_and_has_steps_and_terms_tracks(dp4):
    trace, client, meta = dp4
    lanes = meta["lanes"]
    rank0 = [label for label, rank in zip(lanes["label"], lanes["rank"]) if rank == 0]
    assert rank0[:4] == ["steps", "terms", "stream 7 · compute", "stream 20 · NCCL"]
    assert any(label.startswith("thread ") for label in rank0)  # host threads, nested by depth
    assert max(d for d, k in zip(lanes["depth"], lanes["kind"]) if k == "host") >= 2
    assert meta["ranks"] == [0, 1, 2, 3]
    assert len(meta["steps"]["name"]) == trace.iteration_breakdown().height
    assert int(meta["origin_ns"]) <= int(trace.device_tasks["start_ns"].min())


def test_window_is_columnar_with_a_name_dictionary(dp4):
    _, client, meta = dp4
    d = client.get(f"/api/timeline/window?start=0&end={meta['end']}&px=3000").get_json()
    raw = d["raw"]
    n = len(raw["id"])
    assert n > 1000 and all(len(raw[c]) == n for c in ("lane", "start", "dur", "name", "cls", "flow"))
    assert len(d["names"]) < n and len(set(d["names"])) == len(d["names"])  # each distinct name once
    assert max(raw["name"]) < len(d["names"]) and max(raw["cls"]) < len(d["classes"])


def test_whole_trace_bins_stack_by_class_and_sum_to_the_lane_busy_time(dp4):
    trace, client, meta = dp4
    d = client.get(f"/api/timeline/window?start=0&end={meta['end']}&px=200").get_json()
    assert d["binned_lanes"], "the compute streams are binned at 200 px"
    b = pl.DataFrame(d["bins"]).with_columns(pl.col("cls").map_elements(lambda i: d["classes"][i], pl.String))
    lane = next(ln for ln in d["binned_lanes"] if meta["lanes"]["kind"][ln] == "device")
    mine = b.filter(pl.col("lane") == lane)
    assert mine["cls"].n_unique() > 3, "communication and compute classes stay apart"
    rng = client.get(f"/api/timeline/range?start={d['start']}&end={d['end']}").get_json()
    rank = meta["lanes"]["rank"][lane]
    label = meta["lanes"]["label"][lane]
    by_lane = dict(rng["by_lane"])
    per_class_sum = mine["busy"].sum() / 1000
    assert per_class_sum >= by_lane[f"rank {rank} · {label}"] - 1e-6  # classes may overlap on a lane, never less


def test_task_details_and_flow_both_ways(dp4):
    _, client, meta = dp4
    d = client.get(f"/api/timeline/window?start=0&end={meta['end'] // 20}&px=3000&host=1").get_json()
    raw = d["raw"]
    kinds = meta["lanes"]["kind"]
    kernel = next(i for i, f, lane in zip(raw["id"], raw["flow"], raw["lane"]) if f >= 0 and kinds[lane] == "device")
    t = client.get(f"/api/timeline/task?id={kernel}").get_json()
    fields = dict(t["fields"])
    assert fields["launched by"].startswith("cuda") and t["flow"]["name"] == fields["launched by"]
    back = client.get(f"/api/timeline/task?id={t['flow']['id']}").get_json()
    assert back["flow"]["id"] == kernel and "launches" in dict(back["fields"])
    assert meta["lanes"]["kind"][back["lane"]] == "host"


def test_search_finds_by_name_case_insensitive_sorted_by_start(dp4):
    trace, client, _ = dp4
    h = client.get("/api/timeline/search?q=NCCLDEV").get_json()
    want = trace.device_tasks.filter(pl.col("name").str.to_lowercase().str.contains("nccldev")).height
    assert h["count"] == want > 0 and h["start"] == sorted(h["start"])
    assert client.get("/api/timeline/search?q=").status_code == 400


def test_range_of_a_step_equals_the_iteration_breakdown(dp4):
    trace, client, meta = dp4
    origin = int(meta["origin_ns"])
    it = trace.iteration_breakdown().sort("rank", "step").row(1, named=True)
    r = client.get(
        f"/api/timeline/range?start={it['iteration_start_ns'] - origin}&end={it['iteration_end_ns'] - origin}"
        f"&ranks={it['rank']}"
    ).get_json()
    terms = dict(r["by_term"])
    assert terms["computing"] == pytest.approx(it["iteration_computing_us"], abs=1e-3)
    assert terms["exposed_comm"] == pytest.approx(it["iteration_exposed_comm_us"], abs=1e-3)
    assert sum(terms.values()) == pytest.approx(it["iteration_us"], abs=1e-3)
    assert dict(r["by_class"])["communication"] > 0
    assert all(label.startswith(f"rank {it['rank']} ") for label, _ in r["by_lane"])


@pytest.mark.parametrize(
    "query",
    [
        "window?start=5&end=1",
        "window?start=x&end=10",
        "window?start=0&end=10&px=999999",
        "window?start=0&end=10&ranks=a",
        "task?id=-1",
        "task?id=99999999",
        "range?start=0",
        "search?q=" + "x" * 2001,
    ],
)
def test_bad_parameters_answer_400_with_the_security_headers(dp4, query):
    _, client, _ = dp4
    r = client.get("/api/timeline/" + query)
    assert r.status_code == 400 and r.mimetype == "text/plain"
    assert "Content-Security-Policy" in r.headers and r.headers["X-Content-Type-Options"] == "nosniff"


def test_only_the_named_assets_and_routes_are_served(dp4):
    _, client, _ = dp4
    for part in ("1_data", "2_draw", "3_ui"):
        assert client.get(f"/assets/tv_timeline_{part}.js").status_code == 200
    assert client.get("/assets/other.js").status_code == 404
    assert client.get("/api/timeline/other").status_code == 404
    assert client.post("/api/timeline/meta").status_code in (404, 405)


def test_warm_builds_the_model_in_the_background_once():
    """`traceview serve` warms the timeline: the model is built by the thread, and a request
    afterwards reuses it (the same object) instead of building another."""
    from traceview.dashboards.timeline.api import TimelineApi

    api = TimelineApi(shared_sample("dp4_nccl"))
    api.warm().join(timeout=120)
    built = api._model
    assert built is not None
    assert api.meta({})["ranks"] == [0, 1, 2, 3]
    assert api.model is built and api._overlays is not None
    assert len(built._unions) == 3  # a range selection finds its unions merged


def test_a_failed_warm_is_reported_by_the_first_request(monkeypatch):
    from traceview.dashboards.timeline import api as timeline_api

    api = timeline_api.TimelineApi(shared_sample("dp4_nccl"))
    monkeypatch.setattr(timeline_api.TimelineModel, "from_trace", classmethod(lambda cls, t: 1 / 0))
    api.warm().join(timeout=120)  # no exception escapes the thread
    assert api._model is None
    with pytest.raises(ZeroDivisionError):
        api.meta({})
