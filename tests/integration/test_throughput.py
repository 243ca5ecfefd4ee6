"""Throughput and MFU. The integration tests; the topic's description and its other tests:
tests/unit/test_throughput.py, tests/corpus/test_throughput.py.
"""

from __future__ import annotations

from tests.support.samples import shared_sample


def test_impossible_throughput_is_flagged_everywhere_with_the_probable_input(tmp_path):
    """The README's old example (7e9 params, 2,097,152 tokens per step) on the shipped 4-rank sample
    gave MFU 32,470 % with no warning (issue 14); the README's inputs now fit the sample."""
    import re

    from tests.conftest import SAMPLES, run_cli
    from traceview.dashboards.overview import _throughput
    from traceview.dashboards.report import throughput_section
    from traceview.summary import build_summary

    trace = shared_sample("dp4_nccl")
    wrong = dict(tokens_per_step=2_097_152, params=7e9)
    rows = trace.throughput(**wrong)
    assert (rows["mfu_frac"] > 1).all()
    check = rows["check"][0]
    pct = round(100 * rows["mfu_frac"][0])  # 6 x 7e9 x 2,097,152 FLOPs in a 68.6 ms iteration on 4 devices: ~32,000 %
    assert 30_000 < pct < 35_000
    assert check.startswith(f"MFU {pct}% is impossible: 6 x 7e+09 params x 2.097e+06 tokens per step")
    assert "the model size (params), the tokens per step (seq_len x global_batch), the device count" in check
    fits = trace.throughput(seq_len=2048, global_batch=8, params=1.07e9)  # the README's example
    assert fits["check"].null_count() == fits.height and (fits["mfu_frac"] < 0.5).all()

    doc = build_summary(trace, throughput=wrong)
    assert [w for w in doc["warnings"] if f"throughput of 3 of 3 steps: MFU {pct}% is impossible" in w]
    assert "mfu-warning" in str(_throughput(doc)) and check in str(_throughput(doc))
    assert [b["text"] for b in throughput_section(doc) if b.get("id") == "throughput-check"] == [check]
    res = run_cli("summary", str(SAMPLES / "dp4_nccl"), "--tokens-per-step", "2097152", "--params", "7e9")
    assert res.returncode == 0
    assert re.search(f"check: MFU {pct}% is impossible", res.stdout)
