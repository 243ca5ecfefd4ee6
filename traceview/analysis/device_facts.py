"""The facts about a rank's device limits the findings read (`traceview.analysis.facts`): how
full its memory got (memory_facts), the operator furthest below its roofline (roofline_facts)
and what its GEMMs with dims not multiples of 8 cost against the aligned ones
(unaligned_gemm_facts). Definitions: `traceview.analysis.fact_table.FACTS`."""

from __future__ import annotations

import polars as pl

from traceview.analysis.gemm_shapes import GEMM_ALIGNMENT, gemm_dims


def memory_facts(peaks: pl.DataFrame | None) -> pl.DataFrame:
    """Per rank: memory_peak_frac, memory_peak_gib, memory_device_gib of its fullest device series."""
    schema = {"rank": pl.Int64, "memory_peak_frac": pl.Float64}
    schema |= {"memory_peak_gib": pl.Float64, "memory_device_gib": pl.Float64}
    if peaks is None or peaks.height == 0:
        return pl.DataFrame(schema=schema)
    gib = float(1 << 30)
    return (
        peaks.filter(pl.col("step").is_null() & pl.col("peak_device_frac").is_not_null())
        .sort("peak_device_frac", descending=True)
        .group_by("rank", maintain_order=True)
        .first()
        .select(
            "rank",
            pl.col("peak_device_frac").alias("memory_peak_frac"),
            (pl.coalesce("peak_reserved_bytes", "peak_allocated_bytes") / gib).alias("memory_peak_gib"),
            (pl.col("device_memory_bytes") / gib).alias("memory_device_gib"),
        )
    )


#: An operator row runs "far below its roofline" under this roofline_frac.
ROOFLINE_FAR = 0.3


def roofline_facts(roofline: pl.DataFrame | None, per: pl.DataFrame) -> pl.DataFrame:
    """Per rank, the operator row (analysis.roofline.op_roofline) under ROOFLINE_FAR of its roofline
    whose device time exceeds its expected time the most: roofline_gap_ms (that excess per step),
    roofline_gap_frac (of the step time), and what names it (op, dims, dtype, roofline_frac, bound,
    achieved TFLOP/s, peak_frac)."""
    schema = {
        "rank": pl.Int64,
        "roofline_gap_ms": pl.Float64,
        "roofline_gap_frac": pl.Float64,
        "roofline_gap_op": pl.String,
        "roofline_gap_dims": pl.String,
        "roofline_gap_dtype": pl.String,
        "roofline_gap_roofline_frac": pl.Float64,
        "roofline_gap_bound": pl.String,
        "roofline_gap_tflops": pl.Float64,
        "roofline_gap_peak_frac": pl.Float64,
    }
    if roofline is None or roofline.height == 0:
        return pl.DataFrame(schema=schema)
    excess = pl.col("device_time_us") - pl.col("expected_us")
    worst = (
        roofline.filter(pl.col("roofline_frac") < ROOFLINE_FAR)
        .with_columns(excess.alias("_excess_us"))
        .sort("_excess_us", descending=True)
        .group_by("rank", maintain_order=True)
        .first()
        .join(per.select("rank", "steps", "step_ms"), on="rank")
    )
    return worst.select(
        "rank",
        (pl.col("_excess_us") / pl.col("steps") / 1000).alias("roofline_gap_ms"),
        (pl.col("_excess_us") / pl.col("steps") / 1000 / pl.col("step_ms")).alias("roofline_gap_frac"),
        pl.col("op").alias("roofline_gap_op"),
        pl.col("input_dims").str.slice(0, 80).alias("roofline_gap_dims"),
        pl.col("dtype").alias("roofline_gap_dtype"),
        pl.col("roofline_frac").alias("roofline_gap_roofline_frac"),
        pl.col("bound").alias("roofline_gap_bound"),
        pl.col("achieved_tflops_per_s").alias("roofline_gap_tflops"),
        pl.col("peak_frac").alias("roofline_gap_peak_frac"),
    ).cast(schema)


def unaligned_gemm_facts(
    roofline: pl.DataFrame | None, per: pl.DataFrame, alignment: int = GEMM_ALIGNMENT
) -> pl.DataFrame:
    """Per rank, of its GEMM operator rows (analysis.roofline.op_roofline over the measured
    steps, family gemm or Ascend's matmul, with a roofline): gemm_aligned_roofline_frac and
    gemm_unaligned_roofline_frac = Σ expected time / Σ device time (null without such rows or
    device time) of the rows whose M, N and K are (are not) all multiples of `alignment`
    (`gemm_dims`), and gemm_unaligned_cost_ms = what the unaligned ones would save per step at the
    aligned ones' share: max(0, Σ device − Σ expected / gemm_aligned_roofline_frac) / steps, ms
    (null without both kinds)."""
    schema = {
        "rank": pl.Int64,
        "gemm_aligned_roofline_frac": pl.Float64,
        "gemm_unaligned_roofline_frac": pl.Float64,
        "gemm_unaligned_cost_ms": pl.Float64,
    }
    if roofline is None or roofline.height == 0:
        return pl.DataFrame(schema=schema)
    rows = roofline.filter(pl.col("family").is_in(["gemm", "matmul"]) & pl.col("expected_us").is_not_null())
    if rows.is_empty():
        return pl.DataFrame(schema=schema)
    aligned = gemm_dims(rows["input_dims"], alignment).select(
        pl.col("input_shapes").alias("input_dims"), "gemm_aligned"
    )
    rows = rows.join(aligned, on="input_dims", how="left").drop_nulls("gemm_aligned")

    def share(flag: bool) -> pl.Expr:
        on = pl.col("gemm_aligned") == flag
        device = pl.col("device_time_us").filter(on).sum()
        return pl.when(device > 0).then(pl.col("expected_us").filter(on).sum() / device)

    sums = rows.group_by("rank").agg(
        share(True).alias("gemm_aligned_roofline_frac"),
        share(False).alias("gemm_unaligned_roofline_frac"),
        pl.col("device_time_us").filter(~pl.col("gemm_aligned")).sum().alias("_device"),
        pl.col("expected_us").filter(~pl.col("gemm_aligned")).sum().alias("_expected"),
    )
    cost = (pl.col("_device") - pl.col("_expected") / pl.col("gemm_aligned_roofline_frac")).clip(lower_bound=0)
    both = pl.col("gemm_aligned_roofline_frac").is_not_null() & pl.col("gemm_unaligned_roofline_frac").is_not_null()
    return (
        sums.join(per.select("rank", "steps"), on="rank")
        .select(
            "rank",
            "gemm_aligned_roofline_frac",
            "gemm_unaligned_roofline_frac",
            pl.when(both & (pl.col("gemm_aligned_roofline_frac") > 0))
            .then(cost / pl.col("steps") / 1000)
            .alias("gemm_unaligned_cost_ms"),
        )
        .cast(schema)
    )
