"""What the split modules of test_csv_inputs.py share (helpers and fixtures)."""

from __future__ import annotations

from tests.conftest import DATA

ROCPROF = DATA / "rocprof"
