"""What the split modules of test_user_rules.py share (helpers and fixtures)."""

from __future__ import annotations

import polars as pl
import pytest

from tests.conftest import SAMPLES

DP4 = SAMPLES / "dp4_nccl"


GEMM = "^sm90_xmma_gemm"


RULES = f"""
[[task_kinds.kineto.communication]]
pattern = "{GEMM}"

[[compute_classes.rule]]
class = "attention"
name = "elementwise"

[[device_peaks.rule]]
name = "the user's box"
match = "."
peak_tflops = 100.0

[[findings.rule]]
id = "straggler"
enabled = false
"""


@pytest.fixture
def rules_file(tmp_path):
    path = tmp_path / "rules.toml"
    path.write_text(RULES)
    return path


def _kinds(trace) -> dict[str, int]:
    counts = trace.device_tasks.group_by("kind").len()
    return dict(zip(counts["kind"], counts["len"]))


def _gemms(trace) -> pl.DataFrame:
    return trace.device_tasks.filter(pl.col("name").str.contains(GEMM))
