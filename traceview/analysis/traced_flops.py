"""Model FLOPs from the trace itself: per rank and step the FLOPs of the operator calls the
roofline counts (`roofline.op_calls`), the TFLOP/s per device and MFU they give, and the anatomy
(each operator family's share of the FLOPs next to its share of device time). docs/roofline.md.
"""

from __future__ import annotations

import polars as pl

from traceview.analysis.flop_formulas import MATRIX_FAMILIES

TRACED_SCHEMA = pl.Schema(
    {
        "rank": pl.Int64,
        "step": pl.Int64,
        "calls": pl.UInt32,
        "traced_flops": pl.Float64,
        "matrix_flops": pl.Float64,
        "step_time_us": pl.Float64,
        "traced_tflops_per_device": pl.Float64,
        "peak_tflops": pl.Float64,
        "peak_dtype": pl.String,
        "traced_mfu_frac": pl.Float64,
    }
)


def traced_flops(calls: pl.DataFrame, step_times: pl.DataFrame, limits: pl.DataFrame) -> pl.DataFrame:
    """Model FLOPs per rank and step summed from the operators themselves (TRACED_SCHEMA):
    traced_flops = the FLOPs of every listed call of the step (nested ones too: each formula
    counts its own operator's work; a call's step is its first task's), matrix_flops = those of
    GEMMs, attention and convolutions; traced_tflops_per_device = traced_flops / step_time_us
    (`step_times`: rank, step, step_time_us, the step's wall time as the throughput uses it);
    peak_tflops = the device's dense peak for the dtype that carries most of the rank's matrix
    FLOPs (peak_dtype; `limits` as `device_limits`); traced_mfu_frac = traced TFLOP/s / that peak.
    The FLOPs are those the recorded shapes define: operators not listed in op_flops.toml (or
    recorded without shapes) add none, so this is a lower bound of the work done."""
    if calls.is_empty():
        return pl.DataFrame(schema=TRACED_SCHEMA)
    matrix = pl.col("family").is_in(MATRIX_FAMILIES)
    per_step = (
        calls.filter(pl.col("step").is_not_null())
        .group_by("rank", "step")
        .agg(
            pl.len().cast(pl.UInt32).alias("calls"),
            pl.col("flop").sum().alias("traced_flops"),
            pl.col("flop").filter(matrix).sum().alias("matrix_flops"),
        )
    )
    dominant = (
        calls.filter(matrix & pl.col("flop").is_not_null())
        .group_by("rank", "dtype")
        .agg(pl.col("flop").sum().alias("_f"))
        .sort(["rank", "_f", "dtype"], descending=[False, True, False])
        .group_by("rank", maintain_order=True)
        .first()
        .select("rank", pl.col("dtype").alias("peak_dtype"))
    )
    peaks = dominant.join(limits, left_on=["rank", "peak_dtype"], right_on=["rank", "dtype"], how="left").select(
        "rank", "peak_dtype", pl.col("matrix_tflops").alias("peak_tflops")
    )
    seconds = pl.when(pl.col("step_time_us") > 0).then(pl.col("step_time_us") / 1e6)
    out = (
        per_step.join(step_times.select("rank", "step", "step_time_us"), on=["rank", "step"], how="left")
        .join(peaks, on="rank", how="left")
        .with_columns((pl.col("traced_flops") / seconds / 1e12).alias("traced_tflops_per_device"))
        .with_columns((pl.col("traced_tflops_per_device") / pl.col("peak_tflops")).alias("traced_mfu_frac"))
    )
    return out.select(TRACED_SCHEMA.names()).cast(dict(TRACED_SCHEMA)).sort("rank", "step")


ANATOMY_SCHEMA = pl.Schema(
    {
        "rank": pl.Int64,
        "family": pl.String,
        "flops": pl.Float64,
        "flops_frac": pl.Float64,
        "device_time_us": pl.Float64,
        "device_time_frac": pl.Float64,
    }
)
#: The anatomy's row for device time outside every listed operator call.
NOT_COVERED = "(not covered)"


def flops_anatomy(calls: pl.DataFrame, tasks: pl.DataFrame) -> pl.DataFrame:
    """Per rank and family (gemm, sdpa, conv, ..., and NOT_COVERED): the family's share of the
    traced FLOPs next to its share of device time (ANATOMY_SCHEMA), the ml-engineering guide's
    anatomy. device_time_us: the device time of the family's calls that are not nested (so no
    task counts twice); NOT_COVERED: the rank's device task time (kernels, copies, memsets,
    communication, summed) outside them; device_time_frac: of that total."""
    if tasks.is_empty() or calls.is_empty():  # no covered operator: nothing to set the FLOPs against
        return pl.DataFrame(schema=ANATOMY_SCHEMA)
    tasks = tasks.join(calls.select("rank").unique(), on="rank", how="semi")  # ranks with covered operators
    total = tasks.group_by("rank").agg((pl.col("dur_ns").sum() / 1e3).alias("_total_us"))
    by_family = calls.group_by("rank", "family").agg(
        pl.col("flop").sum().alias("flops"),
        (pl.col("device_ns").filter(~pl.col("nested")).sum() / 1e3).alias("device_time_us"),
    )
    covered = by_family.group_by("rank").agg(pl.col("device_time_us").sum().alias("_covered"))
    rest = total.join(covered, on="rank", how="left").select(
        "rank",
        pl.lit(NOT_COVERED).alias("family"),
        pl.lit(None, pl.Float64).alias("flops"),
        (pl.col("_total_us") - pl.col("_covered").fill_null(0)).clip(lower_bound=0).alias("device_time_us"),
    )
    rows = pl.concat(
        [by_family.cast({"device_time_us": pl.Float64, "flops": pl.Float64}), rest], how="vertical_relaxed"
    )
    return (
        rows.join(total, on="rank", how="left")
        .with_columns(
            (pl.col("flops") / pl.col("flops").sum().over("rank")).alias("flops_frac"),
            (pl.col("device_time_us") / pl.col("_total_us")).alias("device_time_frac"),
        )
        .select(ANATOMY_SCHEMA.names())
        .sort(["rank", "device_time_us", "family"], descending=[False, True, False])
    )
