"""`traceview export --format perfetto`. The corpus tests; the topic's description and its other tests:
tests/unit/test_export.py, tests/integration/test_export.py.
"""

from __future__ import annotations

import pytest

import traceview as tv
from tests.conftest import SHARED_TRACES, needs_shared
from tests.support.export_shared import _check, _export  # noqa: F401


@needs_shared
@pytest.mark.parametrize(
    "rel",
    [
        "hta/tests/data/nccl_parser_config/nccl_data.json.gz",
        "msinsight/test/data/pytorch/text/level1/rank0_ascend_pt",
        "tracelens/tests/traces/inference/vllm_prefilldecode_piecewise/graph_execution.json.gz",
    ],
)
def test_real_profiles_export(rel):
    trace = tv.load(SHARED_TRACES / rel, use_cache=False)
    _check(trace, _export(trace))
