"""Steps that could vanish or mislead (issue 14): a step window with no device tasks is listed,
all idle; overlapping GPU step annotations warn; `--step N` for a step that does not exist fails
like `--steps N`.

This file holds the topic's unit tests; the others are in tests/integration/test_step_faults.py.
"""

from __future__ import annotations

import pytest

import traceview as tv
from tests.conftest import DATA, run_cli
from tests.support.step_faults_shared import _write  # noqa: F401
from traceview.errors import TraceError
from traceview.summary import build_summary


def test_overlapping_gpu_step_annotations_warn(tmp_path):
    def overlap(events):
        return [
            dict(e, dur=80.0) if e.get("name") == "ProfilerStep#1" and e.get("cat") == "gpu_user_annotation" else e
            for e in events
        ]

    path = _write(tmp_path, "kineto_gpu_annotation.json", overlap)
    trace = tv.load(path, use_cache=False)
    (line,) = [w for w in trace.warnings if "overlap the next step" in w]
    assert line.endswith(
        "1 GPU-side ProfilerStep#N annotations overlap the next step's (by up to 20.000 µs): "
        "device time in an overlap counts in the later step"
    )
    clean = tv.load(DATA / "kineto_gpu_annotation.json", use_cache=False)
    assert not [w for w in clean.warnings if "overlap" in w]


def test_a_step_that_does_not_exist_fails_alike(tmp_path):
    path = DATA / "kineto_minimal.json"
    one = run_cli("summary", str(path), "--step", "99", "--no-cache")
    many = run_cli("summary", str(path), "--steps", "99", "--no-cache")
    assert one.returncode == many.returncode == 1
    assert one.stderr == many.stderr == f"traceview: error: no step 99 in this profile ({path} has step 7)\n"
    with pytest.raises(TraceError, match="no step 99"):
        build_summary(tv.load(path, use_cache=False), step=99)
