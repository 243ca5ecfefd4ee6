"""Model FLOPs from the trace itself: per rank and step the FLOPs of the operator calls the
roofline counts (`roofline.op_calls`), the TFLOP/s per device and MFU they give, and the anatomy
(each operator family's share of the FLOPs next to its share of device time). docs/roofline.md.
"""

from __future__ import annotations

import polars as pl

from traceview.analysis.declare import analysis, use
from traceview.terms import MATRIX_FAMILIES, MIN_FLOPS_COVERAGE

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
        "flops_coverage_frac": pl.Float64,
        "traced_note": pl.String,
    }
)

# MIN_FLOPS_COVERAGE (`traceview.terms`): below it a traced TFLOP/s and MFU are null and
# traced_note says why. docs/roofline.md.


def _note(coverage: pl.Expr) -> pl.Expr:
    """The words every view shows in place of a traced TFLOP/s or MFU below MIN_FLOPS_COVERAGE:
    "n/a (FLOPs known for 3 % of kernel time)", the share rounded down (49.96 % is 49 %, never
    the 50 % it falls short of); "n/a (no kernel time in the step)" without kernel time."""
    pct = (coverage * 100).floor().cast(pl.Int64).cast(pl.String)
    return (
        pl.when(coverage.is_null())
        .then(pl.lit("n/a (no kernel time in the step)"))
        .otherwise(pl.format("n/a (FLOPs known for {} % of kernel time)", pct))
    )


def traced_means(traced: pl.DataFrame, by: list[str]) -> pl.DataFrame:
    """Rows of `traced_flops` summed up per `by` (e.g. per step over ranks; [] for one row over
    the whole run): traced_tflops_per_device and traced_mfu_frac are their means when every row
    has them by coverage (else null: a mean over the covered ranks only would speak for ranks it
    does not see), flops_coverage_frac the lowest, traced_note that lowest coverage's note when
    any row has one."""
    covered = pl.col("traced_note").is_null().all()
    lowest = pl.col("flops_coverage_frac").min()
    aggs = [
        pl.when(covered).then(pl.col("traced_tflops_per_device").mean()).alias("traced_tflops_per_device"),
        pl.when(covered).then(pl.col("traced_mfu_frac").mean()).alias("traced_mfu_frac"),
        lowest.alias("flops_coverage_frac"),
        pl.when(covered).then(pl.lit(None, pl.String)).otherwise(_note(lowest)).alias("traced_note"),
    ]
    return traced.group_by(by, maintain_order=True).agg(aggs) if by else traced.select(aggs)


def flops_coverage(calls: pl.DataFrame, tasks: pl.DataFrame) -> pl.DataFrame:
    """rank, step, flops_coverage_frac: the device time of the outermost listed calls whose FLOPs
    are known (`op_calls`: not nested, flop not null; their device_ns) over the step's kernel
    time (the summed durations of its tasks of kind "kernel": compute, not communication, copies
    or memsets), at most 1. A call whose formula cannot apply (a convolution recorded without its
    concrete stride) counts as unknown, and so does any listed call nested in it: the coverage is
    a lower bound. Null for a step without kernel time."""
    known = (
        calls.filter(~pl.col("nested") & pl.col("flop").is_not_null() & pl.col("step").is_not_null())
        .group_by("rank", "step")
        .agg(pl.col("device_ns").sum().alias("_known"))
    )
    kernels = (
        tasks.filter((pl.col("kind") == "kernel") & pl.col("step").is_not_null())
        .group_by("rank", "step")
        .agg(pl.col("dur_ns").sum().alias("_kernel"))
    )
    return kernels.join(known, on=["rank", "step"], how="left").select(
        "rank",
        "step",
        pl.when(pl.col("_kernel") > 0)
        .then((pl.col("_known").fill_null(0) / pl.col("_kernel")).clip(upper_bound=1.0))
        .alias("flops_coverage_frac"),
    )


def traced_flops(
    calls: pl.DataFrame, step_times: pl.DataFrame, limits: pl.DataFrame, tasks: pl.DataFrame | None = None
) -> pl.DataFrame:
    """Model FLOPs per rank and step summed from the operators themselves (TRACED_SCHEMA):
    traced_flops = the FLOPs of every listed call of the step (nested ones too: each formula
    counts its own operator's work; a call's step is its first task's), matrix_flops = those of
    GEMMs, attention and convolutions; traced_tflops_per_device = traced_flops / step_time_us
    (`step_times`: rank, step, step_time_us, the step's wall time as the throughput uses it);
    peak_tflops = the device's dense peak for the dtype that carries most of the rank's matrix
    FLOPs (peak_dtype; `limits` as `device_limits`); traced_mfu_frac = traced TFLOP/s / that peak.
    The FLOPs are those the recorded shapes define: operators not listed in op_flops.toml (or
    recorded without shapes) add none, so this is a lower bound of the work done.

    flops_coverage_frac (`flops_coverage`, from the device `tasks`): the share of the step's
    kernel time whose FLOPs are known. Below MIN_FLOPS_COVERAGE the TFLOP/s and MFU would
    measure the formulas' reach, not the run: both are null and traced_note says
    `coverage_text` (every view shows it in their place); traced_note is null otherwise."""
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
    coverage = (
        flops_coverage(calls, tasks)
        if tasks is not None and tasks.height
        else pl.DataFrame(schema={"rank": pl.Int64, "step": pl.Int64, "flops_coverage_frac": pl.Float64})
    )
    enough = (pl.col("flops_coverage_frac") >= MIN_FLOPS_COVERAGE).fill_null(False)  # null: no kernel time
    out = (
        per_step.join(step_times.select("rank", "step", "step_time_us"), on=["rank", "step"], how="left")
        .join(peaks, on="rank", how="left")
        .join(coverage, on=["rank", "step"], how="left")
        .with_columns(pl.when(enough).then(pl.col("traced_flops") / seconds / 1e12).alias("traced_tflops_per_device"))
        .with_columns((pl.col("traced_tflops_per_device") / pl.col("peak_tflops")).alias("traced_mfu_frac"))
        .with_columns(pl.when(~enough).then(_note(pl.col("flops_coverage_frac"))).alias("traced_note"))
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


@analysis("flops_anatomy", inputs={"calls": use("op_calls"), "tasks": "device_tasks"}, keys=("rank", "family"))
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


# ---- declared analyses (`traceview.registry`) ------------------------------------------------------


@analysis(
    "traced_flops",
    inputs={
        "calls": use("op_calls"),
        "step_times": use("step_times", lazy=True),
        "limits": use("device_limits", lazy=True),
        "tasks": "device_tasks",
    },
    keys=("rank", "step"),
)
def traced_flops_of(calls: pl.DataFrame, step_times, limits, tasks: pl.DataFrame) -> pl.DataFrame:
    """Per rank and step: the model FLOPs summed from the operators' recorded shapes, TFLOP/s
    per device over the step time, and the MFU they give against the device's peak for the
    dtype carrying most matrix FLOPs (no --params needed). A profile recorded without shapes has
    no calls, and its step times are not computed. See `traced_flops`."""
    if calls.is_empty():
        return traced_flops(calls, pl.DataFrame(), pl.DataFrame())
    return traced_flops(calls, step_times(), limits(), tasks)
