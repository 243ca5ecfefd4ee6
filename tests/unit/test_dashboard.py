"""`traceview serve` and the dashboards package: figures carry the summary's numbers, the Dash app
builds and serves its layout, filters in the URL change the figures, trace text is escaped, and the
command picks a free port, fails cleanly on a bad path and serves a real profile.

No browser here (playwright tests of the rendered page come with the timeline page).

This file holds the topic's unit tests; the others are in tests/integration/test_dashboard.py.
"""

from __future__ import annotations

import json
import socket
import statistics

import orjson
import polars as pl
import pytest

import traceview as tv
from tests.conftest import SAMPLES
from tests.support.callbacks import dependency, layout_text, request
from tests.support.dashboard_shared import run_cli  # noqa: F401
from tests.support.hostile import HOSTILE, hostile_trace  # noqa: F401 - fixture
from tests.support.samples import shared_sample
from traceview.dashboards import figures
from traceview.dashboards.app import app_for, create_app
from traceview.dashboards.colors import CLASS_COLORS, TERM_COLORS
from traceview.dashboards.overview import update_overview
from traceview.dashboards.query import FILTER_WIDGETS, make_query, parse_compare, parse_filters, parse_query
from traceview.dashboards.server import pick_port, port_is_free
from traceview.dashboards.state import DashboardState
from traceview.summary import build_summary


@pytest.fixture(scope="module")
def dp4(tmp_path_factory):
    trace = tv.load(SAMPLES / "dp4_nccl", cache_dir=tmp_path_factory.mktemp("cache"))
    return trace, build_summary(trace)


@pytest.fixture(scope="module")
def dp4_state(dp4):
    return DashboardState(*dp4)


@pytest.fixture(scope="module")
def dp4_app(dp4_state):
    return app_for(dp4_state)


def by_meta(fig, meta):
    (trace,) = [t for t in fig.data if t.meta == meta]
    return trace


def test_breakdown_bars_are_the_summary_ms(dp4):
    _, doc = dp4
    fig = figures.step_breakdown_figure(doc)
    rows = [(r["rank"], s) for r in doc["ranks"] for s in r["steps"]]
    assert len(rows) == 12  # 4 ranks x 3 steps
    for term in ("overlapped", "communication_not_overlapped", "exposed_memcpy", "free"):
        bar = by_meta(fig, term)
        assert list(bar.y) == [s[f"{term}_us"] / 1000 for _, s in rows]
        assert bar.marker.color == TERM_COLORS[term]
    computing = by_meta(fig, "computing")
    overlapped = by_meta(fig, "overlapped")
    assert [c + o for c, o in zip(computing.y, overlapped.y)] == pytest.approx(
        [s["computing_us"] / 1000 for _, s in rows], abs=1e-9
    )
    assert list(computing.x[0]) == [f"rank {r}" for r, _ in rows]
    assert list(computing.x[1]) == [f"step {s['step']}" for _, s in rows]
    # the stack is the step's busy span: computing + exposed comm + exposed memcpy + free
    stacks = [sum(by_meta(fig, t).y[i] for t in figures.STACKED_TERMS) for i in range(len(rows))]
    spans = [
        (s["computing_us"] + s["communication_not_overlapped_us"] + s["exposed_memcpy_us"] + s["free_us"]) / 1000
        for _, s in rows
    ]
    assert stacks == pytest.approx(spans, abs=1e-9)
    assert fig.layout.barmode == "stack"
    assert fig.layout.yaxis.title.text == "time (ms)"


def test_bubble_marker_on_pipeline_sample():
    """The pipeline-bubble estimate has its own marker (the sample's P2P kernels are no receive ops,
    so torch_npu's bubble is 0 and has none)."""
    trace = shared_sample("pp4_1f1b")
    doc = build_summary(trace)
    fig = figures.step_breakdown_figure(doc)
    bubble = by_meta(fig, "pipeline_bubble")
    want = [s["pipeline_bubble_us"] / 1000 for r in doc["ranks"] for s in r["steps"]]
    assert any(want) and list(bubble.y) == want
    assert bubble.marker.color == TERM_COLORS["pipeline_bubble"]
    assert not [t for t in fig.data if t.meta == "bubble"]


def test_step_time_heatmap_and_classes_are_the_summary_ms(dp4):
    _, doc = dp4
    fig = figures.step_time_figure(doc)
    for r in doc["ranks"]:
        line = by_meta(fig, r["rank"])
        assert list(line.x) == [s["step"] for s in r["steps"]]
        assert list(line.y) == [s["duration_us"] / 1000 for s in r["steps"]]
    assert fig.layout.yaxis.title.text == "step time (ms)" and fig.layout.xaxis.title.text == "step"

    heat = figures.step_heatmap_figure(doc).data[0]
    durations = [[s["duration_us"] / 1000 for s in r["steps"]] for r in doc["ranks"]]
    assert [list(row) for row in heat.customdata] == durations  # the hover's ms
    median = statistics.median(v for row in durations for v in row)
    shown = [v for row in heat.z for v in row]
    assert shown == pytest.approx([100 * (v / median - 1) for row in durations for v in row])
    assert heat.colorbar.title.text == "vs median (%)" and heat.zmid == 0
    # dp4_nccl's steps are within 1.5 % of the median: the scale stays at ±5 %, pale
    assert max(map(abs, shown)) < 2 and heat.zmax == -heat.zmin == figures.HEATMAP_MIN_RANGE_PCT
    wide = {
        "ranks": [{"rank": 0, "steps": [{"step": s, "duration_us": d} for s, d in ((1, 1e3), (2, 1.3e3), (3, 1e3))]}]
    }
    assert figures.step_heatmap_figure(wide).data[0].zmax == pytest.approx(30.0)  # a 30 % step: the whole scale

    classes = figures.compute_classes_figure(doc)
    for r in doc["ranks"]:
        for c in r["compute_classes"]:
            bar = by_meta(classes, c["class"])
            assert bar.y[r["rank"]] == c["time_us"] / 1000
            assert bar.marker.color == CLASS_COLORS[c["class"]]
    assert classes.layout.yaxis.title.text == "device time (ms)"


def test_slow_steps_are_marked():
    doc = {
        "ranks": [
            {
                "rank": 0,
                "compute_classes": [],
                "long_steps": [
                    {"step": 2, "duration_us": 3000.0, "slowdown_ratio": 3.0, "why": "communication_not_overlapped"}
                ],
                "steps": [{"step": s, "duration_us": d} for s, d in ((1, 1000.0), (2, 3000.0), (3, 1000.0))],
            }
        ]
    }
    slow = by_meta(figures.step_time_figure(doc), "long_step")
    assert list(slow.x) == [2] and list(slow.y) == [3.0]


def test_filters_select_ranks_and_steps(dp4):
    _, doc = dp4
    fig = figures.step_breakdown_figure(doc, ranks=[2], steps=[4])
    free = by_meta(fig, "free")
    want = next(s for s in doc["ranks"][2]["steps"] if s["step"] == 4)
    assert list(free.x[0]) == ["rank 2"] and list(free.y) == [want["free_us"] / 1000]
    assert figures.step_breakdown_figure(doc, steps=[999]).data == ()
    # many ranks: bars capped, heatmap complete
    many = {"ranks": [{**doc["ranks"][0], "rank": i} for i in range(40)]}
    assert len({x for x in by_meta(figures.step_breakdown_figure(many), "free").x[0]}) == figures.MAX_BAR_RANKS
    assert len(figures.step_heatmap_figure(many).data[0].y) == 40


def test_query_string_round_trip():
    assert parse_query(make_query([2, 0], 4), [0, 1, 2, 3], [3, 4, 5]) == ([0, 2], 4)
    assert parse_query("", [0, 1], [3]) == (None, None)
    assert parse_query("?rank=7,x,1&step=nope", [0, 1], [3]) == ([1], None)
    assert make_query(None, None) == ""


def test_create_app_layout(dp4_app, dp4):
    _, doc = dp4
    layout = layout_text(dp4_app)
    for component_id in (
        "url",
        "rank-select",
        "step-select",
        "fig-breakdown",
        "fig-step-time",
        "fig-heatmap",
        "fig-classes",
        "kernel-table",
        "findings",
        "profile-path",
    ):
        assert f'"{component_id}"' in layout
    assert "Straggler: rank 2" in layout  # dp4_nccl's rank 2 is slow by construction
    assert doc["cross_rank"]["straggler"] == 2
    assert "NVIDIA H100 80GB HBM3" in layout and "4 ranks" in layout
    assert dp4_app.config.serve_locally is True


def test_overview_callback_follows_the_query(dp4_state, dp4):
    _, doc = dp4

    def update(search):
        return update_overview(dp4_state, search)

    everything = update("")
    picked = update("?rank=1&step=4")
    assert len(everything[0].data[0].y) == 12 and len(picked[0].data[0].y) == 1
    step4 = next(s for s in doc["ranks"][1]["steps"] if s["step"] == 4)
    assert by_meta(picked[0], "free").y == (step4["free_us"] / 1000,)
    assert [t.meta for t in picked[1].data] == [1]
    assert list(picked[2].data[0].x) == ["4"] and list(picked[2].data[0].y) == ["1"]
    assert {r["rank"] for r in everything[4]} == {0, 1, 2, 3} and everything[5] == "Top kernels (whole trace)"
    top = doc["ranks"][1]["top_kernels"][0]
    assert everything[4][0]["name"] == top["name"]
    # a selected step narrows the kernel table and the compute classes to that step
    trace = shared_sample("dp4_nccl")
    step_top = trace.top_kernels(50, by=("rank", "step")).filter((pl.col("rank") == 1) & (pl.col("step") == 4))
    rows = picked[4]
    assert [r["name"] for r in rows] == step_top["name"].to_list() and picked[5] == "Top kernels (step 4)"
    assert [r["total_ms"] for r in rows] == pytest.approx((step_top["total_us"] / 1000).to_list())
    step_classes = trace.compute_classes(by=("rank", "step")).filter((pl.col("rank") == 1) & (pl.col("step") == 4))
    assert "step 4" in picked[3].layout.title.text
    for row in step_classes.to_dicts():
        assert by_meta(picked[3], row["class"]).y == pytest.approx((row["time_us"] / 1000,))
    whole = next(c for c in doc["ranks"][1]["compute_classes"] if c["class"] == "gemm")
    assert by_meta(everything[3], "gemm").y[1] == pytest.approx(whole["time_us"] / 1000)
    assert by_meta(picked[3], "gemm").y[0] < whole["time_us"] / 1000  # one step of three


def test_served_pages(dp4_app):
    client = dp4_app.server.test_client()
    index = client.get("/")
    assert index.status_code == 200 and b"<title>traceview</title>" in index.data
    assert b"cdn.plot.ly" not in index.data and b"unpkg.com" not in index.data  # plotly.js served locally
    for url in ("/_dash-layout", "/_dash-dependencies"):
        resp = client.get(url)
        assert resp.status_code == 200 and resp.content_type.startswith("application/json")
        assert orjson.loads(resp.data)
    deps = orjson.loads(client.get("/_dash-dependencies").data)
    outputs = " ".join(d["output"] for d in deps)
    assert "fig-breakdown.figure" in outputs and "url.search" in outputs


def test_overview_callback_over_http(dp4_app):
    client = dp4_app.server.test_client()
    dep = dependency(client, "fig-breakdown.figure")
    inputs = [
        {"id": "url", "property": "pathname", "value": "/"},
        {"id": "url", "property": "search", "value": "?rank=3&step=5"},
    ]
    payload = request(dep, inputs, ["url.pathname", "url.search"], state=[])
    resp = client.post("/_dash-update-component", json=payload)
    assert resp.status_code == 200, resp.data[:500]
    body = orjson.loads(resp.data)["response"]
    assert body["fig-breakdown"]["figure"]["data"][0]["x"] == [["rank 3"], ["step 5"]]
    assert {r["rank"] for r in body["kernel-table"]["rowData"]} == {3}


@pytest.mark.parametrize(
    ("output", "shown_on", "path"),
    [
        ("fig-breakdown.figure", "/", "/timeline"),
        ("fig-breakdown.figure", "/", "/roofline"),
        ("roofline-graph.figure", "/roofline", "/"),
        ("roofline-graph.figure", "/roofline", "/timeline"),
    ],
)
def test_a_page_is_built_only_where_it_is_shown(dp4_app, output, shown_on, path):
    """Opening the Timeline (or another page) computes no Overview figure and no Roofline: their
    callbacks answer "no update" elsewhere; going to their page (the path alone changing) builds
    them, with the query string of the moment."""
    client = dp4_app.server.test_client()
    dep = dependency(client, output)

    def ask(pathname):
        inputs = [
            {"id": "url", "property": "pathname", "value": pathname},
            {"id": "url", "property": "search", "value": "?rank=1"},
        ]
        return client.post("/_dash-update-component", json=request(dep, inputs, ["url.pathname"], state=[]))

    assert ask(path).status_code == 204
    resp = ask(shown_on)
    assert resp.status_code == 200, resp.data[:300]
    figure = orjson.loads(resp.data)["response"][output.split(".")[0]]["figure"]
    assert figure["data"] or figure["layout"]


def test_hostile_kernel_name_is_only_data(hostile_trace):
    doc = build_summary(hostile_trace)
    assert any(k["name"] == HOSTILE for r in doc["ranks"] for k in r["top_kernels"])
    state = DashboardState(hostile_trace, doc)
    app = app_for(state)
    client = app.server.test_client()
    assert HOSTILE.encode() not in client.get("/").data and b"onerror" not in client.get("/").data
    rows = update_overview(state, "")[4]
    assert HOSTILE in [r["name"] for r in rows]  # passed as table data, a text cell
    grid = app.layout["kernel-table"]
    for column in grid.columnDefs:  # the grid's default renderer sets text; nothing renders HTML
        assert not {"cellRenderer", "cellRendererSelector"} & set(column), column
    assert not getattr(grid, "dangerously_allow_code", False)
    # over the wire the name is a JSON string value (application/json), never markup in HTML
    dep = dependency(client, "kernel-table.rowData")
    inputs = [{"id": "url", "property": "pathname", "value": "/"}, {"id": "url", "property": "search", "value": ""}]
    payload = request(dep, inputs, ["url.search"])
    resp = client.post("/_dash-update-component", json=payload)
    assert resp.status_code == 200 and resp.content_type.startswith("application/json")
    assert HOSTILE in [r["name"] for r in orjson.loads(resp.data)["response"]["kernel-table"]["rowData"]]


def test_pick_port_skips_a_busy_port():
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        assert not port_is_free("127.0.0.1", port)
        picked = pick_port("127.0.0.1", port)
        assert picked > port and port_is_free("127.0.0.1", picked)


def test_serve_help_lists_options():
    out = run_cli("serve", "--help", timeout=30)
    assert out.returncode == 0 and all(o in out.stdout for o in ("--host", "--port", "--open"))


def _post_sync(client, search, ranks, step, changed, **widgets):
    """Post the URL <-> widgets sync callback: `widgets` maps a FILTER_WIDGETS id to its value."""
    dep = dependency(client, "url.search")
    values = {"rank-select": ranks, "step-select": step, "class-select": None, "name-search": None, **widgets}
    inputs = [{"id": "url", "property": "search", "value": search}]
    inputs += [{"id": w, "property": prop, "value": values[w]} for w, prop in FILTER_WIDGETS.items()]
    payload = request(dep, inputs, [changed])
    resp = client.post("/_dash-update-component", json=payload)
    assert resp.status_code in (200, 204), resp.data[:300]
    return orjson.loads(resp.data)["response"] if resp.status_code == 200 else {}


def test_filters_and_url_stay_in_sync(dp4_app):
    client = dp4_app.server.test_client()
    # a shared address sets the widgets ...
    body = _post_sync(client, "?rank=2&step=5", None, None, "url.search")
    assert body["rank-select"]["value"] == [2] and body["step-select"]["value"] == 5 and "url" not in body
    # ... and picking in the widgets writes the address
    body = _post_sync(client, "", [3, 1], 4, "rank-select.value")
    assert body["url"]["search"] == "?rank=1%2C3&step=4"
    assert parse_query(body["url"]["search"], [0, 1, 2, 3], [3, 4, 5]) == ([1, 3], 4)
    # class and name filters
    body = _post_sync(
        client, "", None, None, "class-select.value", **{"class-select": ["gemm", "attention"], "name-search": " xmma "}
    )
    assert body["url"]["search"] == "?class=attention%2Cgemm&q=xmma"
    body = _post_sync(client, "?class=gemm,bogus&q=nccl&host=1", None, None, "url.search")
    assert body["class-select"]["value"] == ["gemm"] and body["name-search"]["value"] == "nccl"
    assert set(body) == {"rank-select", "step-select", "class-select", "name-search"}
    # the timeline's rank comparison and host lanes (its toolbar writes them) survive a pick in the bar
    body = _post_sync(client, "?compare=2,0&host=1&q=old", [1], None, "rank-select.value", **{"name-search": "nccl"})
    assert body["url"]["search"] == "?rank=1&compare=2%2C0&q=nccl&host=1"


def test_class_and_name_filters_narrow_the_classes_and_the_kernels(dp4_state, dp4):
    _, doc = dp4
    out = update_overview(dp4_state, "?class=gemm,communication&q=NCCL")
    assert {t.meta for t in out[3].data} == {"gemm", "communication"}
    rows = out[4]
    assert rows and all(r["class"] in ("gemm", "communication") and "nccl" in r["name"].lower() for r in rows)
    want = [k for r in doc["ranks"] for k in r["top_kernels"] if "nccl" in k["name"].lower()]
    assert {r["name"] for r in rows} == {k["name"] for k in want}
    assert parse_filters("?class=gemm,nope&q=%20x%20&host=1", ["gemm", "attention"]) == (["gemm"], "x", True)
    assert parse_filters("", ["gemm"]) == (None, None, False)


def test_compare_query():
    assert parse_compare("?compare=2,0", [0, 1, 2]) == [2, 0]
    assert parse_compare("?compare=2,2,x,9,1,0", [0, 1, 2]) == [2, 1]  # distinct, known, two at most
    assert parse_compare("?rank=1", [0, 1]) == []
    assert make_query(None, None, [None, 3]) == "?compare=3"


def test_throughput_table_when_the_model_is_given():
    trace = shared_sample("dp4_nccl")
    doc = build_summary(trace, details=False, throughput=dict(seq_len=2048, global_batch=8, params=1e8))
    layout = layout_text(create_app(trace, doc))
    first = doc["throughput"][0]
    assert '"Throughput"' in layout and f"{first['tokens_per_s_per_device']:,.0f}" in layout
    assert f"{first['mfu_frac'] * 100:.1f}" in layout and "mfu-warning" not in layout
    doc = build_summary(trace, details=False, throughput=dict(seq_len=4096, global_batch=32, params=7e9))
    assert "mfu-warning" in layout_text(create_app(trace, doc))
    assert '"Throughput"' not in layout_text(create_app(trace, build_summary(trace, details=False)))


def test_what_if_table_on_the_overview(dp4_app, dp4):
    """The summary's what-if bounds, each scenario with its bound in ms (folded under its title)."""
    _, doc = dp4
    assert doc["what_if"]
    layout = layout_text(dp4_app)
    assert '"what-if"' in layout and "What if (bounds on the mean iteration)" in layout
    for row in doc["what_if"]:
        assert f'"{row["scenario"]}"' in layout and f"{row['bound_us'] / 1000:,.3f}" in layout


def test_expected_table_on_the_overview_with_a_model_config():
    """serve --model-config: the summary's expected section (verdict, each term) on the Overview."""
    trace = shared_sample("dp4_nccl")
    config = dict(layers=4, hidden=1024, heads=8, seq=2048, micro_batch=2, dp=4)
    doc = build_summary(trace, details=False, model_config=config)
    layout = layout_text(create_app(trace, doc))
    assert '"expected-verdict"' in layout and json.dumps(doc["expected"]["verdict"])[1:-1] in layout
    step = next(r for r in doc["expected"]["terms"] if r["term"] == "step")
    assert f"{step['expected'] / 1000:,.3f} ms" in layout and f"{step['measured'] / 1000:,.3f} ms" in layout
    assert '"expected-verdict"' not in layout_text(create_app(trace, build_summary(trace, details=False)))


def test_rule_findings_are_listed_as_text(dp4_app, dp4):
    """One item per rule (the rule's worst finding, its term and ranks), not one per rank."""
    from traceview.summary_text import finding_heading

    _, doc = dp4
    assert len(doc["findings_by_rule"]) < len(doc["findings"])
    layout = layout_text(dp4_app)
    for finding in doc["findings_by_rule"]:
        for text in (finding_heading(finding), finding["message"], finding["advice"]):
            assert json.dumps(text)[1:-1] in layout
    assert layout.count('"finding-rule"') == len(doc["findings_by_rule"])
