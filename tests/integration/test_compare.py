"""`traceview.compare` / `traceview compare` / the dashboard's Compare page. The integration tests; the
topic's description and its other tests: tests/unit/test_compare.py, tests/browser/test_compare.py,
tests/corpus/test_compare.py.
"""

from __future__ import annotations

import subprocess
import sys
import time
import urllib.request

import orjson
import polars as pl
import pytest

from tests.conftest import ROOT, SAMPLES
from tests.support.compare_shared import MODEL, NAMES, result, run, traces  # noqa: F401
from tests.support.serve import stop
from traceview.run_compare import headlines

RUNS = [str(SAMPLES / n) for n in NAMES]


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
