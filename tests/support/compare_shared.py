"""What the split modules of test_compare.py share (helpers and fixtures)."""

from __future__ import annotations

import subprocess

import polars as pl
import pytest

import traceview as tv
from tests.conftest import SAMPLES, run_cli

NAMES = ("dp4_nccl", "pp4_1f1b", "ascend_2rank")


MODEL = {"seq_len": 2048, "global_batch": 8, "params": 1.07e9, "recompute": False}  # the README's; as the CLI gives it


@pytest.fixture(scope="module")
def traces(tmp_path_factory):
    cache = tmp_path_factory.mktemp("cache")
    return [tv.load(SAMPLES / name, cache_dir=cache) for name in NAMES]


@pytest.fixture(scope="module")
def result(traces):
    return tv.compare(traces, model=MODEL)


def _all_ranks(frame: pl.DataFrame) -> pl.DataFrame:
    return frame.filter(pl.col("rank").is_null()).drop("rank")


def run(*args: str) -> subprocess.CompletedProcess:
    return run_cli(*args, timeout=300)
