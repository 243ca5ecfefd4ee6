"""`python -m traceview` = the `traceview` command."""

from traceview.cli import main

main(prog_name="traceview")
