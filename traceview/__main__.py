"""`python -m traceview` = the `traceview` command."""

from traceview.cli.main import run

run()
