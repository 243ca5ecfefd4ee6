"""Real-browser tests of the Timeline page as a whole (what the server-rendered plotly timeline
offered, now on the canvas): the filter bar's classes and name reach the canvas, two ranks one
above the other, host threads, jump to step and reset from its toolbar (all in the URL), the
hover tooltip, and the page loading drawn (many loads in a row, a slow server). The canvas's own
interactions (zoom, pan, search, flows, ranges): tests/browser/test_browser_timeline.py.

Screenshot for the docs: `TRACEVIEW_SCREENSHOTS=1 python -m pytest tests/browser/test_browser_timeline_page.py`
writes docs/screenshots/timeline_tooltip.png.
"""

from __future__ import annotations

import time
from urllib.parse import parse_qs, urlparse

import polars as pl
import pytest

import traceview as tv
from tests.conftest import needs_shared
from tests.support.browser import ASCEND_LEVEL1, DLRM, browser, open_page, pytestmark, server_for  # noqa: F401 - fixtures
from tests.support.browser_timeline import DP4, LONGEST_DEVICE_ITEM, READY, canvas_point, ready_page, save_shot, view_of

TIP = "() => Object.fromEntries([...document.querySelectorAll('#tvtl-tooltip [data-field]')].map(e => [e.dataset.field, e.textContent]))"
TIP_ID = "() => document.querySelector('#tvtl-tooltip').dataset.id"
#: The device items of the data held: [name, class] of each.
DEVICE_ITEMS = (
    "() => { const T = window.tvTimeline, d = T.state.data, kind = T.state.meta.lanes.kind, out = [];"
    " for (let i = 0; i < d.raw.id.length; i++) if (kind[d.raw.lane[i]] === 'device')"
    "  out.push([d.names[d.raw.name[i]], d.classes[d.raw.cls[i]]]); return out; }"
)


def _query(page) -> dict:
    return {k: v[0] for k, v in parse_qs(urlparse(page.url).query).items()}


def _settled(page, requests_before: int) -> None:
    """Wait for a new window answer after `requests_before` window requests, drawn."""
    page.wait_for_function(f"() => window.tvTimeline.requests > {requests_before}", timeout=20_000)
    page.wait_for_function(READY, timeout=20_000)


def _requests(page) -> int:
    return page.evaluate("() => window.tvTimeline.requests")


def test_the_filter_bar_reaches_the_canvas(server_for, browser):
    """Classes and a name picked in the shared filter bar: the URL changes, the canvas asks for
    its window again (the data held was for other filters) with cls and name, and draws only the
    matching device tasks; the search and the range totals follow; clearing brings all back."""
    page, errors, windows = ready_page(browser, server_for(DP4) + "/timeline")
    trace = tv.load(DP4)
    tasks = trace.classified_tasks()
    all_device = len(page.evaluate(DEVICE_ITEMS))
    page.fill("#tvtl-search", "nccl")
    page.press("#tvtl-search", "Enter")
    page.wait_for_function("() => document.querySelector('#tvtl-search-count').textContent.startsWith('1 / ')")
    # a class from the dropdown
    n = _requests(page)
    page.click("#class-select")
    page.get_by_role("option", name="gemm").click()
    page.keyboard.press("Escape")
    _settled(page, n)
    assert _query(page)["class"] == "gemm" and "cls=gemm" in windows[-1]
    shown = page.evaluate(DEVICE_ITEMS)
    assert len(shown) == tasks.filter(pl.col("compute_class") == "gemm").height and {c for _, c in shown} == {"gemm"}
    assert page.inner_text("#tvtl-search-count") == ""  # the hits were for other filters
    # a name (case-insensitive), with the class
    n = _requests(page)
    page.fill("#name-search", "XMMA")
    page.press("#name-search", "Enter")
    _settled(page, n)
    assert _query(page) == {"class": "gemm", "q": "XMMA"} and "name=XMMA" in windows[-1]
    want = tasks.filter((pl.col("compute_class") == "gemm") & pl.col("name").str.to_lowercase().str.contains("xmma"))
    shown = page.evaluate(DEVICE_ITEMS)
    assert len(shown) == want.height > 0 and all("xmma" in name.lower() for name, _ in shown)
    # the search and a range selection ask within the filter
    page.fill("#tvtl-search", "nccl")
    page.press("#tvtl-search", "Enter")
    page.wait_for_function("() => document.querySelector('#tvtl-search-count').textContent === '0 found'")
    page.evaluate("() => { const m = window.tvTimeline.state.meta; window.tvTimeline.selectRange(0, m.end); }")
    page.wait_for_function("() => document.querySelector('#tvtl-range-class') !== null")
    classes = page.evaluate(
        "() => [...document.querySelectorAll('#tvtl-range-class tr')].map(t => t.cells[0].textContent)"
    )
    assert classes == ["gemm"]
    # the range totals follow a filter change; clearing the filters brings every task back
    n = _requests(page)
    page.fill("#name-search", "")
    page.press("#name-search", "Enter")
    page.click("#class-select .dash-dropdown-clear")
    page.wait_for_function("() => !window.location.search.includes('class') && !window.location.search.includes('q=')")
    _settled(page, n)
    page.wait_for_function("() => document.querySelectorAll('#tvtl-range-class tr').length > 3")
    assert len(page.evaluate(DEVICE_ITEMS)) == all_device
    assert errors == []
    page.close()


def test_a_kernel_name_in_the_overview_opens_its_instances_on_the_timeline(server_for, browser):
    """Clicking a kernel's name in the Overview's top-kernel table goes to the Timeline with the
    kernel as the name filter and its rank selected: the canvas draws exactly that kernel's tasks
    of that rank; clicking another column of the row stays on the Overview."""
    page, errors = open_page(browser, server_for(DP4) + "/?rank=1")
    page.locator("#kernel-table").scroll_into_view_if_needed()
    cell = "#kernel-table .ag-center-cols-container .ag-row[row-index='0'] .ag-cell[col-id='{}']"
    page.wait_for_selector(cell.format("short_name"), timeout=20_000)
    page.click(cell.format("count"))
    time.sleep(0.5)
    assert urlparse(page.url).path == "/"
    page.click(cell.format("short_name"))
    page.wait_for_function("() => window.location.pathname === '/timeline'", timeout=20_000)
    page.wait_for_function(READY, timeout=30_000)
    query = _query(page)
    assert query["rank"] == "1" and query["q"]
    tasks = tv.load(DP4).classified_tasks()
    want = tasks.filter(
        (pl.col("rank") == 1) & pl.col("name").str.to_lowercase().str.contains(query["q"].lower(), literal=True)
    )
    shown = page.evaluate(DEVICE_ITEMS)
    assert len(shown) == want.height > 0
    assert {name for name, _ in shown} == set(want["name"].to_list())
    assert errors == []
    page.close()


def test_compare_host_threads_jump_to_step_and_reset_from_the_toolbar(server_for, browser):
    """Two ranks picked in the toolbar: the URL says compare=a,b, rank a's lanes draw above rank
    b's; a shared address sets the pickers. Jump to step zooms to that step's window, and picking
    the same step again after a zoom jumps back. Host threads on and off (the URL's host=1; the
    browser's back button undoes it). Reset shows the whole profile."""
    page, errors, windows = ready_page(browser, server_for(DP4) + "/timeline?rank=1")
    n = _requests(page)
    page.select_option("#tvtl-compare-a", "2")
    assert "compare" not in _query(page)  # one rank picked: nothing to compare yet
    page.select_option("#tvtl-compare-b", "0")
    _settled(page, n)
    assert _query(page) == {"rank": "1", "compare": "2,0"} and "ranks=2%2C0" in windows[-1]
    headers = page.evaluate("() => window.tvTimeline.state.lanes.filter(l => l.header).map(l => l.label)")
    assert headers == ["rank 2", "rank 0"]
    ranks = page.evaluate("() => window.tvTimeline.state.lanes.filter(l => !l.header).map(l => l.rank)")
    assert ranks == sorted(ranks, key=lambda r: r != 2) and set(ranks) == {0, 2}
    # jump to a step, zoom out, the same step again
    steps = page.evaluate("() => window.tvTimeline.state.meta.steps")
    k = next(i for i, r in enumerate(steps["rank"]) if r == 2)
    page.select_option("#tvtl-step", str(k))
    page.wait_for_function(READY)
    assert view_of(page) == pytest.approx([steps["start"][k], steps["end"][k]])
    assert page.input_value("#tvtl-step") == ""  # free again
    page.evaluate("() => window.tvTimeline.zoom(4)")
    page.wait_for_function(READY)
    assert view_of(page)[1] - view_of(page)[0] > 2 * (steps["end"][k] - steps["start"][k])
    page.select_option("#tvtl-step", str(k))
    page.wait_for_function(READY)
    assert view_of(page) == pytest.approx([steps["start"][k], steps["end"][k]])
    # host threads on, and back off with the browser's back button
    n = _requests(page)
    page.check("#tvtl-host")
    _settled(page, n)
    assert _query(page)["host"] == "1" and "host=1" in windows[-1]
    kinds = page.evaluate("() => window.tvTimeline.state.lanes.filter(l => !l.header).map(l => l.kind)")
    assert "host" in kinds
    page.go_back()
    page.wait_for_function("() => !document.querySelector('#tvtl-host').checked")
    page.wait_for_function(READY)
    assert "host" not in page.evaluate("() => window.tvTimeline.state.lanes.map(l => l.kind)")
    # reset: the whole profile
    page.click("#tvtl-reset")
    end = page.evaluate("() => window.tvTimeline.state.meta.end")
    page.wait_for_function(READY)
    assert view_of(page) == pytest.approx([0, end])
    # dropping one picker drops the comparison; a shared address sets both
    page.select_option("#tvtl-compare-b", "")
    page.wait_for_function("() => !window.location.search.includes('compare')")
    assert page.evaluate("() => window.tvTimeline.urlState().compare") is None
    page.goto(server_for(DP4) + "/timeline?compare=3,1", wait_until="networkidle")
    page.wait_for_function(READY)
    assert [page.input_value("#tvtl-compare-a"), page.input_value("#tvtl-compare-b")] == ["3", "1"]
    assert errors == []
    page.close()


def test_the_tooltip_names_the_item_under_the_pointer(server_for, browser):
    """Hovering a kernel shows its full name (the bar shows it cut), class, lane, start and
    duration, at the pointer, from the data held (no request); leaving the canvas, a drag or a
    key hides it."""
    page, errors, windows = ready_page(browser, server_for(DP4) + "/timeline?rank=0")
    k = page.evaluate(LONGEST_DEVICE_ITEM, [0, False])
    api = []
    page.on("request", lambda r: api.append(r.url) if "/api/" in r.url else None)
    x, y = canvas_point(page, k["start"] + k["dur"] / 2, k["lane"])
    page.mouse.move(x, y)
    page.wait_for_function(f"() => ({TIP_ID})() === '{k['id']}'")
    tip = page.evaluate(TIP)
    fmt = page.evaluate(
        "([s, d]) => [window.tvTimeline.formatNs(s), window.tvTimeline.formatNs(d)]", [k["start"], k["dur"]]
    )
    assert tip == {
        "name": k["name"],
        "class": "class: " + k["cls"],
        "lane": f"lane: rank 0 · {k['label']}",
        "start": "start: " + fmt[0],
        "duration": "duration: " + fmt[1],
    }
    assert len(k["name"]) > 40  # longer than its bar shows
    box = page.locator("#tvtl-tooltip").bounding_box()
    assert abs(box["x"] - (x + 14)) < 2 or abs(box["x"] + box["width"] - (x - 14)) < 2  # at the pointer
    save_shot(page, "timeline_tooltip.png")
    assert api == []  # drawn from the window answer held
    page.mouse.move(x, 2)  # off the canvas, above it
    page.wait_for_function("() => document.querySelector('#tvtl-tooltip').style.display === 'none'")
    page.mouse.move(x, y)
    page.wait_for_function(f"() => ({TIP_ID})() === '{k['id']}'")
    page.mouse.down()
    page.mouse.move(x - 100, y, steps=4)
    page.mouse.up()
    page.wait_for_function("() => document.querySelector('#tvtl-tooltip').style.display === 'none'")
    assert errors == []
    page.close()


def _loads_drawn(page, url: str, loads: int) -> int:
    """How many of `loads` fresh loads of the page drew the canvas with data (within 20 s each)."""
    drawn = 0
    for _ in range(loads):
        page.goto(url, wait_until="load")
        try:
            page.wait_for_function(READY, timeout=20_000)
            page.wait_for_function(
                "() => window.tvTimeline.draws > 0 && window.tvTimeline.state.data.raw.id.length + window.tvTimeline.state.data.bins.lane.length > 0"
            )
            drawn += 1
        except Exception:  # noqa: BLE001 - a timeout is a blank load, counted
            pass
    return drawn


@needs_shared
@pytest.mark.parametrize("profile", [DLRM, ASCEND_LEVEL1], ids=["dlrm_8_ranks", "ascend_level1"])
def test_the_timeline_loads_drawn_25_times_in_a_row(server_for, browser, profile):
    """Reported on the plotly timeline: 8 of 12 loads blank on the DLRM set (a second figure
    request dropped the first answer). Every load of the canvas draws: 25 loads of each profile
    (a blank rate of 1 in 20 fails one of the two profiles nine times in ten)."""
    url = server_for(profile) + "/timeline"
    page, errors = open_page(browser, url)
    assert _loads_drawn(page, url, 25) == 25
    assert errors == []
    page.close()


def test_the_timeline_loads_drawn_when_the_server_is_slow(server_for, browser):
    """Every window answer held back 1.5 s: the page still draws, with one window request per
    load (a resize or redraw while the answer is on its way asks nothing more)."""
    url = server_for(DP4) + "/timeline"
    page, errors = open_page(browser, url)
    page.wait_for_function(READY, timeout=20_000)
    asked: list[str] = []

    def slow(route):
        asked.append(route.request.url)
        time.sleep(1.5)
        route.continue_()

    page.route("**/api/timeline/window*", slow)
    assert _loads_drawn(page, url, 3) == 3
    assert len(asked) == 3, asked
    assert errors == []
    page.close()


#: Per lane with raw items in the view, its longest item: lane, id, start, dur, width on screen (px).
LONGEST_PER_LANE = (
    "() => { const T = window.tvTimeline, d = T.state.data, best = {};"
    " for (let i = 0; i < d.raw.id.length; i++) { const l = d.raw.lane[i];"
    "  if (!(l in best) || d.raw.dur[i] > d.raw.dur[best[l]]) best[l] = i; }"
    " return Object.values(best).map(i => ({lane: d.raw.lane[i], id: d.raw.id[i], start: d.raw.start[i],"
    "  dur: d.raw.dur[i], px: T.x(d.raw.start[i] + d.raw.dur[i]) - T.x(d.raw.start[i])})); }"
)
MIN_BAR_PX = 8


@needs_shared
@pytest.mark.parametrize("profile", [DLRM, ASCEND_LEVEL1], ids=["dlrm_8_ranks", "ascend_level1"])
def test_hover_at_the_centre_of_the_longest_bar_of_each_lane_names_it(server_for, browser, profile):
    """Reported on the plotly timeline: hovering the middle of a 79 ms HCCL bar of the Ascend
    level1 profile named a 1.4 µs kernel of another lane. On the canvas, each lane's longest bar of
    the whole-profile view (zoomed to when narrower than MIN_BAR_PX) is hovered at its centre: the
    tooltip names that bar; a click selects it."""
    page, errors, _ = ready_page(browser, server_for(profile) + "/timeline")
    bars = page.evaluate(LONGEST_PER_LANE)
    assert len(bars) >= 4
    wrong = []
    for bar in bars:
        if bar["px"] < MIN_BAR_PX:
            mid = bar["start"] + bar["dur"] / 2
            page.evaluate(
                f"() => window.tvTimeline.setView({mid - 20 * bar['dur'] - 1000}, {mid + 20 * bar['dur'] + 1000})"
            )
            page.wait_for_function(READY)
        page.mouse.move(1, 1)
        x, y = canvas_point(page, bar["start"] + bar["dur"] / 2, bar["lane"])
        page.mouse.move(x, y)
        try:
            page.wait_for_function(f"() => ({TIP_ID})() === '{bar['id']}'", timeout=3_000)
        except Exception:  # noqa: BLE001 - recorded, all lanes checked
            wrong.append((bar, page.evaluate(TIP_ID)))
        if bar["px"] < MIN_BAR_PX:
            page.evaluate("() => window.tvTimeline.reset()")
            page.wait_for_function(READY)
    assert wrong == []
    longest = max(bars, key=lambda b: b["dur"])  # a click selects the bar the tooltip names
    assert longest["px"] >= MIN_BAR_PX  # on the whole-profile view, where the checks above ended
    x, y = canvas_point(page, longest["start"] + longest["dur"] / 2, longest["lane"])
    page.mouse.click(x, y)
    page.wait_for_function(f"() => (window.tvTimeline.state.selected || {{}}).id === {longest['id']}")
    assert page.inner_text("#tvtl-details td[data-field='duration']") == f"{longest['dur'] / 1000:.3f} µs"
    assert errors == []
    page.close()
