"""Analyses: pure functions of the canonical frames (no I/O, no printing, no plotting).

One module per analysis; each function's docstring states its definition, formula and units, and
its output columns carry their unit. `traceview.Trace` exposes them as methods.
"""
