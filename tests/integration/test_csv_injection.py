"""CSV formula injection (issue 30): a kernel or operator name comes from the trace, so from anyone;
a cell that starts with `= + - @`, a tab or a carriage return is a formula to a spreadsheet
(`=cmd|' /C calc'!A0` runs a program). Every CSV traceview writes (report tables, compare,
roofline) starts such a cell with an apostrophe (OWASP), and keeps numbers as numbers."""

from __future__ import annotations

import csv
import gzip

import orjson
import polars as pl
import pytest

from tests.conftest import SAMPLES, run_cli
from traceview.safe_text import csv_safe

PAYLOADS = ['=cmd|" /C calc"!A0', "+SUM(1+1)*cmd|' /C calc'!A0", "@SUM(1+1)", "-2+3+cmd|' /C calc'!A0", "\t=1+1"]
DANGEROUS = ("=", "+", "-", "@", "\t", "\r")


def test_csv_safe_prefixes_formula_cells_only():
    frame = pl.DataFrame(
        {"name": [*PAYLOADS, "aten::mm", None, "\r=1"], "us": [-1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]}
    )
    safe = csv_safe(frame)
    assert safe["name"].to_list() == [*("'" + p for p in PAYLOADS), "aten::mm", None, "'\r=1"]
    assert safe["us"].to_list() == frame["us"].to_list()  # a negative number stays a number


@pytest.fixture(scope="module")
def hostile_rank(tmp_path_factory):
    """The shipped rank 0 of dp4_nccl with its most frequent kernel names and an operator name
    replaced by formula payloads."""
    src = sorted((SAMPLES / "dp4_nccl").glob("rank0.*.pt.trace.json.gz"))[0]
    doc = orjson.loads(gzip.decompress(src.read_bytes()))
    kernels = {}
    for e in doc["traceEvents"]:
        if e.get("cat") == "kernel":
            kernels[e["name"]] = kernels.get(e["name"], 0) + 1
    top = sorted(kernels, key=kernels.get, reverse=True)[: len(PAYLOADS) - 1]
    rename = dict(zip(top, PAYLOADS))
    operator = "aten::mm"  # the operator that launches the most device time
    for e in doc["traceEvents"]:
        if e.get("cat") == "kernel" and e.get("name") in rename:
            e["name"] = rename[e["name"]]
        elif e.get("cat") == "cpu_op" and e.get("name") == operator:
            e["name"] = PAYLOADS[-1]
    path = tmp_path_factory.mktemp("hostile_csv") / "rank0.pt.trace.json"
    path.write_bytes(orjson.dumps(doc))
    return path


def _cells(path) -> list[str]:
    with open(path, newline="") as f:
        return [cell for row in csv.reader(f) for cell in row]


def test_report_csv_tables_hold_no_formula(hostile_rank, tmp_path):
    out = tmp_path / "tables"
    done = run_cli("report", str(hostile_rank), "--format", "csv", "-o", str(out), "--no-cache")
    assert done.returncode == 0, done.stderr
    files = sorted(out.glob("*.csv"))
    assert {"kernels.csv", "operators.csv"} <= {f.name for f in files}
    seen = set()
    for f in files:
        for cell in _cells(f):
            assert not cell.startswith(DANGEROUS) or _is_number(cell), (f.name, cell)
            seen.update(p for p in PAYLOADS if cell == "'" + p)
    assert seen == set(PAYLOADS)  # every name is still there, as text


def test_compare_csv_holds_no_formula(hostile_rank, tmp_path):
    done = run_cli(
        "compare", str(hostile_rank), str(hostile_rank), "--label", "=1+1", "--label", "@A1", "--format", "csv"
    )
    assert done.returncode == 0, done.stderr
    out = tmp_path / "compare.csv"
    out.write_text(done.stdout)
    cells = _cells(out)
    assert "'=1+1" in cells and "'@A1" in cells
    assert not [c for c in cells if c.startswith(DANGEROUS) and not _is_number(c)]


def _is_number(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return True
