"""Real-browser tests of `traceview serve` (Playwright driving Debian's chromium).

They start the real server in a subprocess and check, in the rendered page: the figures draw,
the numbers shown equal the API's, a rank change (URL state) and a zoom update the figures, and
the browser console shows no errors. `.ci/run` installs chromium with apt-get; elsewhere the tests
skip with the reason when chromium or Playwright is missing.

Screenshots for the docs: `TRACEVIEW_SCREENSHOTS=1 python -m pytest tests/test_browser.py`
writes docs/screenshots/{overview,timeline,compare}.png from these same pages.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request

import polars as pl
import pytest

import traceview as tv
from tests.conftest import ROOT, SHARED_TRACES, needs_shared
from traceview.analysis.kernels import short_names

CHROMIUM = next((p for p in map(shutil.which, ("chromium", "chromium-browser")) if p), None)
try:
    from playwright.sync_api import sync_playwright
except ImportError:  # pragma: no cover - the test extra installs it
    sync_playwright = None

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(
        CHROMIUM is None or sync_playwright is None,
        reason="needs Debian's chromium (apt-get install chromium) and playwright (pip install -e '.[test]')",
    ),
]
SCREENSHOTS = ROOT / "docs" / "screenshots"
#: Chromium without the background services it would try to reach (this machine has no network
#: beyond loopback: refused connections show as console noise and slow the start).
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
DLRM = SHARED_TRACES / "param/et_replay/tests/inputs/dlrm_kineto.tar.gz.extracted/dlrm_kineto"
ASCEND_LEVEL1 = SHARED_TRACES / "msinsight/test/data/pytorch/text/level1"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server_for():
    """Start `traceview serve <path>` on a free port; yields a function path -> base URL."""
    procs = []

    def start(path) -> str:
        port = _free_port()
        proc = subprocess.Popen(
            [sys.executable, "-m", "traceview", "serve", str(path), "--port", str(port), "--quiet"],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        procs.append(proc)
        url = f"http://127.0.0.1:{port}"
        for _ in range(120):
            try:
                with urllib.request.urlopen(url + "/", timeout=1) as resp:
                    if resp.status == 200:
                        return url
            except OSError:
                time.sleep(0.25)
        raise RuntimeError(f"server for {path} did not start: {proc.stdout.read1(4000) if proc.stdout else ''}")

    yield start
    for proc in procs:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.fixture(scope="module")
def browser():
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()


def _open(browser, url: str, height: int = 1000):
    page = browser.new_page(viewport={"width": 1400, "height": height})
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(url, wait_until="networkidle")
    return page, errors


def _figure_data(page, graph_id: str):
    """The plotly traces drawn in a dcc.Graph, as the browser holds them."""
    page.wait_for_function(
        f"() => {{ const g = document.querySelector('#{graph_id} .js-plotly-plot'); return g && g.data && g.data.length > 0; }}",
        timeout=20_000,
    )
    return page.evaluate(
        f"() => document.querySelector('#{graph_id} .js-plotly-plot').data.map(t => ({{name: t.name, x: t.x, y: t.y}}))"
    )


def _ms(values):
    return [float(v) for v in values]


def test_overview_shows_the_api_numbers(server_for, browser):
    url = server_for(ROOT / "sample_traces" / "dp4_nccl")
    page, errors = _open(browser, url + "/")
    traces = _figure_data(page, "fig-breakdown")
    exposed = next(t for t in traces if t["name"] and t["name"].startswith("exposed comm"))
    api = tv.load(ROOT / "sample_traces" / "dp4_nccl").step_breakdown().sort("rank", "step")
    assert _ms(exposed["y"]) == pytest.approx((api["communication_not_overlapped_us"] / 1000).to_list(), abs=1e-6)
    assert "Straggler: rank 2" in page.inner_text("#findings")
    for graph in ("fig-step-time", "fig-heatmap", "fig-classes"):
        assert _figure_data(page, graph)
    if os.environ.get("TRACEVIEW_SCREENSHOTS"):
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SCREENSHOTS / "overview.png"), full_page=True)
    assert errors == []
    page.close()


def _grid_rows(page, count: int | None = None) -> list[dict]:
    """The kernel table's displayed rows (dash-ag-grid), as the browser shows them: col-id -> text."""
    page.locator("#kernel-table").scroll_into_view_if_needed()  # the grid draws its cells once on screen
    page.wait_for_selector("#kernel-table .ag-center-cols-container .ag-cell", timeout=20_000)
    if count is not None:
        page.wait_for_function(
            f"() => document.querySelectorAll('#kernel-table .ag-center-cols-container .ag-row').length >= {count}",
            timeout=20_000,
        )
    return page.evaluate(
        """() => [...document.querySelectorAll('#kernel-table .ag-center-cols-container .ag-row')]
            .sort((a, b) => Number(a.getAttribute('row-index')) - Number(b.getAttribute('row-index')))
            .map(r => Object.fromEntries([...r.querySelectorAll('.ag-cell')]
                .map(c => [c.getAttribute('col-id'), c.textContent])))"""
    )


def test_kernel_table_shows_the_api_rows_and_sorts(server_for, browser):
    """The kernel table (dash-ag-grid) lists the top kernels by total time, as `Trace.top_kernels`
    has them, 20 rows per page; a click on a header sorts by that column; no CSP or console error."""
    url = server_for(ROOT / "sample_traces" / "dp4_nccl")
    page, errors = _open(browser, url + "/?rank=1")
    rows = _grid_rows(page, 20)
    api = tv.load(ROOT / "sample_traces" / "dp4_nccl").top_kernels(50).filter(pl.col("rank") == 1)
    api = api.sort("total_us", descending=True)
    assert len(rows) == 20
    short = short_names(api["name"].to_list())  # the table shows short names (full name in the tooltip)
    assert [r["short_name"] for r in rows[:5]] == [short[n] for n in api["name"].head(5)]
    assert rows[0]["total_ms"] == f"{api['total_us'][0] / 1000:,.3f}"  # ms: 3 decimals, thousands separators
    page.click("#kernel-table .ag-header-cell[col-id='count']")
    page.wait_for_function(
        "() => document.querySelector(\"#kernel-table .ag-header-cell[col-id='count']\").getAttribute('aria-sort')"
        " === 'ascending'",
        timeout=10_000,
    )
    counts = [int(r["count"].replace(",", "")) for r in _grid_rows(page)]
    assert counts == sorted(counts) and counts[0] == api["count"].min()
    assert errors == []
    page.close()


def test_hostile_kernel_name_is_text_in_the_table(server_for, browser, tmp_path):
    hostile = "<img src=x id=pwned onerror=\"document.title='pwned'\">"
    doc = json.loads((ROOT / "tests" / "data" / "kineto_minimal.json").read_text())
    for event in doc["traceEvents"]:
        if event.get("cat") == "kernel" and event["name"].startswith("sm90"):
            event["name"] = hostile
    (tmp_path / "rank0.pt.trace.json").write_text(json.dumps(doc))
    url = server_for(tmp_path / "rank0.pt.trace.json")
    page, errors = _open(browser, url + "/")
    names = [r["short_name"] for r in _grid_rows(page)]
    trace = tv.load(tmp_path / "rank0.pt.trace.json", use_cache=False)
    short = short_names(trace.device_tasks["name"].to_list())[hostile]
    assert short in names
    cell = page.locator("#kernel-table .ag-center-cols-container .ag-cell[col-id='short_name']").nth(names.index(short))
    cell.hover()  # the full name, as text, in the tooltip
    page.locator(".ag-tooltip").wait_for(timeout=10_000)
    assert page.inner_text(".ag-tooltip") == hostile
    assert page.query_selector("#pwned") is None and page.title() == "traceview"
    assert errors == []
    page.close()


def test_rank_change_updates_the_figures(server_for, browser):
    url = server_for(ROOT / "sample_traces" / "dp4_nccl")
    page, errors = _open(browser, url + "/?rank=1")
    traces = _figure_data(page, "fig-breakdown")
    ranks_shown = {str(x) for t in traces for x in (t["x"][0] if isinstance(t["x"][0], list) else t["x"])}
    assert ranks_shown == {"rank 1"}
    assert errors == []
    page.close()


def test_timeline_zoom_switches_to_fewer_tasks(server_for, browser):
    url = server_for(ROOT / "sample_traces" / "dp4_nccl")
    page, errors = _open(browser, url + "/timeline")
    page.wait_for_function(
        "() => document.querySelector('#tl-note') && document.querySelector('#tl-note').innerText.includes('tasks')"
    )
    _figure_data(page, "tl-graph")  # drawn before we zoom
    before = page.inner_text("#tl-note")
    page.evaluate(
        "() => Plotly.relayout(document.querySelector('#tl-graph .js-plotly-plot'), {'xaxis.range': [10, 12]})"
    )
    page.wait_for_function(f"() => document.querySelector('#tl-note').innerText !== {before!r}", timeout=20_000)
    after = page.inner_text("#tl-note")
    n_before, n_after = (int(t.split(":")[1].split("tasks")[0].replace(",", "")) for t in (before, after))
    assert n_after < n_before
    if os.environ.get("TRACEVIEW_SCREENSHOTS"):
        page.evaluate(
            "() => Plotly.relayout(document.querySelector('#tl-graph .js-plotly-plot'), {'xaxis.autorange': true})"
        )
        page.wait_for_timeout(1500)
        page.screenshot(path=str(SCREENSHOTS / "timeline.png"), full_page=True)
    assert errors == []
    page.close()


def test_timeline_compare_two_ranks_and_jump_to_a_step(server_for, browser):
    """Two ranks one above the other from the URL; picking a step zooms both panels to it; a zoom
    frees the step picker and picking the same step again jumps back."""
    url = server_for(ROOT / "sample_traces" / "dp4_nccl")
    page, errors = _open(browser, url + "/timeline?compare=2,0")
    page.wait_for_function(
        "() => document.querySelector('#tl-note').innerText.startsWith('rank 2 above rank 0')", timeout=20_000
    )
    axes = page.evaluate(
        "() => { const l = document.querySelector('#tl-graph .js-plotly-plot').layout;"
        " return [l.yaxis.categoryarray, l.yaxis2.categoryarray]; }"
    )
    assert {a.split(" · ")[0] for a in axes[0]} == {"rank 2"} and {a.split(" · ")[0] for a in axes[1]} == {"rank 0"}
    steps = tv.load(ROOT / "sample_traces" / "dp4_nccl").steps.filter(
        pl.col("rank").is_in([0, 2]) & (pl.col("step") == 4)
    )
    x_range = "() => document.querySelector('#tl-graph .js-plotly-plot').layout.xaxis.range"

    def pick_step_4():
        page.click("#tl-step")
        page.get_by_text("step 4", exact=True).last.click()
        page.wait_for_function(f"() => ({x_range})()[1] - ({x_range})()[0] < {span * 0.9}", timeout=20_000)

    span = page.evaluate(f"() => ({x_range})()[1] - ({x_range})()[0]")
    pick_step_4()
    width = page.evaluate(f"() => ({x_range})()[1] - ({x_range})()[0]")
    want = (int(steps["device_end_ns"].max()) - int(steps["device_start_ns"].min())) / 1e6
    assert width == pytest.approx(want, rel=1e-6)
    page.evaluate(
        "() => Plotly.relayout(document.querySelector('#tl-graph .js-plotly-plot'), {'xaxis.autorange': true})"
    )
    page.wait_for_function(f"() => ({x_range})()[1] - ({x_range})()[0] > {width * 1.5}", timeout=20_000)
    span = page.evaluate(f"() => ({x_range})()[1] - ({x_range})()[0]")
    pick_step_4()  # the same step again
    assert page.evaluate(f"() => ({x_range})()[1] - ({x_range})()[0]") == pytest.approx(want, rel=1e-6)
    if os.environ.get("TRACEVIEW_SCREENSHOTS"):
        page.wait_for_timeout(1000)
        page.screenshot(path=str(SCREENSHOTS / "compare.png"), full_page=True)
    assert errors == []
    page.close()


@needs_shared
def test_real_multi_rank_trace_overview(server_for, browser):
    path = SHARED_TRACES / "param/et_replay/tests/inputs/dlrm_kineto.tar.gz.extracted/dlrm_kineto"
    url = server_for(path)
    page, errors = _open(browser, url + "/")
    traces = _figure_data(page, "fig-breakdown")
    computing = [t for t in traces if t["name"] and t["name"].startswith("computing")]
    assert computing
    api = tv.load(path).step_breakdown().sort("rank", "step")
    shown = sum(_ms(computing[0]["y"]))
    overlapped = next(t for t in traces if t["name"] and t["name"].startswith("overlapped"))
    total = shown + sum(_ms(overlapped["y"]))  # the bar splits computing into not-overlapped + overlapped
    assert total == pytest.approx(api["computing_us"].sum() / 1000, rel=1e-6)
    assert errors == []
    page.close()


@needs_shared
def test_report_of_a_real_multi_rank_trace_opens_offline(browser, tmp_path):
    """`traceview report` on the real 8-rank DLRM set, opened from file:// with the network off:
    every figure renders, nothing is fetched, no console error, and the step table shows the
    numbers of `traceview summary --format json`."""
    import json

    path = SHARED_TRACES / "param/et_replay/tests/inputs/dlrm_kineto.tar.gz.extracted/dlrm_kineto"
    out = tmp_path / "dlrm.html"
    cmd = [sys.executable, "-m", "traceview"]
    res = subprocess.run(
        [*cmd, "report", str(path), "-o", str(out), "-q"], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert res.returncode == 0, res.stderr
    summary = json.loads(
        subprocess.run(
            [*cmd, "summary", str(path), "--format", "json", "-q"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=300,
        ).stdout
    )
    context = browser.new_context(offline=True, viewport={"width": 1400, "height": 1000})
    fetched: list[str] = []

    def route(r):
        fetched.append(r.request.url)
        return r.continue_() if r.request.url.startswith("file:") else r.abort()

    context.route("**/*", route)
    page = context.new_page()
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(out.as_uri(), wait_until="load")
    n_blocks = page.evaluate("document.querySelectorAll('script[data-figure]').length")
    page.wait_for_function(f"() => document.querySelectorAll('.js-plotly-plot').length === {n_blocks}", timeout=30_000)
    drawn = page.evaluate("() => Array.from(document.querySelectorAll('.js-plotly-plot')).map(g => g.data.length)")
    assert n_blocks >= 6 and all(n > 0 for n in drawn)
    cells = page.evaluate("""() => Array.from(document.querySelectorAll('#steps-table tbody tr')).map(tr =>
        Object.fromEntries(Array.from(tr.querySelectorAll('td')).map(td => [td.dataset.key, td.innerText])))""")
    want = [{"rank": r["rank"], **s} for r in summary["ranks"] for s in r["steps"]]
    assert len(cells) == len(want) > 0
    for shown, expect in zip(cells, want):
        assert shown["rank"] == str(expect["rank"]) and shown["step"] == str(expect["step"])
        for key in ("duration_us", "computing_us", "communication_not_overlapped_us"):
            assert shown[key] == f"{expect[key] / 1000:,.3f}"
    assert [u for u in fetched if not u.startswith("file:")] == [] and errors == []
    context.close()


# ---- the timeline loads drawn, and hover names the task under the pointer (issue 14) ----------

#: True once the timeline figure holds drawn data (segments or bins); a blank load never gets there.
#: (plotly.py sends arrays as typed-array specs {dtype, bdata}; plotly.js keeps the decoded array
#: in `_inputArray`.)
ARRAY_JS = "const arr = v => (v && v._inputArray) ? v._inputArray : (v || []);"
TIMELINE_DRAWN = (
    """() => {
    %s
    const g = document.querySelector('#tl-graph .js-plotly-plot');
    if (!g || !g.data || !g.data.length || !g._fullLayout) { return false; }
    return g.data.some(t => arr(t.x).length > 0 || arr(t.z).length > 0);
}"""
    % ARRAY_JS
)


def _timeline_loads(page, url: str, loads: int) -> int:
    """How many of `loads` fresh loads of the timeline page drew the figure (within 20 s each)."""
    drawn = 0
    for _ in range(loads):
        page.goto(url, wait_until="load")
        try:
            page.wait_for_function(TIMELINE_DRAWN, timeout=20_000)
            drawn += 1
        except Exception:  # noqa: BLE001 - a timeout is a blank load, counted
            pass
    return drawn


@needs_shared
@pytest.mark.parametrize("profile", [DLRM, ASCEND_LEVEL1], ids=["dlrm_8_ranks", "ascend_level1"])
def test_the_timeline_loads_drawn_fifty_times_in_a_row(server_for, browser, profile):
    """Reported: 8 of 12 loads blank on the DLRM set. The autosize relayout of the first draw sent
    a second figure request while the first was in flight; Dash dropped the first answer and the
    server answered the second with "no update"."""
    url = server_for(profile) + "/timeline"
    page, errors = _open(browser, url)
    assert _timeline_loads(page, url, 50) == 50
    assert errors == []
    page.close()


def test_the_timeline_loads_drawn_when_the_server_is_slow(server_for, browser):
    """The race made visible on a quiet machine: every figure answer is held back 1.5 s, so the
    relayout of the first (empty) draw always happens while the first request is in flight."""
    url = server_for(ROOT / "sample_traces" / "dp4_nccl") + "/timeline"
    page, errors = _open(browser, url)
    # the first load's own figure request must be over before counting: "networkidle" can come
    # between the page's scripts and its first callback on a loaded machine
    page.wait_for_function(TIMELINE_DRAWN, timeout=20_000)
    requests: list[str] = []

    def slow(route):
        body = route.request.post_data or ""
        requests.append(body)
        if "tl-graph.figure" in body:
            time.sleep(1.5)
        route.continue_()

    page.route("**/_dash-update-component*", slow)
    assert _timeline_loads(page, url, 3) == 3
    figure_requests = [json.loads(b)["changedPropIds"] for b in requests if "tl-graph.figure" in b]
    assert len(figure_requests) == 3, (
        f"one figure request per load, plotly's own relayouts stay in the browser: {figure_requests}"
    )
    assert errors == []
    page.close()


#: The longest segment of each lane in the drawn timeline: its lane, the x of its centre, its key.
LONGEST_PER_LANE = (
    """() => {
    %s
    const g = document.querySelector('#tl-graph .js-plotly-plot');
    const best = {};
    g.data.forEach(t => {
        if (t.type !== 'scattergl') { return; }
        const x = arr(t.x), y = arr(t.y);
        let start = 0;
        for (let i = 0; i <= x.length; i++) {
            if (i === x.length || y[i] === null || Number.isNaN(x[i])) {
                if (i - start >= 2) {
                    const lane = y[start], a = x[start], b = x[i - 1];
                    if (!(lane in best) || b - a > best[lane].len) {
                        best[lane] = {lane: lane, len: b - a, mid: (a + b) / 2, key: t.customdata[start]};
                    }
                }
                start = i + 1;
            }
        }
    });
    const xa = g._fullLayout.xaxis, ya = g._fullLayout.yaxis;
    return Object.values(best).map(s => Object.assign(s, {
        px: xa._offset + xa.l2p(s.mid), py: ya._offset + ya.l2p(ya.d2l(s.lane)),
        width_px: Math.abs(xa.l2p(s.len) - xa.l2p(0))}));
}"""
    % ARRAY_JS
)


#: Where the segment of task `key` is drawn now: {px, py} of its centre in the plot, its width in px.
SEGMENT_OF = (
    """(key) => {
    %s
    const g = document.querySelector('#tl-graph .js-plotly-plot');
    const xa = g._fullLayout.xaxis, ya = g._fullLayout.yaxis;
    for (const t of g.data) {
        if (t.type !== 'scattergl') { continue; }
        const x = arr(t.x), y = arr(t.y), keys = t.customdata;
        for (let i = 0; i < x.length; i++) {
            if (keys[i] !== key) { continue; }
            let j = i;
            while (j + 1 < x.length && keys[j + 1] === key) { j++; }
            return {px: xa._offset + xa.l2p((x[i] + x[j]) / 2), py: ya._offset + ya.l2p(ya.d2l(y[i])),
                    width_px: Math.abs(xa.l2p(x[j]) - xa.l2p(x[i]))};
        }
    }
    return null;
}"""
    % ARRAY_JS
)
#: The x window the server drew the figure for (`TimelineData._layout` sets a uirevision per window).
X_REVISION = "() => document.querySelector('#tl-graph .js-plotly-plot').layout.xaxis.uirevision"
#: Bars narrower than this on the whole-trace view are checked after zooming to them (a bar of a
#: pixel or two has no centre a pointer can tell from its neighbours').
MIN_BAR_PX = 8


@needs_shared
@pytest.mark.parametrize("profile", [DLRM, ASCEND_LEVEL1], ids=["dlrm_8_ranks", "ascend_level1"])
def test_hover_at_the_centre_of_the_longest_bar_of_each_lane_names_it(server_for, browser, profile):
    """Reported: on the Ascend level1 profile, hovering the middle of a 79 ms HCCL bar showed a
    1.4 µs kernel of another lane (a WebGL line is hit-tested at its vertices only). Each lane's
    longest bar of the whole-trace view is hovered at its centre (zoomed to when it is drawn
    narrower than MIN_BAR_PX); the hover names that bar, and a click selects it."""
    url = server_for(profile) + "/timeline"
    page, errors = _open(browser, url, height=1800)  # every lane inside the viewport: the mouse can reach it
    page.wait_for_function(TIMELINE_DRAWN, timeout=20_000)
    page.wait_for_function("() => document.querySelector('#tl-note').innerText.startsWith('raw')", timeout=20_000)
    page.evaluate(
        "() => { const g = document.querySelector('#tl-graph .js-plotly-plot');"
        " g.on('plotly_hover', d => { window.__hovered = d.points[0].customdata; }); }"
    )
    # the plotly timeline sits below the canvas timeline: bring it to the top of the viewport
    page.evaluate("() => document.querySelector('#tl-graph').scrollIntoView({block: 'start'})")
    box = page.locator("#tl-graph .js-plotly-plot").bounding_box()

    def hovered_at(where: dict) -> str:
        assert box["y"] + where["py"] < 1800, "the lane is outside the viewport"
        page.mouse.move(box["x"] + 2, box["y"] + 2)
        page.evaluate("() => { window.__hovered = null; }")
        page.mouse.move(box["x"] + where["px"], box["y"] + where["py"], steps=3)  # a move, not a jump
        page.wait_for_function("() => window.__hovered !== null", timeout=5_000)
        page.wait_for_timeout(250)  # the hover of the last step (plotly throttles hover events)
        return page.evaluate("() => window.__hovered")

    bars = page.evaluate(LONGEST_PER_LANE)
    assert len(bars) >= 4
    wrong = [
        (b["lane"], b["key"], got) for b in bars if b["width_px"] >= MIN_BAR_PX if (got := hovered_at(b)) != b["key"]
    ]
    zoomed = 0
    for bar in (b for b in bars if b["width_px"] < MIN_BAR_PX):
        drawn = page.evaluate(X_REVISION)
        page.evaluate(
            "([lo, hi]) => Plotly.relayout(document.querySelector('#tl-graph .js-plotly-plot'),"
            " {'xaxis.range': [lo, hi]})",
            [bar["mid"] - 20 * bar["len"], bar["mid"] + 20 * bar["len"]],
        )
        page.wait_for_function(f"() => ({X_REVISION})() !== {drawn!r}", timeout=20_000)  # the server's figure
        page.wait_for_function(f"(key) => ({SEGMENT_OF})(key) !== null", arg=bar["key"], timeout=20_000)
        where = page.evaluate(SEGMENT_OF, bar["key"])
        assert where["width_px"] >= MIN_BAR_PX
        if (got := hovered_at(where)) != bar["key"]:
            wrong.append((bar["lane"], bar["key"], got))
        zoomed += 1
    assert wrong == []
    longest = max(bars, key=lambda b: b["len"])  # a click selects the same task
    if zoomed:
        drawn = page.evaluate(X_REVISION)
        page.evaluate(
            "() => Plotly.relayout(document.querySelector('#tl-graph .js-plotly-plot'), {'xaxis.autorange': true})"
        )
        page.wait_for_function(f"() => ({X_REVISION})() !== {drawn!r}", timeout=20_000)
        page.wait_for_function(f"(key) => ({SEGMENT_OF})(key) !== null", arg=longest["key"], timeout=20_000)
    where = page.evaluate(SEGMENT_OF, longest["key"])
    assert hovered_at(where) == longest["key"]  # plotly clicks the point it hovers
    page.mouse.click(box["x"] + where["px"], box["y"] + where["py"])
    _, _, start_ns, end_ns = longest["key"].split("|")
    page.wait_for_function("() => document.querySelector('#tl-detail-duration') !== null", timeout=10_000)
    assert page.inner_text("#tl-detail-duration") == f"{(int(end_ns) - int(start_ns)) / 1000:.3f} µs"
    assert errors == []
    page.close()
