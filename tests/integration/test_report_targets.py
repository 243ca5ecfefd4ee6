"""Where `traceview report` writes, and what it never touches (issue 14, "data loss").

A report never deletes or replaces a folder, nor any file it did not write: a one-file format
refuses a folder target with one line, `--force` replaces only a regular file (or, for csv/parquet,
the files of a folder traceview wrote itself), a batch overwrites nothing without `--force`, its
index included, and odd targets (`-o .`, a 250-character profile name) give one line, never an
internal error.
"""

from __future__ import annotations

import os
import shutil
from html.parser import HTMLParser

import pytest

from tests.conftest import SAMPLES, run_cli

PROFILE = SAMPLES / "dp4_nccl"


def _tree(folder) -> dict[str, bytes]:
    """Every file under `folder` with its bytes (to prove nothing changed)."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _report(*args, cwd_args=()):
    return run_cli("report", *args, "-q", "--no-cache")


def _one_line_error(res) -> str:
    lines = res.stderr.strip().splitlines()
    assert res.returncode == 1, res.stderr
    assert len(lines) == 1 and lines[0].startswith("traceview: error: "), res.stderr
    assert "internal error" not in res.stderr and "Traceback" not in res.stderr
    return lines[0]


def test_force_onto_a_folder_refuses_and_keeps_the_folder(tmp_path):
    target = tmp_path / "results"
    (target / "sub").mkdir(parents=True)
    (target / "notes.txt").write_text("mine")
    (target / "sub" / "data.csv").write_text("1,2")
    before = _tree(target)
    line = _one_line_error(_report(str(PROFILE), "-o", str(target), "--force"))
    assert "is a folder" in line
    assert _tree(target) == before


def test_dot_dot_from_inside_a_folder_deletes_nothing(tmp_path):
    """From inside a/b, `-o .. --force` (reported: it deleted the contents of a) and `-o .`."""
    inner = tmp_path / "a" / "b"
    inner.mkdir(parents=True)
    (tmp_path / "a" / "keep.txt").write_text("keep")
    before = _tree(tmp_path)
    for target in ("..", "."):
        res = run_cli("report", str(PROFILE), "-q", "--no-cache", "-o", os.path.join(str(inner), target), "--force")
        assert "is a folder" in _one_line_error(res)
    assert _tree(tmp_path) == before


def test_force_replaces_a_regular_file_only(tmp_path):
    out = tmp_path / "r.html"
    out.write_text("old")
    assert _report(str(PROFILE), "-o", str(out), "--force").returncode == 0
    assert out.read_text().startswith("<!DOCTYPE html>")
    link = tmp_path / "link.html"
    link.symlink_to(tmp_path / "elsewhere.html")
    (tmp_path / "elsewhere.html").write_text("theirs")
    assert "symbolic link" in _one_line_error(_report(str(PROFILE), "-o", str(link), "--force"))
    assert (tmp_path / "elsewhere.html").read_text() == "theirs" and link.is_symlink()
    fifo = tmp_path / "pipe.html"
    os.mkfifo(fifo)
    assert "not a regular file" in _one_line_error(_report(str(PROFILE), "-o", str(fifo), "--force"))
    assert not list(tmp_path.glob(".traceview-*")), "no temporary file is left behind"


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_table_folders_replace_only_what_traceview_wrote(tmp_path, fmt):
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "keep.txt").write_text("keep")
    assert "did not write" in _one_line_error(_report(str(PROFILE), "--format", fmt, "-o", str(foreign), "--force"))
    assert _tree(foreign) == {"keep.txt": b"keep"}

    out = tmp_path / "tables"
    assert _report(str(PROFILE), "--format", fmt, "-o", str(out)).returncode == 0
    (out / "my_notes.txt").write_text("mine")
    assert "exists" in _one_line_error(_report(str(PROFILE), "--format", fmt, "-o", str(out)))
    res = _report(str(SAMPLES / "cpu_single"), "--format", fmt, "-o", str(out), "--force")
    assert res.returncode == 0, res.stderr
    assert (out / "my_notes.txt").read_text() == "mine"
    # cpu_single has one rank, so no cross-rank tables: the old run's are removed (they were traceview's)
    assert not (out / f"collectives.{fmt}").exists()
    assert (out / f"ranks.{fmt}").exists()


def test_batch_overwrites_nothing_without_force(tmp_path):
    out = tmp_path / "reports"
    res = run_cli("report", str(PROFILE), str(SAMPLES / "pp4_1f1b"), "--out-dir", str(out), "-q", "--no-cache")
    assert res.returncode == 0, res.stderr
    before = _tree(out)
    res = run_cli("report", str(PROFILE), str(SAMPLES / "pp4_1f1b"), "--out-dir", str(out), "-q", "--no-cache")
    line = _one_line_error(res)
    assert "exists" in line and "--force" in line
    assert _tree(out) == before, "the index and the reports are unchanged"
    res = run_cli(
        "report", str(PROFILE), str(SAMPLES / "pp4_1f1b"), "--out-dir", str(out), "-q", "--no-cache", "--force"
    )
    assert res.returncode == 0 and "failed" not in (out / "index.html").read_text()


class _Links(HTMLParser):
    def __init__(self):
        super().__init__()
        self.hrefs = []

    def handle_starttag(self, tag, attrs):
        if tag == "a":
            self.hrefs.append(dict(attrs).get("href"))


def test_batch_index_links_cannot_become_a_script_url(tmp_path):
    hostile = tmp_path / "javascript:alert(document.domain)"
    shutil.copytree(PROFILE, hostile)
    out = tmp_path / "reports"
    res = run_cli("report", str(hostile), "--out-dir", str(out), "-q", "--no-cache")
    assert res.returncode == 0, res.stderr
    links = _Links()
    links.feed((out / "index.html").read_text())
    assert links.hrefs == ["./javascript%3Aalert%28document.domain%29.report.html"]
    assert (out / "javascript:alert(document.domain).report.html").is_file()


def test_a_250_character_profile_name_gets_a_report_name_that_fits(tmp_path):
    long = tmp_path / ("p" * 250)
    shutil.copytree(PROFILE, long)
    res = run_cli("report", str(long), "-q", "--no-cache")
    assert res.returncode == 0, res.stderr
    (written,) = [p for p in tmp_path.iterdir() if p.name.endswith(".report.html")]
    assert len(written.name.encode()) <= 255 and written.name.startswith("p" * 200)
    too_long = tmp_path / ("q" * 300 + ".html")
    line = _one_line_error(_report(str(PROFILE), "-o", str(too_long)))
    assert "File name too long" in line
