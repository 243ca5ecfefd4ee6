"""The analytical model as a Trace declares it (`traceview.registry`): its operations on the
profile's device, and its step term by term beside the measured one. The model is
`traceview.analysis.expected`."""

from __future__ import annotations

import polars as pl

from traceview.analysis import expected
from traceview.analysis.declare import analysis, use
from traceview.analysis.model_config import model_config


def _model(ranks: pl.DataFrame, config, peaks) -> tuple[pl.DataFrame, dict | None]:
    """The model's operations for `config` on the profile's device (the first rank's) and the
    limits it used (None without a config)."""
    if config is None:
        return pl.DataFrame(schema=expected.OPS_SCHEMA), None
    config = model_config(config)
    names = ranks["device_name"].drop_nulls()
    limits = expected.system_limits(config, names[0] if names.len() else None, peaks)
    return expected.expected_ops(config, limits), limits


@analysis("expected_ops", inputs={"ranks": "ranks", "peaks": "rules.device_peaks"}, keys=("op", "pass"))
def model_ops(ranks: pl.DataFrame, peaks: tuple[dict, ...], config) -> pl.DataFrame:
    """The analytical model's operations for a transformer `config` (a ModelConfig, a dict or a
    TOML file: `traceview.analysis.model_config`) on this profile's device (per
    layer and pass, communication, optimizer) with FLOPs, bytes, time at the roofline and time
    per step. See `expected.expected_ops`."""
    return _model(ranks, config, peaks)[0]


@analysis(
    "expected",
    inputs={
        "ranks": "ranks",
        "iterations": use("iteration_breakdown", lazy=True),
        "facts": use("facts", lazy=True),
        "calls": use("op_calls", lazy=True),
        "limits": use("device_limits", lazy=True),
        "peaks": "rules.device_peaks",
    },
    keys=("term",),
)
def model_beside_measured(ranks, iterations, facts, calls, limits, peaks, config) -> pl.DataFrame:
    """The analytical model's step for a transformer `config` (a ModelConfig, a dict or a TOML
    file) on this profile's device, term by term (compute, memory, optimizer,
    tp/pp/dp communication, bubble, step, matrix FLOPs) beside the measured terms of the busiest
    rank (`expected_vs_measured`; the input frames come as functions, read only with a config).
    See docs/roofline.md."""
    ops, model_limits = _model(ranks, config, peaks)
    if model_limits is None:
        return pl.DataFrame(schema=expected.TERMS_SCHEMA)
    config = model_config(config)
    measured = expected.measured_terms(
        iterations(),
        facts(micro_batches=config.micro_batches) if config.pp > 1 else pl.DataFrame(),
        calls(),
        limits(),
        model_limits=model_limits,
        dtype=config.dtype,
    )
    return expected.expected_vs_measured(expected.expected_terms(ops, config), measured)
