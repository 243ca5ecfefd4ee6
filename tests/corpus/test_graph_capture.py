"""The capture trace of a CUDA/HIP-graph run is that run's companion, never a rank (issue 30). The
corpus tests; the topic's description and its other tests: tests/unit/test_graph_capture.py.
"""

from __future__ import annotations

import pytest

import traceview as tv
from tests.conftest import SHARED_TRACES, needs_shared
from tests.support.graph_capture_shared import CAPTURE_ADVICE  # noqa: F401

INFERENCE = SHARED_TRACES / "tracelens" / "tests" / "traces" / "inference"


@needs_shared
@pytest.mark.parametrize(
    ("folder", "execution"),
    [
        ("vllm_decode_full", "graph_execution.json.gz"),
        ("vllm_prefilldecode_piecewise", "graph_execution.json.gz"),
        ("sglang_decode", "sglang_Qwen3-8B_decode.json.gz"),
    ],
)
def test_real_capture_traces_are_companions(folder, execution):
    t = tv.load(INFERENCE / folder, use_cache=False)
    assert t.ranks.height == 1 and t.ranks["source"][0].endswith(execution)
    assert t.companions.height == 1 and "capture" in t.companions["source"][0]
    assert not [w for w in t.warnings if "repeats rank" in w]
    advice = " ".join(t.findings()["advice"].drop_nulls().to_list())
    assert CAPTURE_ADVICE not in advice
