"""The README's quickstart stays true: its first command (after `pip install .`) runs on a copy of
the shipped samples and writes the report it names."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys

from tests.conftest import ROOT


def quickstart_lines() -> list[str]:
    text = (ROOT / "README.md").read_text()
    section = text.split("## Quickstart", 1)[1]
    return re.search(r"```bash\n(.*?)```", section, re.S).group(1).strip().splitlines()


def test_quickstart_has_an_install_and_run_line_and_a_test_line():
    first, second = quickstart_lines()
    assert first.startswith("pip install . && traceview ")
    assert second == "pip install -e '.[test]' && python -m pytest -q -n auto"  # the unit set, over the CPUs


def test_quickstart_main_command_runs_on_the_shipped_sample(tmp_path):
    first = quickstart_lines()[0]
    argv = shlex.split(first.split("&&", 1)[1])
    assert argv[:2] == ["traceview", "report"] and "-o" in argv
    shutil.copytree(ROOT / "sample_traces", tmp_path / "sample_traces")
    res = subprocess.run(
        [sys.executable, "-m", "traceview", *argv[1:]], cwd=tmp_path, capture_output=True, text=True, timeout=180
    )
    assert res.returncode == 0, res.stderr
    assert res.stderr == ""
    out = tmp_path / argv[argv.index("-o") + 1]
    html = out.read_text()
    assert html.startswith("<!DOCTYPE html>") or html.lower().startswith("<!doctype html>")
    assert "dp4_nccl" in html and '<script src="http' not in html  # self-contained: no network script
