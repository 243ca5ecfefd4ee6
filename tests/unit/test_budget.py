"""The speed budget's verdicts (bench/budget.py): a workload over SLACK x its budget's ratio fails,
one at or under passes, and the budgets move up only with a note saying why."""

from __future__ import annotations

import sys

import pytest

from tests.conftest import ROOT

sys.path.insert(0, str(ROOT / "bench"))
import budget  # noqa: E402


def _measured(**ratios: float) -> dict:
    return {name: {"cpu_s": 10 * r, "ratio": r, "wall_s": 1.0} for name, r in ratios.items()}


def test_a_workload_over_its_slack_fails_and_one_within_passes():
    budgets = {"workloads": {"a": {"cpu_s": 20.0, "ratio": 2.0}, "b": {"cpu_s": 20.0, "ratio": 2.0}}}
    over = budget.check(_measured(**{budget.FLOOR: 1.0, "a": 2.0 * budget.SLACK, "b": 3.01}), budgets)
    assert len(over) == 1 and over[0].startswith("b: 30.10 CPU-s, 3.01x the orjson floor")


def test_a_workload_without_budget_is_reported_not_failed():
    assert budget.check(_measured(**{budget.FLOOR: 1.0, "new": 50.0}), {"workloads": {}}) == []


def test_budgets_go_up_only_with_a_note():
    old = budget.record(_measured(**{budget.FLOOR: 1.0, "a": 2.0}), {}, None)
    with pytest.raises(SystemExit, match="a would go up"):
        budget.record(_measured(**{budget.FLOOR: 1.0, "a": 2.5}), old, None)
    raised = budget.record(_measured(**{budget.FLOOR: 1.0, "a": 2.5}), old, "a new analysis, worth it")
    assert raised["workloads"]["a"]["ratio"] == 2.5
    assert [h["note"] for h in raised["history"]] == ["measured", "a new analysis, worth it"]
    lowered = budget.record(_measured(**{budget.FLOOR: 1.0, "a": 1.5}), raised, None)
    assert lowered["workloads"]["a"]["ratio"] == 1.5


def test_the_committed_budgets_cover_every_workload():
    import json

    committed = json.loads(budget.BUDGETS.read_text())
    assert set(committed["workloads"]) == {
        budget.FLOOR,
        "dlrm_256 cold",
        "dlrm_256 cached",
        "a100_8x40mb cold",
        "a100_8x40mb cached",
        "timeline first window",
    }
