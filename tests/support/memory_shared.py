"""What the split modules of test_memory.py share (helpers and fixtures)."""

from __future__ import annotations

import traceview as tv
from tests.conftest import DATA

MiB = 1 << 20


MEMORY_TRACE = DATA / "kineto_memory.json"


def _load(path) -> tv.Trace:
    return tv.load(path, use_cache=False)
