"""What the split modules of test_snapshot.py share (helpers and fixtures)."""

from __future__ import annotations

from tests.conftest import DATA

SNAPSHOT = DATA / "snapshot" / "memory_snapshot.pickle"
