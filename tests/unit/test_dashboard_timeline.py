"""The timelines, no browser here.

- `TimelineData` (dashboards/timeline_page.py), the plotly timeline of the HTML report and the
  notebook's `t.plot.timeline`: level of detail from the window, step windows, hover text.
- The dashboard's Timeline page, the canvas timeline: its layout and URL link through Dash's HTTP
  endpoints, and what the old server-rendered page offered, now through the canvas's JSON routes
  (dashboards/timeline/api.py): task details with the launch delay, two ranks, host threads, the
  filter bar's class and name filters, kernel names kept as text. (The browser side:
  tests/browser/test_browser_timeline.py.)
"""

from __future__ import annotations

import numpy as np
import orjson
import polars as pl
import pytest

import traceview as tv
from tests.conftest import SAMPLES, timeline_segments
from tests.support.callbacks import dependency, request
from tests.support.hostile import HOSTILE, hostile_trace  # noqa: F401  (fixture)
from tests.support.samples import shared_sample
from tests.support.timeline import frame
from traceview.analysis import timeline as tl
from traceview.analysis.gaps import launch_delays
from traceview.dashboards.app import create_app
from traceview.dashboards.colors import CLASS_COLORS
from traceview.dashboards.timeline import api as timeline_api
from traceview.dashboards.timeline.model import TimelineModel
from traceview.dashboards.timeline_page import LIMIT, X_TITLE, TimelineData, hover_safe
from traceview.summary import build_summary

MS = 1_000_000


@pytest.fixture(scope="module")
def dp4(tmp_path_factory):
    trace = tv.load(SAMPLES / "dp4_nccl", cache_dir=tmp_path_factory.mktemp("cache"))
    return trace, TimelineData.from_trace(trace)


class FakeTrace:
    """Just what `TimelineData.from_trace` needs: classified tasks and steps."""

    source = "synthetic"

    def __init__(self, tasks, steps):
        self._tasks, self.steps = tasks, steps

    def classified_tasks(self):
        return self._tasks


@pytest.fixture(scope="module")
def big():
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
    return TimelineData.from_trace(FakeTrace(tasks, steps)), tasks


def segments(fig):
    """Task segments drawn: each is [start, end, None] in one Scattergl lines trace."""
    total = 0
    for trace in fig.data:
        assert trace.type == "scattergl" and trace.mode == "lines"
        total += len(timeline_segments(trace))
    return total


# ---- TimelineData: the report's and the notebook's plotly timeline ----


def test_full_range_of_a_big_profile_is_binned(big):
    data, tasks = big
    fig, note, mode = data.figure(*data.full_window())
    (heat,) = fig.data
    assert mode == "binned" and heat.type == "heatmap" and heat.zmin == 0 and heat.zmax == 1
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
    # one rank holds 15,000 tasks, under the limit: the same window is drawn raw, rank 1 only
    fig, _, mode = data.figure(*data.full_window(), ranks=[1])
    assert mode == "raw" and segments(fig) == tasks.filter(pl.col("rank") == 1).height
    assert {y for t in fig.data for y in t.y if y} == {"rank 1 · stream 7", "rank 1 · stream 8"}


def test_zoomed_big_profile_is_raw_and_never_over_the_limit(big):
    data, tasks = big
    t0 = int(tasks["start_ns"].min())
    fig, note, mode = data.figure(t0 + 100 * MS, t0 + 101 * MS)
    want = tasks.filter((pl.col("start_ns") < t0 + 101 * MS) & (pl.col("end_ns") > t0 + 100 * MS)).height
    assert mode == "raw" and 0 < segments(fig) == want <= LIMIT and note.startswith(f"raw: {want:,} tasks")
    for trace in fig.data:
        assert trace.line.color == CLASS_COLORS[trace.name]


def test_narrow_range_on_dp4_draws_each_task(dp4):
    trace, data = dp4
    tasks = tl.sort_tasks(trace.classified_tasks())
    t0 = int(tasks["start_ns"].min())
    assert data.t0_ns == t0 and data.tasks.height == tasks.height
    lo, hi = 50.0, 52.5  # ms from the first task start
    s, e = t0 + int(lo * 1e6), t0 + int(hi * 1e6)
    fig, note, _ = data.figure(s, e)
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
    # whole trace: 1,608 tasks are few enough to be raw
    fig, _, _ = data.figure(*data.full_window())
    assert segments(fig) == tasks.height and fig.layout.xaxis.range[0] == 0


def test_step_window_of_the_selected_ranks(dp4):
    """The report's raw windows and `t.plot.timeline(step=...)` show a step's device window."""
    trace, data = dp4
    rows = trace.steps.filter(pl.col("step") == 4)
    assert data.step_window(4) == (int(rows["device_start_ns"].min()), int(rows["device_end_ns"].max()))
    one = rows.filter(pl.col("rank") == 2)
    window = data.step_window(4, [2])
    assert window == (int(one["device_start_ns"][0]), int(one["device_end_ns"][0]))
    fig, _, _ = data.figure(*window, ranks=[2])
    assert tuple(fig.layout.xaxis.range) == pytest.approx(tuple(data.to_ms(t) for t in window))
    assert {y.split(" · ")[0] for t in fig.data for y in t.y if y} == {"rank 2"}
    pair = data.step_window(4, [0, 2])  # both ranks' step: first start to last end
    both = rows.filter(pl.col("rank").is_in([0, 2]))
    assert pair == (int(both["device_start_ns"].min()), int(both["device_end_ns"].max()))


def test_timeline_data_without_steps_or_tasks():
    data = TimelineData(frame([]))
    fig, note, mode = data.figure(*data.full_window())
    assert mode == "empty" and note == "no device tasks" and data.step_window(1) is None


def test_whole_trace_view_is_memoised_per_rank_selection(big):
    """Zooming back out reuses the whole-trace bins of that rank selection; other windows and
    other selections are computed afresh and give what timeline.view gives."""
    data, tasks = big
    data._full_views.clear()  # the data is shared with earlier tests of this module
    first, note1, mode1 = data.figure(*data.full_window())
    again, note2, _ = data.figure(*data.full_window())
    assert list(data._full_views) == [((), LIMIT)] and note1 == note2 and mode1 == "binned"
    assert again.data[0].z == first.data[0].z
    _, _, mode = data.figure(*data.full_window(), ranks=[1])
    assert mode == "raw" and set(data._full_views) == {((), LIMIT), ((1,), LIMIT)}
    want = tl.view(data.tasks, data.lanes, *data.full_window(), limit=LIMIT, bins=800)
    assert want["n_tasks"] == tasks.height and want["mode"] == "binned"


def test_hostile_kernel_name_stays_text_in_the_plotly_hover(hostile_trace):
    data = TimelineData.from_trace(hostile_trace)
    fig, _, _ = data.figure(*data.full_window())
    texts = [h for t in fig.data for h in t.hovertext if h]
    assert any(hover_safe(HOSTILE) in h for h in texts)
    assert not any("<img" in h or "</script>" in h for h in texts)  # entities only in the hover label


# ---- the dashboard's Timeline page: the canvas timeline and its JSON routes ----


@pytest.fixture(scope="module")
def served(dp4):
    """The dashboard over dp4_nccl: (trace, test client, the canvas's meta, its origin in ns)."""
    trace, _ = dp4
    app = create_app(trace, build_summary(trace, details=False))
    client = app.server.test_client()
    meta = client.get("/api/timeline/meta").get_json()
    return trace, client, meta, int(meta["origin_ns"])


def _get(client, route: str, **params) -> dict:
    resp = client.get(f"/api/timeline/{route}", query_string=params)
    assert resp.status_code == 200, resp.data[:300]
    return resp.get_json()


def _items(meta: dict, d: dict, kind: str) -> pl.DataFrame:
    """The raw items of a window answer on lanes of `kind`: lane, id, rank, start, end, name, cls."""
    raw = pl.DataFrame({k: d["raw"][k] for k in ("lane", "id", "start", "dur", "name", "cls")})
    lanes = pl.DataFrame({"lane": meta["lanes"]["lane"], "rank": meta["lanes"]["rank"], "kind": meta["lanes"]["kind"]})
    return (
        raw.join(lanes, on="lane")
        .filter(pl.col("kind") == kind)
        .with_columns(
            (pl.col("start") + pl.col("dur")).alias("end"),
            pl.col("name").map_elements(lambda i: d["names"][i], pl.String),
            pl.col("cls").map_elements(lambda i: d["classes"][i], pl.String),
        )
    )


def _overlapping(frame: pl.DataFrame, s: int, e: int) -> pl.DataFrame:
    zero = (pl.col("end_ns") == pl.col("start_ns")) & (pl.col("start_ns") >= s)
    return frame.filter((pl.col("start_ns") < e) & ((pl.col("end_ns") > s) | zero))


def test_timeline_page_is_the_canvas_over_http(served):
    _, client, _, _ = served
    page = client.get("/timeline?rank=1")
    assert page.status_code == 200 and b"<title>traceview</title>" in page.data
    layout = client.get("/_dash-layout").data
    assert b'"nav-timeline"' in layout and b'"\\u002ftimeline"' in layout and b'"tvtl-root"' in layout
    assert b'"tl-graph"' not in layout and b"Server-rendered" not in layout  # the plotly timeline is gone
    deps = orjson.loads(client.get("/_dash-dependencies").data)
    (to_canvas,) = [d for d in deps if d["output"] == "tvtl-url.data"]  # the URL reaches the canvas
    assert to_canvas["clientside_function"] and [i["id"] for i in to_canvas["inputs"]] == ["url"]
    assert not [d for d in deps if "tl-" in d["output"].replace("tvtl-", "")]
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
    assert body["filters"]["style"].get("display") != "none"  # the filter bar applies to the timeline


def test_details_of_a_clicked_task(served):
    trace, client, meta, origin = served
    d = _get(client, "window", start=20 * MS, end=21 * MS, px=3000, ranks="3")
    items = _items(meta, d, "device")
    assert items.height and set(items["rank"]) == {3}
    item = items.filter(pl.col("cls") == "gemm").row(0, named=True)
    t = _get(client, "task", id=item["id"])
    fields = dict(t["fields"])
    (row,) = (
        trace.classified_tasks()
        .filter(
            (pl.col("rank") == 3)
            & (pl.col("start_ns") == origin + item["start"])
            & (pl.col("end_ns") == origin + item["end"])
            & (pl.col("name") == item["name"])
        )
        .to_dicts()
    )
    assert fields["name"] == row["name"] and fields["class"] == row["compute_class"] == "gemm"
    assert (
        fields["kind"] == row["kind"] and fields["rank"] == "3" and fields["lane"].startswith(f"stream {row['stream']}")
    )
    assert fields["step"] == str(row["step"]) and fields["correlation"] == str(row["correlation"])
    assert fields["launch op"] == str(row["launch_op"]) and str(row["start_ns"]) in fields["start"]
    assert fields["duration"] == f"{row['dur_ns'] / 1000:.3f} µs"
    assert all(isinstance(v, str) for v in fields.values())


def test_details_show_the_launch_delay(served, dp4):
    trace, client, meta, origin = served
    _, data = dp4
    row = launch_delays(trace.device_tasks, trace.host_events).filter(pl.col("rank") == 0).row(10, named=True)
    # the report's and the notebook's hover show it ...
    fig, _, _ = data.figure(row["start_ns"] - 1000, row["start_ns"] + 10_000, ranks=[0])
    assert any(f"launch delay: {row['launch_delay_us']:.3f} µs" in h for t in fig.data for h in t.hovertext if h)
    # ... and the canvas's details of the task
    s = row["start_ns"] - origin
    d = _get(client, "window", start=s, end=s + 1, px=100, ranks="0")
    (item,) = _items(meta, d, "device").filter(pl.col("start") == s)["id"]
    assert dict(_get(client, "task", id=item)["fields"])["launch delay"] == f"{row['launch_delay_us']:.3f} µs"


def test_two_ranks_each_with_exactly_its_tasks_in_the_window(served):
    """?compare=2,0 asks for ranks 2 and 0 (the browser draws rank 2's lanes above rank 0's, on one
    time axis: tests/browser/test_browser_timeline.py): each rank's device tasks of the window come whole."""
    trace, client, meta, origin = served
    s, e = 40 * MS, 45 * MS
    d = _get(client, "window", start=s, end=e, px=3000, ranks="2,0")
    items = _items(meta, d, "device")
    tasks = _overlapping(trace.classified_tasks(), origin + s, origin + e)
    for rank in (2, 0):
        want = tasks.filter(pl.col("rank") == rank).height
        assert want > 0 and items.filter(pl.col("rank") == rank).height == want
    assert set(_items(meta, d, "steps")["rank"]) == {0, 2} and set(items["rank"]) == {0, 2}


def test_two_ranks_of_a_big_profile_stay_bounded(big):
    """The old page's limit (20,000 raw tasks, then bins) is per lane on the canvas: a lane sends
    its tasks when at most `px` overlap the window, else bins stacked by class; so an answer holds
    at most px raw tasks per lane, and each raw lane holds all of its tasks in the window."""
    _, tasks = big
    device = tasks.select(
        "rank",
        "start_ns",
        "end_ns",
        "name",
        pl.col("compute_class").alias("cls"),
        "kind",
        pl.col("stream").cast(pl.String).alias("key"),
        pl.lit("device").alias("lane_kind"),
        (pl.lit("stream ") + pl.col("stream").cast(pl.String)).alias("label"),
        pl.lit(0, pl.Int64).alias("depth"),
        "stream",
        "step",
        "correlation",
        "launch_op",
        pl.lit(None, pl.Int64).alias("launch_delay_ns"),
    )
    extra = {"lane_kind": pl.String, "label": pl.String, "depth": pl.Int64}
    host = pl.DataFrame(
        schema={
            **device.select("rank", "start_ns", "end_ns", "name", "cls", "kind", "key").schema,
            **extra,
            "stream": pl.Int64,
            "correlation": pl.Int64,
        }
    )
    tracks = host.drop("stream", "correlation")
    api = timeline_api.TimelineApi(None)
    api._model = TimelineModel(device, host, tracks)
    origin = api.model.origin_ns
    for start, end, px in ((0, 300 * MS, 1000), (50 * MS, 150 * MS, 1000), (100 * MS, 101 * MS, 1000)):
        d = api.window({"start": str(start), "end": str(end), "px": str(px), "ranks": "1,0"})
        raw = pl.DataFrame({"lane": d["raw"]["lane"]}).group_by("lane").len()
        assert raw["len"].max() is None or raw["len"].max() <= px
        inside = _overlapping(tasks, origin + start, origin + end)
        lanes = api.model.lanes
        for lane, rank, key in zip(lanes["lane"], lanes["rank"], lanes["key"]):
            want = inside.filter((pl.col("rank") == rank) & (pl.col("stream") == int(key))).height
            got = raw.filter(pl.col("lane") == lane)["len"].sum()
            assert (lane in d["binned_lanes"]) == (want > px) and got == (0 if want > px else want)
    assert d["binned_lanes"] == [] and len(d["raw"]["id"]) > 0  # 1 ms: every task drawn


def test_host_thread_lanes_with_host_on(served):
    trace, client, meta, origin = served
    s, e = 30 * MS, 31 * MS
    off = _get(client, "window", start=s, end=e, px=3000, ranks="1")
    assert _items(meta, off, "host").height == 0  # host lanes only with host=1
    d = _get(client, "window", start=s, end=e, px=3000, ranks="1", host="1")
    host = _items(meta, d, "host")
    want = _overlapping(trace.host_events.filter(pl.col("rank") == 1), origin + s, origin + e)
    assert host.height == want.height > 0 and set(host["rank"]) == {1}
    assert set(host["cls"]) <= {"operator", "runtime", "annotation", "python", "other", "host"}
    labels = {meta["lanes"]["label"][lane] for lane in host["lane"]}
    tids = {str(t) for t in want["tid"].unique()}
    assert {label.split(" · ")[0].removeprefix("thread ") for label in labels} == tids
    # the details of a host event
    item = host.row(0, named=True)
    fields = dict(_get(client, "task", id=item["id"])["fields"])
    assert fields["name"] == item["name"] and fields["lane"].startswith("thread ") and fields["rank"] == "1"


def test_class_and_name_filters_keep_only_matching_device_tasks(served):
    """The filter bar's class= and q= (here gemm and XMMA) reach the window, search and range
    routes as cls and name: device tasks of those classes whose name contains the text
    (case-insensitive), on the same lanes; the steps, terms and host lanes stay whole."""
    trace, client, meta, origin = served
    end = meta["end"]
    tasks = trace.classified_tasks()
    want = tasks.filter((pl.col("compute_class") == "gemm") & pl.col("name").str.to_lowercase().str.contains("xmma"))
    assert 0 < want.height < tasks.height
    whole = _get(client, "window", start=0, end=end, px=8000, host="1")
    d = _get(client, "window", start=0, end=end, px=8000, host="1", cls="gemm", name="XMMA")
    assert not d["binned_lanes"]
    dev = _items(meta, d, "device")
    assert dev.height == want.height and set(dev["cls"]) == {"gemm"}
    assert sorted(dev["start"] + origin) == sorted(want["start_ns"])
    for kind in ("steps", "terms", "host"):
        assert _items(meta, d, kind).height == _items(meta, whole, kind).height > 0
    # several classes, a name alone
    two = _items(meta, _get(client, "window", start=0, end=end, px=8000, cls="gemm,communication"), "device")
    assert two.height == tasks.filter(pl.col("compute_class").is_in(["gemm", "communication"])).height
    nccl = _items(meta, _get(client, "window", start=0, end=end, px=8000, name="nccl"), "device")
    assert nccl.height == tasks.filter(pl.col("name").str.to_lowercase().str.contains("nccl")).height > 0
    # the search finds within the filtered tasks
    assert _get(client, "search", q="xmma", cls="gemm,communication")["count"] == want.height
    assert _get(client, "search", q="nccl", cls="gemm")["count"] == 0
    # the range totals count only them; the iteration terms do not change
    r = _get(client, "range", start=0, end=end, cls="gemm", name="xmma")
    full = _get(client, "range", start=0, end=end)
    assert [c for c, _ in r["by_class"]] == ["gemm"] and r["by_term"] == full["by_term"]
    assert dict(r["by_class"])["gemm"] <= dict(full["by_class"])["gemm"]
    # the lanes are those of the unfiltered view
    assert _get(client, "meta") == meta
    nothing = _get(client, "window", start=0, end=end, px=1000, cls="no-such-class")
    assert _items(meta, nothing, "device").height == 0 and _items(meta, nothing, "steps").height > 0


def test_filtered_items_are_kept_for_the_last_few_filter_sets(served):
    trace, _, _, _ = served
    api = timeline_api.TimelineApi(trace)
    items, first = api.filtered_device({"cls": "gemm"})
    assert items.height == trace.classified_tasks().filter(pl.col("compute_class") == "gemm").height
    assert api.filtered_device({"cls": "gemm", "name": " "})[1] is first  # a blank name is no filter
    assert api.filtered_device({"cls": ",gemm,"})[1] is first
    assert api.filtered_device({})[0] is api.model.items["device"]
    for i in range(timeline_api.FILTERS_KEPT):
        api.filtered_device({"name": f"n{i}"})
    assert api.filtered_device({"cls": "gemm"})[1] is not first  # evicted, built again
    assert len(api._filtered) == timeline_api.FILTERS_KEPT


@pytest.mark.parametrize(
    "query",
    [
        "window?start=0&end=10&name=" + "x" * 2001,
        "window?start=0&end=10&cls=" + ",".join(f"c{i}" for i in range(101)),
        "search?q=a&cls=" + "c" * 2001,
        "range?start=0&end=10&name=" + "y" * 3000,
        "overlays?start=0&end=" + str(2**60 + 1),
    ],
)
def test_oversized_filters_answer_400(served, query):
    _, client, _, _ = served
    r = client.get("/api/timeline/" + query)
    assert r.status_code == 400 and r.mimetype == "text/plain"


def test_a_window_beyond_int64_once_the_origin_is_added_answers_400():
    """A profile on a clock near Int64's end (a hostile or broken trace): a span that would leave
    Int64 when its origin is added back is refused, not a server error."""
    origin = 2**63 - 2**59
    assert timeline_api._bounded_span({"start": "0", "end": str(2**58)}, origin) == (origin, origin + 2**58)
    with pytest.raises(timeline_api.BadRequest, match="out of range"):
        timeline_api._bounded_span({"start": "0", "end": str(2**60)}, origin)
    with pytest.raises(timeline_api.BadRequest, match="greater"):
        timeline_api._bounded_span({"start": "5", "end": "5"}, 0)


def test_a_whole_kernel_name_filters_and_is_measured_before_lowering(served):
    """A kernel's whole name (hundreds of characters) is a name filter that keeps that kernel
    only; a name as long as the limit is accepted even where lower-casing lengthens it."""
    trace, client, meta, _ = served
    longest = max(trace.device_tasks["name"].unique().to_list(), key=len)
    d = _get(client, "window", start=0, end=meta["end"], px=4000, name=longest)
    assert set(_items(meta, d, "device")["name"].to_list()) == {longest}
    _get(client, "search", q="İ" * 2000)  # 2,000 characters, 4,000 once lower-cased


def test_a_filter_that_keeps_nothing_on_a_trace_without_steps_answers_empty():
    """No device task kept and no steps/terms track: an empty answer, not a server error."""
    trace = shared_sample("dp4_nccl")
    api = timeline_api.TimelineApi(trace)
    m = api.model
    m.index.pop("tracks", None)  # as for a trace without steps
    d = api.window({"start": "0", "end": str(m.end_ns - m.origin_ns), "cls": "no-such-class"})
    assert len(d["raw"]["id"]) == 0 and len(d["bins"]["lane"]) == 0


def test_hostile_kernel_name_stays_text_in_the_canvas_routes(hostile_trace):
    """The name goes out as a JSON string (the browser puts it on the canvas with fillText and in
    the tooltip and details with textContent: tests/browser/test_browser_timeline.py, test_security.py)."""
    app = create_app(hostile_trace, build_summary(hostile_trace, details=False))
    client = app.server.test_client()
    meta = client.get("/api/timeline/meta").get_json()
    d = _get(client, "window", start=0, end=meta["end"], px=4000)
    assert HOSTILE in d["names"]
    item = next(i for i, n in zip(d["raw"]["id"], d["raw"]["name"]) if d["names"][n] == HOSTILE)
    resp = client.get(f"/api/timeline/task?id={item}")
    assert resp.mimetype == "application/json" and dict(resp.get_json()["fields"])["name"] == HOSTILE
    assert _get(client, "search", q="onerror")["count"] >= 1
    assert HOSTILE.encode() not in client.get("/timeline").data
