"""How the registry's rows read a Trace where it takes more than one call: the step times the
throughput and traced FLOPs divide by, the facts frame the findings read (and the roofline over
the steps it measures), the analytical model's operations and terms. Each function takes the
Trace (`t`) and the row's parameters; `traceview.registry` lists the rows."""

from __future__ import annotations

import polars as pl

from traceview.analysis import expected, facts, findings, platform, roofline, throughput, traced_flops
from traceview.analysis.model_config import model_config


def step_times(t) -> pl.DataFrame:
    """Per rank and step, its wall time as throughput counts it: the iteration (host included), the
    device window where a step has no iteration. Columns rank, step, step_time_us."""
    lived = t.run("iteration_breakdown").select("rank", "step", pl.col("iteration_us").alias("step_time_us"))
    device = t.run("step_breakdown").select("rank", "step", pl.col("duration_us").alias("step_time_us"))
    return pl.concat([lived, device.join(lived, on=["rank", "step"], how="anti")])


def expected_ops(t, config, rules) -> tuple[pl.DataFrame, dict | None]:
    """The analytical model's operations for `config` (a ModelConfig, dict or TOML path) on the
    profile's device (the first rank's), and the limits it used (None without a config)."""
    if config is None:
        return pl.DataFrame(schema=expected.OPS_SCHEMA), None
    config = model_config(config)
    names = t.ranks["device_name"].drop_nulls()
    limits = expected.system_limits(config, names[0] if names.len() else None, rules)
    return expected.expected_ops(config, limits), limits


def model_beside_measured(t, config, rules) -> pl.DataFrame:
    """The analytical model's step terms for `config` beside the busiest rank's measured ones
    (`expected.expected_vs_measured`; an empty frame without a config)."""
    ops, limits = expected_ops(t, config, rules)
    if limits is None:
        return pl.DataFrame(schema=expected.TERMS_SCHEMA)
    config = model_config(config)
    measured = expected.measured_terms(
        t.run("iteration_breakdown"),
        fact_frame(t, micro_batches=config.micro_batches) if config.pp > 1 else pl.DataFrame(),
        t.run("op_calls"),
        roofline.device_limits(t.ranks, rules),
        model_limits=limits,
        dtype=config.dtype,
    )
    return expected.expected_vs_measured(expected.expected_terms(ops, config), measured)


def traced_flops_of(t, rules) -> pl.DataFrame:
    calls = t.run("op_calls")
    if calls.is_empty():  # recorded without shapes: no step times to compute
        return traced_flops.traced_flops(calls, pl.DataFrame(), pl.DataFrame())
    return traced_flops.traced_flops(calls, step_times(t), roofline.device_limits(t.ranks, rules), t.device_tasks)


def throughput_of(t, **kwargs) -> pl.DataFrame:
    world = t.ranks["world_size"].drop_nulls()
    kwargs.setdefault("devices", int(world.max()) if world.len() else t.ranks.height)
    names = t.ranks["device_name"].drop_nulls()
    kwargs.setdefault("device_name", names[0] if names.len() else None)
    durations = step_times(t).rename({"step_time_us": "duration_us"})
    return throughput.throughput(durations, **kwargs)


def findings_of(t, throughput, rules, classes, details, micro_batches) -> pl.DataFrame:
    table = fact_frame(t, throughput, classes, details, micro_batches)
    return findings.evaluate(table, findings.load_rules(rules))


def fact_frame(t, throughput=None, classes=None, details=True, micro_batches=None) -> pl.DataFrame:
    """The facts frame the findings read (`traceview.analysis.facts.facts`)."""
    return facts.facts(
        t.run("step_breakdown"),
        t.run("trace_breakdown"),
        t.run("classified_tasks", classes=classes),
        stream_idle=t.run("stream_idle") if details else None,
        launch_calls=t.run("launch_calls") if details else None,
        pipeline_stages=t.run("pipeline_stages") if details else None,
        stragglers=t.run("stragglers"),
        throughput=t.run("throughput", **throughput) if throughput else None,
        micro_batches=micro_batches,
        iterations=t.run("iteration_breakdown"),
        gpu_bubbles=t.run("bubbles"),
        platform=platform.platform_facts(t.ranks, t.host_events, t.device_tasks),
        memory_peaks=t.run("memory_peaks"),
        roofline=t.memoised("measured_roofline", lambda: measured_roofline(t)),
    )


def measured_roofline(t) -> pl.DataFrame:
    """op_roofline over the calls the facts measure: those of a step, or every call of a rank
    without steps (measured over its whole trace)."""
    calls = t.run("op_calls")
    stepped = calls.group_by("rank").agg(pl.col("step").is_not_null().any().alias("_stepped"))
    measured = calls.join(stepped, on="rank").filter(pl.col("step").is_not_null() | ~pl.col("_stepped"))
    rules = t.rules_file if "device_peaks" in t.rules_tables else None
    return roofline.op_roofline(measured.drop("_stepped"), roofline.device_limits(t.ranks, rules))
