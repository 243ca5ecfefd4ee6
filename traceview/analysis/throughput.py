"""Training throughput and model FLOPs utilisation (MFU) from step times (docs/metrics.md, "Throughput").

Definitions, per step (s = step time in seconds, D = devices in the job, T = tokens per step over
the whole job, i.e. seq_len x global_batch):
- tokens_per_s = T / s; tokens_per_s_per_device = T / s / D.
- model FLOPs per step F = 6 x params x T (forward 2 + backward 4 FLOPs per parameter and token),
  or flops_per_token x T when the caller gives flops_per_token (then `params` is not used: the
  caller's count is taken as complete, e.g. including attention FLOPs). Recomputation never counts.
- hardware FLOPs per step H = F, or 8/6 x F with full activation recomputation (`recompute`: the
  forward pass runs twice, 8 x params x T).
- model_tflops_per_device = F / s / D / 1e12 and hardware_tflops_per_device = H / s / D / 1e12.
- mfu_frac = model_tflops_per_device / peak_tflops and hfu_frac = hardware_tflops_per_device /
  peak_tflops, the device's dense BF16/FP16 peak from `traceview/rules/device_peaks.toml` (matched
  on the device name) or the caller's `peak_tflops`. MFU (model FLOPs utilisation, PaLM's) is
  comparable across implementations; HFU (hardware FLOPs utilisation) counts the recomputed forward
  too, so HFU >= MFU (the ml-engineering guide's definitions). `mfu_formula` / `hfu_formula` spell
  each out with its inputs.

Plausibility: no device runs above its peak, so a step with mfu_frac > 1 has a wrong input (the
model size, the tokens per step, the device count, or the peak). `check` says so on that step,
naming the inputs and what they imply; it is null on every plausible step.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence

import polars as pl

from traceview.analysis.declare import analysis, use

# The device table lives in its own module; its names stay importable from here.
from traceview.analysis.device_peaks import PEAKS_FILE, device_peak, peak_entries
from traceview.rules import shown

__all__ = ["PEAKS_FILE", "THROUGHPUT_SCHEMA", "device_peak", "peak_entries", "mean_of", "throughput"]

THROUGHPUT_SCHEMA = pl.Schema(
    {
        "step": pl.Int64,
        "step_time_us": pl.Float64,
        "devices": pl.Int64,
        "tokens_per_step": pl.Float64,
        "tokens_per_s": pl.Float64,
        "tokens_per_s_per_device": pl.Float64,
        "model_flops_per_step": pl.Float64,
        "model_tflops_per_device": pl.Float64,
        "hardware_flops_per_step": pl.Float64,
        "hardware_tflops_per_device": pl.Float64,
        "peak_tflops": pl.Float64,
        "peak_source": pl.String,
        "mfu_frac": pl.Float64,
        "hfu_frac": pl.Float64,
        "mfu_formula": pl.String,
        "hfu_formula": pl.String,
        "check": pl.String,
    }
)


def _finite(value: numbers.Real) -> bool:
    try:
        return math.isfinite(value)
    except OverflowError:  # an integer beyond a float's range
        return False


def _step_times(step_durations_us) -> tuple[pl.DataFrame, int | None]:
    """(frame of step, step_time_us; distinct ranks in the input or None)."""
    if isinstance(step_durations_us, pl.DataFrame):
        df = step_durations_us
        if "duration_us" not in df.columns:
            raise ValueError("step_durations_us frame needs a duration_us column (and optionally step, rank)")
        ranks = df["rank"].drop_nulls().n_unique() if "rank" in df.columns else None
        if "step" not in df.columns:
            if ranks is not None and ranks > 1:
                raise ValueError("a frame with several ranks needs a step column to tell steps apart")
            df = df.with_row_index("step")
        times = (
            df.filter(pl.col("duration_us").is_not_null())
            .group_by("step")
            .agg(pl.col("duration_us").cast(pl.Float64).max().alias("step_time_us"))
            .sort("step")
        )
        return times.with_columns(pl.col("step").cast(pl.Int64)), ranks or None
    if isinstance(step_durations_us, numbers.Real):
        values = [float(step_durations_us)]
    elif isinstance(step_durations_us, (pl.Series, Sequence)) or hasattr(step_durations_us, "__iter__"):
        values = [None if v is None else float(v) for v in step_durations_us]
    else:
        raise TypeError(f"step_durations_us: expected numbers or a frame, got {type(step_durations_us).__name__}")
    return pl.DataFrame(
        {"step": list(range(len(values))), "step_time_us": values},
        schema={"step": pl.Int64, "step_time_us": pl.Float64},
    ), None


def throughput(
    step_durations_us,
    tokens_per_step: float | None = None,
    seq_len: int | None = None,
    global_batch: int | None = None,
    params: float | None = None,
    flops_per_token: float | None = None,
    devices: int | None = None,
    recompute: bool = False,
    device_name: str | None = None,
    peak_tflops: float | None = None,
    peaks: Sequence[dict] | None = None,
) -> pl.DataFrame:
    """Tokens/s, model TFLOP/s per device and MFU per step (definitions in the module docstring).

    step_durations_us: step times in µs: a number, a sequence / Series (steps numbered 0..), or a
    frame with duration_us and optionally step and rank (e.g. the step breakdown). With several
    ranks per step, the step time is the longest rank's (max over ranks): a synchronous job's step
    ends when its last rank finishes.
    tokens_per_step: tokens of one step over the whole job; or give seq_len and global_batch
    (sequences per step over the whole job), tokens_per_step = seq_len x global_batch.
    params (parameter count) or flops_per_token: the model FLOPs (flops_per_token wins when both).
    devices: devices in the job (world size); defaults to the number of distinct ranks of a frame
    input: pass the world size when not every rank was loaded. Required for other inputs.
    recompute: full activation recomputation: the hardware FLOPs are 8 instead of 6 per parameter
    and token (HFU); the model FLOPs (MFU) do not change.
    device_name: matched against the device peak table `peaks` for the peak (`peak_entries`: a
    user's entries before `traceview/rules/device_peaks.toml`; None: the shipped table; a loaded
    trace's is `Trace.rules.device_peaks`); peak_tflops (dense TFLOP/s per device) overrides it.

    Columns (one row per step, sorted by step): step, step_time_us, devices, tokens_per_step,
    tokens_per_s, tokens_per_s_per_device, model_flops_per_step (FLOPs), model_tflops_per_device
    (TFLOP/s), hardware_flops_per_step, hardware_tflops_per_device, peak_tflops (per device),
    peak_source ('given', the table entry name, with ' (approximate)' when the table marks it so,
    or null), mfu_frac and hfu_frac (0..1), mfu_formula and hfu_formula (the definitions with this
    call's inputs), check (null, or why the step's numbers are impossible (HFU above 100 %) and
    which input is probably wrong: see the module docstring).
    Values that cannot be computed (no tokens, no FLOPs, unknown device, step time <= 0) are null.
    """
    given = {"tokens_per_step": tokens_per_step, "seq_len": seq_len, "global_batch": global_batch}
    given |= {"params": params, "flops_per_token": flops_per_token, "peak_tflops": peak_tflops}
    for name, value in given.items():
        if value is not None and (isinstance(value, bool) or not isinstance(value, numbers.Real)):
            raise TypeError(f"{name} must be a number, got {value!r}")
        if value is not None and not _finite(value):
            raise ValueError(f"{name} must be a finite number, got {shown(value)}")
    times, ranks = _step_times(step_durations_us)
    if devices is None:
        devices = ranks
    if devices is None:
        raise ValueError("devices (the job's device count / world size) is required for this input")
    if not isinstance(devices, int) or devices < 1:
        raise ValueError(f"devices must be a positive integer, got {devices!r}")
    if tokens_per_step is None and (seq_len is None) != (global_batch is None):
        raise ValueError("give tokens_per_step, or both seq_len and global_batch")
    if tokens_per_step is None and seq_len is not None:
        tokens_per_step = float(seq_len) * float(global_batch)
    flops = None
    if tokens_per_step is not None:
        if flops_per_token is not None:
            flops = float(flops_per_token) * tokens_per_step
        elif params is not None:
            flops = 6.0 * float(params) * tokens_per_step
    hardware = None if flops is None else flops * (8.0 / 6.0 if recompute else 1.0)
    source = None
    if peak_tflops is not None:
        peak, source = float(peak_tflops), "given"
    else:
        entry = device_peak(device_name, peaks)
        peak = entry["per_device_tflops"] if entry else None
        if entry:
            source = entry["name"] + (" (approximate)" if entry.get("approximate") else "")
    if peak is not None and not (math.isfinite(peak) and peak > 0):
        raise ValueError(f"peak_tflops must be a positive number, got {peak_tflops!r}")

    seconds = pl.when(pl.col("step_time_us") > 0).then(pl.col("step_time_us") / 1e6)
    tokens = pl.lit(tokens_per_step, pl.Float64)
    model_tflops = pl.lit(flops, pl.Float64) / seconds / devices / 1e12
    tflops = pl.lit(hardware, pl.Float64) / seconds / devices / 1e12
    model_how = (
        f"{flops_per_token:.4g} FLOPs per token"
        if flops_per_token is not None
        else f"6 x {params:.4g} params"
        if params is not None
        else ""
    )
    how = model_how
    if recompute and model_how:
        how = f"8/6 x {model_how}" if flops_per_token is not None else f"8 x {params:.4g} params"
    formulas: dict[str, str | None] = {"mfu_formula": None, "hfu_formula": None}
    if model_how and tokens_per_step is not None:
        tail = (
            f" x {tokens_per_step:.4g} tokens per step / step time (s) / {devices} device(s) / "
            f"{f'{peak:g}' if peak else '(unknown)'} TFLOP/s peak"
        )
        formulas = {"mfu_formula": f"MFU = {model_how}{tail}", "hfu_formula": f"HFU = {how}{tail}"}
    check = pl.format(
        "{} {}% is impossible: {} x {} tokens per step = {} FLOPs in {} ms on {} device(s) is {} TFLOP/s "
        "per device, above the {} TFLOP/s peak; the model size (params), the tokens per step (seq_len x "
        "global_batch), the device count or the peak is probably wrong",
        pl.lit("HFU" if recompute else "MFU"),
        (tflops / peak * 100 if peak else pl.lit(None)).round(0).cast(pl.Int64),
        pl.lit(how),
        pl.lit(f"{tokens_per_step:.4g}" if tokens_per_step is not None else ""),
        pl.lit(f"{hardware:.4g}" if hardware else ""),
        (pl.col("step_time_us") / 1000).round(3),
        pl.lit(devices),
        tflops.round(1),
        pl.lit(f"{peak:g}" if peak else ""),
    )
    return (
        times.with_columns(
            pl.lit(devices, pl.Int64).alias("devices"),
            tokens.alias("tokens_per_step"),
            (tokens / seconds).alias("tokens_per_s"),
            (tokens / seconds / devices).alias("tokens_per_s_per_device"),
            pl.lit(flops, pl.Float64).alias("model_flops_per_step"),
            model_tflops.alias("model_tflops_per_device"),
            pl.lit(hardware, pl.Float64).alias("hardware_flops_per_step"),
            tflops.alias("hardware_tflops_per_device"),
            pl.lit(peak, pl.Float64).alias("peak_tflops"),
            pl.lit(source, pl.String).alias("peak_source"),
            (model_tflops / pl.lit(peak, pl.Float64)).alias("mfu_frac"),
            (tflops / pl.lit(peak, pl.Float64)).alias("hfu_frac"),
            *[pl.lit(v, pl.String).alias(k) for k, v in formulas.items()],
            pl.when(tflops / pl.lit(peak, pl.Float64) > 1).then(check).alias("check"),
        )
        .select(list(THROUGHPUT_SCHEMA))
        .cast(dict(THROUGHPUT_SCHEMA))
        .sort("step")
    )


def mean_of(rows: pl.DataFrame) -> dict:
    """The headline's throughput (`throughput` rows, one per step): the mean over the steps of
    tokens_per_s_per_device, mfu_frac and hfu_frac (nulls skipped), and the formulas."""
    if rows.height == 0:
        return {}
    means = rows.select(pl.col("tokens_per_s_per_device", "mfu_frac", "hfu_frac").mean()).row(0, named=True)
    return {**means, "mfu_formula": rows["mfu_formula"][0], "hfu_formula": rows["hfu_formula"][0]}


# ---- declared analyses (`traceview.registry`) ------------------------------------------------------


@analysis(
    "step_times",
    inputs={"iterations": use("iteration_breakdown"), "windows": use("step_breakdown")},
    keys=("rank", "step"),
    public=False,
)
def step_times(iterations: pl.DataFrame, windows: pl.DataFrame) -> pl.DataFrame:
    """Per rank and step, its wall time as throughput counts it: the iteration (host included), the
    device window where a step has no iteration. Columns rank, step, step_time_us."""
    lived = iterations.select("rank", "step", pl.col("iteration_us").alias("step_time_us"))
    device = windows.select("rank", "step", pl.col("duration_us").alias("step_time_us"))
    return pl.concat([lived, device.join(lived, on=["rank", "step"], how="anti")])


@analysis(
    "throughput",
    inputs={"ranks": "ranks", "times": use("step_times"), "peaks": "rules.device_peaks"},
    keys=("step",),
)
def throughput_of(ranks: pl.DataFrame, times: pl.DataFrame, peaks: tuple[dict, ...], **kwargs) -> pl.DataFrame:
    """Tokens/s per device, model TFLOP/s per device and MFU per step. Keyword arguments as
    `throughput` (tokens_per_step or seq_len + global_batch; params or flops_per_token;
    recompute; peak_tflops; devices). Defaults: devices = the recorded world size (else the ranks
    loaded), device_name = the first rank's device, the peak from the trace's device peak table."""
    world = ranks["world_size"].drop_nulls().to_list()
    kwargs.setdefault("devices", max(world) if world else ranks.height)
    names = ranks["device_name"].drop_nulls()
    kwargs.setdefault("device_name", names[0] if names.len() else None)
    return throughput(times.rename({"step_time_us": "duration_us"}), peaks=peaks, **kwargs)
