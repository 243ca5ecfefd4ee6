"""traceview is one import package (issue 15): a user's project with its own `parsers/` and
`dashboards/` packages (every model project ships one) loads, plots, reports and serves, and the
wheel installs `traceview` alone at the top level."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile

from tests.conftest import ROOT, SAMPLES

SCRIPT = f"""
import sys
import traceview as tv
from traceview.dashboards.app import create_app
from traceview.dashboards.report import report_html
from traceview.summary import build_summary

t = tv.load({str(SAMPLES / "dp4_nccl")!r}, use_cache=False)
fig = t.plot.step_breakdown()
doc = build_summary(t)
page = report_html(t, doc)
app = create_app(t, build_summary(t, details=False))
status = app.server.test_client().get("/").status_code
import parsers, dashboards  # the project's own packages are still its own
assert parsers.MINE and dashboards.MINE
assert not [m for m in sys.modules if m.startswith("parsers.") or m.startswith("dashboards.")]
print(len(fig.data) > 0, "<!DOCTYPE html>" in page, status)
"""


def test_a_project_with_its_own_parsers_and_dashboards_packages(tmp_path):
    for name in ("parsers", "dashboards"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "__init__.py").write_text("MINE = True\nParsedRank = None\n")
        (tmp_path / name / "detect.py").write_text("raise ImportError('the project\\'s own module was imported')\n")
    (tmp_path / "run.py").write_text(SCRIPT)
    res = subprocess.run([sys.executable, "run.py"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    assert res.stdout.split() == ["True", "True", "200"]
    cli = subprocess.run(
        [
            sys.executable,
            "-m",
            "traceview",
            "report",
            str(SAMPLES / "dp4_nccl"),
            "-q",
            "--no-cache",
            "-o",
            str(tmp_path / "r.html"),
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert cli.returncode == 0, cli.stderr


def test_the_wheel_installs_one_top_level_package(tmp_path):
    res = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps", "-q", "-w", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert res.returncode == 0, res.stderr[-3000:]
    (wheel,) = tmp_path.glob("traceview-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    top = {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")}
    assert top == {"traceview"}
    for module in (
        "traceview/parsers/kineto.py",
        "traceview/parsers/ascend/__init__.py",
        "traceview/dashboards/app.py",
        "traceview/dashboards/timeline/api.py",
        "traceview/py.typed",
        "traceview/dashboards/templates/page.html.j2",
        "traceview/rules/findings.toml",
    ):
        assert module in names


def test_a_checkout_imports_its_own_subpackages_whatever_is_installed(tmp_path):
    """A second checkout (a copy of traceview/, whose parsers/ and dashboards/ folders are inside it,
    with no install of its own) imported from its folder uses its own subpackages, not those of the
    checkout or wheel the environment has installed."""
    shutil.copytree(ROOT / "traceview", tmp_path / "traceview", ignore=shutil.ignore_patterns("__pycache__"))
    probe = (
        "import traceview, traceview.parsers, traceview.dashboards.app as app;"
        "print(traceview.__file__); print(traceview.parsers.__file__); print(app.__file__)"
    )
    res = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert all(line.startswith(str(tmp_path)) for line in res.stdout.splitlines()), res.stdout
