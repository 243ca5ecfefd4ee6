"""Security (issue 7). The browser tests; the topic's description and its other tests:
tests/integration/test_security.py.
"""

from __future__ import annotations

import pytest

from tests.support.hostile import (
    NAMES,
    PWN,
    TEMPLATE,
)
from traceview.analysis.kernels import short_names

try:
    from tests.support.browser import CHROMIUM, browser, server_for, sync_playwright  # noqa: F401  (fixtures)
    from tests.support.browser_timeline import READY as CANVAS_READY
    from tests.support.browser_timeline import canvas_point
except Exception:  # pragma: no cover
    CHROMIUM = sync_playwright = None
from tests.support.security_shared import hostile, report_file  # noqa: F401

needs_browser = pytest.mark.skipif(
    CHROMIUM is None or sync_playwright is None,
    reason="needs Debian's chromium (apt-get install chromium) and playwright (pip install -e '.[test]')",
)


def _watched(page_or_context):
    page = page_or_context.new_page()
    page.set_default_timeout(90_000)  # generous: the CI box has 2 cores and may be busy
    seen = {"dialogs": [], "errors": []}
    page.on("dialog", lambda d: (seen["dialogs"].append(d.message), d.dismiss()))
    page.on("pageerror", lambda e: seen["errors"].append(str(e)))
    return page, seen


def _not_pwned(page, seen) -> None:
    page.wait_for_timeout(500)  # let any onerror/onload handler run
    assert page.evaluate("() => typeof window.__pwned") == "undefined"
    live = "() => document.querySelectorAll('[onerror],[onload],img,iframe,a[href^=javascript]').length"
    assert page.evaluate(live) == 0
    assert seen["dialogs"] == []


@needs_browser
def test_browser_report_runs_no_payload(browser, report_file):
    page, seen = _watched(browser)
    page.goto(report_file.as_uri(), wait_until="load")
    n = page.evaluate("document.querySelectorAll('script[data-figure]').length")
    page.wait_for_function(f"() => document.querySelectorAll('.js-plotly-plot').length === {n}", timeout=90_000)
    assert n > 0
    body = page.inner_text("body")
    assert NAMES["kernel"] in body and TEMPLATE in body  # shown, as text, templates not evaluated
    _not_pwned(page, seen)
    assert seen["errors"] == []
    page.close()


#: Per lane kind (device, host), the first item of the canvas timeline's data whose name holds a
#: payload: its id, lane, start, duration and name.
FIND_HOSTILE_ITEMS = """() => { const T = window.tvTimeline, d = T.state.data, kinds = T.state.meta.lanes.kind, out = {};
  for (let i = 0; i < d.raw.id.length; i++) { const name = d.names[d.raw.name[i]], kind = kinds[d.raw.lane[i]];
    if (name.includes('__pwned') && !(kind in out))
      out[kind] = {id: d.raw.id[i], lane: d.raw.lane[i], start: d.raw.start[i], dur: d.raw.dur[i], name: name}; }
  return out; }"""


#: The tags inside the tooltip and the details: what textContent-built nodes may be, nothing else.
TAGS_IN = "(sel) => [...new Set([...document.querySelectorAll(sel + ' *')].map(e => e.tagName))].sort()"


def _hover_and_click_hostile_task(page) -> None:
    """Hover a kernel and a host operator named with a payload on the canvas timeline (its tooltip
    shows the name, class and lane) and click each (the details show its fields), with the mouse:
    the names are text in both, and no element comes from them."""
    page.wait_for_function(CANVAS_READY, timeout=90_000)
    found = page.evaluate(FIND_HOSTILE_ITEMS)
    assert {"device", "host"} <= set(found), found
    for kind in ("device", "host"):
        item = found[kind]
        page.evaluate(
            f"() => window.tvTimeline.setView({item['start'] - item['dur']}, {item['start'] + 2 * item['dur']})"
        )
        page.wait_for_function(CANVAS_READY, timeout=90_000)
        x, y = canvas_point(page, item["start"] + item["dur"] / 2, item["lane"])
        page.mouse.move(x, y)
        page.wait_for_function(
            f"() => document.querySelector('#tvtl-tooltip').dataset.id === '{item['id']}'", timeout=90_000
        )
        tip = page.evaluate(
            "() => Object.fromEntries([...document.querySelectorAll('#tvtl-tooltip [data-field]')]"
            ".map(e => [e.dataset.field, e.textContent]))"
        )
        assert tip["name"] == item["name"] and PWN in tip["name"], (kind, tip)
        assert tip["lane"].startswith("lane: rank ") and tip["class"].startswith("class: ")
        assert page.evaluate(TAGS_IN, "#tvtl-tooltip") == ["DIV", "SPAN"]
        page.mouse.click(x, y)
        page.wait_for_function(f"() => (window.tvTimeline.state.selected || {{}}).id === {item['id']}", timeout=90_000)
        assert page.inner_text("#tvtl-details td[data-field='name']") == item["name"]
        assert set(page.evaluate(TAGS_IN, "#tvtl-details")) <= {"TABLE", "TBODY", "TR", "TH", "TD", "BUTTON"}
    page.mouse.move(1, 1)
    page.wait_for_function("() => document.querySelector('#tvtl-tooltip').style.display === 'none'")


@needs_browser
def test_browser_dashboard_runs_no_payload(browser, server_for, hostile):
    url = server_for(hostile)
    for path in ("/", "/timeline?host=1"):
        page, seen = _watched(browser)
        page.goto(url + path, wait_until="networkidle")
        if path == "/":  # the Overview's figures (the Timeline page builds none: app.on_page)
            page.wait_for_function(
                "() => Array.from(document.querySelectorAll('.js-plotly-plot')).some(g => g.data && g.data.length > 0)",
                timeout=90_000,
            )
        else:
            page.wait_for_function(CANVAS_READY, timeout=90_000)
        page.wait_for_timeout(1000)
        graphs = page.evaluate("() => Array.from(document.querySelectorAll('.js-plotly-plot')).map(g => g.id || 'g')")
        for i in range(len(graphs)):  # hover each figure's middle: hover labels are HTML in plotly
            box = page.locator(".js-plotly-plot").nth(i).bounding_box(timeout=2_000)
            if box:
                page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
                page.wait_for_timeout(100)
        if path != "/":
            _hover_and_click_hostile_task(page)
        _not_pwned(page, seen)
        if path == "/":
            # the kernel table shows them, as the text of its cells (innerText would depend on
            # when the grid lays its rows out; the cells' text is what they hold)
            # (their short names; the full names are the rows' data, shown in the tooltip)
            page.locator("#kernel-table").scroll_into_view_if_needed()
            names = (
                "() => [...document.querySelectorAll('#kernel-table .ag-cell[col-id=short_name]')]"
                ".map(c => c.textContent)"
            )
            page.wait_for_function(f"() => ({names})().length > 0", timeout=30_000)
            shown = page.evaluate(names)
            short = short_names([NAMES["kernel"], TEMPLATE])
            assert short[NAMES["kernel"]] in shown and any(c.startswith(short[TEMPLATE]) for c in shown), shown
            full = page.evaluate(
                "() => { const names = []; dash_ag_grid.getApi('kernel-table')"
                ".forEachNode(n => names.push(n.data.name)); return names; }"
            )
            assert NAMES["kernel"] in full and any(n.startswith(TEMPLATE) for n in full), full
        assert seen["errors"] == [], (path, seen["errors"])
        page.close()
