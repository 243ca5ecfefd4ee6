"""What the split modules of test_breakdown.py share (helpers and fixtures)."""

from __future__ import annotations

import polars as pl
import pytest

ASCEND_COLUMNS = {
    "Computing": "computing_us",
    "Communication(Not Overlapped)": "communication_not_overlapped_us",
    "Overlapped": "overlapped_us",
    "Communication": "communication_us",
    "Free": "free_us",
    "Stage": "stage_us",
    "Bubble": "bubble_us",
    "Communication(Not Overlapped and Exclude Receive)": "communication_not_overlapped_exclude_receive_us",
    "Preparing": "preparing_us",
}


def _check_identities(rows: pl.DataFrame) -> None:
    for r in rows.to_dicts():
        if r["first_busy_ns"] is None:  # a step in which the device ran nothing: listed, all idle
            assert r["busy_us"] == r["computing_us"] == 0 and r["free_us"] is None, r
            assert r["idle_us"] == r["duration_us"], r
            continue
        span_us = (r["last_busy_ns"] - r["first_busy_ns"]) / 1000
        total = r["computing_us"] + r["communication_not_overlapped_us"] + r["exposed_memcpy_us"] + r["free_us"]
        assert abs(total - span_us) < 1e-6, r
        assert r["overlapped_us"] <= min(r["computing_us"], r["communication_us"]) + 1e-9
        assert r["busy_us"] + r["idle_us"] == pytest.approx(r["duration_us"], abs=1e-6)
        assert r["free_us"] >= 0 and r["idle_us"] >= r["free_us"] - 1e-6
