"""Real-browser tests of the Overview page (issue 17): the headline cards show the summary's
numbers, the findings are one line per rule with the advice folded, the heatmap is relative to the
median step, panels with nothing to show are hidden, and the kernel grids show short names with
the full name in the tooltip and one number format per column.

Screenshots for docs/dashboard.md: `TRACEVIEW_SCREENSHOTS=1 python -m pytest tests/browser/test_browser_overview.py`
writes docs/screenshots/overview-*.png from these same pages. Every wait is for an element or a
state of the page, never a fixed time.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.request

import pytest

import traceview as tv
from tests.conftest import ROOT, SAMPLES, needs_shared
from tests.support.browser import (  # noqa: F401 - pytest fixtures, used by name
    ASCEND_LEVEL1,
    CHROMIUM,
    DLRM,
    SCREENSHOTS,
    browser,
    free_port,
    open_page,
    sync_playwright,
)
from traceview.analysis.iteration import LABELS
from traceview.analysis.kernels import short_names
from traceview.dashboards import figures
from traceview.summary import build_summary

pytestmark = [
    pytest.mark.skipif(
        CHROMIUM is None or sync_playwright is None,
        reason="needs Debian's chromium (apt-get install chromium) and playwright (pip install -e '.[test]')",
    ),
]
TOP_SHOTS = {"dp4_nccl", "ascend_2rank"}
MODEL = ("--seq-len", "2048", "--global-batch", "8", "--params", "1.07e9")  # the README's example


@pytest.fixture(scope="module")
def serve_with():
    """Start `traceview serve <path> ARGS` on a free port; yields a function (path, *args) -> base URL."""
    procs = []

    def start(path, *args) -> str:
        port = free_port()
        cmd = [sys.executable, "-m", "traceview", "serve", str(path), "--port", str(port), "--quiet", *args]
        proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        procs.append(proc)
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(url + "/", timeout=1) as resp:
                    if resp.status == 200:
                        return url
            except OSError:
                assert proc.poll() is None, proc.stdout.read().decode(errors="replace")[-2000:]
                time.sleep(0.25)  # polling the server's port, not waiting on the page
        raise RuntimeError(f"server for {path} did not start")

    yield start
    for proc in procs:
        proc.terminate()
        proc.wait(timeout=10)


def _summary(path, **throughput) -> dict:
    """The summary the server renders (`traceview serve` builds it with details=False)."""
    return build_summary(tv.load(path), details=False, throughput=throughput or None)


def _wait_drawn(page, graph_id: str) -> None:
    page.wait_for_function(
        f"() => {{ const g = document.querySelector('#{graph_id} .js-plotly-plot');"
        " return g && g.data && g.data.length > 0; }",
        timeout=30_000,
    )


def _card(page, card_id: str) -> str:
    return page.inner_text(f"#{card_id}-value")


def _check_cards(page, doc: dict) -> None:
    head = doc["headline"]
    page.wait_for_selector("#headline-cards .stat-card", timeout=30_000)
    assert _card(page, "card-iteration") == f"{head['mean_iteration_us'] / 1000:,.3f} ms"
    assert _card(page, "card-exposed-comm") == f"{100 * head['communication_not_overlapped_frac']:.1f} %"
    assert _card(page, "card-largest") == f"{100 * head['largest_term_frac']:.1f} %"
    assert page.inner_text("#card-largest-detail") == f"{LABELS[head['largest_term']]} of the iteration"
    if head.get("mfu_frac") is not None:
        assert _card(page, "card-mfu") == f"{100 * head['mfu_frac']:.1f} %"
        assert page.inner_text("#card-mfu-detail") == f"HFU {100 * head['hfu_frac']:.1f} %"
    else:
        assert page.locator("#card-mfu").count() == 0
    cross = doc.get("cross_rank")
    if cross is None:
        assert page.locator("#card-straggler").count() == 0
    elif cross["straggler"] is None:
        assert _card(page, "card-straggler") == "none"
    else:
        assert _card(page, "card-straggler") == f"rank {cross['straggler']}"
        wait = figures.others_mean_wait_us(doc)
        if wait is not None:
            assert page.inner_text("#card-straggler-detail") == f"others wait {wait / 1000:,.3f} ms (mean)"
    lines = [p.strip() for p in page.locator("#headline p").all_inner_texts()]
    from traceview.summary_text import headline_lines

    assert lines == [line.strip() for line in headline_lines(head)]


def _check_folded_findings(page, doc: dict) -> None:
    rules = page.locator("#findings li.finding-rule")
    assert rules.count() == len(doc["findings_by_rule"])
    for i, finding in enumerate(doc["findings_by_rule"]):
        rule = rules.nth(i)
        advice = rule.locator("details.finding-advice")
        assert advice.get_attribute("open") is None and not advice.locator("p").is_visible()
        assert rule.locator(".finding-message").inner_text() == finding["message"]
    if doc["findings_by_rule"]:
        first = rules.nth(0).locator("details.finding-advice")
        first.locator("summary").click()
        first.locator("p").wait_for(state="visible", timeout=5_000)
        assert first.locator("p").inner_text() == doc["findings_by_rule"][0]["advice"]
        first.locator("summary").click()  # folded again for the screenshot
        first.locator("p").wait_for(state="hidden", timeout=5_000)


def _check_heatmap(page, doc: dict) -> None:
    if not page.locator("#panel-heatmap").is_visible():
        assert len(doc["ranks"]) == 1
        return
    _wait_drawn(page, "fig-heatmap")
    heat = page.evaluate(
        "() => { const t = document.querySelector('#fig-heatmap .js-plotly-plot').data[0];"
        " return {z: t.z, ms: t.customdata, zmin: t.zmin, zmax: t.zmax, zmid: t.zmid}; }"
    )
    want = figures.step_heatmap_figure(doc).data[0]
    assert heat["ms"] == [list(row) for row in want.customdata]
    spread = max(abs(v) for row in heat["z"] for v in row if v is not None)
    assert heat["zmid"] == 0 and heat["zmax"] == -heat["zmin"] == pytest.approx(max(5.0, spread))


def _check_kernel_tooltip(page) -> None:
    """The kernel cell shows the short name; hovering it shows the full name."""
    page.locator("#kernel-table").scroll_into_view_if_needed()
    cell = page.locator("#kernel-table .ag-center-cols-container .ag-row[row-index='0'] .ag-cell[col-id='short_name']")
    cell.wait_for(timeout=30_000)
    shown = cell.inner_text()
    cell.hover()
    tooltip = page.locator(".ag-tooltip")
    tooltip.wait_for(timeout=10_000)
    full = tooltip.inner_text()
    assert short_names([full])[full] == shown or full == shown
    page.mouse.move(0, 0)
    tooltip.wait_for(state="detached", timeout=10_000)


def _check_cross_rank_table(page, doc: dict) -> None:
    if not doc["kernels"]:
        assert page.locator("#cross-rank-table").count() == 0
        return
    page.locator("#cross-rank-table").scroll_into_view_if_needed()
    first = "#cross-rank-table .ag-center-cols-container .ag-row[row-index='0']"
    page.wait_for_selector(f"{first} .ag-cell[col-id='total_ms']", timeout=30_000)
    top = max(doc["kernels"], key=lambda k: k["total_us"])
    assert page.inner_text(f"{first} .ag-cell[col-id='short_name']") == top["short_name"]
    assert page.inner_text(f"{first} .ag-cell[col-id='total_ms']") == f"{top['total_us'] / 1000:,.3f}"
    assert page.inner_text(f"{first} .ag-cell[col-id='share_pct']") == f"{100 * top['share']:.1f}"
    if len(doc["ranks"]) > 1:
        assert page.inner_text(f"{first} .ag-cell[col-id='rank_max_ms']") == f"{top['rank_max_us'] / 1000:,.3f}"
        assert page.inner_text(f"{first} .ag-cell[col-id='max_rank']") == f"{top['max_rank']:,}"


def _screenshot(page, name: str) -> None:
    if os.environ.get("TRACEVIEW_SCREENSHOTS"):
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        page.evaluate("() => window.scrollTo(0, 0)")
        page.screenshot(path=str(SCREENSHOTS / f"overview-{name}.png"), full_page=True)
        if name in TOP_SHOTS:  # what a reader sees first, shown in docs/dashboard.md
            page.screenshot(path=str(SCREENSHOTS / f"overview-{name}-top.png"))


PROFILES = [
    pytest.param(SAMPLES / "dp4_nccl", MODEL, id="dp4_nccl_with_model"),
    pytest.param(SAMPLES / "ascend_2rank", (), id="ascend_2rank"),
    pytest.param(SAMPLES / "cpu_single", (), id="cpu_single"),
    pytest.param(DLRM, (), id="dlrm_8_ranks", marks=needs_shared),
    pytest.param(ASCEND_LEVEL1, (), id="ascend_level1", marks=needs_shared),
]


@pytest.mark.parametrize(("profile", "args"), PROFILES)
def test_overview_leads_with_the_summary_numbers(serve_with, browser, profile, args):
    throughput = dict(seq_len=2048, global_batch=8, params=1.07e9) if args else {}
    doc = _summary(profile, **throughput)
    page, errors = open_page(browser, serve_with(profile, *args) + "/")
    _check_cards(page, doc)
    _check_folded_findings(page, doc)
    _wait_drawn(
        page, "fig-step-time" if len({s["step"] for r in doc["ranks"] for s in r["steps"]}) > 1 else "fig-breakdown"
    )
    _check_heatmap(page, doc)
    steps = {s["step"] for r in doc["ranks"] for s in r["steps"]}
    assert page.locator("#panel-step-time").is_visible() == (len(steps) > 1)
    if doc["kernels"]:
        _check_kernel_tooltip(page)
    else:
        assert not page.locator("#panel-kernels").is_visible() and not page.locator("#panel-breakdown").is_visible()
    _check_cross_rank_table(page, doc)
    _screenshot(page, profile.name if profile.is_dir() else profile.stem)
    assert errors == []
    page.close()


def test_one_rank_and_one_step_hides_the_empty_panels(serve_with, browser):
    page, errors = open_page(browser, serve_with(SAMPLES / "dp4_nccl") + "/?rank=1&step=4")
    _wait_drawn(page, "fig-breakdown")
    page.wait_for_function(
        "() => getComputedStyle(document.querySelector('#panel-heatmap')).display === 'none'", timeout=30_000
    )
    assert not page.locator("#panel-step-time").is_visible()
    height = page.evaluate("() => document.querySelector('#fig-breakdown .js-plotly-plot')._fullLayout.height")
    assert height == 260  # the panel's minimum: one bar
    assert errors == []
    page.close()
