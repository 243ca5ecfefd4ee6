"""What the iteration would be if one thing changed: bounds from the measured decomposition, each
stated as such (docs/roofline.md, "What-if").

Every scenario removes or shrinks one measured part of the mean iteration (per rank-step, over
the ranks and steps measured; `iteration.iteration_breakdown`), everything else unchanged:
- hide_exposed_comm: exposed communication hidden under compute: iteration − iteration_exposed_comm.
  A lower bound on the iteration: the communication still has to fit under the compute.
- overlap_data_loading: the data loader's time overlapped with the step: iteration − data_loading.
- pipeline_bubble: the pipeline bubble down to an ideal 1F1B schedule's (p − 1)/(m + p − 1) of the
  pipeline step, for the micro-batch count m given (facts: bubble_ms, bubble_frac, pipeline_stages):
  iteration − (bubble_frac − ideal) × bubble_ms / bubble_frac.
- matrix_at_peak_frac: the matrix work (GEMMs, attention, convolutions with recorded shapes:
  `roofline.op_calls`, calls that are not nested) running at `peak_frac` of the device's peak for
  its dtype: its device time becomes its FLOPs / (peak_frac × peak); the saving (never negative) is
  taken off the iteration, as if all of it were on the critical path (an upper bound of the gain).
- matrix_in_fp8: the bf16 / fp16 matrix work at the same efficiency on the device's fp8 peak:
  its device time × peak(dtype) / peak(fp8) (Amdahl: the answer to "why 35 % and not 2x" is the
  share of the iteration that is not bf16 matrix work).
Columns: scenario, assumption (the words), iteration_us (measured mean), bound_us (the what-if
mean iteration), saving_us, speedup (iteration / bound). Units: µs.
"""

from __future__ import annotations

from collections.abc import Callable

import polars as pl

from traceview.analysis.declare import analysis, use
from traceview.analysis.flop_formulas import MATRIX_FAMILIES

SCHEMA = pl.Schema(
    {
        "scenario": pl.String,
        "assumption": pl.String,
        "iteration_us": pl.Float64,
        "bound_us": pl.Float64,
        "saving_us": pl.Float64,
        "speedup": pl.Float64,
    }
)


@analysis(
    "what_if",
    inputs={
        "iterations": use("iteration_breakdown"),
        "facts": use("facts", lazy=True, micro_batches="micro_batches"),
        "calls": use("op_calls"),
        "limits": use("device_limits"),
    },
    keys=("scenario",),
)
def what_if(
    iterations: pl.DataFrame,
    facts: pl.DataFrame | Callable[[], pl.DataFrame],
    calls: pl.DataFrame,
    limits: pl.DataFrame,
    peak_frac: float = 0.7,
    micro_batches: int | None = None,
) -> pl.DataFrame:
    """The scenarios of the module docstring (SCHEMA rows; a scenario whose inputs the profile
    lacks is left out): `iterations` = iteration_breakdown, `facts` = the facts frame (for the
    pipeline; or a function giving it, called only when `micro_batches` asks for the pipeline), `calls` = roofline.op_calls, `limits` = roofline.device_limits."""
    if not 0 < peak_frac <= 1:
        raise ValueError(f"peak_frac must be in (0, 1], got {peak_frac!r}")
    lived = iterations.filter(pl.col("iteration_us") > 0)
    if lived.is_empty():
        return pl.DataFrame(schema=SCHEMA)
    n = lived.height
    iteration = float(lived["iteration_us"].mean())
    rows = []

    def add(scenario: str, assumption: str, saving: float | None) -> None:
        if saving is None:
            return
        saving = max(0.0, min(saving, iteration))
        bound = iteration - saving
        rows.append((scenario, assumption, iteration, bound, saving, iteration / bound if bound > 0 else None))

    add(
        "hide_exposed_comm",
        "exposed communication hidden under compute (it must fit under the compute: a bound)",
        float(lived["iteration_exposed_comm_us"].fill_null(0).mean()),
    )
    if lived["data_loading_us"].drop_nulls().len():
        add(
            "overlap_data_loading",
            "data loading overlapped with the step",
            float(lived["data_loading_us"].fill_null(0).mean()),
        )
    if micro_batches and callable(facts):
        facts = facts()
    if micro_batches and "bubble_frac" in facts.columns:
        p = facts.filter(pl.col("bubble_frac").is_not_null() & pl.col("pipeline_stages").is_not_null())
        if p.height:
            ideal = (pl.col("pipeline_stages") - 1) / (micro_batches + pl.col("pipeline_stages") - 1)
            excess = (pl.col("bubble_frac") - ideal).clip(lower_bound=0) * pl.col("bubble_ms") / pl.col("bubble_frac")
            add(
                "pipeline_bubble",
                f"the pipeline bubble at an ideal 1F1B schedule's (p-1)/(m+p-1) with m = {micro_batches}",
                float(p.select(excess.mean()).item()) * 1000,
            )
    matrix = calls.filter(pl.col("family").is_in(MATRIX_FAMILIES) & ~pl.col("nested") & pl.col("step").is_not_null())
    if matrix.height and limits.height:
        peaks = limits.drop_nulls("dtype").select("rank", "dtype", "matrix_tflops")
        fp8 = peaks.filter(pl.col("dtype") == "fp8").select("rank", pl.col("matrix_tflops").alias("_fp8"))
        m = matrix.join(peaks, on=["rank", "dtype"], how="left").join(fp8, on="rank", how="left")
        at_peak = pl.col("flop") / (peak_frac * pl.col("matrix_tflops") * 1e6)  # µs
        saving = (pl.col("device_ns") / 1e3 - at_peak).clip(lower_bound=0)
        known = m.filter(pl.col("matrix_tflops").is_not_null() & pl.col("flop").is_not_null())
        if known.height:
            add(
                "matrix_at_peak_frac",
                f"GEMMs, attention and convolutions at {peak_frac:.0%} of the device's peak for their dtype "
                "(all of the saving on the critical path: an upper bound)",
                float(known.select(saving.sum()).item()) / n,
            )
        half = m.filter(
            pl.col("dtype").is_in(["bf16", "fp16"])
            & pl.col("_fp8").is_not_null()
            & pl.col("matrix_tflops").is_not_null()
        )
        if half.height:
            fp8_saving = pl.col("device_ns") / 1e3 * (1 - pl.col("matrix_tflops") / pl.col("_fp8"))
            add(
                "matrix_in_fp8",
                "bf16/fp16 GEMMs, attention and convolutions in fp8 at the same efficiency (Amdahl: the rest of "
                "the iteration does not change)",
                float(half.select(fp8_saving.sum()).item()) / n,
            )
    return pl.DataFrame(rows, schema=SCHEMA, orient="row")
