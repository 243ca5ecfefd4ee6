"""Profiles traceview recognises but does not read (`parsers.unsupported`). The unit tests; the topic's
description and its other tests: tests/integration/test_unsupported_kinds.py.
"""

from __future__ import annotations


def test_a_chrome_trace_without_device_tasks_warns(tmp_path):
    """A Chrome trace whose events carry no device task traceview recognises (here the shape of a
    JAX trace converted to Chrome JSON: device work on a '/device:GPU:0' process, no Kineto
    categories) loads with a warning saying only its host side is analysed; a GPU trace does not."""
    import json

    import traceview as tv
    from tests.conftest import DATA
    from traceview.parsers.kineto import NO_DEVICE_TASKS

    events = [
        {"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "/device:GPU:0"}},
        {"ph": "M", "name": "process_name", "pid": 2, "args": {"name": "/host:CPU"}},
        {"ph": "X", "name": "fusion.12", "pid": 1, "tid": 5, "ts": 10.0, "dur": 4.0},
        {"ph": "X", "name": "PjitFunction(step)", "pid": 2, "tid": 9, "ts": 8.0, "dur": 9.0},
    ]
    path = tmp_path / "jax.trace.json"
    path.write_text(json.dumps({"traceEvents": events}))
    t = tv.load(path, use_cache=False)
    assert t.device_tasks.is_empty()
    assert t.warnings == [f"{path}: 2 {NO_DEVICE_TASKS}"]
    assert not any(NO_DEVICE_TASKS in w for w in tv.load(DATA / "kineto_minimal.json", use_cache=False).warnings)
