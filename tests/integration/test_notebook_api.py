"""The notebook API. The integration tests; the topic's description and its other tests:
tests/unit/test_notebook_api.py.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys

import plotly.graph_objects as go
import polars as pl
import pytest

import traceview as tv
from tests.conftest import ROOT, SAMPLES
from tests.support.notebook_api_shared import NOTEBOOK, never_shown  # noqa: F401 - never_shown is autouse


def test_load_does_not_import_plotly_until_plot_is_used():
    code = (
        "import sys\n"
        "import traceview as tv\n"
        f"t = tv.load({str(SAMPLES / 'dp4_nccl')!r})\n"
        "t.step_breakdown(); t.compute_classes(); repr(t); t._repr_html_()\n"
        "loaded = sorted(m for m in sys.modules if m.split('.')[0] in ('plotly', 'dash'))\n"
        "assert not loaded, loaded\n"
        "fig = t.plot.step_breakdown()\n"
        "assert 'plotly' in sys.modules and type(fig).__module__.startswith('plotly')\n"
        "print('ok')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


def run_notebook(path) -> list[tuple[str, object]]:
    """Run the notebook's code cells in order in one namespace, as Jupyter would: returns each
    cell's source and the value of its last line when that is an expression (what Jupyter displays)."""
    namespace: dict = {"__name__": "__main__"}
    shown = []
    for i, cell in enumerate(json.loads(path.read_text())["cells"]):
        if cell["cell_type"] != "code":
            continue
        source = "".join(cell["source"])
        tree = ast.parse(source, filename=f"{path.name}[{i}]")
        last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
        exec(compile(tree, f"{path.name}[{i}]", "exec"), namespace)
        value = eval(compile(ast.Expression(last.value), f"{path.name}[{i}]", "eval"), namespace) if last else None
        shown.append((source, value))
    return shown


@pytest.mark.parametrize("cwd", [".", "examples"])
def test_notebook_runs_top_to_bottom(monkeypatch, cwd):
    monkeypatch.chdir(ROOT / cwd)
    shown = run_notebook(NOTEBOOK)
    trace = shown[0][1]
    assert isinstance(trace, tv.Trace) and trace.ranks.height == 4
    frames = [v for s, v in shown if isinstance(v, pl.DataFrame)]
    figures = [(s, v) for s, v in shown if "t.plot." in s]
    assert len(frames) >= 5 and all(f.height for f in frames)
    assert len(figures) >= 7
    for source, fig in figures:
        assert isinstance(fig, go.Figure) and fig.data, source
    slow = next(v for s, v in shown if "stragglers" in s)
    assert slow.columns == trace.stragglers().columns
