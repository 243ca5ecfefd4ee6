"""Checks every iteration test makes: the terms add up to the iteration and iterations tile the run."""

from __future__ import annotations

import polars as pl

from traceview.analysis import iteration, phases

TERMS_US = [f"{t}_us" for t in iteration.TERMS]


def check_identity_and_tiling(frame: pl.DataFrame, where: str) -> None:
    terms = pl.sum_horizontal(*[pl.col(c).fill_null(0) for c in TERMS_US])
    off = frame.filter((terms - pl.col("iteration_us")).abs() > 1e-6)
    assert off.height == 0, f"{where}: terms do not add up: {off.head(3).to_dicts()}"
    assert frame.filter(pl.col("iteration_us") < 0).height == 0, where
    for column in TERMS_US:
        assert frame.filter(pl.col(column) < 0).height == 0, f"{where}: negative {column}"
    ordered = frame.sort("rank", "iteration_start_ns")
    overlap = ordered.filter(
        (pl.col("rank") == pl.col("rank").shift(1))
        & (pl.col("iteration_start_ns") < pl.col("iteration_end_ns").shift(1))
    )
    assert overlap.height == 0, f"{where}: iterations overlap: {overlap.head(3).to_dicts()}"
    # phases: the wall times add up to the iteration, the device times to the device's busy time
    for columns, total in (
        (phases.WALL_COLUMNS, pl.col("iteration_us")),
        (phases.DEVICE_COLUMNS, pl.sum_horizontal(*[pl.col(f"{t}_us") for t in iteration.TERMS[:3]])),
    ):
        known = frame.filter(pl.col(f"{columns[0]}_us").is_not_null())
        parts = pl.sum_horizontal(*[pl.col(f"{c}_us") for c in columns])
        off = known.filter((parts - total).abs() > 1e-6)
        assert off.height == 0, f"{where}: {columns} do not add up: {off.head(3).to_dicts()}"
        assert known.filter(pl.min_horizontal(*[pl.col(f"{c}_us") for c in columns]) < 0).height == 0, where
