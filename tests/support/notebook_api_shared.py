"""What the split modules of test_notebook_api.py share (helpers and fixtures)."""

from __future__ import annotations

from tests.conftest import ROOT

NOTEBOOK = ROOT / "examples" / "quickstart.ipynb"
