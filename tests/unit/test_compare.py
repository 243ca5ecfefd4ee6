"""`traceview.compare` / `traceview compare` / the dashboard's Compare page: N runs side by side.

1. The comparison of the shipped samples (dp4_nccl, pp4_1f1b, ascend_2rank, and cpu_single, which
   has no device work): each run's values are the means of its own `iteration_breakdown` rows and
   its headline, its terms add up to its iteration, and each change (against the previous and the
   first run) is `tv.diff`'s for the same pair, number for number.
2. The compared columns come from one list (`run_compare.COMPARED`): one more column there is one
   more column everywhere.
3. Views: the figure stacks the terms to the iteration; the HTML page and the dashboard page show
   the table with everything from a trace or a user as text.
4. The command line (integration): text, json, csv and html; -o and its checks; bad input.
5. The real corpus: the TensorBoard plugin's two resnet50 runs, against `traceview diff`'s numbers.

This file holds the topic's unit tests; the others are in tests/integration/test_compare.py, tests/browser/test_compare.py, tests/corpus/test_compare.py.
"""

from __future__ import annotations

import orjson
import polars as pl
import pytest

import traceview as tv
from tests.conftest import SAMPLES
from tests.support.callbacks import layout_text
from tests.support.compare_shared import MODEL, NAMES, _all_ranks, result, traces  # noqa: F401
from tests.support.samples import shared_sample
from traceview import run_compare
from traceview.analysis import iteration
from traceview.analysis import throughput as throughput_analysis
from traceview.dashboards.app import app_for, show_page
from traceview.dashboards.compare_view import compare_html, comparison_figure, term_rows
from traceview.dashboards.state import DashboardState
from traceview.run_compare import COMPARED, PARTITION, headlines
from traceview.summary import build_summary

HOSTILE = "</script><img src=x onerror=alert(1)>"


def test_one_row_per_run_with_the_means_of_its_iterations(traces, result):
    table = result.table
    assert table["run"].to_list() == [1, 2, 3] and table["label"].to_list() == list(NAMES)
    for trace, row in zip(traces, table.iter_rows(named=True)):
        rows = trace.iteration_breakdown()
        assert row["rank_steps"] == rows.height and row["window"] == "steps"
        for term in ["iteration", *COMPARED]:
            assert row[f"{term}_us"] == pytest.approx(rows[f"{term}_us"].mean(), rel=1e-12)
        head = trace.headline().row(0, named=True)
        for term in PARTITION:  # the shares are the headline's (Σ term / Σ iteration)
            assert row[f"{term}_frac"] == pytest.approx(head[f"{term}_frac"], rel=1e-9)
        assert row["mean_step_us"] == head["mean_step_us"]
        assert row["communication_not_overlapped_frac"] == head["communication_not_overlapped_frac"]
        want = throughput_analysis.mean_of(trace.throughput(**MODEL))
        for key in ("tokens_per_s_per_device", "mfu_frac", "hfu_frac"):
            assert row[key] == pytest.approx(want[key])
        assert row["tokens_per_s_per_device"] > 0
        # the H100 samples have a known peak; the Ascend sample's device model is not recorded
        assert (row["mfu_frac"] is None) == (row["label"] == "ascend_2rank")
    assert table["speedup"][0] == 1.0
    assert table["speedup"][2] == pytest.approx(table["iteration_us"][0] / table["iteration_us"][2])


def test_terms_add_up_to_the_iteration(result):
    for row in result.table.iter_rows(named=True):
        parts = [row[f"{t}_us"] for t in PARTITION]
        assert sum(parts) == pytest.approx(row["iteration_us"], rel=1e-9)
        assert sum(row[f"{t}_frac"] for t in PARTITION) == pytest.approx(1.0, rel=1e-9)
        assert row["iteration_computing_frac"] == pytest.approx(row["iteration_computing_us"] / row["iteration_us"])
    # so each pair's term deltas add up to its iteration delta, and the shares to 1
    for (_, _), pair in result.changes.group_by("run", "against"):
        whole = pair.filter(pl.col("term") == "iteration").row(0, named=True)
        terms = pair.filter(pl.col("term").is_in(PARTITION))
        assert terms["delta_us"].sum() == pytest.approx(whole["delta_us"], rel=1e-9)
        assert terms["share_of_change"].sum() == pytest.approx(1.0, rel=1e-9)


@pytest.mark.parametrize(
    ("run", "against", "base"), [(2, "previous", 1), (3, "previous", 2), (2, "first", 1), (3, "first", 1)]
)
def test_each_change_is_traceview_diff_of_the_pair(traces, result, run, against, base):
    want = _all_ranks(tv.diff(traces[base - 1], traces[run - 1]).iteration)
    got = result.changes.filter((pl.col("run") == run) & (pl.col("against") == against))
    assert got["base_run"].unique().to_list() == [base] and got["base_label"][0] == NAMES[base - 1]
    got = got.select(want.columns).filter(pl.col("term").is_in(want["term"].implode()))
    assert got.equals(want)  # exactly the same numbers, in the same order
    row = result.table.row(run - 1, named=True)
    whole = want.filter(pl.col("term") == "iteration").row(0, named=True)
    assert row[f"{against}_delta_us"] == whole["delta_us"] and row[f"{against}_delta_pct"] == whole["delta_pct"]
    # the largest change: the term whose delta is largest in size, with diff's share of the change
    terms = want.filter(pl.col("term").is_in(PARTITION))
    top = terms.row(int(terms["delta_us"].abs().arg_max()), named=True)
    assert row[f"{against}_term"] == top["term"]
    assert row[f"{against}_term_delta_us"] == top["delta_us"]
    assert row[f"{against}_term_share"] == top["share_of_change"]


def test_first_run_has_no_change_and_headlines_are_diffs_first_line(traces, result):
    first = result.table.row(0, named=True)
    assert all(first[f"{a}_{k}"] is None for a in ("previous", "first") for k in ("delta_us", "term", "term_share"))
    assert result.changes.filter(pl.col("run") == 1).is_empty()
    from traceview.run_diff import iteration_headline

    lines = headlines(result.to_dict())
    for i, line in enumerate(lines, start=2):
        doc = tv.diff(traces[i - 2], traces[i - 1]).to_dict()
        assert line == f"{NAMES[i - 1]} vs {NAMES[i - 2]}: {iteration_headline(doc)}"
    assert headlines(result.to_dict(), "first")[1].startswith("ascend_2rank vs dp4_nccl: Iteration 68.385 ->")


def test_a_run_without_device_work_and_the_notes(traces):
    cpu = shared_sample("cpu_single")
    c = tv.compare([traces[0], cpu])
    row = c.table.row(1, named=True)
    assert row["window"] == "trace" and row["iteration_us"] is None and row["previous_delta_us"] is None
    assert row["tokens_per_s_per_device"] is None  # no model given
    assert any("no device tasks" in n for n in c.notes) and any("devices or formats differ" in n for n in c.notes)
    assert headlines(c.to_dict()) == ["cpu_single vs dp4_nccl: no iteration in one run"]


def test_labels(traces):
    assert tv.compare(traces[:2], labels=["base", "amp"]).labels == ["base", "amp"]
    assert tv.compare([traces[0], traces[0]]).labels == ["dp4_nccl", "dp4_nccl (2)"]
    assert run_compare.label("/runs/rank0.1767.pt.trace.json.gz") == "rank0.1767"
    assert run_compare.label("/runs/exp3/") == "exp3"
    with pytest.raises(ValueError, match="one label per run"):
        tv.compare(traces[:2], labels=["only one"])
    with pytest.raises(ValueError, match="two runs or more"):
        tv.compare(traces[:1])
    with pytest.raises(TypeError):
        tv.compare(str(SAMPLES / "dp4_nccl"))


def test_to_dict_is_flat_and_json_ready(result):
    doc = orjson.loads(orjson.dumps(result.to_dict()))
    assert doc["terms"] == COMPARED and doc["stacked"] == list(PARTITION)
    assert doc["labels"]["data_loading"] == iteration.LABELS["data_loading"]
    assert len(doc["runs"]) == 3 and doc["model"] == MODEL
    for rows in (doc["runs"], doc["changes"]):
        assert all(not isinstance(v, (dict, list)) for r in rows for v in r.values())
    assert doc["runs"][1]["iteration_us"] == round(result.table["iteration_us"][1], 3)


def test_one_more_compared_column_is_everywhere(traces, monkeypatch):
    # host_runtime is a column of the iteration frame that is not a term: stands in for the phases
    monkeypatch.setattr(run_compare, "COMPARED", [*iteration.TERMS, "host_runtime"])
    c = tv.compare(traces[:2])
    rows = traces[1].iteration_breakdown()
    assert c.table["host_runtime_us"][1] == pytest.approx(rows["host_runtime_us"].mean())
    assert "host_runtime_frac" in c.table.columns
    want = _all_ranks(tv.diff(*traces[:2]).iteration).filter(pl.col("term").is_in(["iteration", *iteration.TERMS]))
    assert c.changes.filter(pl.col("term") == "host_runtime").height == 2  # against previous and first
    same = c.changes.filter(pl.col("against") == "previous", pl.col("term").is_in(want["term"].implode()))
    assert same.select(want.columns).equals(want)  # the terms' numbers do not move
    doc = c.to_dict()
    assert doc["terms"][-1] == "host_runtime" and doc["labels"]["host_runtime"] == "host runtime"
    assert term_rows(doc)[-1]["term"] == "host runtime" and len(term_rows(doc)) == len(PARTITION) + 2
    from traceview.cli.compare import compare_csv, compare_text

    assert "host runtime" in compare_text(doc) and "host_runtime_us" in compare_csv(doc).splitlines()[0]
    assert [t.meta for t in comparison_figure(doc).data if t.type == "bar"] == list(PARTITION)  # the stack


def test_figure_stacks_the_terms_to_the_iteration(result):
    doc = result.to_dict()
    fig = result.figure()
    bars = [t for t in fig.data if t.type == "bar"]
    assert [b.meta for b in bars] == list(PARTITION) and fig.layout.barmode == "stack"
    assert list(bars[0].x) == list(NAMES)
    for i, run in enumerate(doc["runs"]):
        assert sum(b.y[i] for b in bars) == pytest.approx(run["iteration_us"] / 1000, abs=1e-5)
    (total,) = [t for t in fig.data if t.meta == "iteration"]
    assert list(total.y) == [r["iteration_us"] / 1000 for r in doc["runs"]]
    assert comparison_figure(doc).to_dict() == fig.to_dict()


def test_html_page_escapes_labels(result):
    doc = result.to_dict()
    doc["runs"][0]["label"] = HOSTILE
    page = compare_html(doc)
    assert "<img src=x" not in page and "&lt;img src=x" in page
    assert page.count("</script>") == page.count("<script")  # no block ended early
    assert (
        'id="compare-table"' in page
        and 'id="compare-terms"' in page
        and "Plotly.newPlot" in page
        and 'src="http' not in page
    )  # self-contained
    assert "-30.316 ms (-44.3 %)" in page  # pp4_1f1b against dp4_nccl


@pytest.fixture(scope="module")
def compare_app(traces, result):
    summary = build_summary(traces[0], details=False)
    return app_for(DashboardState(traces[0], summary, result.to_dict())), summary


def test_dashboard_compare_page(compare_app, result, traces):
    app, summary = compare_app
    layout = layout_text(app)
    for component_id in (
        "page-compare",
        "fig-compare",
        "compare-table",
        "compare-terms",
        "compare-headlines",
        "nav-compare",
    ):
        assert f'"{component_id}"' in layout
    assert "-30.316 ms (-44.3 %)" in layout and "compare-none" not in layout
    state = DashboardState(traces[0], summary, result.to_dict())
    shown = show_page(state, "/compare", "?rank=1")
    overview, timeline, roofline, compare, step_filter, filters, title, *links = shown
    assert compare == {} and overview == timeline == roofline == {"display": "none"}
    assert filters["display"] == "none" and step_filter["display"] == "none" and title == "Compare"
    assert links == ["/?rank=1", "/timeline?rank=1", "/roofline?rank=1", "/compare?rank=1"]
    overview, timeline, roofline, compare, _, filters, title, *_ = show_page(state, "/", "")
    assert overview == {} and compare == {"display": "none"} and filters.get("display") != "none"
    # over HTTP: the page-switching callback answers for /compare
    client = app.server.test_client()
    deps = orjson.loads(client.get("/_dash-dependencies").data)
    (dep,) = [d for d in deps if "page-compare.style" in d["output"]]
    payload = {
        "output": dep["output"],
        "outputs": [
            {"id": o.split(".")[0], "property": o.split(".")[1]} for o in dep["output"].strip(".").split("...")
        ],
        "inputs": [
            {"id": "url", "property": "pathname", "value": "/compare"},
            {"id": "url", "property": "search", "value": ""},
        ],
        "changedPropIds": ["url.pathname"],
        "state": [],
    }
    resp = client.post("/_dash-update-component", json=payload)
    assert resp.status_code == 200, resp.data[:500]
    body = orjson.loads(resp.data)["response"]
    assert body["page-compare"]["style"] == {} and body["page-title"]["children"] == "Compare"


def test_dashboard_without_runs_to_compare(traces):
    summary = build_summary(traces[0], details=False)
    app = app_for(DashboardState(traces[0], summary))
    layout = layout_text(app)
    assert '"compare-none"' in layout and '"fig-compare"' not in layout
    nav = [c for c in app.layout.children[2].children[0].children if getattr(c.children, "id", None) == "nav-compare"]
    assert nav[0].style == {"display": "none"}
