"""Errors and warnings a user sees.

A `TraceError` is fatal for the file it names: the CLI prints its one line and exits 1. Recoverable
oddities (a negative duration, a non-numeric timestamp) are counted in a `Warnings` and reported
once per kind, never dropped silently.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from traceview.safe_text import path_text

#: The longest problem (or fix) text a TraceError keeps (room for a long path); a longer one is cut with an ellipsis.
PROBLEM_CHARS = 2000


def _one_line(text: str) -> str:
    """`text` with every run of whitespace holding a line break folded to one space, cut to
    PROBLEM_CHARS characters."""
    if "\n" in text or "\r" in text:
        text = " ".join(text.split())
    return text if len(text) <= PROBLEM_CHARS else text[: PROBLEM_CHARS - 1] + "…"


class TraceError(Exception):
    """A profile (or one file of it) cannot be read.

    The message is one line: which file, what is wrong, and what to do about it. A problem or fix
    quoting a library's message (SQLite quotes a damaged schema, lines and all) is folded to one
    line of at most PROBLEM_CHARS characters.
    """

    def __init__(self, path: str | Path | None, problem: str, fix: str | None = None):
        self.path = path_text(path) if path is not None else None
        self.problem = _one_line(path_text(problem))
        self.fix = _one_line(path_text(fix)) if fix is not None else None
        where = f"cannot read {self.path}: " if self.path else ""
        tail = f" ({self.fix})" if fix else ""
        super().__init__(f"{where}{self.problem}{tail}")


class Warnings:
    """Counts recoverable oddities of one source file; `messages()` gives one line per kind."""

    def __init__(self, source: str | Path):
        self.source = path_text(source)
        self._counts: Counter[str] = Counter()

    def add(self, what: str, count: int = 1) -> None:
        """Count `count` occurrences of `what` (e.g. 'events with negative duration dropped')."""
        if count:
            self._counts[what] += int(count)

    def count(self, what: str) -> int:
        """How many of `what` were counted so far."""
        return self._counts.get(what, 0)

    def messages(self) -> list[str]:
        return [f"{self.source}: {n:,} {what}" for what, n in self._counts.items()]
