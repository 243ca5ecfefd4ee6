"""Real-browser tests of the canvas timeline (dashboards/assets/tv_timeline_*.js): each
interaction, waiting for conditions (never a fixed sleep), and the window requests counted.

Screenshots for the docs: `TRACEVIEW_SCREENSHOTS=1 python -m pytest tests/browser/test_browser_timeline.py`
writes docs/screenshots/timeline_*.png.
"""

from __future__ import annotations

import importlib.util

import pytest

import traceview as tv
from tests.conftest import ROOT
from tests.support.browser import browser, pytestmark, server_for  # noqa: F401 - fixtures
from tests.support.browser_timeline import (
    DP4,
    LONGEST_DEVICE_ITEM,
    READY,
    canvas_point,
    draw_count,
    ready_page,
    save_shot,
    view_of,
)


def test_zoom_and_pan_inside_the_prefetched_data_send_no_request(server_for, browser):
    page, errors, windows = ready_page(browser, server_for(DP4) + "/timeline")
    save_shot(page, "timeline.png")  # the first view: the whole profile
    box = page.locator("#tvtl-canvas").bounding_box()
    labels = page.evaluate("() => window.tvTimeline.state.lanes.map(l => l.label)")
    assert labels[:5] == ["rank 0", "steps", "terms", "stream 7 · compute", "stream 20 · NCCL"]
    t0, t1 = view_of(page)
    # wheel zoom in at the cursor: the time under the cursor stays put
    cx, cy = box["x"] + 190 + (box["width"] - 190) * 0.25, box["y"] + 60
    under = page.evaluate(f"() => window.tvTimeline.t({cx - box['x']})")
    page.mouse.move(cx, cy)
    draws = draw_count(page)
    page.mouse.wheel(0, -300)
    page.wait_for_function(f"() => window.tvTimeline.draws > {draws}")
    z0, z1 = view_of(page)
    assert z1 - z0 < (t1 - t0) * 0.8
    one_px = (z1 - z0) / (box["width"] - 190)  # the pointer's position is rounded to a pixel
    assert page.evaluate(f"() => window.tvTimeline.t({cx - box['x']})") == pytest.approx(under, abs=one_px)
    # drag to pan
    draws = draw_count(page)
    page.mouse.move(cx, cy)
    page.mouse.down()
    page.mouse.move(cx - 150, cy, steps=5)
    page.mouse.up()
    page.wait_for_function(f"() => window.tvTimeline.draws > {draws}")
    p0, p1 = view_of(page)
    assert p0 > z0 and p1 - p0 == pytest.approx(z1 - z0)
    assert windows == [], (windows, page.evaluate("() => window.tvTimeline.misses"))
    assert page.evaluate("() => window.tvTimeline.state.pending") is None
    # a zoom far into raw data needs no request either (a binned profile's does: the dense test)
    page.evaluate("() => window.tvTimeline.zoom(0.0005)")
    page.wait_for_function(READY)
    assert windows == []
    # zooming out stops at the whole profile (and a small margin), as in Perfetto
    page.evaluate("() => window.tvTimeline.zoom(1e6)")
    page.wait_for_function(READY)
    w0, w1 = view_of(page)
    end = page.evaluate("() => window.tvTimeline.state.meta.end")
    assert w0 >= -0.03 * end and w1 <= 1.03 * end and w1 - w0 >= end
    assert errors == []
    page.close()


def test_wasd_keys_zoom_and_pan(server_for, browser):
    page, errors, windows = ready_page(browser, server_for(DP4) + "/timeline")
    page.locator("#tvtl-canvas").click(position={"x": 5, "y": 5})  # focus, on the labels: selects nothing
    t0, t1 = view_of(page)
    page.keyboard.press("w")
    page.wait_for_function(f"() => window.tvTimeline.state.view.t1 - window.tvTimeline.state.view.t0 < {t1 - t0}")
    w0, w1 = view_of(page)
    assert (w1 - w0) == pytest.approx((t1 - t0) * 0.8)
    page.keyboard.press("d")
    page.wait_for_function(f"() => window.tvTimeline.state.view.t0 > {w0}")
    d0, d1 = view_of(page)
    assert d0 - w0 == pytest.approx(0.2 * (w1 - w0))
    page.keyboard.press("a")
    page.wait_for_function(f"() => window.tvTimeline.state.view.t0 < {d0}")
    page.keyboard.press("s")
    page.wait_for_function(f"() => window.tvTimeline.state.view.t1 - window.tvTimeline.state.view.t0 > {w1 - w0}")
    assert view_of(page)[1] - view_of(page)[0] == pytest.approx(t1 - t0)
    assert windows == [], (windows, page.evaluate("() => window.tvTimeline.misses"))  # inside the prefetched window
    assert errors == []
    page.close()


def test_search_next_and_previous(server_for, browser):
    page, errors, _ = ready_page(browser, server_for(DP4) + "/timeline")
    page.fill("#tvtl-search", "nccldev")
    page.press("#tvtl-search", "Enter")
    page.wait_for_function("() => document.querySelector('#tvtl-search-count').textContent.startsWith('1 / ')")
    hits = page.evaluate("() => window.tvTimeline.state.search.hits")
    trace = tv.load(DP4)
    assert hits["count"] == trace.device_tasks["name"].str.to_lowercase().str.contains("nccldev").sum()
    page.wait_for_function(f"() => (window.tvTimeline.state.selected || {{}}).id === {hits['id'][0]}")
    assert "nccldev" in page.inner_text("#tvtl-details td[data-field='name']").lower()
    page.click("#tvtl-next")
    page.wait_for_function(f"() => (window.tvTimeline.state.selected || {{}}).id === {hits['id'][1]}")
    assert page.inner_text("#tvtl-search-count") == f"2 / {hits['count']}"
    t0, t1 = view_of(page)
    assert t0 <= hits["start"][1] and hits["start"][1] + hits["dur"][1] <= t1  # brought into view
    page.click("#tvtl-prev")
    page.click("#tvtl-prev")  # wraps around to the last
    page.wait_for_function(f"() => (window.tvTimeline.state.selected || {{}}).id === {hits['id'][-1]}")
    save_shot(page, "timeline_search.png")
    assert errors == []
    page.close()


def test_click_highlights_a_kernel_and_the_flow_to_its_launch(server_for, browser):
    page, errors, _ = ready_page(browser, server_for(DP4) + "/timeline?host=1")
    # a long NCCL kernel of rank 0: zoom to it, click its middle
    k = page.evaluate(LONGEST_DEVICE_ITEM, [0, True])
    page.evaluate(f"() => window.tvTimeline.setView({k['start'] - k['dur']}, {k['start'] + 2 * k['dur']})")
    page.wait_for_function(READY)
    page.mouse.click(*canvas_point(page, k["start"] + k["dur"] / 2, k["lane"]))
    page.wait_for_function(f"() => (window.tvTimeline.state.selected || {{}}).id === {k['id']}")
    fields = page.evaluate(
        "() => Object.fromEntries([...document.querySelectorAll('#tvtl-details td')].map(t => [t.dataset.field, t.textContent]))"
    )
    assert fields["class"] == "communication" and fields["launched by"].startswith("cuda")
    flow = page.evaluate("() => window.tvTimeline.state.selected.flow")
    assert page.evaluate(f"() => window.tvTimeline.state.meta.lanes.kind[{flow['lane']}]") == "host"
    save_shot(page, "timeline_flow.png")
    page.click("#tvtl-follow-flow")  # and back: the launch call, whose flow is the kernel
    page.wait_for_function(f"() => (window.tvTimeline.state.selected || {{}}).id === {flow['id']}")
    assert page.evaluate("() => window.tvTimeline.state.selected.flow.id") == k["id"]
    assert errors == []
    page.close()


def test_shift_drag_selects_a_range_with_totals(server_for, browser):
    page, errors, _ = ready_page(browser, server_for(DP4) + "/timeline?rank=0")
    step = page.evaluate("() => { const s = window.tvTimeline.state.meta.steps; return [s.start[0], s.end[0]]; }")
    lane = page.evaluate("() => window.tvTimeline.state.lanes[2].lane")
    x0, y = canvas_point(page, step[0], lane)
    x1, _ = canvas_point(page, step[1], lane)
    page.keyboard.down("Shift")
    page.mouse.move(x0, y)
    page.mouse.down()
    page.mouse.move(x1, y, steps=5)
    page.mouse.up()
    page.keyboard.up("Shift")
    page.wait_for_function("() => document.querySelector('#tvtl-range-term') !== null")
    r = page.evaluate("() => window.tvTimeline.state.range")
    api = page.evaluate(
        f"() => fetch('/api/timeline/range?start={int(r['t0'])}&end={int(r['t1']) + 1}&ranks=0').then(x => x.json())"
    )
    shown = page.evaluate(
        "() => Object.fromEntries([...document.querySelectorAll('#tvtl-range-term tr')].map(t => [t.cells[0].textContent, Number(t.cells[1].dataset.us)]))"
    )
    assert shown == pytest.approx(dict(api["by_term"]), rel=1e-3, abs=2)
    assert sum(shown.values()) == pytest.approx((r["t1"] - r["t0"]) / 1000, rel=0.02)  # the terms tile a step
    assert page.locator("#tvtl-range-class tr").count() > 3 and page.locator("#tvtl-range-lane tr").count() == 2
    save_shot(page, "timeline_range.png")
    assert errors == []
    page.close()


def test_ranks_one_above_the_other_on_one_time_axis(server_for, browser):
    page, errors, _ = ready_page(browser, server_for(DP4) + "/timeline?compare=2,0")
    headers = page.evaluate("() => window.tvTimeline.state.lanes.filter(l => l.header).map(l => l.label)")
    assert headers == ["rank 2", "rank 0"]
    lanes = page.evaluate("() => window.tvTimeline.state.lanes.filter(l => !l.header).map(l => [l.rank, l.y])")
    assert [r for r, _ in lanes] == sorted((r for r, _ in lanes), key=lambda r: 0 if r == 2 else 1)
    # the same task time maps to the same x on both ranks' lanes: one axis
    assert page.evaluate("() => window.tvTimeline.x(1e6)") == page.evaluate("() => window.tvTimeline.x(1e6)")
    ranks = page.evaluate(
        "() => [...new Set(window.tvTimeline.state.data.raw.lane.map(l => window.tvTimeline.state.meta.lanes.rank[l]))]"
    )
    assert sorted(ranks) == [0, 2]
    save_shot(page, "timeline_compare.png")
    assert errors == []
    page.close()


@pytest.fixture(scope="module")
def big_profile(tmp_path_factory):
    spec = importlib.util.spec_from_file_location("bench_serve", ROOT / "bench" / "bench_serve.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    folder = tmp_path_factory.mktemp("big") / "profile"
    bench.write_profile(folder, 40_000, 2, steps=10)
    return folder


def test_dense_lanes_draw_bins_stacked_by_class(server_for, browser, big_profile):
    page, errors, windows = ready_page(browser, server_for(big_profile) + "/timeline")
    d = page.evaluate(
        "() => { const d = window.tvTimeline.state.data; return {binned: d.binned_lanes, n: d.bins.cls.length,"
        " classes: [...new Set(d.bins.cls.map(c => d.classes[c]))]}; }"
    )
    assert d["binned"] and d["n"] > 0
    assert {"gemm", "communication"} <= set(d["classes"]) or len(d["classes"]) > 2
    # the tooltip of a binned cell (a device stream's): the busy time of each class there, as held
    lane = page.evaluate(
        "() => window.tvTimeline.state.data.binned_lanes.find(l => window.tvTimeline.state.meta.lanes.kind[l] === 'device')"
    )
    page.mouse.move(*canvas_point(page, sum(view_of(page)) / 2, lane))
    page.wait_for_function("() => document.querySelector('#tvtl-tooltip').style.display === 'block'")
    want = page.evaluate(  # the cell under the pointer's pixel, looked up here by a plain scan
        "(lane) => { const T = window.tvTimeline, d = T.state.data, t = T.t(T.mouseX); let b = 0;"
        " while (d.edges[b + 1] <= t) b++;"
        " const out = {}; for (let k = 0; k < d.bins.lane.length; k++)"
        "  if (d.bins.lane[k] === lane && d.bins.bin[k] === b) out[d.classes[d.bins.cls[k]]] = T.formatNs(d.bins.busy[k]);"
        " return out; }",
        lane,
    )
    tip = page.evaluate(
        "() => Object.fromEntries([...document.querySelectorAll('#tvtl-tooltip [data-field]')]"
        ".map(e => [e.dataset.field, e.lastChild.textContent]))"
    )
    assert tip["name"] == "binned: busy time by class" and tip["lane"].startswith("rank ") and want
    assert {c: v.split(" busy")[0] for c, v in tip.items() if c not in ("name", "lane", "bin")} == want
    # zoom to one step: the compute stream turns raw (a request: its bins are too coarse now)
    page.evaluate(
        "() => { const s = window.tvTimeline.state.meta.steps; window.tvTimeline.setView(s.start[3], s.end[3]); }"
    )
    page.wait_for_function(READY)
    assert len(windows) == 1
    save_shot(page, "timeline_bins.png")
    # a tenth of a step: every device task in the view drawn, fewer than the whole profile's
    page.evaluate(
        "() => { const s = window.tvTimeline.state.meta.steps;"
        " window.tvTimeline.setView(s.start[3], s.start[3] + (s.end[3] - s.start[3]) / 10); }"
    )
    page.wait_for_function(READY)
    after = page.evaluate(
        "() => { const d = window.tvTimeline.state.data, m = window.tvTimeline.state.meta;"
        " return {binned: d.binned_lanes.filter(l => m.lanes.kind[l] === 'device').length,"
        "  device: d.raw.lane.filter(l => m.lanes.kind[l] === 'device').length}; }"
    )
    assert after["binned"] == 0 and 0 < after["device"] < 40_000
    assert errors == []
    page.close()


def test_hostile_names_are_text_in_the_canvas_timeline(server_for, browser, tmp_path_factory):
    """Kernel and operator names carrying markup: drawn, searched and shown in the details as
    text; nothing runs and no element is created from them."""
    from tests.support.hostile import NAMES, write_hostile

    profile = write_hostile(tmp_path_factory.mktemp("hostile"))
    page, errors, _ = ready_page(browser, server_for(profile) + "/timeline?host=1")
    page.fill("#tvtl-search", "__pwned")
    page.press("#tvtl-search", "Enter")
    page.wait_for_function("() => document.querySelector('#tvtl-search-count').textContent.startsWith('1 / ')")
    hits = page.evaluate("() => window.tvTimeline.state.search.hits")
    shown = []
    for item in hits["id"]:
        page.evaluate(f"() => window.tvTimeline.select({item})")
        page.wait_for_function(f"() => (window.tvTimeline.state.selected || {{}}).id === {item}")
        shown.append(page.inner_text("#tvtl-details td[data-field='name']"))
    assert NAMES["kernel"] in shown and NAMES["cpu_op"] in shown
    assert page.evaluate("() => typeof window.__pwned") == "undefined"
    live = "() => document.querySelectorAll('#tvtl-root img, #tvtl-root script, #tvtl-root [onerror]').length"
    assert page.evaluate(live) == 0
    assert errors == []
    page.close()
