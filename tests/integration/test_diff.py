"""`traceview.diff` / `traceview diff`: what changed between two runs.

1. A generated pair with known changes: the dp4_nccl generator (sample_traces/generate.py) run twice,
   the second time with FlashAttention's backward kernel 40 % faster, its forward kernel replaced by
   a differently named one (same durations), and a twice-as-fast network. The expected numbers come
   from the generator's own task list and its plain-Python interval functions, never from traceview.
2. Real traces: HTA's trace-compare pair (one kernel launch dropped, as HTA's TraceDiff test says),
   checked against counts and sums read straight from the JSON; TraceLens' H100 vs MI300 runs of the
   same models, checked against TraceLens' own gpu_timeline.csv and kernel_summary.csv per run.
3. The command line: text and JSON, and one-line errors.

This file holds the topic's integration tests; the others are in tests/corpus/test_diff.py.
"""

from __future__ import annotations

import copy
import gzip
import pathlib
import statistics
import subprocess
from collections import defaultdict
from contextlib import contextmanager

import orjson
import polars as pl
import pytest

import traceview as tv
from sample_traces.samplegen import dp4 as gen_dp4
from sample_traces.samplegen import kernels as gen_kernels
from tests.conftest import SAMPLES, run_cli
from tests.support.diff_shared import _row  # noqa: F401
from tests.support.samples import shared_sample
from traceview.analysis import diff as d

NEW_FLASH_FWD = "void flash_fwd_v3_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4>, true>(Flash_fwd_params)"


FASTER = 0.6  # the new flash backward kernel takes 60 % of the base duration


@contextmanager
def _changed_generator():
    """The dp4_nccl generator's inputs changed for the "new" run, restored after: the flash backward
    kernel takes FASTER of its duration, the flash forward kernel is renamed, the bus is twice as fast."""
    saved_dp, saved_fwd = copy.deepcopy(gen_dp4.DP), gen_kernels.KSPEC["flash_fwd"]
    gen_dp4.DP["dur"]["flash_bwd_dq"] = int(gen_dp4.DP["dur"]["flash_bwd_dq"] * FASTER)
    gen_kernels.KSPEC["flash_fwd"] = dict(saved_fwd, name=NEW_FLASH_FWD)
    gen_dp4.DP["busbw_bytes_per_ns"] *= 2
    try:
        yield
    finally:  # in place: the generator's modules share these objects
        gen_dp4.DP.clear()
        gen_dp4.DP.update(saved_dp)
        gen_kernels.KSPEC["flash_fwd"] = saved_fwd


def _reference(ranks) -> dict:
    """Expected per rank-step values, from the generator's task list and interval functions."""
    steps = gen_dp4.DP["steps"]
    n = len(ranks) * len(steps)
    kernels: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    classes: dict[str, int] = defaultdict(int)
    windows, terms = {}, defaultdict(list)
    for R in ranks:
        for t in R.tasks:
            kernels[t["name"]][0] += 1
            kernels[t["name"]][1] += t["end"] - t["start"]
            classes[t["cls"]] += t["end"] - t["start"]
        windows[R.rank] = []
        for s in steps:
            b = gen_dp4.gpu_breakdown(R, s)
            windows[R.rank].append(b["window_ns"])
            span = b["last_busy_end_ns"] - b["first_busy_start_ns"]
            for key, value in (
                ("duration", b["window_ns"]),
                ("computing", b["computing_ns"]),
                ("communication", b["communication_ns"]),
                ("overlapped", b["overlapped_ns"]),
                ("communication_not_overlapped", b["communication_not_overlapped_ns"]),
                ("exposed_memcpy", b["exposed_memcpy_ns"]),
                ("busy", b["busy_ns"]),
                ("free", b["free_ns"]),
                ("idle", b["idle_ns"]),
                ("busy_span", span),
            ):
                terms[key].append(value)
    every = [w for r in windows.values() for w in r]
    return {
        "n": n,
        "kernels": {k: (c, t / n / 1000) for k, (c, t) in kernels.items()},
        "per_rank_mean_us": {r: statistics.mean(w) / 1000 for r, w in windows.items()},
        "mean_us": statistics.mean(every) / 1000,
        "median_us": statistics.median(every) / 1000,
        "terms_us": {k: statistics.mean(v) / 1000 for k, v in terms.items()},
    }


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    """(base folder, new folder, base reference, new reference, generator module of the new run)."""
    root = tmp_path_factory.mktemp("diff_pair")
    out = {}
    ranks, _, _ = gen_dp4.write_dp4(root / "base")
    out["base"] = _reference(ranks)
    with _changed_generator():
        ranks, _, _ = gen_dp4.write_dp4(root / "new")
        out["new"] = _reference(ranks)
    return root / "base", root / "new", out["base"], out["new"], gen_dp4


@pytest.fixture(scope="module")
def result(pair):
    base, new, *_ = pair
    return tv.diff(base, new)


def test_step_time_per_rank_and_overall(pair, result):
    _, _, base, new, _ = pair
    assert result.per_rank and result.base["rank_steps"] == result.new["rank_steps"] == base["n"] == 12
    for rank, want in base["per_rank_mean_us"].items():
        row = _row(result.steps, rank=rank)
        assert row["base_steps"] == row["new_steps"] == 3
        assert row["base_mean_us"] == pytest.approx(want, abs=1e-6)
        assert row["new_mean_us"] == pytest.approx(new["per_rank_mean_us"][rank], abs=1e-6)
    whole = _row(result.steps, rank=None)
    assert (whole["base_steps"], whole["new_steps"]) == (12, 12)
    assert whole["base_mean_us"] == pytest.approx(base["mean_us"], abs=1e-6)
    assert whole["new_median_us"] == pytest.approx(new["median_us"], abs=1e-6)
    assert whole["delta_us"] == pytest.approx(new["mean_us"] - base["mean_us"], abs=1e-6)
    assert whole["delta_pct"] == pytest.approx(100 * (new["mean_us"] / base["mean_us"] - 1), abs=1e-9)
    assert whole["delta_us"] < 0  # the changes make the step faster


def test_terms_match_the_generator_and_explain_the_step_delta(pair, result):
    _, _, base, new, _ = pair
    terms = {r["term"]: r for r in result.terms.filter(pl.col("rank").is_null()).to_dicts()}
    for name, want in base["terms_us"].items():
        assert terms[name]["base_us"] == pytest.approx(want, abs=1e-6), name
        assert terms[name]["new_us"] == pytest.approx(new["terms_us"][name], abs=1e-6), name
    delta = {k: v["delta_us"] for k, v in terms.items()}
    assert delta["duration"] == pytest.approx(
        delta["computing"] + delta["communication_not_overlapped"] + delta["exposed_memcpy"] + delta["idle"], abs=1e-6
    )
    assert delta["busy_span"] == pytest.approx(
        delta["computing"] + delta["communication_not_overlapped"] + delta["exposed_memcpy"] + delta["free"], abs=1e-6
    )
    # a faster kernel and a faster network: less compute and less exposed communication
    assert delta["computing"] < 0 and delta["communication_not_overlapped"] < 0
    assert result.terms.filter(pl.col("rank").is_not_null())["rank"].unique().sort().to_list() == [0, 1, 2, 3]


def test_kernels_show_exactly_the_changes_made(pair, result):
    _, _, base, new, _ = pair
    k = result.kernels
    names = set(base["kernels"]) | set(new["kernels"])
    assert set(k["name"]) == names
    for row in k.to_dicts():
        bc, bus = base["kernels"].get(row["name"], (0, 0.0))
        nc, nus = new["kernels"].get(row["name"], (0, 0.0))
        assert (row["base_count_total"], row["new_count_total"]) == (bc, nc), row["name"]
        assert row["base_us"] == pytest.approx(bus, abs=1e-6) and row["new_us"] == pytest.approx(nus, abs=1e-6)
        assert row["delta_us"] == pytest.approx(nus - bus, abs=1e-6)
    old_fwd, bwd = gen_kernels.KSPEC["flash_fwd"]["name"], gen_kernels.KSPEC["flash_bwd_dq"]["name"]
    nccl = gen_kernels.NCCL_ALLREDUCE
    assert _row(k, name=old_fwd)["status"] == "removed" and _row(k, name=NEW_FLASH_FWD)["status"] == "added"
    # renamed, same durations: what the old name lost the new one gained, 4 launches per rank-step
    assert _row(k, name=NEW_FLASH_FWD)["new_us"] == pytest.approx(_row(k, name=old_fwd)["base_us"], abs=1e-6)
    assert _row(k, name=NEW_FLASH_FWD)["new_count"] == gen_dp4.DP["layers"] == 4
    changed = set(k.filter((pl.col("status") == "both") & (pl.col("delta_us") != 0))["name"])
    assert changed == {bwd, nccl}  # every other kernel kept its exact durations (same random draws)
    faster = _row(k, name=bwd)
    assert faster["mean_delta_pct"] == pytest.approx(100 * (FASTER - 1), abs=0.01)


def test_classes_and_device_time_identities(result):
    k, c = result.kernels, result.classes
    by_class = k.group_by("class").agg(pl.col("delta_us").sum())
    for row in by_class.to_dicts():
        assert _row(c, **{"class": row["class"]})["delta_us"] == pytest.approx(row["delta_us"], abs=1e-6)
    dev = result.device_time()
    assert dev["delta_us"] == pytest.approx(c["delta_us"].sum(), abs=1e-6)
    assert dev["delta_us"] == pytest.approx(k["delta_us"].sum(), abs=1e-6)
    assert c["base_share"].sum() == pytest.approx(1.0) and c["new_share"].sum() == pytest.approx(1.0)
    moved = set(c.filter(pl.col("delta_us").abs() > 1e-9)["class"])
    assert moved == {"attention", "communication"}
    bwd = k.filter(pl.col("name").str.contains("flash_bwd_dq"))["delta_us"].item()
    assert _row(c, **{"class": "attention"})["delta_us"] == pytest.approx(bwd, abs=1e-6)


def test_collectives_exposed_time(pair, result):
    _, _, base, new, _ = pair
    (row,) = result.collectives.to_dicts()
    assert (row["collective"], row["process_group"], row["status"]) == ("allreduce", "0", "both")
    assert row["base_count"] == row["new_count"] == 4.0  # 4 DDP buckets per step
    nccl = base["kernels"][gen_kernels.NCCL_ALLREDUCE][1]
    assert row["base_us"] == pytest.approx(nccl, abs=1e-6)
    # only one collective: its exposed time is the step's exposed communication
    assert row["base_exposed_us"] == pytest.approx(base["terms_us"]["communication_not_overlapped"], abs=1e-6)
    assert row["new_exposed_us"] == pytest.approx(new["terms_us"]["communication_not_overlapped"], abs=1e-6)
    assert row["delta_exposed_us"] < 0


def test_a_run_against_itself_changes_nothing(pair):
    base, *_ = pair
    same = tv.diff(base, base)
    assert (same.kernels["status"] == "both").all() and (same.kernels["delta_us"] == 0).all()
    assert (same.terms["delta_us"].drop_nulls() == 0).all() and (same.steps["delta_us"] == 0).all()
    assert (same.collectives["delta_exposed_us"] == 0).all() and (same.classes["delta_share"] == 0).all()
    assert same.notes == []


def test_one_step_and_whole_trace(pair):
    base, new, b, n, _ = pair
    one = tv.diff(base, new, step=4)
    assert one.base["step_numbers"] == [4] and one.base["rank_steps"] == 4
    whole = tv.diff(base, new, whole_trace=True)
    assert whole.base["window"] == "trace" and whole.base["rank_steps"] == 4
    # all tasks lie inside the three steps: per whole trace = 3 x per step
    for name, (_, us) in b["kernels"].items():
        assert _row(whole.kernels, name=name)["base_us"] == pytest.approx(3 * us, abs=1e-6)
    with pytest.raises(tv.TraceError, match="step 99 is not in BASE"):
        tv.diff(base, new, step=99)
    with pytest.raises(ValueError):
        tv.diff(base, new, step=4, whole_trace=True)


def test_different_ranks_devices_and_no_steps():
    gpu = shared_sample("dp4_nccl")
    ascend = shared_sample("ascend_2rank")
    r = tv.diff(gpu, ascend)
    assert not r.per_rank and r.steps["rank"].to_list() == [None]
    assert any("ranks differ" in x for x in r.notes) and any("devices differ" in x for x in r.notes)
    assert r.new["rank_steps"] == 4 and r.new["window_rules"] == ["step_id"]
    assert r.device_time()["delta_us"] == pytest.approx(r.classes["delta_us"].sum(), abs=1e-6)
    assert r.device_time()["new_us"] == pytest.approx(ascend.device_tasks["dur_ns"].sum() / 1000 / 4)
    cpu = tv.diff(SAMPLES / "cpu_single", gpu)
    assert cpu.base["window"] == "trace" and any("no device tasks" in x for x in cpu.notes)
    assert _row(cpu.steps, rank=None)["base_mean_us"] is None
    assert (cpu.kernels["status"] == "added").all()


def test_exposure_of_overlapping_collectives():
    """comp [0, 10); allreduce [5, 20) on group 0; allgather [15, 25) on group 1 (ns)."""
    tasks = pl.DataFrame(
        {
            "rank": [0, 0, 0],
            "step": [1, 1, 1],
            "kind": ["kernel", "communication", "communication"],
            "collective": [None, "allreduce", "allgather"],
            "process_group": [None, "0", "1"],
            "start_ns": [0, 5_000, 15_000],
            "end_ns": [10_000, 20_000, 25_000],
        }
    )
    want = {("allgather", "1"): 10.0, ("allreduce", "0"): 10.0}  # [15, 25) and [10, 20) in µs
    whole = d.collective_exposure(tasks, None)
    assert {(r["collective"], r["process_group"]): r["exposed_us"] for r in whole.to_dicts()} == want
    member = pl.DataFrame({"rank": [0], "step": [1], "win_start_ns": [0], "win_end_ns": [25_000], "clip": [False]})
    assert d.collective_exposure(tasks, member).equals(whole)
    # clipped to [0, 18): allreduce exposed [10, 18) = 8 µs, allgather [15, 18) = 3 µs
    clipped = member.with_columns(pl.lit(18_000, pl.Int64).alias("win_end_ns"), pl.lit(True).alias("clip"))
    got = {(r["collective"]): r["exposed_us"] for r in d.collective_exposure(tasks, clipped).to_dicts()}
    assert got == {"allgather": 3.0, "allreduce": 8.0}
    # together they exceed the union's exposed time (15 µs): both count [15, 20)
    assert sum(want.values()) > 15.0


def run(*args: str) -> subprocess.CompletedProcess:
    return run_cli(*args, cwd=pathlib.Path.cwd())


def test_cli_json_is_the_api_dict(pair, result):
    base, new, *_ = pair
    out = run("diff", str(base), str(new), "--format", "json", "--top", "3", "-q")
    assert out.returncode == 0, out.stderr
    doc = orjson.loads(out.stdout)
    assert doc == orjson.loads(orjson.dumps(result.to_dict(top=3)))
    assert set(doc) >= {
        "base",
        "new",
        "step_time",
        "terms",
        "classes",
        "kernel_counts",
        "kernels_lost",
        "kernels_gained",
        "kernels_added",
        "kernels_removed",
        "collectives",
        "notes",
    }
    assert len(doc["kernels_lost"]) <= 3 and doc["kernel_counts"]["added"] == doc["kernel_counts"]["removed"] == 1
    assert doc["kernels_added"][0]["name"] == NEW_FLASH_FWD
    # a renderer needs no knowledge of the shape: scalars, dicts of plain values, lists of flat rows
    for value in doc.values():
        rows = value if isinstance(value, list) else [value]
        assert all(not isinstance(v, dict) for r in rows if isinstance(r, dict) for v in r.values())


def test_cli_text(pair):
    base, new, *_ = pair
    out = run("diff", str(base), str(new), "-q")
    assert out.returncode == 0, out.stderr
    text = out.stdout
    for heading in (
        "Step time",
        "Where the step time went",
        "Compute classes",
        "Kernels, matched by exact name",
        "only in NEW (added)",
        "only in BASE (removed)",
        "Communication per collective",
    ):
        assert heading in text, heading
    assert "flash_fwd_v3_kernel" in text and "step time delta" in text
    assert [line.split()[0] for line in text.splitlines() if line[:4] in ("0   ", "3   ", "all ")] == ["0", "3", "all"]


def test_cli_errors(tmp_path, pair):
    base, *_ = pair
    missing = run("diff", str(base), str(tmp_path / "nope"))
    assert missing.returncode == 1 and "no such file or folder" in missing.stderr
    assert len(missing.stderr.strip().splitlines()) == 1 and "Traceback" not in missing.stderr
    (tmp_path / "bad.json.gz").write_bytes(gzip.compress(b'{"traceEvents": [')[:20])
    bad = run("diff", str(tmp_path / "bad.json.gz"), str(base), "-q")
    assert bad.returncode == 1 and len(bad.stderr.strip().splitlines()) == 1 and "bad.json.gz" in bad.stderr
    step = run("diff", str(base), str(base), "--step", "99", "-q")
    assert step.returncode == 1 and "step 99 is not in BASE" in step.stderr
    assert len(step.stderr.strip().splitlines()) == 1
    (tmp_path / "rules.toml").write_text('[[rules]]\nclass = "gemm"\nname = "("\n')
    rules = run("diff", str(base), str(base), "--classes", str(tmp_path / "rules.toml"), "-q")
    assert rules.returncode == 1 and "invalid regex" in rules.stderr and len(rules.stderr.strip().splitlines()) == 1
    assert run("diff", str(base), str(base), "--step", "3", "--whole-trace").returncode == 2
    assert run("diff", str(base)).returncode == 2
