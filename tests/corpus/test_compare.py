"""`traceview.compare` / `traceview compare` / the dashboard's Compare page. The corpus tests; the
topic's description and its other tests: tests/unit/test_compare.py,
tests/integration/test_compare.py, tests/browser/test_compare.py.
"""

from __future__ import annotations

import polars as pl
import pytest

import traceview as tv
from tests.conftest import SHARED_TRACES, needs_shared
from tests.support.compare_shared import _all_ranks, run  # noqa: F401
from tests.support.samples import shared_sample
from traceview.run_compare import headlines

RESNET = SHARED_TRACES / "kineto-tb_plugin/tb_plugin/samples/resnet50_num_workers_0"


@needs_shared
def test_resnet50_runs_against_diff():
    a, b = (tv.load(RESNET / f"worker0.{n}.pt.trace.json.gz") for n in ("1623143089861", "1623143566756"))
    dp4 = shared_sample("dp4_nccl")
    c = tv.compare([a, b, dp4], model={"seq_len": 1, "global_batch": 32})
    assert c.labels == ["worker0.1623143089861", "worker0.1623143566756", "dp4_nccl"]
    # docs/diff.md's example, the same numbers
    assert headlines(c.to_dict())[0] == (
        "worker0.1623143566756 vs worker0.1623143089861: Iteration 177.592 -> 154.911 ms (-22.681 ms, -12.8 %): "
        "data loading -23.758 ms (105 % of the change), host overhead +1.258 ms (-6 % of the change); by phase: "
        "other (wall) -23.760 ms (105 % of the change), forward (wall) +1.167 ms (-5 % of the change)"
    )
    row = c.table.row(1, named=True)
    assert row["previous_term"] == "data_loading" and row["previous_term_share"] == pytest.approx(1.0475, abs=1e-4)
    for run_no, base in ((2, a), (3, b)):
        want = _all_ranks(tv.diff(base, [a, b, dp4][run_no - 1]).iteration)
        got = c.changes.filter((pl.col("run") == run_no) & (pl.col("against") == "previous")).select(want.columns)
        assert got.equals(want)
    # 32 images per step over the mean iteration of each step (the slowest rank's wall time)
    assert c.table["tokens_per_s_per_device"][0] == pytest.approx(180.46, abs=0.01)
