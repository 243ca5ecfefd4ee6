"""The `traceview` command line (click). Rendering lives in `text.py`, progress in `progress.py`."""

from traceview.cli import analyses as _analyses  # noqa: F401 - registers `traceview analyses`
from traceview.cli.main import main

__all__ = ["main"]
