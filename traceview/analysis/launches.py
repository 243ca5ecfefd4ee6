"""The launch analyses as a Trace declares them (`traceview.registry`): each correlation id's launch
call with the phase rules' synchronous calls, and the launch delays over them. The definitions are
`traceview.analysis.gaps`'."""

from __future__ import annotations

import polars as pl

from traceview.analysis import gaps, phases
from traceview.analysis.declare import analysis, use


@analysis(
    "launch_calls",
    inputs={"host_events": "host_events", "rules": "rules.phases"},
    scope="rank",
    keys=("rank", "correlation"),
)
def launch_call_frame(host_events: pl.DataFrame, rules: phases.HostRules) -> pl.DataFrame:
    """Per rank and correlation id: the launch call's start and end (ns), shared by the idle and
    delay analyses; which runtime calls are synchronous: the trace's `[[phases.synchronous]]`
    patterns. See `gaps.launch_calls`."""
    return gaps.launch_calls(host_events, rules.synchronous)


@analysis(
    "launch_delays",
    inputs={
        "device_tasks": "device_tasks",
        "host_events": "host_events",
        "launches": use("launch_calls"),
    },
    scope="rank",
)
def launch_delays_of(device_tasks: pl.DataFrame, host_events: pl.DataFrame, launches: pl.DataFrame) -> pl.DataFrame:
    """Per rank: launch delay (task start − launch call end) statistics, µs, over the tasks of
    asynchronous launch calls; `synchronous` counts the tasks of synchronous calls (a
    `cudaMemcpy` returns once its copy is done), left out. See `gaps.launch_delay_stats`."""
    return gaps.launch_delay_stats(device_tasks, host_events, launches)
