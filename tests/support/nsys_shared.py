"""What the split modules of test_nsys.py share (helpers and fixtures)."""

from __future__ import annotations

import gzip
import shutil

import pytest

from tests.conftest import DATA
from tests.support.browser import serve_answers, server_for  # noqa: F401 - fixture

NSYS = DATA / "nsys"


def _unpacked(tmp_path, name: str):
    out = tmp_path / name.removesuffix(".gz")
    with gzip.open(NSYS / name) as src, open(out, "wb") as dst:
        shutil.copyfileobj(src, dst)
    return out


@pytest.fixture
def cloverleaf(tmp_path):
    return _unpacked(tmp_path, "perlmutter-cloverleaf-cuda.sqlite.gz")
