"""Kineto parser rules on tiny hand-written traces (tests/data/README.md says what each holds)."""

from __future__ import annotations

import polars as pl

from tests.conftest import DATA
from traceview.parsers.kineto import parse_kineto


def _tasks(name: str) -> pl.DataFrame:
    return parse_kineto(DATA / name).frames["device_tasks"]


def test_minimal_kinds_times_and_header():
    parsed = parse_kineto(DATA / "kineto_minimal.json")
    assert parsed.meta["rank"] == 3 and parsed.meta["world_size"] == 4
    assert parsed.meta["device_name"] == "NVIDIA H100 80GB HBM3" and parsed.meta["device_type"] == "gpu"
    tasks = parsed.frames["device_tasks"]
    assert tasks["kind"].to_list() == ["kernel", "communication", "memcpy", "memset", "kernel"]
    gemm = tasks.row(0, named=True)
    assert (gemm["start_ns"], gemm["dur_ns"], gemm["end_ns"]) == (1_010_123, 20_456, 1_030_579)
    assert (gemm["stream"], gemm["device"], gemm["correlation"], gemm["external_id"]) == (7, 0, 501, 2)
    assert (gemm["grid"], gemm["block"]) == ("132,1,1", "384,1,1")
    assert tasks.filter(pl.col("kind") == "memcpy")["bytes"].to_list() == [4096]
    assert parsed.warnings == []


def test_minimal_host_events_and_correlation_steps():
    parsed = parse_kineto(DATA / "kineto_minimal.json")
    host = parsed.frames["host_events"]
    assert host["kind"].to_list() == ["annotation", "operator", "runtime", "runtime", "runtime", "runtime", "runtime"]
    assert "PyTorch Profiler (0)" not in host["name"].to_list()  # profiler bookkeeping span
    steps = parsed.frames["steps"]
    assert steps.select("step", "window_rule").rows() == [(7, "correlation")]
    s = steps.row(0, named=True)
    assert (s["host_start_ns"], s["host_end_ns"]) == (1_000_000, 1_100_000)
    # first to last device task launched inside the host step (correlations 501..504)
    assert (s["device_start_ns"], s["device_end_ns"]) == (1_010_123, 1_055_000)
    assert parsed.frames["device_tasks"]["step"].to_list() == [7, 7, 7, 7, None]


def test_2021_schema_variants():
    parsed = parse_kineto(DATA / "kineto_2021.json")
    tasks = parsed.frames["device_tasks"]
    assert tasks["kind"].to_list() == ["kernel", "memcpy", "memset"]
    assert tasks["stream"].to_list() == [7, 7, 7]
    assert tasks["start_ns"][0] == 1623142623460130 * 1000  # integer µs stay exact at 1.6e18 ns
    assert tasks["external_id"][0] == 537
    assert parsed.meta["device_name"] == "Tesla V100-DGXS-32GB"
    assert parsed.meta["rank"] is None
    assert parsed.frames["host_events"]["kind"].to_list() == ["operator", "runtime"]
    assert parsed.frames["steps"]["step"].to_list() == [2]
    assert tasks["step"].to_list() == [2, None, None]  # memcpy/memset have no launch in the trace


def test_gpu_annotation_window_wins_over_launch():
    parsed = parse_kineto(DATA / "kineto_gpu_annotation.json")
    steps = parsed.frames["steps"]
    assert steps.select("step", "window_rule", "device_start_ns", "device_end_ns").rows() == [
        (1, "gpu_annotation", 120_000, 180_000),
        (2, "gpu_annotation", 180_000, 240_000),
    ]
    assert parsed.frames["device_tasks"]["step"].to_list() == [2]
    assert parsed.frames["device_annotations"].height == 2


def test_malformed_events_are_counted_not_fatal():
    parsed = parse_kineto(DATA / "kineto_malformed.json")
    tasks = parsed.frames["device_tasks"]
    assert tasks["name"].to_list() == ["good_a", "good_b", "good_c"]
    assert tasks["start_ns"].to_list() == [10_000, 20_000, 50_000]
    assert tasks["dur_ns"].to_list() == [1_000, 2_000, 3_000]
    text = "\n".join(parsed.warnings)
    assert "2 complete events with a missing or non-numeric 'ts' dropped" in text
    assert "1 complete events with a missing or non-numeric 'dur' dropped" in text
    assert "1 complete events with a negative 'dur' dropped" in text
    assert len(parsed.warnings) == 3


_ONE_KERNEL = (
    b'{"traceEvents":[{"ph":"X","cat":"kernel","name":"NAME","pid":0,"tid":7,"ts":1.0,"dur":2.0,'
    b'"args":{"stream":7}},{"ph":"X","cat":"kernel","name":"ok","pid":0,"tid":7,"ts":5.0,"dur":1.0}]}'
)


def test_invalid_unicode_is_replaced_and_reported(tmp_path):
    for name, blob in {
        "bad_utf8.json": _ONE_KERNEL.replace(b"NAME", b"caf\xe9"),
        "lone_surrogate.json": _ONE_KERNEL.replace(b"NAME", b"x\\ud800y"),
    }.items():
        (tmp_path / name).write_bytes(blob)
        parsed = parse_kineto(tmp_path / name)
        names = parsed.frames["device_tasks"]["name"].to_list()
        assert names[1] == "ok" and "\ufffd" in names[0]
        assert len(parsed.warnings) == 1 and "U+FFFD" in parsed.warnings[0]


def test_bom_loads_without_warnings_and_nul_characters_are_replaced(tmp_path):
    (tmp_path / "bom.json").write_bytes(b"\xef\xbb\xbf" + _ONE_KERNEL)
    parsed = parse_kineto(tmp_path / "bom.json")
    assert parsed.frames["device_tasks"]["name"].to_list() == ["NAME", "ok"]
    assert parsed.warnings == []
    (tmp_path / "nul.json").write_bytes(b"\xef\xbb\xbf" + _ONE_KERNEL.replace(b"NAME", b"a\\u0000b"))
    parsed = parse_kineto(tmp_path / "nul.json")
    assert parsed.frames["device_tasks"]["name"].to_list() == ["a\ufffdb", "ok"]
    assert len(parsed.warnings) == 1 and "1 event names with NUL characters" in parsed.warnings[0]
