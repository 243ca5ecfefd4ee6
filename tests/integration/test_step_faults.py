"""Steps that could vanish or mislead (issue 14). The integration tests; the topic's description and
its other tests: tests/unit/test_step_faults.py.
"""

from __future__ import annotations

import orjson

import traceview as tv
from tests.conftest import run_cli
from tests.support.step_faults_shared import _write  # noqa: F401


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
