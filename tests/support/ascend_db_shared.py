"""What the split modules of test_ascend_db.py share (helpers and fixtures)."""

from __future__ import annotations

from tests.conftest import DATA

MSPROF = DATA / "msprof" / "msprof_0.db"
