"""What the split modules of test_security.py share (helpers and fixtures)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import run_cli
from tests.support.hostile import (
    write_hostile,
)

try:
    from tests.support.browser import CHROMIUM, browser, server_for, sync_playwright  # noqa: F401  (fixtures)
except Exception:  # pragma: no cover
    CHROMIUM = sync_playwright = None


@pytest.fixture(scope="module")
def hostile(tmp_path_factory) -> Path:
    return write_hostile(tmp_path_factory.mktemp("hostile"))


@pytest.fixture(scope="module")
def report_file(hostile, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("out") / "report.html"
    res = run_cli("report", str(hostile), "-o", str(out), "-q", "--no-cache")
    assert res.returncode == 0, res.stderr
    return out
