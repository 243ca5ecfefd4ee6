"""`traceview info`: output shapes, and one-line errors (exit 1, no traceback) on bad input."""

from __future__ import annotations

import gzip
import json

import orjson
import pytest

from tests.conftest import DATA, run_cli


def test_info_json_shape_on_hand_written_trace():
    out = run_cli("info", str(DATA / "kineto_minimal.json"), "--format", "json")
    assert out.returncode == 0, out.stderr
    doc = orjson.loads(out.stdout)
    assert set(doc) == {"source", "ranks", "companions", "warnings", "failures"}
    (rank,) = doc["ranks"]
    assert rank["rank"] == 3 and rank["world_size"] == 4
    assert rank["device_tasks"] == 5
    assert (rank["kernel"], rank["communication"], rank["memcpy"], rank["memset"]) == (2, 1, 1, 1)
    assert rank["streams"] == 2 and rank["steps"] == 1 and rank["step_numbers"] == [7]
    assert rank["span_us"] == pytest.approx(1215.0 - 1010.123)


def test_info_text_is_a_table():
    out = run_cli("info", str(DATA / "kineto_minimal.json"))
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    header = next(line for line in lines if line.startswith("rank"))
    assert "tasks" in header and "comm" in header and "span ms" in header
    assert "NVIDIA H100 80GB HBM3" in out.stdout


def test_info_reports_warnings_once():
    out = run_cli("info", str(DATA / "kineto_malformed.json"), "--format", "json")
    assert out.returncode == 0
    warnings = orjson.loads(out.stdout)["warnings"]
    assert len(warnings) == 3 and all("kineto_malformed.json" in w for w in warnings)


def _bad_inputs(tmp_path):
    good = (DATA / "kineto_minimal.json").read_bytes()
    gz = gzip.compress(good)
    cases = {
        "empty.json": b"",
        "random.json": bytes(range(256)) * 4,
        "truncated.json": good[: len(good) // 2],
        "truncated.json.gz": gz[: len(gz) // 2],
        "not_a_trace.json": json.dumps({"hello": "world"}).encode(),
        "numbers.json": b"[1, 2, 3]",
    }
    for name, content in cases.items():
        (tmp_path / name).write_bytes(content)
    return cases


@pytest.mark.parametrize(
    "name, expected",
    [
        ("empty.json", "empty"),
        ("random.json", "invalid JSON"),
        ("truncated.json", "truncated JSON"),
        ("truncated.json.gz", "truncated gzip"),
        ("not_a_trace.json", "not a Chrome trace"),
        ("numbers.json", "not JSON objects"),
    ],
)
def test_bad_input_is_one_line_exit_1(tmp_path, name, expected):
    _bad_inputs(tmp_path)
    out = run_cli("info", str(tmp_path / name))
    assert out.returncode == 1
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1, out.stderr
    assert name in lines[0] and expected in lines[0]
    assert "Traceback" not in out.stderr


def test_missing_path_and_empty_folder(tmp_path):
    out = run_cli("info", str(tmp_path / "nope"))
    assert out.returncode == 1 and "no such file or folder" in out.stderr and "Traceback" not in out.stderr
    out = run_cli("info", str(tmp_path))
    assert out.returncode == 1 and "no profiles found" in out.stderr


def test_verbose_shows_traceback(tmp_path):
    (tmp_path / "empty.json").write_bytes(b"")
    out = run_cli("-v", "info", str(tmp_path / "empty.json"))
    assert out.returncode == 1 and "Traceback" in out.stderr


def test_usage_error_exits_2():
    assert run_cli("info").returncode == 2
    assert run_cli("info", str(DATA), "--format", "xml").returncode == 2


def test_failed_rank_among_good_ones_exit_1_but_others_shown(tmp_path):
    (tmp_path / "rank0.pt.trace.json").write_bytes((DATA / "kineto_minimal.json").read_bytes())
    (tmp_path / "rank1.pt.trace.json").write_bytes(b'{"traceEvents": [')
    out = run_cli("info", str(tmp_path), "--format", "json")
    assert out.returncode == 1
    doc = orjson.loads(out.stdout)
    assert len(doc["ranks"]) == 1 and len(doc["failures"]) == 1
    assert "rank1.pt.trace.json" in doc["failures"][0] and "truncated JSON" in doc["failures"][0]


def test_profile_files_are_never_modified(tmp_path):
    target = tmp_path / "t.json"
    target.write_bytes((DATA / "kineto_minimal.json").read_bytes())
    before = (target.read_bytes(), target.stat().st_mtime_ns)
    assert run_cli("info", str(target)).returncode == 0
    assert (target.read_bytes(), target.stat().st_mtime_ns) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.json"]
