"""The canvas timeline's overlays (/api/timeline/overlays, dashboards/timeline/overlays.py). The corpus
tests; the topic's description and its other tests: tests/unit/test_timeline_overlays.py.
"""

from __future__ import annotations

from tests.conftest import SHARED_TRACES, needs_shared
from tests.support.timeline_overlays_shared import _check_collectives, _drawn_collectives, _served, _whole  # noqa: F401

DLRM = SHARED_TRACES / "param/et_replay/tests/inputs/dlrm_kineto.tar.gz.extracted/dlrm_kineto"


@needs_shared
def test_collectives_equal_the_collectives_analysis_on_the_8_rank_dlrm_profile():
    trace, _, client, meta = _served(DLRM)
    o, got = _check_collectives(trace, client, meta)
    assert set(o["collective_kinds"]) == {"alltoall", "allreduce"}  # SendRecv kernels of an all-to-all
    assert set(o["collectives"]["p2p"]) == {0}
    assert (
        got["rank"].n_unique() == 8
        and got["collective_id"].n_unique() == trace.run("collectives")["collective_id"].n_unique()
    )
