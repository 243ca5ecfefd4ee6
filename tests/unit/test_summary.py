"""`traceview summary`: golden JSON on the shipped samples, the JSON shape the issue specifies,
agreement with the API, and its options and errors.

Regenerate the golden files after an intended change with
`TRACEVIEW_UPDATE_GOLDEN=1 python -m pytest tests/unit/test_summary.py` and review the diff.
"""

from __future__ import annotations

import os

import orjson
import polars as pl
import pytest

import traceview as tv
from tests.conftest import DATA, ROOT, run_cli
from traceview.analysis.breakdown import DERIVED, TERMS
from traceview.summary import ITERATION_COLUMNS

GOLDEN = ROOT / "tests" / "golden"
SAMPLES_FOR_GOLDEN = ["dp4_nccl", "pp4_1f1b", "ascend_2rank", "cpu_single"]
STEP_KEYS = {"step", *[f"{t}_us" for t in TERMS], *DERIVED, "gap_before_us", "iteration_rule", *ITERATION_COLUMNS}


def summary_json(rel: str, *extra: str) -> dict:
    out = run_cli("summary", rel, "--format", "json", "--no-cache", *extra)
    assert out.returncode == 0, out.stderr
    return orjson.loads(out.stdout)


@pytest.mark.parametrize("sample", SAMPLES_FOR_GOLDEN)
def test_summary_json_matches_golden(sample):
    doc = summary_json(f"sample_traces/{sample}")
    path = GOLDEN / f"summary_{sample}.json"
    if os.environ.get("TRACEVIEW_UPDATE_GOLDEN"):
        path.write_bytes(orjson.dumps(doc, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS) + b"\n")
    want = orjson.loads(path.read_bytes())
    assert doc == want, f"summary of {sample} changed; if intended, regenerate (see module docstring)"


def test_summary_shape_as_documented():
    doc = summary_json("sample_traces/dp4_nccl")
    assert {"source", "headline", "ranks", "cross_rank", "warnings", "failures"} <= set(doc)
    for rank in doc["ranks"]:
        assert {"rank", "device", "trace", "steps", "compute_classes", "top_kernels", "stream_idle"} <= set(rank)
        assert set(rank["trace"]) == {f"{t}_us" for t in TERMS} | set(DERIVED)
        for step in rank["steps"]:
            assert set(step) == STEP_KEYS
        for c in rank["compute_classes"]:
            assert {"class", "group", "time_us", "share", "count"} <= set(c)
        assert sum(c["share"] for c in rank["compute_classes"]) == pytest.approx(1.0, abs=1e-5)
    assert doc["cross_rank"]["straggler"] == 2


def test_summary_numbers_equal_the_api():
    doc = summary_json("sample_traces/dp4_nccl")
    api = tv.load(ROOT / "sample_traces/dp4_nccl").step_breakdown()
    for rank in doc["ranks"]:
        for step in rank["steps"]:
            row = api.filter((pl.col("rank") == rank["rank"]) & (pl.col("step") == step["step"])).row(0, named=True)
            for term in TERMS:
                assert step[f"{term}_us"] == pytest.approx(row[f"{term}_us"], abs=0.0005)
            # the derived columns are what they say, from the same row
            assert step["computing_not_overlapped_us"] == pytest.approx(
                row["computing_us"] - row["overlapped_us"], abs=0.001
            )
            share = row["communication_not_overlapped_us"] / row["duration_us"]
            assert step["communication_not_overlapped_frac"] == pytest.approx(share, abs=1e-6)
    steps = api.filter(pl.col("duration_us") > 0)
    first = doc["headline"]
    assert first["steps"] == steps.height
    assert first["mean_step_us"] == pytest.approx(steps["duration_us"].mean(), abs=0.001)
    share = steps["communication_not_overlapped_us"].sum() / steps["duration_us"].sum()
    assert first["communication_not_overlapped_frac"] == pytest.approx(share, abs=1e-6)


def test_step_option_filters_steps():
    doc = summary_json("sample_traces/dp4_nccl", "--step", "4")
    assert all([s["step"] for s in r["steps"]] == [4] for r in doc["ranks"])


def test_throughput_options():
    doc = summary_json("sample_traces/dp4_nccl", "--seq-len", "4096", "--global-batch", "32", "--params", "1.3e8")
    rows = doc["throughput"]
    assert [r["step"] for r in rows] == [3, 4, 5]
    for r in rows:
        assert r["devices"] == 4 and r["tokens_per_step"] == 4096 * 32
        want = 6 * 1.3e8 * 4096 * 32 / (r["step_time_us"] / 1e6) / 4 / 1e12
        assert r["model_tflops_per_device"] == pytest.approx(want, rel=1e-5)
        assert r["mfu_frac"] == pytest.approx(want / 989.0, rel=1e-5)


def test_text_output_has_the_sections():
    out = run_cli("summary", "sample_traces/dp4_nccl", "--no-cache", "--tokens-per-step", "131072", "--params", "1e8")
    assert out.returncode == 0, out.stderr
    for needle in ("exposed comm", "compute classes", "top kernels", "idle per stream", "straggler: rank 2", "MFU %"):
        assert needle in out.stdout


def test_user_classes_file_wins(tmp_path):
    rules = tmp_path / "mine.toml"
    rules.write_text('[[rules]]\nclass = "attention"\nname = "xmma_gemm"\n')
    doc = summary_json("sample_traces/dp4_nccl", "--classes", str(rules))
    classes = {c["class"] for c in doc["ranks"][0]["compute_classes"]}
    assert "gemm" not in classes and "attention" in classes


def test_bad_classes_file_is_one_line_exit_1(tmp_path):
    rules = tmp_path / "bad.toml"
    rules.write_text('[[rules]]\nclass = "warp_drive"\nname = "x"\n')
    out = run_cli("summary", str(DATA / "kineto_minimal.json"), "--classes", str(rules))
    assert out.returncode == 1 and len(out.stderr.strip().splitlines()) == 1 and "bad.toml" in out.stderr


def test_half_given_batch_is_a_usage_error():
    assert run_cli("summary", str(DATA / "kineto_minimal.json"), "--seq-len", "4096").returncode == 2
