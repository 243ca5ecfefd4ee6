"""What the browser tests share: Debian's chromium driven by Playwright (`browser`, a module
fixture), `traceview serve` on a free port (`server_for`, a module fixture), a page opened with
its console errors collected (`open_page`), and the plotly data a figure holds (`figure_data`).
A test module imports the fixtures by name (`from tests.support.browser import browser,
server_for`) and `pytestmark`, which marks it a browser test and skips it without chromium."""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

from tests.conftest import ROOT, SHARED_TRACES

try:
    from playwright.sync_api import sync_playwright
except ImportError:  # pragma: no cover - the test extra installs it
    sync_playwright = None


CHROMIUM = next((p for p in map(shutil.which, ("chromium", "chromium-browser")) if p), None)


pytestmark = [
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


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server_for():
    """Start `traceview serve <path>` on a free port; yields a function path -> base URL."""
    procs = []

    def start(path) -> str:
        port = free_port()
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


def serve_answers(base: str) -> tuple[dict, dict]:
    """The pages and the timeline's data of a running server answer: (meta, overlays of the whole span)."""
    import json

    for page in ("/", "/timeline"):
        with urllib.request.urlopen(base + page, timeout=30) as resp:
            assert resp.status == 200
    with urllib.request.urlopen(base + "/api/timeline/meta", timeout=60) as resp:
        meta = json.load(resp)
    with urllib.request.urlopen(base + f"/api/timeline/overlays?start=0&end={meta['end']}", timeout=60) as resp:
        return meta, json.load(resp)


@pytest.fixture(scope="module")
def browser():
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()


def open_page(browser, url: str, height: int = 1000):
    page = browser.new_page(viewport={"width": 1400, "height": height})
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(url, wait_until="networkidle")
    return page, errors


def figure_data(page, graph_id: str):
    """The plotly traces drawn in a dcc.Graph, as the browser holds them."""
    page.wait_for_function(
        f"() => {{ const g = document.querySelector('#{graph_id} .js-plotly-plot'); return g && g.data && g.data.length > 0; }}",
        timeout=20_000,
    )
    return page.evaluate(
        f"() => document.querySelector('#{graph_id} .js-plotly-plot').data.map(t => ({{name: t.name, x: t.x, y: t.y}}))"
    )
