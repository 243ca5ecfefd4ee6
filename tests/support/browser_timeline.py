"""What the canvas-timeline browser tests share: a page opened and ready (`ready_page`), the view
(`view_of`), draw counts, screenshots, and where a time on a lane is on the screen
(`canvas_point`)."""

from __future__ import annotations

import os

from tests.conftest import ROOT
from tests.support.browser import SCREENSHOTS, open_page

DP4 = ROOT / "sample_traces" / "dp4_nccl"


READY = (
    "() => { const r = document.querySelector('#tvtl-root');"
    " return r && r.dataset.ready === '1' && window.tvTimeline.state.data !== null"
    " && window.tvTimeline.state.pending === null; }"
)


#: The longest raw item of the data held on a device lane of rank `rank` (with a flow to its launch
#: when `flow`): id, lane, start, dur, name, cls and its lane's label.
LONGEST_DEVICE_ITEM = (
    "([rank, flow]) => { const d = window.tvTimeline.state.data, m = window.tvTimeline.state.meta; let best = -1;"
    " for (let i = 0; i < d.raw.id.length; i++) { const l = d.raw.lane[i];"
    "  if (m.lanes.kind[l] === 'device' && m.lanes.rank[l] === rank && (!flow || d.raw.flow[i] >= 0)"
    "      && (best < 0 || d.raw.dur[i] > d.raw.dur[best])) best = i; }"
    " return {id: d.raw.id[best], lane: d.raw.lane[best], start: d.raw.start[best], dur: d.raw.dur[best],"
    "  name: d.names[d.raw.name[best]], cls: d.classes[d.raw.cls[best]], label: m.lanes.label[d.raw.lane[best]]}; }"
)


def ready_page(browser, url):
    page, errors = open_page(browser, url)
    page.wait_for_function(READY, timeout=20_000)
    windows = []
    page.on("request", lambda r: windows.append(r.url) if "/api/timeline/window" in r.url else None)
    return page, errors, windows


def view_of(page):
    return page.evaluate("() => [window.tvTimeline.state.view.t0, window.tvTimeline.state.view.t1]")


def draw_count(page) -> int:
    return page.evaluate("() => window.tvTimeline.draws")


def save_shot(page, name):
    if os.environ.get("TRACEVIEW_SCREENSHOTS"):
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        page.locator("#tvtl-root").screenshot(path=str(SCREENSHOTS / name))


def canvas_point(page, t_ns, lane):
    """Viewport coordinates of time t_ns (relative ns) on `lane` (its middle), the page scrolled
    first when the lane is outside the viewport (the mouse reaches only what is shown)."""
    page.evaluate(
        "(lane) => { const T = window.tvTimeline, l = T.state.laneAt[lane];"
        " const y = T.canvas.getBoundingClientRect().top + T.AXIS + l.y + l.h / 2;"
        " if (y < 10 || y > window.innerHeight - 10) { window.scrollBy(0, y - window.innerHeight / 2); } }",
        lane,
    )
    box = page.locator("#tvtl-canvas").bounding_box()
    x, y = page.evaluate(
        "([t, lane]) => { const T = window.tvTimeline, l = T.state.laneAt[lane];"
        " return [T.x(t), T.AXIS + l.y + l.h / 2]; }",
        [t_ns, lane],
    )
    return box["x"] + x, box["y"] + y
