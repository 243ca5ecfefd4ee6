"""`traceview.diff` / `traceview diff`. The corpus tests; the topic's description and its other tests:
tests/integration/test_diff.py.
"""

from __future__ import annotations

import gzip
import json
from collections import defaultdict

import polars as pl
import pytest

import traceview as tv
from tests.conftest import SHARED_TRACES, needs_shared
from tests.support.diff_shared import _row  # noqa: F401
from tests.support.tolerance import close

HTA = SHARED_TRACES / "hta/tests/data/trace_compare"


def _raw_tasks(path) -> dict[str, tuple[int, int]]:
    """name -> (count, Σ dur in ns) of the device events, read straight from the Kineto JSON."""
    out: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for ev in json.load(gzip.open(path))["traceEvents"]:
        if ev.get("ph") == "X" and ev.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset"):
            out[ev["name"]][0] += 1
            out[ev["name"]][1] += round(float(ev["dur"]) * 1000)
    return {k: (c, t) for k, (c, t) in out.items()}


@needs_shared
def test_hta_trace_compare_pair():
    base, new = HTA / "base/base.json.gz", HTA / "test/test.json.gz"
    whole = tv.diff(base, new, whole_trace=True)
    raw_b, raw_n = _raw_tasks(base), _raw_tasks(new)
    for row in whole.kernels.to_dicts():  # one rank: per rank-step = whole trace totals
        assert (row["base_count_total"], row["new_count_total"]) == (
            raw_b.get(row["name"], (0, 0))[0],
            raw_n.get(row["name"], (0, 0))[0],
        )
        want = (raw_n.get(row["name"], (0, 0))[1] - raw_b.get(row["name"], (0, 0))[1]) / 1000
        assert row["delta_us"] == pytest.approx(want, abs=1e-9)
    changed = whole.kernels.filter(pl.col("delta_us") != 0).to_dicts()
    assert [(r["base_count_total"], r["new_count_total"], r["delta_us"]) for r in changed] == [(3, 2, -4.0)]
    assert "CUDAFunctor_add<int>" in changed[0]["name"]
    # HTA's TraceDiff test: in iteration 1010 of rank 1 one GPU kernel is deleted ("-": 1), nothing else
    it = tv.diff(base, new, step=1010)
    assert it.kernels.select("status", "base_count_total", "new_count_total").rows() == [("removed", 1, 0)]
    assert it.kernels["name"].item() == changed[0]["name"]
    assert any("has no device tasks" in n for n in it.notes)
    # per step over both steps: step 1010 of the new run has no device work
    per_step = tv.diff(base, new)
    assert per_step.new["rank_steps"] == 2 and per_step.new["measured_rank_steps"] == 1
    assert _row(per_step.kernels, name=changed[0]["name"])["delta_us"] == pytest.approx(-4.0 / 2)
    # HTA puts one GPU event (a 4 µs kernel) in each iteration of the base run; the rest of its
    # device time (memcpy/memset and kernels launched outside a step) is outside the steps
    outside = 100 * (1 - 2 * 4_000 / sum(t for _, t in raw_b.values()))
    assert any(n.startswith(f"BASE: {outside:.1f} % of the device time lies outside") for n in per_step.notes)


TRACELENS = SHARED_TRACES / "tracelens/tests/traces"


MODELS = (
    sorted(
        p.name.removesuffix(".json.gz")
        for p in (TRACELENS / "mi300").glob("*.json.gz")
        if (TRACELENS / "h100" / p.name).exists()
    )
    if TRACELENS.is_dir()
    else []
)


TIMELINE = {
    "total_time": "duration",
    "computation_time": "computing",
    "exposed_comm_time": "communication_not_overlapped",
    "exposed_memcpy_time": "exposed_memcpy",
    "busy_time": "busy",
    "idle_time": "idle",
}


def _tracelens(device: str, model: str) -> tuple[dict, dict]:
    folder = TRACELENS / device / f"{model}_perf_report_csvs"
    timeline = {r["type"]: r["time ms"] * 1000 for r in pl.read_csv(folder / "gpu_timeline.csv").to_dicts()}
    kernels = (
        pl.read_csv(folder / "kernel_summary.csv")
        .group_by("Kernel name")
        .agg(pl.col("Kernel duration (µs)_sum").sum(), pl.col("Kernel duration (µs)_count").sum())
    )
    return timeline, {r[0]: (r[2], r[1]) for r in kernels.rows()}


@needs_shared
@pytest.mark.parametrize("model", MODELS)
def test_h100_vs_mi300_against_tracelens(model):
    h100, mi300 = TRACELENS / "h100" / f"{model}.json.gz", TRACELENS / "mi300" / f"{model}.json.gz"
    r = tv.diff(h100, mi300)
    assert r.base["rank_steps"] == r.new["rank_steps"] == 1 and any("devices differ" in n for n in r.notes)
    terms = {t["term"]: t for t in r.terms.to_dicts()}
    (base_tl, base_k), (new_tl, new_k) = _tracelens("h100", model), _tracelens("mi300", model)
    for field, term in TIMELINE.items():
        assert close(terms[term]["base_us"], base_tl[field], rel=0.005), (field, terms[term], base_tl[field])
        assert close(terms[term]["new_us"], new_tl[field], rel=0.005), (field, terms[term], new_tl[field])
    step = _row(r.steps, rank=None)
    assert step["delta_us"] == pytest.approx(terms["duration"]["new_us"] - terms["duration"]["base_us"])
    delta = {k: v["delta_us"] for k, v in terms.items()}
    assert delta["duration"] == pytest.approx(
        delta["computing"] + delta["communication_not_overlapped"] + delta["exposed_memcpy"] + delta["idle"], abs=1e-6
    )
    assert r.device_time()["delta_us"] == pytest.approx(r.classes["delta_us"].sum(), abs=1e-6)
    # whole traces: every kernel's count and time per run is TraceLens' kernel_summary
    whole = tv.diff(h100, mi300, whole_trace=True).kernels.filter(pl.col("kind") == "kernel")
    for row in whole.to_dicts():
        for side, ref in (("base", base_k), ("new", new_k)):
            count, total = ref.get(row["name"], (0, 0.0))
            assert row[f"{side}_count_total"] == count, row["name"]
            assert row[f"{side}_total_us"] == pytest.approx(total, abs=0.002 * max(count, 1))
    assert whole["delta_us"].sum() == pytest.approx(
        sum(t for _, t in new_k.values()) - sum(t for _, t in base_k.values()), abs=0.01
    )
