"""Real-browser tests of `traceview serve` (Playwright driving Debian's chromium).

They start the real server in a subprocess and check, in the rendered page: the figures draw,
the numbers shown equal the API's, a rank change (URL state) and a zoom update the figures, and
the browser console shows no errors. `.ci/run` installs chromium with apt-get; elsewhere the tests
skip with the reason when chromium or Playwright is missing.

Screenshots for the docs: `TRACEVIEW_SCREENSHOTS=1 python -m pytest tests/test_browser.py`
writes docs/screenshots/{overview,timeline,compare}.png from these same pages.
"""

from __future__ import annotations

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

CHROMIUM = next((p for p in map(shutil.which, ("chromium", "chromium-browser")) if p), None)
try:
    from playwright.sync_api import sync_playwright
except ImportError:  # pragma: no cover - the test extra installs it
    sync_playwright = None

pytestmark = pytest.mark.skipif(
    CHROMIUM is None or sync_playwright is None,
    reason="needs Debian's chromium (apt-get install chromium) and playwright (pip install -e '.[test]')",
)
SCREENSHOTS = ROOT / "docs" / "screenshots"


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
            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
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
        b = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield b
        b.close()


def _open(browser, url: str):
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
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
    exposed = next(t for t in traces if t["name"] and t["name"].startswith("exposed communication"))
    api = tv.load(ROOT / "sample_traces" / "dp4_nccl").step_breakdown().sort("rank", "step")
    assert _ms(exposed["y"]) == pytest.approx((api["communication_not_overlapped_us"] / 1000).to_list(), abs=1e-6)
    assert "Slow rank: rank 2" in page.inner_text("#findings")
    for graph in ("fig-step-time", "fig-heatmap", "fig-classes"):
        assert _figure_data(page, graph)
    if os.environ.get("TRACEVIEW_SCREENSHOTS"):
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SCREENSHOTS / "overview.png"), full_page=True)
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
    page.wait_for_function("() => document.querySelector('#tl-note') && document.querySelector('#tl-note').innerText.includes('tasks')")
    _figure_data(page, "tl-graph")  # drawn before we zoom
    before = page.inner_text("#tl-note")
    page.evaluate("() => Plotly.relayout(document.querySelector('#tl-graph .js-plotly-plot'), {'xaxis.range': [10, 12]})")
    page.wait_for_function(f"() => document.querySelector('#tl-note').innerText !== {before!r}", timeout=20_000)
    after = page.inner_text("#tl-note")
    n_before, n_after = (int(t.split(":")[1].split("tasks")[0].replace(",", "")) for t in (before, after))
    assert n_after < n_before
    if os.environ.get("TRACEVIEW_SCREENSHOTS"):
        page.evaluate("() => Plotly.relayout(document.querySelector('#tl-graph .js-plotly-plot'), {'xaxis.autorange': true})")
        page.wait_for_timeout(1500)
        page.screenshot(path=str(SCREENSHOTS / "timeline.png"), full_page=True)
    assert errors == []
    page.close()


def test_timeline_compare_two_ranks_and_jump_to_a_step(server_for, browser):
    """Two ranks one above the other from the URL; picking a step zooms both panels to it; a zoom
    frees the step picker and picking the same step again jumps back."""
    url = server_for(ROOT / "sample_traces" / "dp4_nccl")
    page, errors = _open(browser, url + "/timeline?compare=2,0")
    page.wait_for_function("() => document.querySelector('#tl-note').innerText.startsWith('rank 2 above rank 0')",
                           timeout=20_000)
    axes = page.evaluate("() => { const l = document.querySelector('#tl-graph .js-plotly-plot').layout;"
                         " return [l.yaxis.categoryarray, l.yaxis2.categoryarray]; }")
    assert {a.split(" · ")[0] for a in axes[0]} == {"rank 2"} and {a.split(" · ")[0] for a in axes[1]} == {"rank 0"}
    steps = tv.load(ROOT / "sample_traces" / "dp4_nccl").steps.filter(pl.col("rank").is_in([0, 2]) & (pl.col("step") == 4))
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
    page.evaluate("() => Plotly.relayout(document.querySelector('#tl-graph .js-plotly-plot'), {'xaxis.autorange': true})")
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
    res = subprocess.run([*cmd, "report", str(path), "-o", str(out), "-q"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    summary = json.loads(subprocess.run([*cmd, "summary", str(path), "--format", "json", "-q"], cwd=ROOT,
                                        capture_output=True, text=True, timeout=300).stdout)
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
