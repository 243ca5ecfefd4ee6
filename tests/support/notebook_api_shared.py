"""What the notebook API's test modules share: the quickstart notebook, and `never_shown` (an
autouse fixture each module imports: any figure shown, rather than returned, fails the test)."""

from __future__ import annotations

import plotly.graph_objects as go
import plotly.io as pio
import pytest

from tests.conftest import ROOT

NOTEBOOK = ROOT / "examples" / "quickstart.ipynb"


@pytest.fixture(autouse=True)
def never_shown(monkeypatch):
    """Any figure shown (rather than returned) fails the test."""

    def refuse(*args, **kwargs):
        raise AssertionError("a figure was shown: the notebook API returns figures, it never shows them")

    monkeypatch.setattr(go.Figure, "show", refuse)
    monkeypatch.setattr(pio, "show", refuse)
