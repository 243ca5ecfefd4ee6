"""The analytical model (traceview.analysis.expected, model_config). The corpus tests; the topic's
description and its other tests: tests/unit/test_expected.py, tests/integration/test_expected.py.
"""

from __future__ import annotations

import pytest

import traceview as tv
from tests.conftest import SHARED_TRACES, needs_shared


@needs_shared
def test_runs_on_a_real_ascend_profile_given_its_device():
    """torch_npu does not record the chip: the configuration names it (device = "910B"); the
    measured side comes from the profile's own steps."""
    path = SHARED_TRACES / "msinsight/test/data/pytorch/text/level1/rank0_ascend_pt"
    t = tv.load(path, use_cache=False)
    config = dict(layers=4, hidden=512, heads=8, seq=128, micro_batch=8, device="910B", dtype="fp16")
    terms = {r["term"]: r for r in t.expected(config).iter_rows(named=True)}
    assert terms["step"]["measured"] == pytest.approx(float(t.iteration_breakdown()["iteration_us"].mean()))
    assert terms["comm"]["measured"] > 0 and terms["step"]["expected"] > 0
    with pytest.raises(ValueError, match="records no device name"):
        t.expected({k: v for k, v in config.items() if k != "device"})
