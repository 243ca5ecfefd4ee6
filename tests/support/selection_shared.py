"""What the split modules of test_selection.py share (helpers and fixtures)."""

from __future__ import annotations

from click.testing import CliRunner

from traceview import executors
from traceview.cli.main import main
from traceview.parsers import Source

TABLES = ("device_tasks", "host_events", "device_annotations", "steps", "ascend_step_trace", "ascend_communication")


def count_parses(monkeypatch) -> list[Source]:
    """Record every source parsed in-process (small inputs parse in-process; tests pass jobs=1)."""
    seen: list[Source] = []
    real = executors.parse_source

    def counting(source, *args, **kwargs):
        seen.append(source)
        return real(source, *args, **kwargs)

    monkeypatch.setattr(executors, "parse_source", counting)
    return seen


def cli(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)
