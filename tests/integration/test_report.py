"""`traceview report`: the self-contained HTML page, its numbers, its safety, the data formats,
where reports go, and batches with an index page. The browser side (file://, network off) is in
tests/browser/test_browser.py."""

from __future__ import annotations

import json
import re
import shutil
from html.parser import HTMLParser

import orjson
import polars as pl
import pytest

import traceview as tv
from tests.conftest import DATA, SAMPLES, run_cli
from tests.support.samples import shared_sample
from traceview.dashboards.html_page import script_json
from traceview.dashboards.report import report_html
from traceview.summary import build_summary

HOSTILE = "</script><img src=x onerror=alert(1)>"
HOSTILE_QUOTES = "a\"b'c<!--d-->&amp;"
HOSTILE_FILE = "\"><img src=x onerror=alert(2)>'"


class Elements(HTMLParser):
    """Every start tag with its attributes, and the text of each table cell by table id."""

    def __init__(self):
        super().__init__()
        self.tags: list[tuple[str, dict]] = []
        self.tables: dict[str, list[dict[str, str]]] = {}
        self._table = None
        self._cell = None
        self._text = ""

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self.tags.append((tag, attrs))
        if tag == "table" and attrs.get("id"):
            self._table = attrs["id"]
            self.tables[self._table] = []
        elif tag == "tr" and self._table:
            self.tables[self._table].append({})
        elif tag == "td" and self._table and attrs.get("data-key"):
            self._cell, self._text = attrs["data-key"], ""

    def handle_data(self, data):
        if self._cell is not None:
            self._text += data

    def handle_endtag(self, tag):
        if tag == "td" and self._cell is not None:
            self.tables[self._table][-1][self._cell] = self._text
            self._cell = None
        elif tag == "table":
            self.tables[self._table] = [row for row in self.tables[self._table] if row]  # header rows
            self._table = None


def parse(page: str) -> Elements:
    parser = Elements()
    parser.feed(page)
    return parser


def embedded_summary(page: str) -> dict:
    match = re.search(r'<script type="application/json" id="traceview-summary">(.*?)</script>', page, re.S)
    return json.loads(match.group(1))


def ms_text(us) -> str:
    return "-" if us is None else f"{us / 1000:,.3f}"


@pytest.fixture(scope="module")
def dp4():
    trace = shared_sample("dp4_nccl")
    doc = build_summary(trace)
    return trace, doc, report_html(trace, doc)


def test_report_is_self_contained(dp4):
    _, _, page = dp4
    from plotly.offline import get_plotlyjs

    assert page.count(get_plotlyjs()[:40]) == 1  # plotly.js inlined, once
    parsed = parse(page)
    for tag, attrs in parsed.tags:
        for attr in ("src", "href"):
            value = attrs.get(attr) or ""
            assert not re.match(r"^(https?:)?//", value), (tag, attr, value)  # nothing fetched from a network
    figures = [a for t, a in parsed.tags if t == "script" and a.get("data-figure")]
    assert len(figures) >= 6
    assert all(any(a.get("id") == f["data-figure"] for t, a in parsed.tags if t == "div") for f in figures)


def test_report_shows_the_summary_numbers(dp4):
    trace, doc, page = dp4
    assert embedded_summary(page) == json.loads(json.dumps(doc))
    tables = parse(page).tables
    rows = tables["steps-table"]
    want = [{"rank": r["rank"], **s} for r in doc["ranks"] for s in r["steps"]]
    assert len(rows) == len(want) == trace.step_breakdown().height
    for shown, expect in zip(rows, want):
        assert shown["rank"] == str(expect["rank"]) and shown["step"] == str(expect["step"])
        for key in ("duration_us", "computing_us", "communication_not_overlapped_us", "overlapped_us", "free_us"):
            assert shown[key] == ms_text(expect[key])
    kernels = tables["kernels-table"]
    top = doc["ranks"][0]["top_kernels"][0]
    assert kernels[0]["short_name"] == top["short_name"] and kernels[0]["total_us"] == ms_text(top["total_us"])
    slow = [r for r in tables["cross-ranks-table"] if r["is_straggler"] == "True"]
    assert [r["rank"] for r in slow] == [str(doc["cross_rank"]["straggler"])] == ["2"]


def test_report_says_where_the_timeline_was_downsampled(tmp_path):
    """A rank with more tasks than the report draws raw: the whole-trace timeline is binned and
    says so; the raw windows say how much of the step they show."""
    from traceview.dashboards import report as rep

    trace = shared_sample("pp4_1f1b")
    doc = build_summary(trace)
    old = (rep.TIMELINE_LIMIT, rep.RAW_WINDOW_TASKS)
    rep.TIMELINE_LIMIT, rep.RAW_WINDOW_TASKS = 100, 50
    try:
        page = report_html(trace, doc)
    finally:
        rep.TIMELINE_LIMIT, rep.RAW_WINDOW_TASKS = old
    assert "Downsampled: binned:" in page and "(50 of " in page and "Cut to the first" in page
    full = report_html(trace, doc)
    assert "Downsampled" not in full


def test_hostile_names_are_escaped_everywhere(tmp_path):
    """Kernel, operator and file names with script/HTML payloads and quotes: no element, attribute
    or script block comes from them; the names still read as text."""
    doc = json.loads((DATA / "kineto_minimal.json").read_text())
    for event in doc["traceEvents"]:
        if event.get("cat") == "kernel" and event["name"].startswith("sm90"):
            event["name"] = HOSTILE
        elif event.get("cat") == "cpu_op":
            event["name"] = HOSTILE_QUOTES
    folder = tmp_path / HOSTILE_FILE
    folder.mkdir()
    (folder / "rank0.pt.trace.json").write_text(json.dumps(doc))
    trace = tv.load(folder, use_cache=False)
    summary = build_summary(trace)
    page = report_html(trace, summary)
    parsed = parse(page)
    assert not [a for t, a in parsed.tags if t == "img"]
    assert all(not any(k.startswith("on") for k in a) for _, a in parsed.tags)
    n_scripts = sum(1 for t, _ in parsed.tags if t == "script")
    n_expected = 1 + 1 + 1 + sum(1 for t, a in parsed.tags if t == "script" and a.get("data-figure"))
    assert n_scripts == n_expected  # plotly.js, the summary JSON, the renderer, one per figure
    assert HOSTILE not in page and "<img" not in page.replace("\\u003cimg", "")
    assert "&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;" in page  # shown as text in the kernel table
    assert embedded_summary(page)["source"] == str(folder)  # the JSON block still holds the name exactly
    assert script_json({"a": "</script>"}) == '{"a":"\\u003c/script>"}'


@pytest.fixture()
def profile(tmp_path):
    dst = tmp_path / "dp4_nccl"
    shutil.copytree(SAMPLES / "dp4_nccl", dst)
    return dst


def test_cli_report_goes_beside_the_input_and_never_overwrites(profile, tmp_path):
    res = run_cli("report", str(profile), "-q", "--cache-dir", str(tmp_path / "c"))
    out = tmp_path / "dp4_nccl.report.html"
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip().splitlines()[-1] == f"Wrote {out}" and out.stat().st_size > 1_000_000
    before = out.stat().st_mtime_ns
    res = run_cli("report", str(profile), "-q", "--cache-dir", str(tmp_path / "c"))
    assert res.returncode == 1 and len(res.stderr.strip().splitlines()) == 1
    assert "exists" in res.stderr and "--force" in res.stderr and out.stat().st_mtime_ns == before
    res = run_cli(
        "report", str(profile), "-q", "--force", "-o", str(tmp_path / "r.html"), "--cache-dir", str(tmp_path / "c")
    )
    assert res.returncode == 0 and (tmp_path / "r.html").exists()
    assert sorted(p.name for p in profile.iterdir()) == sorted(p.name for p in (SAMPLES / "dp4_nccl").iterdir())


def test_cli_report_json_is_the_summary(profile, tmp_path):
    out = tmp_path / "r.json"
    res = run_cli("report", str(profile), "-q", "--format", "json", "-o", str(out), "--no-cache")
    assert res.returncode == 0, res.stderr
    summary = run_cli("summary", str(profile), "-q", "--format", "json", "--top", "20", "--no-cache")
    assert orjson.loads(out.read_bytes()) == orjson.loads(summary.stdout)


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_cli_report_tables(profile, tmp_path, fmt):
    out = tmp_path / f"tables-{fmt}"
    res = run_cli("report", str(profile), "-q", "--format", fmt, "-o", str(out), "--no-cache")
    assert res.returncode == 0, res.stderr
    read = pl.read_csv if fmt == "csv" else pl.read_parquet
    steps = read(out / f"steps.{fmt}").sort("rank", "step")
    api = tv.load(profile, use_cache=False).step_breakdown().sort("rank", "step")
    assert steps["computing_us"].to_list() == pytest.approx(api["computing_us"].to_list(), abs=1e-3)
    assert steps["communication_not_overlapped_us"].to_list() == pytest.approx(
        api["communication_not_overlapped_us"].to_list(), abs=1e-3
    )
    assert {f"{n}.{fmt}" for n in ("trace", "compute_classes", "top_kernels", "collectives", "ranks", "headline")} <= {
        p.name for p in out.iterdir()
    }
    headline = read(out / f"headline.{fmt}")
    expected = tv.load(profile, use_cache=False).headline()
    assert headline.height == 1
    assert headline["mean_step_us"][0] == pytest.approx(expected["mean_step_us"][0], abs=1e-3)
    assert headline["communication_not_overlapped_frac"][0] == pytest.approx(
        expected["communication_not_overlapped_frac"][0], abs=1e-6
    )


def test_cli_batch_with_a_failed_profile(tmp_path):
    bad = tmp_path / "broken.json"
    bad.write_text('{"traceEvents": [')
    out = tmp_path / "reports"
    res = run_cli(
        "report",
        str(SAMPLES / "dp4_nccl"),
        str(bad),
        str(SAMPLES / "ascend_2rank"),
        "--out-dir",
        str(out),
        "-q",
        "--no-cache",
    )
    assert res.returncode == 1
    assert res.stdout.strip().splitlines()[-1] == f"Wrote {out / 'index.html'}"
    assert (out / "dp4_nccl.report.html").exists() and (out / "ascend_2rank.report.html").exists()
    assert not (out / "broken.report.html").exists() and "broken.json" in res.stderr
    index = (out / "index.html").read_text()
    tables = parse(index)
    assert {a.get("href") for t, a in tables.tags if t == "a"} == {
        "./dp4_nccl.report.html",
        "./ascend_2rank.report.html",
    }
    assert "failed: cannot read" in index and "broken.json" in index


def test_cli_usage_errors(tmp_path):
    res = run_cli("report", str(SAMPLES / "dp4_nccl"), str(SAMPLES / "pp4_1f1b"))
    assert res.returncode == 2 and "--out-dir" in res.stderr
    res = run_cli("report", str(tmp_path / "missing"), "-q")
    assert res.returncode == 1 and len(res.stderr.strip().splitlines()) == 1 and "missing" in res.stderr
    res = run_cli("report", str(SAMPLES / "dp4_nccl"), "-q", "-o", str(tmp_path / "nope" / "r.html"))
    assert res.returncode == 1 and "no folder" in res.stderr


def test_report_with_a_baseline_and_diff_html(tmp_path):
    """--baseline adds the diff section (the same tables as `traceview diff --format json`);
    `traceview diff --format html` is a page of its own; hostile names stay text in both."""
    out = tmp_path / "r.html"
    res = run_cli(
        "report", str(SAMPLES / "pp4_1f1b"), "--baseline", str(SAMPLES / "dp4_nccl"), "-o", str(out), "-q", "--no-cache"
    )
    assert res.returncode == 0, res.stderr
    page = out.read_text()
    want = orjson.loads(
        run_cli(
            "diff",
            str(SAMPLES / "dp4_nccl"),
            str(SAMPLES / "pp4_1f1b"),
            "--format",
            "json",
            "-q",
            "--no-cache",
            "--top",
            "10",
        ).stdout
    )
    assert embedded_summary(page)["diff"] == want
    tables = parse(page).tables
    overall = [r for r in tables["diff-step_time"] if r["rank"] == "-"]
    assert (
        overall
        and overall[0]["delta_us"] == f"{next(r for r in want['step_time'] if r['rank'] is None)['delta_us']:,.3f}"
    )
    res = run_cli("diff", str(SAMPLES / "dp4_nccl"), str(SAMPLES / "pp4_1f1b"), "--format", "html", "-q", "--no-cache")
    assert res.returncode == 0 and res.stdout.startswith("<!DOCTYPE html>") and 'id="diff-terms"' in res.stdout
    doc = json.loads((DATA / "kineto_minimal.json").read_text())
    for event in doc["traceEvents"]:
        if event.get("cat") == "kernel" and event["name"].startswith("sm90"):
            event["name"] = HOSTILE
    (tmp_path / "new.json").write_text(json.dumps(doc))
    res = run_cli(
        "diff", str(DATA / "kineto_minimal.json"), str(tmp_path / "new.json"), "--format", "html", "-q", "--no-cache"
    )
    assert res.returncode == 0, res.stderr
    assert HOSTILE not in res.stdout and "&lt;/script&gt;&lt;img" in res.stdout
    assert not [a for t, a in parse(res.stdout).tags if t == "img"]
