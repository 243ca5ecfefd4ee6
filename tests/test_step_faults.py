"""Steps that could vanish or mislead (issue 14): a step window with no device tasks is listed,
all idle; overlapping GPU step annotations warn; `--step N` for a step that does not exist fails
like `--steps N`."""

from __future__ import annotations

import orjson
import pytest

import traceview as tv
from tests.conftest import DATA, run_cli
from traceview.errors import TraceError
from traceview.summary import build_summary


def _write(tmp_path, name, events):
    doc = orjson.loads((DATA / name).read_bytes())
    doc["traceEvents"] = events(doc["traceEvents"])
    path = tmp_path / f"rank0.{name.removesuffix('.json')}.pt.trace.json"
    path.write_bytes(orjson.dumps(doc))
    return path


@pytest.mark.integration
def test_steps_without_device_tasks_are_listed_all_idle(tmp_path):
    """kineto_minimal.json's host step 7 launches most kernels; steps 8 (1.3-1.4 ms) and 9 (1.5-1.6 ms) launch nothing."""

    def more_steps(events):
        return events + [
            {
                "ph": "X",
                "cat": "user_annotation",
                "name": f"ProfilerStep#{n}",
                "pid": 10,
                "tid": 10,
                "ts": 1100.0 + 200 * (n - 7),
                "dur": 100.0,
            }
            for n in (8, 9)
        ]

    path = _write(tmp_path, "kineto_minimal.json", more_steps)
    info = orjson.loads(run_cli("info", str(path), "--format", "json", "--no-cache").stdout)
    assert info["ranks"][0]["step_numbers"] == [7, 8, 9]
    res = run_cli("summary", str(path), "--format", "json", "--no-cache")
    assert res.returncode == 0, res.stderr
    steps = orjson.loads(res.stdout)["ranks"][0]["steps"]
    assert [s["step"] for s in steps] == [7, 8, 9]
    for s in steps[1:]:
        assert s["computing_us"] == s["communication_us"] == s["busy_us"] == 0
        assert s["duration_us"] == s["idle_us"] == 100.0, s
        assert s["free_us"] is None and s["preparing_us"] is None
    assert tv.load(path, use_cache=False).step_breakdown()["window_rule"].to_list() == ["correlation", "host", "host"]
    text = run_cli("summary", str(path), "--no-cache").stdout
    assert "\n8        0.100      0.000" in text and "\n9        0.100      0.000" in text, text


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
