"""The CLI's progress display: silent unless stderr is a terminal and not --quiet; follows load().

This file holds the topic's unit tests; the others are in tests/integration/test_progress.py.
"""

from __future__ import annotations

import sys

import pytest

import traceview as tv
from tests.conftest import DATA
from traceview.cli import progress as progress_mod


def test_quiet_or_not_a_terminal_disables_it(monkeypatch):
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)
    assert progress_mod.LoadProgress("x", quiet=True).enabled is False
    monkeypatch.setattr(sys.stderr, "isatty", lambda: False, raising=False)
    assert progress_mod.LoadProgress("x").enabled is False


@pytest.mark.parametrize("grouped", [False, True], ids=["ranks alone", "small ranks grouped"])
def test_progress_tracks_ranks_of_a_load(monkeypatch, tmp_path, grouped):
    """Progress counts ranks: one step per rank parsed alone, one per group of small ranks."""
    from traceview import rank_groups

    if not grouped:
        monkeypatch.setattr(rank_groups, "SMALL_RANK_BYTES", 0)
    for r in range(3):
        (tmp_path / f"rank{r}.pt.trace.json").write_bytes((DATA / "kineto_minimal.json").read_bytes())
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)
    monkeypatch.setattr(progress_mod, "DELAY_S", 0.0)
    seen = []
    with progress_mod.LoadProgress("profile") as bar:
        bar._timer.join()  # the display has started
        tv.load(tmp_path, use_cache=False, progress=lambda d, t, label: (seen.append((d, t)), bar(d, t, label)))
        task = bar._progress.tasks[0]
        assert (task.completed, task.total) == (3, 3)
    assert seen == ([(3, 3)] if grouped else [(1, 3), (2, 3), (3, 3)])
