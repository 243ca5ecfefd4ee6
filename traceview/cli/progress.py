"""A progress display on stderr for loads that take more than a second (rich; CLI only)."""

from __future__ import annotations

import sys
import threading

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

DELAY_S = 1.0


class LoadProgress:
    """Context manager giving a `progress(done, total, label)` callback for `traceview.load`.

    Nothing is drawn unless stderr is a terminal, `quiet` is false, and the work is still running
    after DELAY_S seconds; the bar disappears when done.
    """

    def __init__(self, what: str, quiet: bool = False):
        self.enabled = not quiet and sys.stderr.isatty()
        self._what = what
        self._progress: Progress | None = None
        self._task = None
        self._state = (0, None, "")
        self._lock = threading.Lock()
        self._timer: threading.Timer | None = None

    def __enter__(self):
        if self.enabled:
            self._timer = threading.Timer(DELAY_S, self._start)
            self._timer.daemon = True
            self._timer.start()
        return self

    def _start(self) -> None:
        with self._lock:
            self._progress = Progress(
                SpinnerColumn(),
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                console=Console(stderr=True),
                transient=True,
            )
            done, total, label = self._state
            self._task = self._progress.add_task(self._describe(label), total=total, completed=done)
            self._progress.start()

    def _describe(self, label: str) -> str:
        """The bar's text; names are escaped (no rich markup, no control character from a file name)."""
        from rich.markup import escape

        from traceview.safe_text import one_line

        return f"parsing {escape(one_line(self._what))}" + (f" [dim]{escape(one_line(label))}[/]" if label else "")

    def __call__(self, done: int, total: int, label: str) -> None:
        with self._lock:
            self._state = (done, total, label)
            if self._progress is not None:
                self._progress.update(self._task, completed=done, total=total, description=self._describe(label))

    def __exit__(self, *exc) -> None:
        if self._timer is not None:
            self._timer.cancel()
        with self._lock:
            if self._progress is not None:
                self._progress.stop()
