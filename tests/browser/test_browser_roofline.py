"""The dashboard's Roofline page in a real browser: the figure holds every operator row of the API
at its intensity and achieved TFLOP/s over the roofline, the table and the traced FLOPs show the
API's numbers, the rank filter applies, and a click on a marker opens the Timeline with that
operator's calls. Waits for conditions, never sleeps.

Screenshot for the docs: `TRACEVIEW_SCREENSHOTS=1 python -m pytest tests/browser/test_browser_roofline.py`
writes docs/screenshots/roofline.png.
"""

from __future__ import annotations

import os

import polars as pl
import pytest

import traceview as tv
from tests.support.browser import SCREENSHOTS, browser, figure_data, open_page, pytestmark, server_for  # noqa: F401
from tests.support.roofline import transformer_step


@pytest.fixture(scope="module")
def step_trace(tmp_path_factory):
    path, _ = transformer_step(tmp_path_factory.mktemp("browser_roofline") / "step.json")
    return path


def test_the_roofline_page_shows_the_api_rows_and_clicks_to_the_timeline(server_for, browser, step_trace):
    api = tv.load(step_trace, use_cache=False)
    rows = api.op_roofline()
    url = server_for(step_trace)
    page, errors = open_page(browser, url + "/roofline")
    page.wait_for_selector("#roofline-operators tr >> nth=1", timeout=20_000)
    traces = figure_data(page, "roofline-graph")
    markers = {t["name"]: t for t in traces if not t["name"].startswith("roofline")}
    for family, part in rows.group_by("family"):
        drawn = markers[family[0]]
        assert sorted(drawn["x"]) == pytest.approx(sorted(part["intensity_flop_per_byte"].to_list()))
        assert sorted(drawn["y"]) == pytest.approx(sorted(part["achieved_tflops_per_s"].to_list()))
    assert any(t["name"] == "roofline, bf16 matrix: 989 TFLOP/s, 3.35 TB/s" for t in traces)
    table = page.inner_text("#roofline-operators")
    top = rows.row(0, named=True)
    assert top["op"] in table and f"{top['device_time_us'] / 1000:,.3f}" in table
    traced = api.traced_flops().row(0, named=True)
    assert f"{traced['traced_flops'] / 1e12:,.3f} TFLOP traced" in page.inner_text("#roofline-flops")
    if os.environ.get("TRACEVIEW_SCREENSHOTS"):
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SCREENSHOTS / "roofline.png"), full_page=True)
    # a click on an attention marker: the Timeline with that operator's calls on its rank
    sdpa = rows.filter(pl.col("family") == "sdpa").row(0, named=True)
    page.evaluate(
        """([x, y]) => {
            const g = document.querySelector('#roofline-graph .js-plotly-plot');
            const t = g.data.findIndex(d => d.name === 'sdpa');
            const i = g.data[t].x.findIndex((v, k) => v === x && g.data[t].y[k] === y);
            const pt = g.calcdata[t][i];
            g.emit('plotly_click', {points: [{curveNumber: t, pointNumber: i, customdata: g.data[t].customdata[i],
                                               x: pt.x, y: pt.y, data: g.data[t], fullData: g._fullData[t]}]});
        }""",
        [sdpa["intensity_flop_per_byte"], sdpa["achieved_tflops_per_s"]],
    )
    page.wait_for_function("() => location.pathname.endsWith('/timeline')", timeout=20_000)
    assert "q=aten%3A%3A_scaled_dot_product_flash_attention" in page.url and "rank=0" in page.url
    assert "host=1" in page.url
    assert errors == []
    page.close()


def test_a_profile_without_shapes_says_how_to_record_them(server_for, browser):
    from tests.conftest import DATA

    page, errors = open_page(browser, server_for(DATA / "kineto_minimal.json") + "/roofline")
    page.wait_for_function("() => document.querySelector('#roofline-note').textContent.length > 0", timeout=20_000)
    assert "record_shapes=True" in page.inner_text("#roofline-note")
    assert errors == []
    page.close()
