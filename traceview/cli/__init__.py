"""The `traceview` command line (click). Rendering lives in `text.py`, progress in `progress.py`."""

from traceview.cli.main import main

__all__ = ["main"]
