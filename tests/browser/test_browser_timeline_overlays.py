"""Real-browser tests of the canvas timeline's overlays (dashboards/assets/tv_timeline_4_overlays.js):
collectives split into wait and transfer and linked across ranks, pipeline bubbles, findings;
the toolbar toggles; one overlays request per window request. Waits for conditions, never sleeps.

Screenshot for the docs: `TRACEVIEW_SCREENSHOTS=1 python -m pytest tests/browser/test_browser_timeline_overlays.py`
writes docs/screenshots/timeline_overlays.png.
"""

from __future__ import annotations

import polars as pl
import pytest

import traceview as tv
from tests.conftest import ROOT
from tests.support.browser import browser, pytestmark, server_for  # noqa: F401 - fixtures
from tests.support.browser_timeline import READY, ready_page, save_shot

DP4 = ROOT / "sample_traces" / "dp4_nccl"
PP4 = ROOT / "sample_traces" / "pp4_1f1b"


def _and(condition: str, more: str) -> str:
    """The JS condition `condition` (an arrow function returning one expression) and `more`."""
    return condition[: condition.rindex(";")] + " && " + more + "; }"


#: the data and the overlays of the current window are held, and drawn since
SETTLED = _and(
    READY,
    "window.tvTimeline.state.overlays !== null && window.tvTimeline.state.overlayPending === null"
    " && window.tvTimeline.canvas.dataset.overlays !== undefined",
)


def _settled(browser, url):
    page, errors, windows = ready_page(browser, url)
    overlays = []
    page.on("request", lambda r: overlays.append(r.url) if "/api/timeline/overlays" in r.url else None)
    page.wait_for_function(SETTLED, timeout=20_000)
    return page, errors, windows, overlays


def _drawn(page) -> dict:
    return page.evaluate("() => window.tvTimeline.overlayDrawn")


def _navigate(page, url: str) -> None:
    """A navigation inside the page, as Dash's location sees one (pushState, then popstate)."""
    page.evaluate(
        f"() => {{ window.history.pushState({{}}, '', {url!r}); window.dispatchEvent(new PopStateEvent('popstate', {{state: {{}}}})); }}"
    )


def _redraw(page):
    draws = page.evaluate("() => window.tvTimeline.draws")
    page.evaluate("() => window.tvTimeline.draw()")
    page.wait_for_function(f"() => window.tvTimeline.draws > {draws}")


def test_collectives_split_into_wait_and_transfer_linked_across_two_ranks(server_for, browser):
    page, errors, windows, overlays = _settled(browser, server_for(DP4) + "/timeline?compare=0,2")
    d = _drawn(page)
    want = tv.load(DP4).run("collectives").filter(pl.col("rank").is_in([0, 2]))
    # the whole profile is in view: every instance of both ranks, each linked once across them
    assert d["collectives"] == want.height == 24 and d["links"] == 12
    assert d["waits"] == want.filter(pl.col("wait_us") > 0).height == 12  # rank 2 is the one waited for
    origin = int(page.evaluate("() => window.tvTimeline.state.meta.origin_ns"))
    drawn = pl.DataFrame(d["parts"], schema=["collective_id", "rank", "start", "wait", "transfer"], orient="row")
    both = want.join(drawn, on=["collective_id", "rank"])
    assert both.height == want.height
    assert (both["start"] + origin == both["start_ns"]).all()
    assert ((both["wait"] / 1000 - both["wait_us"]).abs() < 1e-9).all()
    assert ((both["transfer"] / 1000 - both["transfer_us"]).abs() < 1e-9).all()
    # zoomed on rank 0's first all-reduce: its transfer part is solid communication colour on the canvas
    c = want.filter(pl.col("rank") == 0).sort("start_ns").row(0, named=True)
    s = c["start_ns"] - origin
    page.evaluate(f"() => window.tvTimeline.setView({s - c['dur_us'] * 500}, {s + c['dur_us'] * 1500})")
    page.wait_for_function(SETTLED)
    lane = page.evaluate(
        f"() => {{ const T = window.tvTimeline, o = T.state.overlays.collectives;"
        f" for (let i = 0; i < o.cid.length; i++) if (o.cid[i] === {c['collective_id']} && o.rank[i] === 0) return o.lane[i]; }}"
    )
    transfer_mid = s + (c["wait_us"] + c["transfer_us"] / 2) * 1000
    rgb = page.evaluate(
        "([t, lane]) => { const T = window.tvTimeline, l = T.state.laneAt[lane], r = window.devicePixelRatio || 1;"
        " const p = T.canvas.getContext('2d').getImageData(Math.round(T.x(t) * r), Math.round((T.AXIS + l.y + l.h / 2) * r), 1, 1).data;"
        " return [p[0], p[1], p[2]]; }",
        [transfer_mid, lane],
    )
    assert rgb == [0xD5, 0x5E, 0x00]
    assert _drawn(page)["links"] >= 1
    save_shot(page, "timeline_overlays.png")
    # ranks 0 and 1 both wait for rank 2: still one link per instance, both parts hatched
    page.evaluate("() => window.tvTimeline.reset()")
    _navigate(page, "/timeline?compare=0,1")
    page.wait_for_function(_and(SETTLED, "window.tvTimeline.state.overlays.collectives.rank.indexOf(1) >= 0"))
    _redraw(page)
    d = _drawn(page)
    assert d["collectives"] == d["waits"] == 24 and d["links"] == 12
    assert errors == []
    page.close()


def test_toggles_and_one_overlays_request_per_window_request(server_for, browser):
    page, errors, windows, overlays = _settled(browser, server_for(DP4) + "/timeline?rank=1")
    assert page.is_checked("#tvtl-ov-collectives") and page.is_checked("#tvtl-ov-bubbles")
    assert not page.is_checked("#tvtl-ov-findings") and _drawn(page)["findings"] == 0
    page.check("#tvtl-ov-findings")
    page.wait_for_function("() => window.tvTimeline.overlayDrawn.findings > 0")
    assert _drawn(page)["findings"] == 3  # exposed communication on rank 1: its 3 step windows
    page.uncheck("#tvtl-ov-collectives")
    page.wait_for_function("() => window.tvTimeline.overlayDrawn.collectives === 0")
    page.check("#tvtl-ov-collectives")
    page.wait_for_function("() => window.tvTimeline.overlayDrawn.collectives > 0")
    # zoom inside the prefetched window: drawn from what is held, no request of either kind
    page.evaluate("() => window.tvTimeline.zoom(0.7)")
    _redraw(page)
    assert windows == [] and overlays == []
    # another rank (the URL's state): one window request and one overlays request, same window
    _navigate(page, "/timeline?rank=2")
    page.wait_for_function(_and(SETTLED, "window.tvTimeline.state.overlays.collectives.rank[0] === 2"))
    assert len(windows) == 1 and len(overlays) == 1
    assert set(page.evaluate("() => window.tvTimeline.state.overlays.collectives.rank")) == {2}
    held = page.evaluate("() => [window.tvTimeline.state.data.start, window.tvTimeline.state.data.end]")
    assert f"start={held[0]}&end={held[1]}&ranks=2" in overlays[0]
    assert page.inner_text("#tvtl-ov-note") == ""
    # an answer that left collectives out (a zoomed-out view of a large profile) says so
    page.evaluate(
        "() => { const T = window.tvTimeline, get = T.getJSON; T.getJSON = (route, p) => get(route, p).then(o => {"
        " if (route === 'overlays') { o.collectives_left_out = 7; o.collectives_total = 19; } return o; }); }"
    )
    _navigate(page, "/timeline?rank=3")
    page.wait_for_function("() => document.querySelector('#tvtl-ov-note').textContent.includes('7 of 19 collectives')")
    assert errors == []
    page.close()


def test_pipeline_bubbles_are_bands_on_each_ranks_device_lanes(server_for, browser):
    page, errors, _, _ = _settled(browser, server_for(PP4) + "/timeline")
    d = _drawn(page)
    held = page.evaluate("() => window.tvTimeline.state.overlays.bubbles")
    assert d["bubbles"] == len(held["rank"]) > 0 and held["start"] == sorted(held["start"])
    bubbles = tv.load(PP4).run("bubbles")
    per_rank = (
        pl.DataFrame(held).group_by("rank", "step").agg(((pl.col("end") - pl.col("start")).sum() / 1000).alias("us"))
    )
    both = bubbles.join(per_rank, on=["rank", "step"])
    assert both.height == 8 and ((both["us"] - both["bubble_us"]).abs() < 1e-6).all()
    # the stages' sends and receives: outlined, neither split into wait and transfer nor linked
    assert d["p2p"] > 0 and d["collectives"] == d["links"] == 0
    page.check("#tvtl-ov-findings")
    page.wait_for_function("() => window.tvTimeline.overlayDrawn.findings === 8")  # 4 ranks x 2 steps
    assert errors == []
    page.close()


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    from tests.support.hostile import write_hostile

    return write_hostile(tmp_path_factory.mktemp("hostile_overlays"))


def test_hostile_names_create_no_element_through_the_overlays(server_for, browser, hostile):
    page, errors, _, _ = _settled(browser, server_for(hostile) + "/timeline")
    page.check("#tvtl-ov-findings")
    _redraw(page)
    assert page.evaluate("() => typeof window.__pwned") == "undefined"
    live = "() => document.querySelectorAll('#tvtl-root img, #tvtl-root script, #tvtl-root [onerror]').length"
    assert page.evaluate(live) == 0
    assert errors == []
    page.close()


MEMORY = ROOT / "tests" / "data" / "kineto_memory.json"
MiB = 1 << 20

#: The memory lane of the page: its lane number, y, height (the first one).
MEMORY_LANE = "() => window.tvTimeline.state.lanes.find(l => l.kind === 'memory') || null"


def test_memory_lane_draws_allocated_and_reserved_and_follows_the_zoom(server_for, browser):
    page, errors, windows, overlays = _settled(browser, server_for(MEMORY) + "/timeline")
    lane = page.evaluate(MEMORY_LANE)
    assert lane is not None and lane["h"] == 40 and lane["label"] == "memory · cuda:0"
    assert page.evaluate("() => window.tvTimeline.canvas.dataset.memory") == "1"
    origin = int(page.evaluate("() => window.tvTimeline.state.meta.origin_ns"))

    def at(t_ns: int) -> dict:
        """The tooltip over the memory lane at absolute time t_ns."""
        return page.evaluate(
            "([t, lane]) => { const TV = window.tvTimeline;"
            " return TV.describe(TV.x(t), TV.AXIS + lane.y + lane.h / 2); }",
            [t_ns - origin, lane],
        )

    # the tiny trace's peak: 1160 MiB allocated from 1060 µs until the release at 1080 µs
    tip = at(1_070_000)
    rows = dict(tip["rows"])
    assert tip["title"] == "memory" and rows["allocated"] == "1.13 GiB" and rows["reserved"] == "2.00 GiB"
    assert dict(at(1_100_000)["rows"])["allocated"] == "1.04 GiB"  # 1060 MiB after the release
    # the allocated line is drawn in the lane (its colour within the lane's box)
    teal = page.evaluate(
        "(lane) => { const TV = window.tvTimeline, c = TV.canvas, r = window.devicePixelRatio || 1;"
        " const img = c.getContext('2d').getImageData(TV.GUTTER * r, (TV.AXIS + lane.y) * r,"
        "  (c.clientWidth - TV.GUTTER) * r, lane.h * r).data; let n = 0;"
        " for (let i = 0; i < img.length; i += 4) { if (img[i] === 15 && img[i + 1] === 118 && img[i + 2] === 110) n++; }"
        " return n; }",
        lane,
    )
    assert teal > 50
    # zoomed on the peak: the same lane, the same scale (the whole trace's peak), the values held
    page.evaluate(f"() => window.tvTimeline.setView({1_050_000 - origin}, {1_090_000 - origin})")
    page.wait_for_function(SETTLED)
    assert page.evaluate("() => window.tvTimeline.canvas.dataset.memory") == "1"
    scale = page.evaluate("() => window.tvTimeline.state.overlays.memory_scale")
    assert scale == {str(lane["lane"]): 2048 * MiB}
    assert dict(at(1_065_000)["rows"])["allocated"] == "1.13 GiB"
    # the toolbar turns it off
    page.click("#tvtl-ov-memory")
    page.wait_for_function("() => window.tvTimeline.canvas.dataset.memory === '0'")
    assert errors == []
