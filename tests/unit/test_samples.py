"""The shipped samples load, and what traceview reads equals the values they were built with
(sample_traces/*/expected.json, written by sample_traces/generate.py from the same intervals)."""

from __future__ import annotations

import json

import polars as pl
import pytest

import traceview as tv
from tests.conftest import SAMPLES
from tests.support.samples import shared_sample


def _expected(sample: str) -> dict:
    return json.loads((SAMPLES / sample / "expected.json").read_text())


def test_dp4_nccl_counts_and_gpu_step_windows():
    exp = _expected("dp4_nccl")
    trace = shared_sample("dp4_nccl")
    info = {r["rank"]: r for r in trace.info().to_dicts()}
    assert sorted(info) == [0, 1, 2, 3]
    for rank, e in exp["ranks"].items():
        row = info[int(rank)]
        assert row["world_size"] == exp["world_size"]
        assert row["kernel"] + row["communication"] == e["n_kernels"]
        assert row["communication"] == e["n_nccl_kernels"]
        assert (row["memcpy"], row["memset"]) == (e["n_memcpy"], e["n_memset"])
        steps = trace.steps.filter(pl.col("rank") == int(rank)).sort("step")
        assert steps["step"].to_list() == exp["steps"]
        assert set(steps["window_rule"]) == {"gpu_annotation"}
        for s in steps.to_dicts():
            want = e["steps"][f"ProfilerStep#{s['step']}"]
            assert (s["device_start_ns"], s["device_end_ns"]) == (want["window_start_ns"], want["window_end_ns"])
            assert (s["host_start_ns"], s["host_end_ns"]) == (want["host_step_start_ns"], want["host_step_end_ns"])


def test_dp4_nccl_collective_kernels_exact_times():
    exp = _expected("dp4_nccl")
    comm = shared_sample("dp4_nccl").device_tasks.filter(pl.col("kind") == "communication")
    for i, coll in enumerate(exp["collectives"]):
        for rank in range(4):
            row = comm.filter(pl.col("rank") == rank).sort("start_ns").row(i, named=True)
            assert row["name"] == coll["kernel"]
            assert row["start_ns"] == coll["start_ns"][rank] and row["dur_ns"] == coll["dur_ns"][rank]


def test_pp4_1f1b_task_counts_per_step():
    exp = _expected("pp4_1f1b")
    trace = shared_sample("pp4_1f1b")
    for step_name, step in exp["steps"].items():
        n = int(step_name.split("#")[1])
        for rank, e in step["ranks"].items():
            tasks = trace.device_tasks.filter((pl.col("rank") == int(rank)) & (pl.col("step") == n))
            assert tasks.filter(pl.col("kind") == "kernel").height == e["n_compute_kernels"]
            assert tasks.filter(pl.col("kind") == "communication").height == e["n_p2p_kernels"]
            compute = tasks.filter(pl.col("kind") == "kernel")
            assert compute["start_ns"].min() == e["first_compute_start_ns"]
            assert compute["end_ns"].max() == e["last_compute_end_ns"]


def test_ascend_2rank_tasks_steps_and_reference():
    exp = _expected("ascend_2rank")
    trace = shared_sample("ascend_2rank")
    assert trace.ranks["rank"].to_list() == [0, 1]
    for rank, e in exp["ranks"].items():
        r = int(rank)
        tasks = trace.device_tasks.filter(pl.col("rank") == r)
        assert tasks.filter(pl.col("kind") == "communication").height == e["n_hccl_ops"]
        assert tasks.filter(pl.col("kind") != "communication").height == e["n_compute_tasks"]
        for step, want in e["steps"].items():
            s = trace.steps.filter((pl.col("rank") == r) & (pl.col("step") == int(step))).row(0, named=True)
            assert (s["device_start_ns"], s["device_end_ns"]) == (want["first_task_start_ns"], want["last_task_end_ns"])
            assert s["host_start_ns"] == want["host_step_start_ns"]
            ref = trace.ascend_step_trace.filter((pl.col("rank") == r) & (pl.col("step") == int(step))).row(
                0, named=True
            )
            assert ref["computing_us"] == pytest.approx(want["Computing_ns"] / 1000, abs=1e-6)
            assert ref["free_us"] == pytest.approx(want["Free_ns"] / 1000, abs=1e-6)
        hccl = tasks.filter(pl.col("kind") == "communication").sort("start_ns")
        assert hccl["start_ns"].to_list() == [h["start_ns"] for h in e["hccl"]]


def test_cpu_single_is_a_real_cpu_trace():
    trace = shared_sample("cpu_single")
    row = trace.info().row(0, named=True)
    assert row["device_tasks"] == 0 and row["device_type"] == "cpu"
    assert row["steps"] == 5 and row["host_events"] > 10_000


def test_whole_sample_folder_mixes_formats():
    trace = tv.load(SAMPLES)
    assert sorted(trace.ranks["format"].to_list()) == ["ascend"] * 2 + ["kineto"] * 9
    assert trace.ranks["rank"].n_unique() == 11  # repeated ranks renumbered, each with a warning
    assert len(trace.warnings) >= 7
