"""What `traceview roofline` shows, built from declared analyses: the operator rows
(`Trace.op_roofline`) and, with a model configuration, the analytical model's terms, operations
and verdict (`Trace.expected`, `Trace.expected_ops`). The renderers are `traceview.cli.roofline`'s.
"""

from __future__ import annotations

import dataclasses

import polars as pl

from traceview.analysis.expected import verdict
from traceview.analysis.model_config import ModelConfig, model_config
from traceview.errors import TraceError
from traceview.trace import Trace


@dataclasses.dataclass(frozen=True)
class ExpectedModel:
    """The analytical model beside the trace: its whole configuration (every key, defaults filled),
    its one-line verdict, its terms (rows of `Trace.expected`) and, when asked for, its operations
    (`Trace.expected_ops`)."""

    config: dict
    verdict: str
    terms: pl.DataFrame
    operations: pl.DataFrame | None = None


@dataclasses.dataclass(frozen=True)
class RooflineResult:
    """What `traceview roofline` renders: the operator rows, the rows shown as text (`top`), the
    analytical model with a config, the trace's warnings."""

    source: str
    frame: pl.DataFrame
    warnings: list[str]
    top: int = 25
    by_step: bool = False
    model: ExpectedModel | None = None


def roofline_result(trace: Trace, top: int, config: ModelConfig | None = None, by_step: bool = False) -> RooflineResult:
    """The roofline of `trace` (`Trace.op_roofline`, `by_step` too) and, with a model `config`
    (`model_config.ModelConfig`), the analytical model's terms beside the measured ones."""
    frame = trace.op_roofline(by_step=by_step)
    model = None if config is None else expected_model(trace, config, with_operations=True)
    return RooflineResult(trace.source, frame, trace.warnings, top, by_step, model)


def expected_model(trace: Trace, config, with_operations: bool = False) -> ExpectedModel:
    """The analytical model of `config` (a ModelConfig, a dict or a TOML file's path) beside
    `trace`, its operations too `with_operations` (the roofline command's; the summary's section
    has none); a config the device table cannot complete (no link bandwidth, no peak) is a
    TraceError (one line)."""
    try:
        config = model_config(config)
        terms = trace.expected(config)
        operations = trace.expected_ops(config) if with_operations else None
    except ValueError as exc:
        raise TraceError(None, str(exc)) from None
    return ExpectedModel(dataclasses.asdict(config), verdict(terms), terms, operations)
