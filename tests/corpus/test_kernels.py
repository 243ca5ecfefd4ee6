"""Kernel names people can read, kernels over all ranks, and the operator view
(traceview.analysis.kernels). The corpus tests; the topic's description and its other tests:
tests/unit/test_kernels.py.
"""

from __future__ import annotations

import traceview as tv
from tests.conftest import SHARED_TRACES, needs_shared
from traceview.analysis.kernels import short_names


@needs_shared
def test_short_names_are_distinct_on_every_real_profile():
    from tests.support.corpus import corpus_paths
    from traceview.errors import TraceError

    checked = 0
    for rel in corpus_paths():
        try:
            trace = tv.load(SHARED_TRACES / rel, jobs=1)
        except TraceError:
            continue
        distinct = trace.device_tasks["name"].unique().to_list()
        mapping = short_names(distinct)
        assert len(set(mapping.values())) == len(distinct), rel
        assert all(len(v) <= len(k) + 12 for k, v in mapping.items()), rel
        checked += 1
    assert checked > 50
