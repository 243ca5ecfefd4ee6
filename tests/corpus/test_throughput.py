"""Throughput and MFU. The corpus tests; the topic's description and its other tests:
tests/unit/test_throughput.py, tests/integration/test_throughput.py.
"""

from __future__ import annotations

import re

import pytest

import traceview as tv
from tests.conftest import SHARED_TRACES, needs_shared
from tests.support.throughput_shared import REAL_NAMES  # noqa: F401
from traceview.analysis.throughput import throughput


@needs_shared
def test_every_gpu_name_in_the_corpus_index_is_known():
    index = (SHARED_TRACES / "INDEX.md").read_text(encoding="utf-8")
    rows = [line.split("|") for line in index.splitlines() if line.startswith("| `")]
    names = {cells[6].strip() for cells in rows if len(cells) > 7}
    gpu_like = {n for n in names if re.match(r"(NVIDIA|Tesla|AMD|ARTEMIS)", n)}
    assert gpu_like, "INDEX.md layout changed"
    assert gpu_like <= set(REAL_NAMES), f"device names without an expectation: {gpu_like - set(REAL_NAMES)}"


@needs_shared
@pytest.mark.parametrize(
    "trace, peak",
    [
        ("tracelens/tests/traces/h100/gaunernst_bert-small-uncased__1016001.json.gz", 989.0),
        ("tracelens/tests/traces/mi300/gaunernst_bert-small-uncased__1016001.json.gz", 1307.4),
        ("tracelens/tests/traces/b200/eager_trace.json.gz", 2250.0),
    ],
)
def test_peak_from_a_real_trace_device_name(trace, peak):
    t = tv.load(SHARED_TRACES / trace, use_cache=False)
    name = t.ranks["device_name"][0]
    out = throughput([1e6], tokens_per_step=1e6, params=1e8, devices=1, device_name=name)
    assert out["peak_tflops"][0] == peak
    assert out["mfu_frac"][0] == pytest.approx(600.0 / peak)  # 6 x 1e8 x 1e6 / 1 s / 1e12 = 600
