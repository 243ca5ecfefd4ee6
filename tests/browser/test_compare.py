"""`traceview.compare` / `traceview compare` / the dashboard's Compare page. The browser tests; the
topic's description and its other tests: tests/unit/test_compare.py,
tests/integration/test_compare.py, tests/corpus/test_compare.py.
"""

from __future__ import annotations

import subprocess
import sys
import time
import urllib.request

import pytest

from tests.conftest import ROOT
from tests.support.compare_shared import MODEL, NAMES, result, traces  # noqa: F401
from traceview.run_compare import PARTITION


@pytest.fixture(scope="module")
def browser():
    from tests.support.browser import CHROMIUM, CHROMIUM_ARGS, sync_playwright

    if CHROMIUM is None or sync_playwright is None:
        pytest.skip("needs Debian's chromium (apt-get install chromium) and playwright (pip install -e '.[test]')")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()


def test_compare_page_in_a_browser(browser, tmp_path, result):
    """The served Compare page, as chromium draws it: the navigation reaches it, the filters hide,
    the chart holds each run's terms, the table the runs; no console error."""
    import os

    from tests.support.browser import SCREENSHOTS, figure_data, open_page
    from traceview.dashboards.server import pick_port

    port = pick_port("127.0.0.1", 8050)
    runs = [f"sample_traces/{n}" for n in NAMES]  # relative to ROOT, the server's folder
    cmd = [sys.executable, "-m", "traceview", "serve", runs[0], "--compare", runs[1], "--compare", runs[2]]
    cmd += ["-q", "--port", str(port), "--cache-dir", str(tmp_path), "--seq-len", "2048", "--global-batch", "8"]
    proc = subprocess.Popen([*cmd, "--params", "1.07e9"], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        url = f"http://127.0.0.1:{port}"
        for _ in range(160):
            try:
                with urllib.request.urlopen(url + "/", timeout=1):
                    break
            except OSError:
                time.sleep(0.25)
        page, errors = open_page(browser, url + "/", height=1100)
        page.click("#nav-compare")
        page.wait_for_url(url + "/compare")
        data = figure_data(page, "fig-compare")
        doc = result.to_dict()
        bars = [t for t in data if t["name"] != "iteration"]
        assert [t["name"] for t in bars] == [doc["labels"][t] for t in PARTITION]
        assert list(bars[0]["x"]) == list(NAMES)
        assert [float(y) for y in bars[0]["y"]] == pytest.approx(
            [r["iteration_computing_us"] / 1000 for r in doc["runs"]], abs=1e-6
        )
        assert page.is_visible("#page-compare") and not page.is_visible("#filters")
        assert not page.is_visible("#page-overview")
        table = page.inner_text("#compare-table")
        assert "pp4_1f1b" in table and "-30.316 ms (-44.3 %)" in table
        if os.environ.get("TRACEVIEW_SCREENSHOTS"):
            page.screenshot(path=str(SCREENSHOTS / "compare_runs.png"), full_page=True)
        assert errors == []
        page.close()
    finally:
        proc.terminate()
        proc.wait(timeout=10)
