"""The dashboard's Timeline page: level of detail from the zoom window, jump to step, task details,
served through Dash's HTTP endpoints, kernel names kept as text. No browser here."""

from __future__ import annotations

import json

import numpy as np
import orjson
import plotly
import polars as pl
import pytest
from dash.exceptions import PreventUpdate

import traceview as tv
from tests.conftest import SAMPLES, timeline_segments
from tests.support.callbacks import dependency, request
from tests.support.timeline import frame
from tests.test_dashboard import HOSTILE, hostile_trace  # noqa: F401  (fixture)
from traceview.analysis import timeline as tl
from traceview.dashboards.app import app_for
from traceview.dashboards.colors import CLASS_COLORS
from traceview.dashboards.state import DashboardState
from traceview.dashboards.timeline_page import LIMIT, X_TITLE, TimelineData, hover_safe
from traceview.dashboards.timeline_view import timeline_details, update_timeline
from traceview.summary import build_summary

T = "/timeline"


class Dashboard:
    """One dashboard as the tests drive it: its state, the Dash app over it, and the timeline's
    module-level callbacks bound to that state."""

    def __init__(self, trace, summary: dict):
        self.state = DashboardState(trace, summary)
        self.app = app_for(self.state)
        self.server = self.app.server

    def update_timeline(self, *args, **kwargs):
        return update_timeline(self.state, *args, **kwargs)

    def timeline_data(self):
        return self.state.timeline_data()

    def timeline_details(self, click):
        return timeline_details(self.state, click)


@pytest.fixture(scope="module")
def dp4(tmp_path_factory):
    trace = tv.load(SAMPLES / "dp4_nccl", cache_dir=tmp_path_factory.mktemp("cache"))
    return trace, Dashboard(trace, build_summary(trace))


class FakeTrace:
    """Just what the timeline needs: classified tasks and steps."""

    source = "synthetic"

    def __init__(self, tasks, steps):
        self._tasks, self.steps = tasks, steps

    def classified_tasks(self):
        return self._tasks


@pytest.fixture(scope="module")
def big_app():
    n, ranks, streams = 30_000, 2, 2
    rng = np.random.default_rng(0)
    start = np.sort(rng.integers(0, 300_000_000, n)).astype(np.int64)  # 300 ms
    dur = rng.integers(1_000, 20_000, n).astype(np.int64)
    classes = ["gemm", "attention", "communication", "elementwise"]
    tasks = pl.DataFrame(
        {
            "rank": np.arange(n) % ranks,
            "stream": (np.arange(n) // ranks) % streams + 7,
            "name": [f"k{i}" for i in range(n)],
            "kind": "kernel",
            "start_ns": start + 10**15,
            "end_ns": start + dur + 10**15,
            "dur_ns": dur,
            "step": (start // 100_000_000).astype(np.int64),
            "correlation": np.arange(n),
            "launch_op": "aten::mm",
            "compute_class": [classes[i % 4] for i in range(n)],
        }
    )
    steps = pl.DataFrame(
        {
            "rank": [0, 0, 0],
            "step": [0, 1, 2],
            "device_start_ns": [10**15 + k * 100_000_000 for k in range(3)],
            "device_end_ns": [10**15 + (k + 1) * 100_000_000 for k in range(3)],
        }
    )
    summary = {
        "source": "synthetic",
        "ranks": [
            {
                "rank": r,
                "device": None,
                "steps": [{"step": s} for s in range(3)],
                "compute_classes": [],
                "long_steps": [],
            }
            for r in range(ranks)
        ],
    }
    return Dashboard(FakeTrace(tasks, steps), summary), tasks


def segments(fig):
    """Task segments drawn: each is [start, end, None] in one Scattergl lines trace."""
    total = 0
    for trace in fig.data:
        assert trace.type == "scattergl" and trace.mode == "lines"
        total += len(timeline_segments(trace))
    return total


def test_full_range_of_a_big_profile_is_binned(big_app):
    app, tasks = big_app
    fig, note = app.update_timeline(T, "", {"xaxis.autorange": True}, None, 0, trigger="tl-graph")
    (heat,) = fig.data
    assert heat.type == "heatmap" and heat.zmin == 0 and heat.zmax == 1
    assert list(heat.y) == ["rank 0 · stream 7", "rank 0 · stream 8", "rank 1 · stream 7", "rank 1 · stream 8"]
    assert len(heat.z) == 4 and len(heat.z[0]) == 800
    assert all(0 <= v <= 1 for row in heat.z for v in row) and max(max(r) for r in heat.z) > 0
    assert note == f"binned: {tasks.height:,} tasks in view, zoom in for individual tasks"
    assert "top class" in heat.hovertemplate and heat.customdata[0][0][0] in (*CLASS_COLORS, "idle")
    assert fig.layout.xaxis.title.text == X_TITLE
    assert tuple(fig.layout.xaxis.range) == (
        0.0,
        pytest.approx(int(tasks["end_ns"].max() - tasks["start_ns"].min()) / 1e6),
    )
    # the same window through an explicit relayout range, and the rank filter from the query string
    full_ms = fig.layout.xaxis.range[1]
    fig, _ = app.update_timeline(
        T, "?rank=1", {"xaxis.range[0]": 0, "xaxis.range[1]": full_ms}, None, 0, trigger="tl-graph"
    )
    # one rank holds 15,000 tasks, under the limit: the same window is now drawn raw, rank 1 only
    assert segments(fig) == tasks.filter(pl.col("rank") == 1).height
    assert {y for t in fig.data for y in t.y if y} == {"rank 1 · stream 7", "rank 1 · stream 8"}


def test_zoomed_big_profile_is_raw_and_never_over_the_limit(big_app):
    app, tasks = big_app
    fig, note = app.update_timeline(T, "", {"xaxis.range[0]": 100, "xaxis.range[1]": 101}, None, 0, trigger="tl-graph")
    t0 = int(tasks["start_ns"].min())
    want = tasks.filter((pl.col("start_ns") < t0 + 101_000_000) & (pl.col("end_ns") > t0 + 100_000_000)).height
    assert 0 < segments(fig) == want <= LIMIT and note.startswith(f"raw: {want:,} tasks")
    for trace in fig.data:
        assert trace.line.color == CLASS_COLORS[trace.name]


def test_narrow_range_on_dp4_draws_each_task(dp4):
    trace, app = dp4
    data = app.timeline_data()
    tasks = tl.sort_tasks(trace.classified_tasks())
    t0 = int(tasks["start_ns"].min())
    assert data.t0_ns == t0 and data.tasks.height == tasks.height
    lo, hi = 50.0, 52.5  # ms from the first task start
    fig, note = app.update_timeline(T, "", {"xaxis.range[0]": lo, "xaxis.range[1]": hi}, None, 0, trigger="tl-graph")
    s, e = t0 + int(lo * 1e6), t0 + int(hi * 1e6)
    want = tasks.filter(
        (pl.col("start_ns") < e)
        & ((pl.col("end_ns") > s) | ((pl.col("end_ns") == pl.col("start_ns")) & (pl.col("start_ns") >= s)))
    )
    assert 0 < segments(fig) == want.height and note.startswith(f"raw: {want.height} tasks")
    by_class = want.group_by("compute_class").len()
    assert {t.name: len(timeline_segments(t)) for t in fig.data} == dict(
        zip(by_class["compute_class"], by_class["len"])
    )
    assert tuple(fig.layout.xaxis.range) == pytest.approx((lo, hi))
    assert list(fig.layout.yaxis.categoryarray) == tl.lanes(tasks)["label"].to_list()
    # whole trace (initial load, reset): 1,608 tasks are few enough to be raw
    fig, note = app.update_timeline(T, "", None, None, 1, trigger="tl-reset")
    assert segments(fig) == tasks.height and fig.layout.xaxis.range[0] == 0
    # a relayout that does not move x (e.g. autosize) changes nothing
    with pytest.raises(PreventUpdate):
        app.update_timeline(T, "", {"autosize": True}, None, 0, trigger="tl-graph")
    with pytest.raises(PreventUpdate):
        app.update_timeline("/", "", None, None, 0, trigger="url")  # overview: no timeline work


def test_jump_to_step_sets_the_step_window(dp4):
    trace, app = dp4
    data = app.timeline_data()
    rows = trace.steps.filter(pl.col("step") == 4)
    fig, _ = app.update_timeline(T, "", None, 4, 0, trigger="tl-step")
    want = (data.to_ms(int(rows["device_start_ns"].min())), data.to_ms(int(rows["device_end_ns"].max())))
    assert tuple(fig.layout.xaxis.range) == pytest.approx(want)
    one = rows.filter(pl.col("rank") == 2)
    fig, _ = app.update_timeline(T, "?rank=2", None, 4, 0, trigger="tl-step")
    assert tuple(fig.layout.xaxis.range) == pytest.approx(
        (data.to_ms(int(one["device_start_ns"][0])), data.to_ms(int(one["device_end_ns"][0])))
    )
    assert {y.split(" · ")[0] for t in fig.data for y in t.y if y} == {"rank 2"}


def test_details_of_a_clicked_task(dp4):
    trace, app = dp4
    fig, _ = app.update_timeline(
        T, "?rank=3", {"xaxis.range[0]": 20, "xaxis.range[1]": 21}, None, 0, trigger="tl-graph"
    )
    gemm = next(t for t in fig.data if t.name == "gemm") if any(t.name == "gemm" for t in fig.data) else fig.data[0]
    key = gemm.customdata[0]
    panel = app.timeline_details({"points": [{"curveNumber": 0, "pointNumber": 0, "customdata": key}]})
    text = {td.id.removeprefix("tl-detail-"): td.children for td in _cells(panel)}
    rank, stream, start, end = key.split("|")
    (row,) = (
        trace.classified_tasks()
        .filter(
            (pl.col("rank") == int(rank))
            & (pl.col("stream") == int(stream))
            & (pl.col("start_ns") == int(start))
            & (pl.col("end_ns") == int(end))
        )
        .to_dicts()
    )
    assert text["name"] == row["name"] and text["class"] == row["compute_class"] == gemm.name
    assert text["kind"] == row["kind"] and text["rank"] == "3" and text["stream"] == str(row["stream"])
    assert text["step"] == str(row["step"]) and text["correlation"] == str(row["correlation"])
    assert text["launch_op"] == str(row["launch_op"]) and str(row["start_ns"]) in text["start"]
    assert text["duration"] == f"{row['dur_ns'] / 1000:.3f} µs"
    assert all(isinstance(v, str) for v in text.values())
    assert "Click a task" in str(app.timeline_details(None))


def _cells(children):
    out = []
    stack = list(children)
    while stack:
        c = stack.pop()
        if getattr(c, "id", "") and str(c.id).startswith("tl-detail-"):
            out.append(c)
        kids = getattr(c, "children", None)
        if isinstance(kids, list):
            stack += kids
        elif kids is not None and not isinstance(kids, str):
            stack.append(kids)
    return out


def test_timeline_page_over_http(dp4):
    _, app = dp4
    client = app.server.test_client()
    page = client.get("/timeline?rank=1")
    assert page.status_code == 200 and b"<title>traceview</title>" in page.data
    layout = client.get("/_dash-layout").data
    assert b'"nav-timeline"' in layout and b'"\\u002ftimeline"' in layout and b'"tl-graph"' in layout
    dep = dependency(client, "tl-graph.figure")
    inputs = [
        {"id": "url", "property": "pathname", "value": "/timeline"},
        {"id": "url", "property": "search", "value": "?rank=1"},
        {"id": "tl-window", "property": "data", "value": {"xaxis.range[0]": 30, "xaxis.range[1]": 32, "_seq": 1.5}},
        {"id": "tl-step", "property": "value", "value": None},
        {"id": "tl-reset", "property": "n_clicks", "value": 0},
    ]
    payload = request(dep, inputs, ["tl-window.data"], state=[])
    resp = client.post("/_dash-update-component", json=payload)
    assert resp.status_code == 200, resp.data[:500]
    body = orjson.loads(resp.data)["response"]
    fig = body["tl-graph"]["figure"]
    assert fig["layout"]["xaxis"]["range"] == pytest.approx([30, 32])
    assert all(t["type"] == "scattergl" for t in fig["data"]) and body["tl-note"]["children"].startswith("raw: ")
    # the page switch keeps the query string in the navigation
    dep = dependency(client, "page-timeline.style")
    inputs = [
        {"id": "url", "property": "pathname", "value": "/timeline"},
        {"id": "url", "property": "search", "value": "?rank=1"},
    ]
    payload = request(dep, inputs, ["url.pathname"], state=[])
    body = orjson.loads(client.post("/_dash-update-component", json=payload).data)["response"]
    assert body["page-timeline"]["style"] == {} and body["page-overview"]["style"] == {"display": "none"}
    assert body["nav-overview"]["href"] == "/?rank=1" and body["nav-timeline"]["href"] == "/timeline?rank=1"


def test_hostile_kernel_name_stays_text(hostile_trace):  # noqa: F811
    app = Dashboard(hostile_trace, build_summary(hostile_trace))
    fig, _ = app.update_timeline(T, "", None, None, 0, trigger="url")
    texts = [h for t in fig.data for h in t.hovertext if h]
    assert any(hover_safe(HOSTILE) in h for h in texts)
    assert not any("<img" in h or "</script>" in h for h in texts)  # entities only in the hover label
    key = next(c for t in fig.data for c, h in zip(t.customdata, t.hovertext) if h and hover_safe(HOSTILE) in h)
    panel = app.timeline_details({"points": [{"customdata": key}]})
    (name,) = [c for c in _cells(panel) if c.id == "tl-detail-name"]
    assert name.children == HOSTILE  # a text child of a <td>: React renders it as text
    dumped = json.dumps([c.to_plotly_json() for c in panel], cls=plotly.utils.PlotlyJSONEncoder)
    assert "dangerously" not in dumped.lower()
    assert HOSTILE.encode() not in app.server.test_client().get("/timeline").data


def test_timeline_data_without_steps_or_tasks():
    data = TimelineData(frame([]))
    fig, note, mode = data.figure(*data.full_window())
    assert mode == "empty" and note == "no device tasks" and data.step_window(1) is None
    assert data.find("x|y") is None and data.window_from_relayout({"xaxis.range[0]": "a", "xaxis.range[1]": 1}) is None


def test_whole_trace_view_is_memoised_per_rank_selection(big_app):
    """Zooming back out reuses the whole-trace bins of that rank selection; other windows and
    other selections are computed afresh and give what timeline.view gives."""
    app, tasks = big_app
    data = app.timeline_data()
    data._full_views.clear()  # the app is shared with earlier tests of this module
    first, note1, mode1 = data.figure(*data.full_window())
    again, note2, _ = data.figure(*data.full_window())
    assert list(data._full_views) == [((), LIMIT)] and note1 == note2 and mode1 == "binned"
    assert again.data[0].z == first.data[0].z
    _, _, mode = data.figure(*data.full_window(), ranks=[1])
    assert mode == "raw" and set(data._full_views) == {((), LIMIT), ((1,), LIMIT)}
    want = tl.view(data.tasks, data.lanes, *data.full_window(), limit=LIMIT, bins=800)
    assert want["n_tasks"] == tasks.height and want["mode"] == "binned"


def _rank_of(label: str) -> int:
    return int(label.split(" · ")[0].removeprefix("rank "))


def test_compare_two_ranks_one_above_the_other(dp4):
    """?compare=2,0: rank 2's lanes in the top panel, rank 0's below, one x axis; each panel draws
    exactly its rank's tasks in the window, and a zoom on either panel moves both."""
    trace, app = dp4
    data = app.timeline_data()
    fig, note = app.update_timeline(T, "?compare=2,0&rank=1", None, None, 0, trigger="url")
    assert note.startswith("rank 2 above rank 0")
    top, bottom = list(fig.layout.yaxis.categoryarray), list(fig.layout.yaxis2.categoryarray)
    assert {_rank_of(y) for y in top} == {2} and {_rank_of(y) for y in bottom} == {0}
    assert fig.layout.xaxis2.matches == "x" or fig.layout.xaxis.matches == "x2"
    for t in fig.data:  # every segment sits in its rank's panel
        ranks = {_rank_of(y) for y in t.y if y}
        assert ranks == ({2} if t.yaxis == "y" else {0})
    assert sum(1 for t in fig.data if t.showlegend is not False) == len({t.name for t in fig.data})
    tasks = data.tasks
    lo, hi = 40.0, 45.0
    fig, note = app.update_timeline(
        T, "?compare=2,0", {"xaxis2.range[0]": lo, "xaxis2.range[1]": hi}, None, 0, trigger="tl-graph"
    )
    s, e = data.t0_ns + int(lo * 1e6), data.t0_ns + int(hi * 1e6)
    for rank, axis in ((2, "y"), (0, "y2")):
        want = tasks.filter((pl.col("rank") == rank) & (pl.col("start_ns") < e) & (pl.col("end_ns") > s)).height
        assert want > 0 and sum(len(timeline_segments(t)) for t in fig.data if t.yaxis == axis) == want
    assert tuple(fig.layout.xaxis.range) == pytest.approx((lo, hi))
    # jump to a step: the window spans both ranks' step
    fig, _ = app.update_timeline(T, "?compare=2,0", None, 4, 0, trigger="tl-step")
    rows = trace.steps.filter((pl.col("step") == 4) & pl.col("rank").is_in([0, 2]))
    assert tuple(fig.layout.xaxis.range) == pytest.approx(
        (data.to_ms(int(rows["device_start_ns"].min())), data.to_ms(int(rows["device_end_ns"].max())))
    )


def test_compare_view_of_a_big_profile_stays_under_the_limit(big_app):
    app, tasks = big_app
    fig, note = app.update_timeline(T, "?compare=1,0", None, None, 0, trigger="url")
    assert [t.type for t in fig.data] == ["heatmap", "heatmap"] and "binned" in note
    assert [t.showscale for t in fig.data] == [True, False]  # one colour bar for both panels
    fig, note = app.update_timeline(
        T, "?compare=1,0", {"xaxis.range[0]": 50, "xaxis.range[1]": 150}, None, 0, trigger="tl-graph"
    )
    drawn = sum(len(timeline_segments(t)) for t in fig.data if t.type == "scattergl")
    assert drawn <= LIMIT  # each panel holds LIMIT // 2 raw tasks at most
    t0 = int(tasks["start_ns"].min())
    for rank in (0, 1):
        hit = tasks.filter(
            (pl.col("rank") == rank) & (pl.col("start_ns") < t0 + 150_000_000) & (pl.col("end_ns") > t0 + 50_000_000)
        ).height
        assert (f"rank {rank} raw: {hit:,}" in note) == (hit <= LIMIT // 2)


def test_step_picker_clears_after_a_zoom_so_the_same_step_can_be_picked_again(dp4):
    _, app = dp4
    client = app.server.test_client()
    dep = dependency(client, "tl-graph.figure")
    assert "tl-step.value" in dep["output"]

    def post(changed, relayout, step):
        inputs = [
            {"id": "url", "property": "pathname", "value": "/timeline"},
            {"id": "url", "property": "search", "value": ""},
            {"id": "tl-graph", "property": "relayoutData", "value": relayout},
            {"id": "tl-step", "property": "value", "value": step},
            {"id": "tl-reset", "property": "n_clicks", "value": 0},
        ]
        payload = request(dep, inputs, [changed], state=[])
        resp = client.post("/_dash-update-component", json=payload)
        assert resp.status_code == 200, resp.data[:300]
        return orjson.loads(resp.data)["response"]

    body = post("tl-step.value", None, 4)
    assert "tl-step" not in body and "tl-graph" in body  # the picked step stays shown
    body = post("tl-graph.relayoutData", {"xaxis.range[0]": 1, "xaxis.range[1]": 2}, 4)
    assert body["tl-step"]["value"] is None  # zoomed away: the picker is free again


def test_class_and_name_filters_keep_only_matching_tasks(dp4):
    trace, app = dp4
    data = app.timeline_data()
    fig, note = app.update_timeline(T, "?class=gemm&q=XMMA", None, None, 0, trigger="url")
    want = data.tasks.filter((pl.col("compute_class") == "gemm") & pl.col("name").str.contains("xmma"))
    assert 0 < segments(fig) == want.height < data.tasks.height and {t.name for t in fig.data} == {"gemm"}
    assert "filtered: classes gemm, name contains 'XMMA'" in note
    assert list(fig.layout.yaxis.categoryarray) == data.lanes["label"].to_list()  # same lanes as unfiltered
    assert tuple(fig.layout.xaxis.range) == pytest.approx((0, data.to_ms(data.last_ns)))


def test_host_thread_lanes_above_the_device_lanes(dp4):
    trace, app = dp4
    data = app.timeline_data()
    fig, note = app.update_timeline(T, "?host=1&rank=1", None, None, 0, trigger="url")
    host_labels, dev_labels = list(fig.layout.yaxis.categoryarray), list(fig.layout.yaxis2.categoryarray)
    tids = trace.host_events.filter(pl.col("rank") == 1)["tid"].unique().sort().to_list()
    assert host_labels == [f"rank 1 · thread {t}" for t in tids]
    assert all(" · stream " in y for y in dev_labels) and note.startswith("rank 1 · host threads above rank 1 · device")
    host_events = trace.host_events.filter(pl.col("rank") == 1)
    first = min(int(trace.host_events["start_ns"].min()), data.first_ns)
    assert (
        fig.layout.xaxis.range[0] == pytest.approx(data.to_ms(first)) and first < data.first_ns
    )  # host events included
    lo, hi = 30.0, 31.0
    fig, _ = app.update_timeline(
        T, "?host=1&rank=1", {"xaxis2.range[0]": lo, "xaxis2.range[1]": hi}, None, 0, trigger="tl-graph"
    )
    s, e = data.t0_ns + int(lo * 1e6), data.t0_ns + int(hi * 1e6)
    want = host_events.filter((pl.col("start_ns") < e) & (pl.col("end_ns") > s)).height
    assert sum(len(timeline_segments(t)) for t in fig.data if t.yaxis == "y") == want > 0
    assert {t.name for t in fig.data if t.yaxis == "y"} <= {"operator", "runtime", "annotation", "python", "other"}
    # a click on a host event shows its details
    host_trace = next(t for t in fig.data if t.yaxis == "y")
    key = host_trace.customdata[0]
    assert key.startswith("host:")
    cells = {
        c.id.removeprefix("tl-detail-"): c.children
        for c in _cells(app.timeline_details({"points": [{"customdata": key}]}))
    }
    assert cells["thread"] in {str(t) for t in tids} and cells["name"] == host_trace.hovertext[0].split("<br>")[0]


def test_hover_and_details_show_the_launch_delay(dp4):
    trace, app = dp4
    data = app.timeline_data()
    from traceview.analysis.gaps import launch_delays

    row = launch_delays(trace.device_tasks, trace.host_events).filter(pl.col("rank") == 0).row(10, named=True)
    lo = data.to_ms(row["start_ns"]) - 0.001
    fig, _ = app.update_timeline(
        T, "?rank=0", {"xaxis.range[0]": lo, "xaxis.range[1]": lo + 0.01}, None, 0, trigger="tl-graph"
    )
    texts = [h for t in fig.data for h in t.hovertext if h]
    assert any(f"launch delay: {row['launch_delay_us']:.3f} µs" in h for h in texts)
    key = next(
        k
        for t in fig.data
        for k in t.customdata
        if k and k.split("|")[0] == "0" and k.split("|")[2] == str(row["start_ns"])
    )
    cells = {
        c.id.removeprefix("tl-detail-"): c.children
        for c in _cells(app.timeline_details({"points": [{"customdata": key}]}))
    }
    assert cells["launch delay"] == f"{row['launch_delay_us']:.3f} µs"
