"""Shared test fixtures: where the real-trace corpus and the shipped samples are, and a CLI runner."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"
SAMPLES = ROOT / "sample_traces"
SHARED_TRACES = ROOT.parent / "shared" / "traces"

needs_shared = pytest.mark.skipif(
    not SHARED_TRACES.is_dir(),
    reason=f"real-trace corpus not found at {SHARED_TRACES} (present in CI; absent in a user's clone)",
)


def run_cli(*args: str, env: dict | None = None, timeout: float = 180) -> subprocess.CompletedProcess:
    """`traceview ARGS` in a fresh process (`python -m traceview`, from the repository root), with
    `env` added to the environment; output captured as text."""
    return subprocess.run(
        [sys.executable, "-m", "traceview", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
    )


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory, monkeypatch):
    """Every test gets its own Parquet cache folder: tests never touch ~/.cache or each other."""
    monkeypatch.setenv("TRACEVIEW_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))


def timeline_segments(trace) -> list[tuple[str, float, float]]:
    """(lane, first x, last x) of each task segment of a raw timeline trace: vertices on one lane,
    x non-decreasing, each segment ended by a NaN x / None y (`dashboards.timeline_page.segment_points`)."""
    out, xs, ys = [], list(trace.x), list(trace.y)
    start = 0
    for i, y in enumerate(ys):
        if y is None:
            seg_x, seg_y = xs[start:i], ys[start:i]
            assert len(seg_x) >= 2 and len(set(seg_y)) == 1, (seg_x, seg_y)
            assert all(a <= b for a, b in zip(seg_x, seg_x[1:])), seg_x
            out.append((seg_y[0], seg_x[0], seg_x[-1]))
            start = i + 1
    assert start == len(ys), "the last segment is not ended"
    return out
