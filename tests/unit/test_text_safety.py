"""Names from a trace never drive a terminal or reorder a page (issue 14): control characters and
Unicode bidi controls in kernel and file names are shown as visible escapes in every text output
(tables, warnings, errors), JSON on stdout, the HTML report and the dashboard."""

from __future__ import annotations

import orjson
import pytest

import traceview as tv
from tests.conftest import DATA, run_cli
from traceview.safe_text import json_text, one_line, path_text, printable
from traceview.summary import build_summary

TITLE = "\x1b]0;pwned\x07"  # retitles a terminal
FORGED = "\n[warning] forged line"
BIDI = "gemm\u202eevil"  # shows as "gemmlive" reversed
CSI = "\x9b31m"  # a C1 control (8-bit CSI)


@pytest.fixture
def hostile(tmp_path):
    doc = orjson.loads((DATA / "kineto_minimal.json").read_bytes())
    names = iter([TITLE + "kernel_a", "kernel_b" + FORGED, BIDI, CSI + "kernel_d"])
    for e in doc["traceEvents"]:
        if e.get("cat") == "kernel":
            e["name"] = next(names, e["name"])
    path = tmp_path / "rank0.hostile\x1b[2J.pt.trace.json"
    path.write_bytes(orjson.dumps(doc))
    return path


RAW = ("\x1b", "\x07", "\x9b", "\u202e")


def test_the_escape_functions():
    assert one_line(TITLE + FORGED) == "\\x1b]0;pwned\\x07\\x0a[warning] forged line"
    assert one_line(BIDI) == "gemm\\u202eevil" and printable("a\nb\x1b") == "a\nb\\x1b"
    assert json_text('"\x9b\u202e"') == '"\\u009b\\u202e"' and orjson.loads(json_text('"\x9b"')) == "\x9b"
    assert path_text(b"r\xff.json".decode("utf-8", "surrogateescape")) == "r\\xff.json"


@pytest.mark.parametrize(
    "args",
    [
        ("summary",),
        ("summary", "--format", "json"),
        ("info",),
        ("info", "--format", "json"),
        ("diff", "SELF"),
        ("diff", "SELF", "--format", "json"),
    ],
)
def test_no_control_character_reaches_the_terminal(hostile, args):
    args = tuple(str(hostile) if a == "SELF" else a for a in args)
    res = run_cli(*args[:1], str(hostile), *args[1:], "--no-cache")
    assert res.returncode == 0, res.stderr
    for raw in RAW:
        assert raw not in res.stdout and raw not in res.stderr, (args, raw)
    assert "\n[warning] forged line" not in res.stdout
    if "json" not in args and args[0] == "summary":
        assert "\\x1b]0;pwned\\x07kernel_a" in res.stdout


def test_errors_and_warnings_with_such_names_are_one_line(tmp_path):
    bad = tmp_path / "rank1\x1b[31m\nforged.pt.trace.json"
    bad.write_text("{not json")
    res = run_cli("info", str(bad), "--no-cache")
    assert res.returncode == 1
    assert res.stderr.count("\n") == 1 and "\x1b" not in res.stderr and "\\x1b[31m\\x0aforged" in res.stderr


def test_html_shows_bidi_and_controls_visibly(hostile, tmp_path):
    from traceview.dashboards.overview import kernel_rows
    from traceview.dashboards.report import report_html

    trace = tv.load(hostile, use_cache=False)
    page = report_html(trace, build_summary(trace))
    for raw in RAW:
        assert raw not in page
    assert "gemm\\u202eevil" in page
    names = [r["name"] for r in kernel_rows(trace, None)]
    assert "gemm\\u202eevil" in names and not any(raw in n for n in names for raw in RAW)
