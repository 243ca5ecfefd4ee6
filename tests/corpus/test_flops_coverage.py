"""Traced FLOPs only with their coverage (issue 30). The corpus tests; the topic's description and its
other tests: tests/unit/test_flops_coverage.py, tests/integration/test_flops_coverage.py.
"""

from __future__ import annotations

import pytest

import traceview as tv
from tests.conftest import SHARED_TRACES, needs_shared, run_cli
from traceview.analysis import traced_flops as tf

RESNET = "kineto-tb_plugin/tb_plugin/samples/resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz"


DLRM = "param/et_replay/tests/inputs/dlrm_kineto.tar.gz.extracted/dlrm_kineto"


@needs_shared
@pytest.mark.parametrize("rel", [RESNET, DLRM])
def test_real_profiles_with_unknown_flops_show_no_mfu(rel):
    """ResNet-50 on V100 (the TensorBoard plugin's sample: convolutions without concrete inputs)
    showed "MFU 0.1 %", the 8-rank DLRM set "MFU 0.0 %" eight times."""
    t = tv.load(SHARED_TRACES / rel, use_cache=False)
    traced = t.traced_flops()
    assert traced.height and traced["traced_mfu_frac"].null_count() == traced.height
    assert (traced["flops_coverage_frac"] < tf.MIN_FLOPS_COVERAGE).all()
    assert traced["traced_note"].str.starts_with("n/a (FLOPs known for ").all()
    text = run_cli("summary", str(SHARED_TRACES / rel)).stdout
    assert "MFU 0." not in text and "n/a (FLOPs known for" in text
