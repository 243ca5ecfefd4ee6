"""Profiles traceview recognises but does not read (`parsers.unsupported`): one line naming what
the file is and what to do, exit 1, never "invalid JSON".

This file holds the topic's integration tests; the others are in tests/unit/test_unsupported_kinds.py.
"""

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


@pytest.mark.parametrize(("make", "says"), CASES, ids=[c[1].split(" is ")[-1] for c in CASES])
def test_a_recognised_kind_is_named_in_one_line(tmp_path, make, says):
    path = make(tmp_path)
    out = run_cli("summary", str(path))
    assert out.returncode == 1
    (line,) = out.stderr.strip().splitlines()
    assert f"cannot read {path}: this {says}" in line and "invalid JSON" not in line
    assert "Traceback" not in out.stderr


def test_a_folder_holding_only_such_files_names_one(tmp_path):
    _write(tmp_path / "notes.txt", b"hello")
    (tmp_path / "plugins").mkdir()
    _write(tmp_path / "plugins" / "host.xplane.pb", b"\x0a\x05plane")
    out = run_cli("summary", str(tmp_path))
    assert out.returncode == 1
    assert (
        "no profiles traceview reads in this folder; host.xplane.pb is a JAX / TensorFlow XPlane protobuf" in out.stderr
    )
