"""The shipped samples, each loaded once per test process.

`shared_sample(name)` gives the sample's trace: its frames as loaded once (frames are never
modified), with analyses that start afresh (`Trace.with_rules`), so a test neither pays for the
load again nor sees what another test computed. A test of loading itself (the cache, warnings,
workers) calls `traceview.load`.
"""

from __future__ import annotations

import functools

import traceview as tv
from tests.conftest import SAMPLES


@functools.cache
def _loaded(name: str) -> tv.Trace:
    return tv.load(SAMPLES / name, use_cache=False)


def shared_sample(name: str) -> tv.Trace:
    """Sample `name` (a folder of sample_traces/): shared frames, its own analyses."""
    trace = _loaded(name)
    return trace.with_rules(trace.rules)
