"""GPU pipeline bubbles and stage inference (traceview.analysis.bubbles).

- Property: on generated 1F1B profiles (tests/support/pipeline.py) the bubble fraction of every stage
  is (p-1)/(m+p-1) within 0.02, exactly so without transfer time, and the bubble equals the
  construction's value to the nanosecond.
- The shipped pp4_1f1b sample equals its expected.json; the data-parallel sample and the real
  SendRecv traces (all-to-all, not pipeline P2P) have bubble 0.
- Stage grouping on generated p=4 profiles by both rules, and the cases where it must give up.
- MindInsight's pipeline ground truth (needs_shared): what is and is not reproducible.

This file holds the topic's unit tests; the others are in tests/corpus/test_bubbles.py.
"""

from __future__ import annotations

import json
import shutil

import polars as pl
import pytest

import traceview as tv
from tests.conftest import SAMPLES
from tests.support.pipeline import hand_steps, hand_tasks, simulate, write_1f1b
from tests.support.samples import shared_sample
from traceview.analysis.bubbles import gpu_bubbles, pipeline_stages

F = 1_200_000


CASES = [(p, m, tau) for p in (2, 4, 8) for m in (p, 2 * p, 4 * p) for tau in (0, 6_000)]


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    """Generated profiles by (p, m, transfer, replicas, peer_titles): (folder, known values)."""
    root = tmp_path_factory.mktemp("pipelines")
    made = {}

    def make(p, m, tau=0, replicas=1, peer_titles=False):
        key = (p, m, tau, replicas, peer_titles)
        if key not in made:
            folder = root / "p{}_m{}_t{}_r{}_{}".format(*key)
            known = write_1f1b(folder, p, m, F=F, transfer=tau, replicas=replicas, peer_titles=peer_titles)
            made[key] = (folder, known)
        return made[key]

    return make


@pytest.mark.parametrize("p, m, tau", CASES)
def test_1f1b_bubble_fraction_on_every_stage(generated, p, m, tau):
    folder, known = generated(p, m, tau)
    trace = tv.load(folder)
    got = gpu_bubbles(trace.device_tasks, trace.steps)
    ideal = (p - 1) / (m + p - 1)
    assert got.height == 2 * p and got["pipeline"].all()
    assert sorted(got["rank"].unique()) == list(range(p))
    for row in got.to_dicts():
        assert row["bubble_frac"] == pytest.approx(ideal, abs=0.02), row
        assert row["compute_us"] * 1000 == pytest.approx(m * 3 * F, abs=0.5)
        assert row["step_us"] * 1000 == pytest.approx(known["step_ns"], abs=0.5)
        assert row["bubble_us"] * 1000 == pytest.approx(known["bubble_ns"][row["rank"]], abs=0.5)
        if tau == 0:  # the ideal schedule: exactly (p-1)(F+B) and (p-1)/(m+p-1)
            assert row["bubble_us"] * 1000 == pytest.approx((p - 1) * 3 * F, abs=0.5)
            assert row["bubble_frac"] == pytest.approx(ideal, abs=1e-12)
        else:  # transfers on the critical path lengthen the step and every bubble equally
            assert row["bubble_frac"] > ideal
            assert row["exposed_p2p_us"] > 0


def test_generator_schedule_is_1f1b():
    """The simulated schedule is Megatron's 1F1B: stage s warms up with min(p-s-1, m) forwards,
    every stage computes m(F+B), and stage 0 spans (m+p-1)(F+B) without transfers."""
    p, m = 4, 8
    stages = simulate(p, m, F, 2 * F, 0)
    for s, st in enumerate(stages):
        kinds = "".join(k for k, *_ in st.ops)
        warm = min(p - s - 1, m)
        assert kinds.startswith("F" * warm + "FB") and kinds.count("F") == m and kinds.count("B") == m
        assert sum(b - a for *_x, a, b in st.ops) == m * 3 * F
    assert stages[0].ops[-1][3] - stages[0].ops[0][2] == (m + p - 1) * 3 * F


def test_generator_is_deterministic(tmp_path):
    a = write_1f1b(tmp_path / "a", 2, 4, transfer=6_000, peer_titles=True)
    b = write_1f1b(tmp_path / "b", 2, 4, transfer=6_000, peer_titles=True)
    assert a == b
    for r in range(2):
        name = f"rank{r}.pt.trace.json"
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()


def test_pp4_sample_equals_expected():
    exp = json.loads((SAMPLES / "pp4_1f1b" / "expected.json").read_text())
    trace = shared_sample("pp4_1f1b")
    got = gpu_bubbles(trace.device_tasks, trace.steps)
    assert got.height == 8
    for step_name, st in exp["steps"].items():
        step = int(step_name.split("#")[1])
        for rank, e in st["ranks"].items():
            row = got.filter((pl.col("rank") == int(rank)) & (pl.col("step") == step)).row(0, named=True)
            assert row["step_us"] * 1000 == pytest.approx(st["step_duration_ns"], abs=0.5)
            assert row["compute_us"] * 1000 == pytest.approx(e["compute_busy_ns"], abs=0.5)
            assert row["bubble_us"] * 1000 == pytest.approx(e["bubble_ns"], abs=0.5)
            assert row["bubble_frac"] == pytest.approx(e["bubble_fraction"], abs=1e-9)
            # the rank-local view: P2P time with no compute = expected's local exposed P2P
            assert row["exposed_p2p_us"] * 1000 == pytest.approx(e["local_exposed_p2p_ns"], abs=0.5)
            assert row["p2p_us"] * 1000 == pytest.approx(e["p2p_kernel_time_ns"], abs=0.5)
            assert row["bubble_frac"] == pytest.approx(exp["ideal_bubble_fraction_value"], abs=0.02)


def test_pp4_sample_stages_from_titles():
    trace = shared_sample("pp4_1f1b")
    got = pipeline_stages(trace.device_tasks, trace.host_events, trace.ranks)
    assert got["stage"].to_list() == [0, 1, 2, 3]
    assert got["n_stages"].to_list() == [4] * 4
    assert set(got["stage_rule"]) == {"p2p_titles"}


def test_data_parallel_sample_has_no_bubble():
    trace = shared_sample("dp4_nccl")
    got = gpu_bubbles(trace.device_tasks, trace.steps)
    assert got.height == 12
    assert (got["bubble_us"] == 0).all() and not got["pipeline"].any() and (got["bubble_frac"] == 0).all()
    assert (got["step_us"] > 0).all() and (got["p2p_us"] == 0).all()
    stages = pipeline_stages(trace.device_tasks, trace.host_events, trace.ranks)
    assert stages["stage"].null_count() == 4 and stages["stage_rule"].null_count() == 4


def test_hand_made_groups_and_non_pipeline_rank():
    """Two pipelines ("a": ranks 0-1, "b": ranks 2-3) get their own pipeline step; rank 4 has no
    P2P (bubble 0, own span); rank 5 has no compute in the step (step_us null)."""
    K, C, S = "kernel", "communication", "ncclDevKernel_SendRecv"
    tasks = hand_tasks(
        [
            (0, 1, K, "gemm", 0, 100, None),
            (0, 1, C, S, 100, 130, "a"),
            (0, 1, K, "gemm", 130, 200, None),
            (1, 1, C, S, 0, 100, "a"),
            (1, 1, K, "gemm", 100, 160, None),
            (1, 1, K, "gemm", 150, 170, None),
            (2, 1, K, "gemm", 0, 50, None),
            (2, 1, C, S, 50, 60, "b"),
            (3, 1, C, S, 0, 60, "b"),
            (3, 1, K, "gemm", 60, 80, None),
            (4, 1, K, "gemm", 10, 40, None),
            (4, 1, K, "memset", 60, 70, None),
            (4, 1, C, "ncclDevKernel_AllReduce", 40, 60, None),
            (5, 1, "memcpy", "Memcpy HtoD", 0, 10, None),
        ]
    )
    got = {r["rank"]: r for r in gpu_bubbles(tasks, hand_steps([0, 1, 2, 3, 4, 5])).to_dicts()}
    assert got[0]["step_us"] * 1000 == 200 and got[1]["step_us"] * 1000 == 200  # rank 0's span
    assert got[0]["bubble_us"] * 1000 == 30 and got[1]["bubble_us"] * 1000 == 130  # 200 - 170, 200 - 70
    assert got[1]["exposed_p2p_us"] * 1000 == 100 and got[1]["p2p_us"] * 1000 == 100
    assert got[2]["step_us"] * 1000 == 50 and got[3]["step_us"] * 1000 == 50  # group b: 50, not 200
    assert got[3]["bubble_us"] * 1000 == 30 and got[3]["bubble_frac"] == pytest.approx(0.6)
    assert got[4]["bubble_us"] == 0 and not got[4]["pipeline"] and got[4]["step_us"] * 1000 == 60
    assert got[4]["compute_us"] * 1000 == 40
    assert got[5]["step_us"] is None and got[5]["bubble_frac"] is None and got[5]["bubble_us"] == 0
    assert [got[r]["pipeline_group"] for r in range(6)] == ["a", "a", "b", "b", None, None]


@pytest.mark.parametrize("replicas", [1, 2])
def test_stages_from_compute_order(generated, replicas):
    folder, known = generated(4, 8, 6_000, replicas=replicas)
    trace = tv.load(folder)
    got = pipeline_stages(trace.device_tasks, trace.host_events, trace.ranks)
    assert got.height == 4 * replicas
    assert set(got["stage_rule"]) == {"compute_order"} and set(got["n_stages"]) == {4}
    assert got["stage"].to_list() == [known["stage_of_rank"][r] for r in got["rank"]]
    # Megatron layout: each data-parallel copy of the pipeline is its own P2P group
    assert got["pipeline_group"].n_unique() == replicas


def test_stages_from_titles_any_subset(generated, tmp_path):
    folder, known = generated(4, 4, 0, replicas=2, peer_titles=True)
    trace = tv.load(folder)
    got = pipeline_stages(trace.device_tasks, trace.host_events, trace.ranks)
    assert set(got["stage_rule"]) == {"p2p_titles"} and set(got["n_stages"]) == {4}
    assert got["stage"].to_list() == [known["stage_of_rank"][r] for r in got["rank"]]
    # Without the group size, n_stages comes from the last stage (its peers are all below it).
    no_size = pipeline_stages(trace.device_tasks.drop("group_size"), trace.host_events, trace.ranks)
    assert set(no_size["n_stages"]) == {4}
    # Two ranks of eight (stages 1 and 3 of pipeline copy 0): titles still name their stages.
    for r in (2, 6):
        shutil.copy(folder / f"rank{r}.pt.trace.json", tmp_path)
    part = tv.load(tmp_path)
    got = pipeline_stages(part.device_tasks, part.host_events, part.ranks)
    assert got["stage"].to_list() == [1, 3] and got["n_stages"].to_list() == [4, 4]


def test_compute_order_gives_up_when_it_cannot_know(generated, tmp_path):
    folder, _ = generated(4, 8, 6_000)
    # Only 2 of the 4 ranks of the pipeline group: the order of two ranks says nothing about stages.
    for r in (0, 1):
        shutil.copy(folder / f"rank{r}.pt.trace.json", tmp_path)
    part = tv.load(tmp_path)
    got = pipeline_stages(part.device_tasks, part.host_events, part.ranks)
    assert got["stage"].null_count() == 2 and got["n_stages"].null_count() == 2
    assert got["pipeline_group"].to_list() == ["1", "1"]
    # Compute that every rank runs at the step start (zero_grad) hides the staggering: no stages.
    trace = tv.load(folder)
    first = trace.steps.select("rank", "step", pl.col("device_start_ns").alias("start_ns"))
    preamble = first.with_columns(
        pl.col("start_ns").min().over("step").alias("start_ns"),
        pl.lit("kernel").alias("kind"),
        pl.lit("vectorized_elementwise_kernel<FillFunctor>").alias("name"),
    ).with_columns((pl.col("start_ns") + 1_000).alias("end_ns"))
    tasks = pl.concat([trace.device_tasks, preamble], how="diagonal_relaxed")
    got = pipeline_stages(tasks, trace.host_events, trace.ranks)
    assert got["stage"].null_count() == 4 and got["stage_rule"].null_count() == 4
