"""The Overview page's layout functions (`dashboards/overview.py`, `dashboards/overview_tables.py`):
the headline cards carry the summary's numbers, findings are one line per rule with the advice
folded, panels are sized to their data and hidden when empty, and the tables show the summary's
kernels and operators with one number format per column.
"""

from __future__ import annotations

import pytest
from dash import html

import traceview as tv
from tests.conftest import DATA, SAMPLES
from tests.support.samples import shared_sample
from traceview.analysis.iteration import LABELS
from traceview.dashboards import overview_tables as tables
from traceview.dashboards.app import app_for
from traceview.dashboards.overview import PANELS, headline_cards, overview_layout, update_overview
from traceview.dashboards.state import DashboardState
from traceview.summary import build_summary


@pytest.fixture(scope="module")
def dp4(tmp_path_factory):
    trace = tv.load(SAMPLES / "dp4_nccl", cache_dir=tmp_path_factory.mktemp("cache"))
    return DashboardState(trace, build_summary(trace, details=False))


@pytest.fixture(scope="module")
def single(tmp_path_factory):
    trace = tv.load(SAMPLES / "cpu_single", cache_dir=tmp_path_factory.mktemp("cache"))
    return DashboardState(trace, build_summary(trace, details=False))


def find(component, component_id):
    """The component with `component_id` under `component` (depth first), or None."""
    if getattr(component, "id", None) == component_id:
        return component
    children = getattr(component, "children", None)
    for child in children if isinstance(children, list) else [children] if children is not None else []:
        found = find(child, component_id)
        if found is not None:
            return found
    return None


def every(component, kind):
    out = [component] if isinstance(component, kind) else []
    children = getattr(component, "children", None)
    for child in children if isinstance(children, list) else [children] if children is not None else []:
        out += every(child, kind)
    return out


def card_value(cards, card_id) -> str:
    return find(cards, f"{card_id}-value").children


def test_headline_cards_are_the_summary_numbers(dp4):
    doc = dp4.summary
    head = doc["headline"]
    cards = headline_cards(doc)
    assert [c.id for c in cards.children] == ["card-iteration", "card-exposed-comm", "card-largest", "card-straggler"]
    assert card_value(cards, "card-iteration") == f"{head['mean_iteration_us'] / 1000:,.3f} ms" == "68.385 ms"
    assert card_value(cards, "card-exposed-comm") == f"{100 * head['communication_not_overlapped_frac']:.1f} %"
    assert card_value(cards, "card-largest") == f"{100 * head['largest_term_frac']:.1f} %"
    assert find(cards, "card-largest-detail").children == f"{LABELS[head['largest_term']]} of the iteration"
    assert card_value(cards, "card-straggler") == f"rank {doc['cross_rank']['straggler']}" == "rank 2"
    waits = [r["mean_wait_us"] for r in doc["cross_rank"]["ranks"] if r["rank"] != 2]
    assert (
        find(cards, "card-straggler-detail").children == f"others wait {sum(waits) / len(waits) / 1000:,.3f} ms (mean)"
    )
    assert find(cards, "card-mfu") is None  # no model options given


def test_mfu_card_when_the_model_is_given(dp4):
    doc = build_summary(dp4.trace, details=False, throughput=dict(seq_len=2048, global_batch=8, params=1.07e9))
    cards = headline_cards(doc)
    assert card_value(cards, "card-mfu") == f"{100 * doc['headline']['mfu_frac']:.1f} %"
    assert find(cards, "card-mfu-detail").children == f"HFU {100 * doc['headline']['hfu_frac']:.1f} %"


def test_one_rank_has_no_straggler_card(single):
    cards = headline_cards(single.summary)
    assert find(cards, "card-straggler") is None and find(cards, "card-iteration") is not None
    assert headline_cards({"ranks": []}).style == {"display": "none"}


def test_findings_are_one_line_per_rule_with_the_advice_folded(dp4):
    layout = overview_layout(dp4)
    findings = find(layout, "findings")
    rules = [li for li in every(findings, html.Li) if getattr(li, "className", None) == "finding-rule"]
    assert len(rules) == len(dp4.summary["findings_by_rule"]) > 0
    for li, finding in zip(rules, dp4.summary["findings_by_rule"]):
        (details,) = [c for c in li.children if isinstance(c, html.Details)]
        assert isinstance(details.children[0], html.Summary) and not getattr(details, "open", False)
        assert details.children[1].children == finding["advice"]
        assert finding["message"] in [getattr(c, "children", None) for c in li.children]
    assert find(layout, "straggler").children.startswith("Straggler: rank 2")


def test_panels_are_sized_to_their_data_and_hidden_when_empty(dp4, single):
    out = update_overview(dp4, "")
    figs, styles = out[:4], out[6:]
    assert all(s == {} for s in styles)
    heights = dict(zip(PANELS, (f.layout.height for f in figs)))
    one_rank = dict(zip(PANELS, (f.layout.height for f in update_overview(dp4, "?rank=1")[:4])))
    assert one_rank["fig-heatmap"] == PANELS["fig-heatmap"][0]  # one rank: the minimum (and hidden)
    assert dict(zip(PANELS, update_overview(dp4, "?rank=1")[6:]))["fig-heatmap"] == {"display": "none"}
    assert one_rank["fig-breakdown"] < heights["fig-breakdown"]  # 3 bars, not 12
    for panel, (low, _, high) in PANELS.items():
        assert low <= heights[panel] <= high and low <= one_rank[panel] <= high
    # one step: no step-time line; one rank and one step: no heatmap either
    styles = update_overview(dp4, "?step=4")[6:]
    assert dict(zip(PANELS, styles))["fig-step-time"] == {"display": "none"}
    styles = dict(zip(PANELS, update_overview(dp4, "?rank=1&step=4")[6:]))
    assert styles["fig-heatmap"] == {"display": "none"} and styles["fig-breakdown"] == {}
    # a class filter that leaves nothing hides the classes panel
    styles = dict(zip(PANELS, update_overview(single, "?class=communication")[6:]))
    assert styles["fig-classes"] == {"display": "none"}
    # many ranks: the heatmap grows up to its maximum
    many = {**dp4.summary, "ranks": [{**dp4.summary["ranks"][0], "rank": i} for i in range(64)]}
    from traceview.dashboards.overview import panel_styles

    assert panel_styles(many, None, None, many)["fig-heatmap"][1] == PANELS["fig-heatmap"][2]


def test_the_app_registers_every_output(dp4):
    deps = app_for(dp4).callback_map
    assert any("panel-heatmap.style" in k and "kernel-table.rowData" in k for k in deps)


def test_kernel_tables_show_short_names_and_the_summary_numbers(dp4):
    doc = dp4.summary
    rows = tables.cross_rank_rows(doc)
    assert len(rows) == len(doc["kernels"]) > 0
    for row, k in zip(rows, doc["kernels"]):
        assert (row["short_name"], row["name"]) == (k["short_name"], k["name"])
        assert row["total_ms"] == pytest.approx(k["total_us"] / 1000)
        assert [row["rank_min_ms"], row["rank_median_ms"], row["rank_max_ms"]] == pytest.approx(
            [k["rank_min_us"] / 1000, k["rank_median_us"] / 1000, k["rank_max_us"] / 1000]
        )
        assert row["max_rank"] == k["max_rank"] and row["share_pct"] == pytest.approx(100 * k["share"])
    ops = tables.operator_rows(doc)
    assert [(o["operator"], o["calls"]) for o in ops] == [(o["operator"], o["calls"]) for o in doc["operators"]]
    assert ops[0]["device_ms"] == pytest.approx(doc["operators"][0]["device_us"] / 1000)
    top = update_overview(dp4, "?rank=1")[4]
    nccl = next(r for r in top if r["name"].startswith("ncclDevKernel"))
    assert nccl["short_name"] == "ncclDevKernel_AllReduce_Sum_bf16_RING_LL" != nccl["name"]
    layout = overview_layout(dp4)
    for grid_id in ("kernel-table", "cross-rank-table", "operator-table"):
        assert find(layout, grid_id) is not None
    kernel_col = next(c for c in find(layout, "kernel-table").columnDefs if c["headerName"] == "kernel")
    assert (kernel_col["field"], kernel_col["tooltipField"]) == ("short_name", "name")


def test_one_number_format_per_column():
    """Every numeric column formats by its unit: ms ,.3f, µs ,.3f, % .1f, counts ,d."""
    want = {"_ms": ",.3f", "_us": ",.3f", "_pct": ".1f"}
    counts = {"rank", "count", "ranks", "max_rank", "calls"}
    for columns in (tables.KERNEL_COLUMNS, tables.CROSS_RANK_COLUMNS, tables.OPERATOR_COLUMNS):
        for c in columns:
            if c.get("type") != "numericColumn":
                continue
            fmt = next((f for suffix, f in want.items() if c["field"].endswith(suffix)), None)
            fmt = ",d" if c["field"] in counts else fmt
            assert fmt and f"d3.format('{fmt}')" in c["valueFormatter"]["function"], c


def test_single_rank_hides_the_per_rank_columns_and_empty_tables():
    trace = tv.load(DATA / "kineto_minimal.json", use_cache=False)
    state = DashboardState(trace, build_summary(trace, details=False))
    layout = overview_layout(state)
    grid = find(layout, "cross-rank-table")
    hidden = {c["field"] for c in grid.columnDefs if c.get("hide")}
    assert hidden == {"ranks", "rank_min_ms", "rank_median_ms", "rank_max_ms", "max_rank"}
    assert len(grid.rowData) == len(state.summary["kernels"]) == 5
    # one rank, one step: no step-time line, no heatmap
    styles = dict(zip(PANELS, update_overview(state, "")[6:]))
    assert styles == {
        "fig-breakdown": {},
        "fig-step-time": {"display": "none"},
        "fig-heatmap": {"display": "none"},
        "fig-classes": {},
    }
    # a CPU-only profile has no kernel or operator table, and no device time to stack
    single = shared_sample("cpu_single")
    cpu = DashboardState(single, build_summary(single, details=False))
    layout = overview_layout(cpu)
    assert find(layout, "cross-rank-table") is None and find(layout, "operator-table") is None
    assert find(layout, "panel-kernels").style == {"display": "none"}
    styles = dict(zip(PANELS, update_overview(cpu, "")[6:]))
    assert styles["fig-breakdown"] == {"display": "none"} and styles["fig-step-time"] == {}


def test_ascend_cards():
    trace = shared_sample("ascend_2rank")
    doc = build_summary(trace, details=False)
    cards = headline_cards(doc)
    assert card_value(cards, "card-iteration") == f"{doc['headline']['mean_iteration_us'] / 1000:,.3f} ms"
    assert card_value(cards, "card-straggler") == "rank 1"
    assert find(overview_layout(DashboardState(trace, doc)), "operator-table") is None  # no operators on Ascend


def test_a_clicked_name_opens_the_timeline_on_its_instances(dp4):
    """Kernel rows -> the Timeline filtered to that kernel on its rank; operator rows -> host lanes
    on; other filters kept, the class filter dropped; clicks elsewhere or on rows it cannot find
    change nothing."""
    from urllib.parse import parse_qs

    rows = tables.kernel_rows(dp4.trace, None)
    row = rows[3]
    path, query = tables.instances_link(
        "kernel-table", {"colId": "short_name", "rowId": "3"}, rows, "?class=gemm&step=2"
    )
    assert path == "/timeline"
    assert parse_qs(query[1:]) == {"step": ["2"], "q": [row["name"]], "rank": [str(row["rank"])]}
    ops = tables.operator_rows(dp4.summary)
    path, query = tables.instances_link("operator-table", {"colId": "operator", "rowId": "0"}, ops, "?compare=0,1")
    assert parse_qs(query[1:]) == {"compare": ["0,1"], "q": [ops[0]["operator"]], "host": ["1"]}
    cross = tables.cross_rank_rows(dp4.summary)
    _, query = tables.instances_link("cross-rank-table", {"colId": "short_name", "rowId": "0"}, cross, "?compare=0,1")
    assert parse_qs(query[1:]) == {"compare": ["0,1"], "q": [cross[0]["name"]]}  # all ranks
    for cell in (
        {"colId": "count", "rowId": "3"},
        {"colId": "short_name", "rowId": "99999"},
        {"colId": "short_name"},
        None,
    ):
        assert tables.instances_link("kernel-table", cell, rows, "") is None
    assert tables.linked_tables(dp4.summary) == ["kernel-table", "cross-rank-table", "operator-table"]
    assert tables.linked_tables({}) == ["kernel-table"]
