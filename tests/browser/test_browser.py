"""Real-browser tests of `traceview serve` (Playwright driving Debian's chromium).

They start the real server in a subprocess and check, in the rendered page: the figures draw,
the numbers shown equal the API's, a rank change (URL state) updates the figures, and the browser
console shows no errors. The Timeline page (the canvas timeline): tests/browser/test_browser_timeline.py
and tests/browser/test_browser_timeline_page.py. `.ci/run` installs chromium with apt-get; elsewhere the tests
skip with the reason when chromium or Playwright is missing.

Screenshots for the docs: `TRACEVIEW_SCREENSHOTS=1 python -m pytest tests/browser/test_browser.py`
writes docs/screenshots/overview.png from these same pages.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import polars as pl
import pytest

import traceview as tv
from tests.conftest import ROOT, SHARED_TRACES, needs_shared
from tests.support.browser import (  # noqa: F401 - pytest fixtures, used by name
    SCREENSHOTS,
    browser,
    figure_data,
    open_page,
    pytestmark,
    server_for,
)
from tests.support.samples import shared_sample
from traceview.analysis.kernels import short_names


def _ms(values):
    return [float(v) for v in values]


def test_overview_shows_the_api_numbers(server_for, browser):
    url = server_for(ROOT / "sample_traces" / "dp4_nccl")
    page, errors = open_page(browser, url + "/")
    traces = figure_data(page, "fig-breakdown")
    exposed = next(t for t in traces if t["name"] and t["name"].startswith("exposed comm"))
    api = shared_sample("dp4_nccl").step_breakdown().sort("rank", "step")
    assert _ms(exposed["y"]) == pytest.approx((api["communication_not_overlapped_us"] / 1000).to_list(), abs=1e-6)
    assert "Straggler: rank 2" in page.inner_text("#findings")
    for graph in ("fig-step-time", "fig-heatmap", "fig-classes"):
        assert figure_data(page, graph)
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
    page, errors = open_page(browser, url + "/?rank=1")
    rows = _grid_rows(page, 20)
    api = shared_sample("dp4_nccl").top_kernels(50).filter(pl.col("rank") == 1)
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
    page, errors = open_page(browser, url + "/")
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
    page, errors = open_page(browser, url + "/?rank=1")
    traces = figure_data(page, "fig-breakdown")
    ranks_shown = {str(x) for t in traces for x in (t["x"][0] if isinstance(t["x"][0], list) else t["x"])}
    assert ranks_shown == {"rank 1"}
    assert errors == []
    page.close()


@needs_shared
def test_real_multi_rank_trace_overview(server_for, browser):
    path = SHARED_TRACES / "param/et_replay/tests/inputs/dlrm_kineto.tar.gz.extracted/dlrm_kineto"
    url = server_for(path)
    page, errors = open_page(browser, url + "/")
    traces = figure_data(page, "fig-breakdown")
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
