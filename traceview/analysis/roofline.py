"""How far each operator is from the device's limit: FLOPs and bytes from its input shapes, its
device time, achieved TFLOP/s and TB/s, and the roofline bound.

Definitions (units: FLOP, bytes, ns; formulas per family in docs/roofline.md):
- an operator call counted here is a host operator listed in `traceview/rules/op_flops.toml`
  whose inputs were recorded (`op_inputs`: Kineto `record_shapes=True`);
- its device tasks (kernels, and the memsets and copies it launched): those launched (the runtime
  call with the task's correlation id) on its thread while it ran, as TraceLens counts an
  operator's kernels: a convolution's bias add counts with the convolution. A listed operator
  inside another (the add_ of that bias, a copy_ inside a matmul) is a call too, with its own
  tasks, and is `nested`: sum device time over calls that are not nested, FLOPs over all calls
  (each formula counts only its own operator's work). A task counts for every listed operator
  running on its thread at its launch;
- device_ns: the union of its tasks' [start, end) intervals (tasks of one call that overlap
  count once);
- flop, bytes: from the shapes and dtypes of its inputs (`flop_formulas`); dtype: the dtype of
  its first tensor role (a, q, input, x, src) as bf16, fp16, fp32, fp64, fp8, ...;
- achieved TFLOP/s = flop / device_ns / 1e3; TB/s = bytes / device_ns / 1e3; intensity =
  flop / bytes (FLOP/byte);
- with the device's peak for the dtype (matrix families: the tensor peak; elementwise: the fp32
  vector peak) and its memory bandwidth (`traceview/rules/device_peaks.toml`):
  expected_ns = max(flop / peak, bytes / bandwidth), bound = "compute" when the first term is the
  larger, else "memory"; peak_frac = achieved TFLOP/s / peak; roofline_frac = expected_ns /
  device_ns (1.0: the call runs at its roofline).
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from traceview.analysis.declare import analysis, use
from traceview.analysis.flop_formulas import (
    DTYPE_NAMES,
    DTYPE_ROLE,
    MATRIX_FAMILIES,
    device_op_exprs,
    device_op_table,
    op_table,
    with_flops,
)
from traceview.analysis.intervals import union_length
from traceview.op_stack import op_parents, running_ops

#: How many listed operators deep a task's owners are looked for (PyTorch nests them 2-3 deep).
MAX_NESTING = 16

CALL_SCHEMA = pl.Schema(
    {
        "rank": pl.Int64,
        "step": pl.Int64,
        "op": pl.String,
        "family": pl.String,
        "input_dims": pl.String,
        "input_types": pl.String,
        "concrete_inputs": pl.String,
        "dtype": pl.String,
        "algorithm": pl.String,
        "start_ns": pl.Int64,
        "kernels": pl.UInt32,
        "nested": pl.Boolean,
        "device_ns": pl.Int64,
        "flop": pl.Float64,
        "bytes": pl.Float64,
    }
)


def op_calls(
    tasks: pl.DataFrame, host: pl.DataFrame, op_inputs: pl.DataFrame, table: pl.DataFrame | None = None
) -> pl.DataFrame:
    """One row per operator call listed in `table` (`flop_formulas.op_table`, the default) whose
    inputs were recorded and that launched device tasks (CALL_SCHEMA): their count
    (`kernels`), `nested` (inside another listed call), device_ns (their union), step (its first
    task's), input_dims (the recorded shapes text),
    dtype (tf32 for fp32 matrix work whose kernels say tf32: tensor cores), algorithm (ALGORITHMS),
    flop and bytes (null where the formula cannot apply: a transposed convolution, a dtype
    or dim not recorded)."""
    if op_inputs.is_empty():  # recorded without shapes (or no listed operator)
        return pl.DataFrame(schema=CALL_SCHEMA)
    table = op_table() if table is None else table
    ops = (
        host.filter((pl.col("kind") == "operator") & pl.col("name").is_in(table["op"].implode()))
        .select("rank", "pid", "tid", "start_ns", "end_ns", "name", "external_id")
        .with_row_index("_call")
    )
    launched = tasks.filter(pl.col("correlation").is_not_null())
    launches = host.filter(pl.col("kind") == "runtime").select(
        "rank", "pid", "tid", pl.col("start_ns").alias("ts_ns"), "correlation"
    )
    points = (
        launched.select("rank", "correlation", "step", "start_ns", "end_ns", "name")
        .join(launches, on=["rank", "correlation"], how="inner")
        .join(_algorithm_of_names(launched["name"]), on="name", how="left")
        .drop("name")
    )
    if ops.is_empty() or points.is_empty():
        return pl.DataFrame(schema=CALL_SCHEMA)
    inner = running_ops(points.select("rank", "pid", "tid", "ts_ns"), ops, by=["rank", "pid", "tid"])["inner"]
    parent = pl.DataFrame({"_call": pl.int_range(0, ops.height, dtype=pl.UInt32, eager=True)}).with_columns(
        op_parents(ops, by=["rank", "pid", "tid"]).alias("_parent")
    )
    level = points.with_columns(inner.alias("_call")).drop_nulls("_call")
    owned = [level]
    for _ in range(MAX_NESTING):  # a task also belongs to every listed operator around its innermost one
        level = level.join(parent, on="_call").drop("_call").rename({"_parent": "_call"}).drop_nulls("_call")
        if level.is_empty():
            break
        owned.append(level)
    owned = pl.concat(owned)
    nested = parent.filter(pl.col("_parent").is_not_null())["_call"]
    per_call = (
        owned.group_by("_call")
        .agg(
            pl.len().cast(pl.UInt32).alias("kernels"),
            pl.col("step").sort_by("start_ns").first().alias("step"),
            pl.col("_algorithm").min().alias("_algorithm"),
        )
        .with_columns(
            pl.col("_call").is_in(nested.implode()).alias("nested"),
            pl.col("_algorithm")
            .replace_strict(dict(enumerate(n for n, _ in ALGORITHMS)), default=None)
            .cast(pl.String)
            .alias("algorithm"),
        )
        .drop("_algorithm")
    )
    device = union_length(owned.select("_call", "start_ns", "end_ns"), ["_call"]).rename({"union_ns": "device_ns"})
    calls = (
        ops.join(per_call, on="_call")
        .join(device, on="_call", how="left")
        .join(
            op_inputs.select("rank", "external_id", "input_shapes", "input_types", "concrete_inputs"),
            on=["rank", "external_id"],
        )
        .join(table, left_on="name", right_on="op")
        .with_columns(
            pl.col("input_shapes").str.split(";").alias("_shapes"),
            pl.col("input_types").str.split(";").alias("_types"),
            pl.col("concrete_inputs").str.split(";").alias("_concrete"),
        )
    )
    calls = with_flops(calls)
    dtype_text = pl.coalesce(*(pl.col("_types").list.get(pl.col(f"pos_{r}"), null_on_oob=True) for r in DTYPE_ROLE))
    dtype = dtype_text.replace_strict(DTYPE_NAMES, default=dtype_text)
    tf32 = (dtype == "fp32") & (pl.col("algorithm") == "tf32") & pl.col("family").is_in(MATRIX_FAMILIES)
    return calls.select(
        "rank",
        "step",
        pl.col("name").alias("op"),
        "family",
        pl.col("input_shapes").alias("input_dims"),
        "input_types",
        "concrete_inputs",
        pl.when(tf32).then(pl.lit("tf32")).otherwise(dtype).alias("dtype"),
        "algorithm",
        "start_ns",
        "kernels",
        "nested",
        pl.col("device_ns").cast(pl.Int64),
        "flop",
        "bytes",
    ).sort("rank", "start_ns", "op", "family")


#: Kernel names that say how a matrix operator ran, tried in order: fp32 inputs on tensor cores
#: (TF32: the peak is the tf32 rate), or a convolution algorithm doing fewer multiplications than
#: the direct formula counts (Winograd, FFT: achieved TFLOP/s can exceed the peak).
ALGORITHMS = (("tf32", r"(?i)tf32"), ("winograd", r"(?i)winograd"), ("fft", r"(?i)fft"))


def _algorithm_of_names(names: pl.Series) -> pl.DataFrame:
    """name, _algorithm: for each distinct task name, the position in ALGORITHMS of the first
    pattern it matches (null for none); a call takes its tasks' smallest (the earlier pattern wins)."""
    distinct = names.unique().to_frame("name")
    position = pl.lit(None, pl.UInt8)
    for i, (_, pattern) in reversed(list(enumerate(ALGORITHMS))):
        position = pl.when(pl.col("name").str.contains(pattern)).then(pl.lit(i, pl.UInt8)).otherwise(position)
    return distinct.with_columns(position.alias("_algorithm"))


def device_op_calls(tasks: pl.DataFrame, table: pl.DataFrame | None = None) -> pl.DataFrame:
    """One row per Ascend device task whose Type `table` lists (`flop_formulas.device_op_table`,
    device_op_flops.toml, the default) and whose input and output shapes were recorded
    (CALL_SCHEMA; each task is one call: kernels 1, never nested, device_ns = its duration;
    input_dims = its Input Shapes). Formulas: device_op_flops.toml."""
    table = device_op_table() if table is None else table
    if tasks.is_empty() or "output_shapes" not in tasks.columns or table.is_empty():
        return pl.DataFrame(schema=CALL_SCHEMA)
    ops = tasks.filter(pl.col("output_shapes").is_not_null() & pl.col("input_shapes").is_not_null()).join(
        table, on="op_type"
    )
    if ops.is_empty():
        return pl.DataFrame(schema=CALL_SCHEMA)
    flop, data, dtype = device_op_exprs()
    return ops.select(
        "rank",
        "step",
        pl.col("op_type").alias("op"),
        "family",
        pl.col("input_shapes").alias("input_dims"),
        "input_types",
        pl.lit(None, pl.String).alias("concrete_inputs"),
        dtype.alias("dtype"),
        pl.lit(None, pl.String).alias("algorithm"),
        "start_ns",
        pl.lit(1, pl.UInt32).alias("kernels"),
        pl.lit(False).alias("nested"),
        pl.col("dur_ns").alias("device_ns"),
        flop.cast(pl.Float64).alias("flop"),
        data.cast(pl.Float64).alias("bytes"),
    ).cast(dict(CALL_SCHEMA))


ROOFLINE_SCHEMA = pl.Schema(
    {
        "rank": pl.Int64,
        "op": pl.String,
        "family": pl.String,
        "input_dims": pl.String,
        "dtype": pl.String,
        "algorithm": pl.String,
        "input_types": pl.String,
        "concrete_inputs": pl.String,
        "count": pl.UInt32,
        "gflop": pl.Float64,
        "bytes": pl.Float64,
        "intensity_flop_per_byte": pl.Float64,
        "device_time_us": pl.Float64,
        "achieved_tflops_per_s": pl.Float64,
        "achieved_tbps": pl.Float64,
        "peak_tflops": pl.Float64,
        "memory_tbps": pl.Float64,
        "peak_frac": pl.Float64,
        "expected_us": pl.Float64,
        "roofline_frac": pl.Float64,
        "bound": pl.String,
    }
)


@analysis(
    "op_roofline",
    inputs={"calls": use("op_calls"), "limits": use("device_limits")},
    keys=("rank", "op", "input_dims", "dtype", "algorithm"),
)
def op_roofline(calls: pl.DataFrame, limits: pl.DataFrame, by_step: bool = False) -> pl.DataFrame:
    """Per rank, operator, input dims, dtype, algorithm, input types and concrete inputs
    (ROOFLINE_SCHEMA: calls that differ in a stride or a second input's dtype do different work,
    and a Winograd convolution other work than a direct one, so they are rows of their own),
    longest device time first: count of calls, gflop and bytes per call (their mean), device_time_us (all calls), achieved TFLOP/s and TB/s (all calls' FLOPs and bytes over
    their device time); against `limits` (`device_limits`: the rank's memory bandwidth and vector
    rate, and its matrix peak for the row's dtype) the peak used, peak_frac, expected_us (all
    calls) = max(flop / peak, bytes / bandwidth), roofline_frac = expected_us / device_time_us and
    the bound, each null unless both terms are known. `by_step`: one row per step too (a `step`
    column after rank; calls outside every step have step null)."""
    schema = _with_step(ROOFLINE_SCHEMA) if by_step else ROOFLINE_SCHEMA
    if calls.is_empty():
        return pl.DataFrame(schema=schema)
    steps = ["step"] if by_step else []
    grouped = calls.group_by(
        "rank",
        *steps,
        "op",
        "family",
        "input_dims",
        "dtype",
        "algorithm",
        "input_types",
        "concrete_inputs",
        maintain_order=True,
    ).agg(
        pl.len().cast(pl.UInt32).alias("count"),
        *(pl.when(pl.col(c).is_not_null().all()).then(pl.col(c).sum()).alias(f"_{c}") for c in ("flop", "bytes")),
        (pl.col("device_ns").sum() / 1e3).alias("device_time_us"),
    )
    per_rank = limits.group_by("rank").agg(pl.col("vector_tflops").first(), pl.col("memory_tbps").first())
    matrix_peaks = limits.drop_nulls("dtype").select("rank", "dtype", "matrix_tflops")
    matrix = pl.col("family").is_in(MATRIX_FAMILIES)
    out = (
        grouped.join(per_rank, on="rank", how="left")
        .join(matrix_peaks, on=["rank", "dtype"], how="left")
        .with_columns(
            (pl.col("_flop") / pl.col("count") / 1e9).alias("gflop"),
            (pl.col("_bytes") / pl.col("count")).alias("bytes"),
            pl.when(matrix).then("matrix_tflops").otherwise("vector_tflops").alias("peak_tflops"),
            (pl.col("_flop") / pl.col("_bytes")).alias("intensity_flop_per_byte"),
            (pl.col("_flop") / (pl.col("device_time_us") * 1e6)).alias("achieved_tflops_per_s"),
            (pl.col("_bytes") / (pl.col("device_time_us") * 1e6)).alias("achieved_tbps"),
        )
    )
    compute_us = pl.col("_flop") / (pl.col("peak_tflops") * 1e6)
    memory_us = pl.col("_bytes") / (pl.col("memory_tbps") * 1e6)
    known = compute_us.is_not_null() & memory_us.is_not_null()
    out = out.with_columns(
        (pl.col("achieved_tflops_per_s") / pl.col("peak_tflops")).alias("peak_frac"),
        pl.when(known).then(pl.max_horizontal(compute_us, memory_us)).alias("expected_us"),
        pl.when(known)
        .then(pl.when(compute_us >= memory_us).then(pl.lit("compute")).otherwise(pl.lit("memory")))
        .alias("bound"),
    ).with_columns((pl.col("expected_us") / pl.col("device_time_us")).alias("roofline_frac"))
    keys = ["rank", *steps, "op", "input_dims", "dtype", "algorithm", "input_types", "concrete_inputs"]  # total
    return out.select(schema.names()).sort(
        ["device_time_us", *keys], descending=[True] + [False] * len(keys), nulls_last=True
    )


def _with_step(schema: pl.Schema) -> pl.Schema:
    """`schema` with a step column after rank."""
    items = list(schema.items())
    return pl.Schema([items[0], ("step", pl.Int64), *items[1:]])


LIMITS_SCHEMA = pl.Schema(
    {
        "rank": pl.Int64,
        "dtype": pl.String,
        "matrix_tflops": pl.Float64,
        "vector_tflops": pl.Float64,
        "memory_tbps": pl.Float64,
        "device_entry": pl.String,
    }
)


@analysis("device_limits", inputs={"ranks": "ranks", "peaks": "rules.device_peaks"}, keys=("rank", "dtype"))
def device_limits(ranks: pl.DataFrame, peaks: Sequence[dict] | None = None) -> pl.DataFrame:
    """Per rank and dtype, the device's limits from the device peak table (the trace's:
    `device_peaks.toml`, a user's `[[device_peaks.rule]]` entries first; called as a function,
    `peaks`, None: the shipped one;
    the first entry matching the device name that gives `tflops`): matrix_tflops = its dense peak
    for the dtype (bf16, fp16, fp8, tf32, fp32, fp64 as the table lists them; fp32 work is measured against the fp32 rate, not tf32),
    vector_tflops = its fp32 rate (elementwise work), memory_tbps (any dtype); per device (a
    package's figures / devices_per_package); device_entry names the table entry. A rank whose
    device matches an entry without dtypes has one row with dtype null; one matching no entry has
    no row."""
    from traceview.analysis.throughput import device_peak

    rows = []
    for rank, name in ranks.select("rank", "device_name").iter_rows():
        entry = device_peak(name, peaks, needs="tflops")
        if entry is None or not isinstance(entry["tflops"], dict):
            continue
        per = int(entry.get("devices_per_package", 1))
        rates = {k: float(v) / per for k, v in entry["tflops"].items() if isinstance(v, (int, float))}
        bandwidth = entry.get("memory_tbps")
        base = {
            "rank": rank,
            "vector_tflops": rates.get("fp32"),
            "memory_tbps": float(bandwidth) / per if isinstance(bandwidth, (int, float)) else None,
            "device_entry": entry["name"] + (" (approximate)" if entry.get("approximate") else ""),
        }
        for dtype, tflops in rates.items():
            rows.append({**base, "dtype": dtype, "matrix_tflops": tflops})
        if not rates:
            rows.append({**base, "dtype": None, "matrix_tflops": None})
    return pl.DataFrame(rows, schema=LIMITS_SCHEMA, orient="row")


# ---- declared analyses (`traceview.registry`) ------------------------------------------------------


@analysis(
    "op_calls",
    inputs={
        "tasks": "device_tasks",
        "host": "host_events",
        "op_inputs": "op_inputs",
        "ops": "rules.op_flops",
        "device_ops": "rules.device_op_flops",
    },
    keys=("rank", "op", "start_ns"),
)
def all_op_calls(
    tasks: pl.DataFrame, host: pl.DataFrame, op_inputs: pl.DataFrame, ops: pl.DataFrame, device_ops: pl.DataFrame
) -> pl.DataFrame:
    """One row per operator call the roofline covers: its kernels, device time (their union),
    FLOPs and bytes: the host operators op_flops.toml lists (`op_calls`), then the Ascend device
    operators device_op_flops.toml lists (`device_op_calls`); both tables come with the trace's
    rules."""
    return pl.concat([op_calls(tasks, host, op_inputs, ops), device_op_calls(tasks, device_ops)])


@analysis(
    "measured_roofline",
    inputs={"calls": use("op_calls"), "limits": use("device_limits")},
    keys=("rank", "op", "input_dims", "dtype", "algorithm"),
    public=False,
)
def measured_roofline(calls: pl.DataFrame, limits: pl.DataFrame) -> pl.DataFrame:
    """op_roofline over the calls the facts measure: those of a step, or every call of a rank
    without steps (measured over its whole trace)."""
    stepped = calls.group_by("rank").agg(pl.col("step").is_not_null().any().alias("_stepped"))
    measured = calls.join(stepped, on="rank").filter(pl.col("step").is_not_null() | ~pl.col("_stepped"))
    return op_roofline(measured.drop("_stepped"), limits)
