"""Profiles traceview recognises but does not read (`parsers.unsupported`): one line naming what
the file is and what to do, exit 1, never "invalid JSON"."""

from __future__ import annotations

import sqlite3

import pytest

from tests.conftest import run_cli


def _sqlite(path, table):
    with sqlite3.connect(path) as db:
        db.execute(f"CREATE TABLE {table} (a)")
    return path


CASES = [
    (
        lambda d: _sqlite(d / "msprof_20240101.db", "TASK"),
        "is an Ascend profiler database without its task tables (COMPUTE_TASK_INFO, STRING_IDS)",
    ),
    (lambda d: _sqlite(d / "rocpd.db", "rocpd_kernel_dispatch"), "is a rocprofv3 rocpd database"),
    (lambda d: _sqlite(d / "other.db", "anything"), "is a SQLite database traceview does not know"),
    (lambda d: _write(d / "host.xplane.pb", b"\x0a\x05plane"), "is a JAX / TensorFlow XPlane protobuf"),
    (lambda d: _write(d / "run.pftrace", b"\x0a\x02\x08\x01"), "is a Perfetto protobuf trace"),
    (lambda d: _write(d / "run.nsys-rep", b"\x00" * 64), "is an Nsight Systems report"),
]


def _write(path, data: bytes):
    path.write_bytes(data)
    return path


@pytest.mark.integration
@pytest.mark.parametrize(("make", "says"), CASES, ids=[c[1].split(" is ")[-1] for c in CASES])
def test_a_recognised_kind_is_named_in_one_line(tmp_path, make, says):
    path = make(tmp_path)
    out = run_cli("summary", str(path))
    assert out.returncode == 1
    (line,) = out.stderr.strip().splitlines()
    assert f"cannot read {path}: this {says}" in line and "invalid JSON" not in line
    assert "Traceback" not in out.stderr


@pytest.mark.integration
def test_a_folder_holding_only_such_files_names_one(tmp_path):
    _write(tmp_path / "notes.txt", b"hello")
    (tmp_path / "plugins").mkdir()
    _write(tmp_path / "plugins" / "host.xplane.pb", b"\x0a\x05plane")
    out = run_cli("summary", str(tmp_path))
    assert out.returncode == 1
    assert (
        "no profiles traceview reads in this folder; host.xplane.pb is a JAX / TensorFlow XPlane protobuf" in out.stderr
    )


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
