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
"""

from __future__ import annotations

import subprocess
import sys
import time
import urllib.request

import orjson
import polars as pl
import pytest

import traceview as tv
from tests.conftest import ROOT, SAMPLES, SHARED_TRACES, needs_shared, run_cli
from tests.support.callbacks import layout_text
from tests.support.samples import shared_sample
from tests.support.serve import stop
from traceview import run_compare
from traceview.analysis import iteration
from traceview.analysis import throughput as throughput_analysis
from traceview.dashboards.app import app_for, show_page
from traceview.dashboards.compare_view import compare_html, comparison_figure, term_rows
from traceview.dashboards.state import DashboardState
from traceview.run_compare import COMPARED, PARTITION, headlines
from traceview.summary import build_summary

HOSTILE = "</script><img src=x onerror=alert(1)>"
NAMES = ("dp4_nccl", "pp4_1f1b", "ascend_2rank")
MODEL = {"seq_len": 2048, "global_batch": 8, "params": 1.07e9, "recompute": False}  # the README's; as the CLI gives it


@pytest.fixture(scope="module")
def traces(tmp_path_factory):
    cache = tmp_path_factory.mktemp("cache")
    return [tv.load(SAMPLES / name, cache_dir=cache) for name in NAMES]


@pytest.fixture(scope="module")
def result(traces):
    return tv.compare(traces, model=MODEL)


def _all_ranks(frame: pl.DataFrame) -> pl.DataFrame:
    return frame.filter(pl.col("rank").is_null()).drop("rank")


# ---- 1. the numbers ----


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


# ---- 2. one list of compared columns ----


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


# ---- 3. views ----


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


# ---- 4. the command line ----


def run(*args: str) -> subprocess.CompletedProcess:
    return run_cli(*args, timeout=300)


RUNS = [str(SAMPLES / n) for n in NAMES]


@pytest.mark.integration
def test_cli_text_json_csv(result):
    text = run("compare", *RUNS, "-q", "--seq-len", "2048", "--global-batch", "8", "--params", "1.07e9")
    assert text.returncode == 0, text.stderr
    out = text.stdout
    for heading in ("Runs (mean per step", "Where the iteration went", "Change against the previous run", "Notes"):
        assert heading in out, heading
    assert "tokens/s/device" in out and "MFU %" in out
    for line in headlines(result.to_dict()):
        assert line in out
    doc = orjson.loads(
        run(
            "compare", *RUNS, "-q", "--format", "json", "--seq-len", "2048", "--global-batch", "8", "--params", "1.07e9"
        ).stdout
    )
    assert doc == orjson.loads(orjson.dumps(result.to_dict()))
    csv = run("compare", *RUNS, "-q", "--format", "csv", "--label", "a", "--label", "b", "--label", "c")
    assert csv.returncode == 0, csv.stderr
    frame = pl.read_csv(csv.stdout.encode())
    assert frame["label"].to_list() == ["a", "b", "c"] and frame.columns == list(result.table.columns)
    assert frame["iteration_us"].to_list() == pytest.approx(result.table["iteration_us"].to_list(), abs=1e-3)


@pytest.mark.integration
def test_cli_html_and_output_path_safety(tmp_path):
    out = tmp_path / "compare.html"
    first = run("compare", *RUNS[:2], "-q", "--format", "html", "-o", str(out))
    assert first.returncode == 0, first.stderr and f"Wrote {out}" in first.stdout
    page = out.read_text()
    assert page.startswith("<!DOCTYPE html>") or "<html" in page[:200]
    assert 'id="compare-table"' in page and "traceview-compare" in page
    again = run("compare", *RUNS[:2], "-q", "--format", "html", "-o", str(out))
    assert again.returncode == 1 and "--force" in again.stderr and len(again.stderr.strip().splitlines()) == 1
    assert run("compare", *RUNS[:2], "-q", "--format", "csv", "-o", str(out), "--force").returncode == 0
    assert out.read_text().startswith("run,label,")
    folder = tmp_path / "folder"
    folder.mkdir()
    into_folder = run("compare", *RUNS[:2], "-q", "-o", str(folder), "--force")
    assert into_folder.returncode == 1 and "is a folder" in into_folder.stderr and list(folder.iterdir()) == []
    link = tmp_path / "link.txt"
    link.symlink_to(out)
    assert run("compare", *RUNS[:2], "-q", "-o", str(link), "--force").returncode == 1
    assert out.read_text().startswith("run,label,")  # nothing written through the link


@pytest.mark.integration
def test_cli_errors(tmp_path):
    one = run("compare", RUNS[0])
    assert one.returncode == 2 and "two runs or more" in one.stderr
    labels = run("compare", *RUNS[:2], "--label", "x")
    assert labels.returncode == 2 and "one --label per run" in labels.stderr
    missing = run("compare", RUNS[0], str(tmp_path / "nope"), RUNS[1])
    assert missing.returncode == 1 and "no such file or folder" in missing.stderr
    assert len(missing.stderr.strip().splitlines()) == 1 and "Traceback" not in missing.stderr
    half = run("compare", *RUNS[:2], "--seq-len", "4096")
    assert half.returncode == 2 and "--global-batch" in half.stderr
    assert "--compare" in run("serve", "--help").stdout


# ---- 5. the real corpus ----

RESNET = SHARED_TRACES / "kineto-tb_plugin/tb_plugin/samples/resnet50_num_workers_0"


@needs_shared
def test_resnet50_runs_against_diff():
    a, b = (tv.load(RESNET / f"worker0.{n}.pt.trace.json.gz") for n in ("1623143089861", "1623143566756"))
    dp4 = shared_sample("dp4_nccl")
    c = tv.compare([a, b, dp4], model={"seq_len": 1, "global_batch": 32})
    assert c.labels == ["worker0.1623143089861", "worker0.1623143566756", "dp4_nccl"]
    # docs/diff.md's example, the same numbers
    assert headlines(c.to_dict())[0] == (
        "worker0.1623143566756 vs worker0.1623143089861: Iteration 177.592 -> 154.911 ms (-22.681 ms, -12.8 %): "
        "data loading -23.758 ms (105 % of the change), host overhead +1.258 ms (-6 % of the change); by phase: "
        "other (wall) -23.760 ms (105 % of the change), forward (wall) +1.167 ms (-5 % of the change)"
    )
    row = c.table.row(1, named=True)
    assert row["previous_term"] == "data_loading" and row["previous_term_share"] == pytest.approx(1.0475, abs=1e-4)
    for run_no, base in ((2, a), (3, b)):
        want = _all_ranks(tv.diff(base, [a, b, dp4][run_no - 1]).iteration)
        got = c.changes.filter((pl.col("run") == run_no) & (pl.col("against") == "previous")).select(want.columns)
        assert got.equals(want)
    # 32 images per step over the mean iteration of each step (the slowest rank's wall time)
    assert c.table["tokens_per_s_per_device"][0] == pytest.approx(180.46, abs=0.01)


@pytest.mark.integration
def test_serve_with_compare_serves_the_compare_page(tmp_path):
    from traceview.dashboards.server import pick_port

    port = pick_port("127.0.0.1", 8050)
    proc = subprocess.Popen(
        [sys.executable, "-m", "traceview", "serve", RUNS[0], "--compare", RUNS[1], "--compare", RUNS[2]]
        + ["-q", "--port", str(port), "--cache-dir", str(tmp_path)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = proc.stdout.readline()
        assert line.startswith(f"Serving {RUNS[0]} at http://127.0.0.1:"), (
            line,
            proc.stderr.read() if not line else "",
        )
        served = int(line.split("127.0.0.1:")[1].split("/")[0])
        deadline, layout = time.monotonic() + 30, None
        while time.monotonic() < deadline and layout is None:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{served}/_dash-layout", timeout=2) as resp:
                    layout = resp.read().decode()
            except OSError:
                assert proc.poll() is None, proc.stderr.read()
                time.sleep(0.2)
        assert layout is not None
        for needle in ('"page-compare"', '"fig-compare"', '"compare-table"', "pp4_1f1b vs dp4_nccl: Iteration"):
            assert needle in layout, needle
    finally:
        stop(proc)
    missing = run("serve", RUNS[0], "--compare", str(tmp_path / "nope"))
    assert missing.returncode == 1 and "no such file or folder" in missing.stderr
    assert len(missing.stderr.strip().splitlines()) == 1


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
