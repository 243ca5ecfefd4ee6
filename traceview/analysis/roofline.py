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
- flop, bytes: from the shapes and dtypes of its inputs (family formulas); dtype: the dtype of
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

import functools

import polars as pl

from traceview import rules as rule_tables
from traceview.analysis.intervals import union_length
from traceview.op_stack import op_parents, running_ops

#: Bytes per element of the dtypes Kineto records in `Input type`.
DTYPE_BYTES = {
    "c10::BFloat16": 2,
    "c10::Half": 2,
    "float": 4,
    "double": 8,
    "c10::Float8_e4m3fn": 1,
    "c10::Float8_e5m2": 1,
    "c10::Float8_e4m3fnuz": 1,
    "c10::Float8_e5m2fnuz": 1,
    "long int": 8,
    "int": 4,
    "short int": 2,
    "signed char": 1,
    "unsigned char": 1,
    "bool": 1,
    "c10::complex<float>": 8,
    "c10::complex<double>": 16,
}
#: The short name of each dtype (the key of the device table's peaks).
DTYPE_NAMES = {
    "c10::BFloat16": "bf16",
    "c10::Half": "fp16",
    "float": "fp32",
    "double": "fp64",
    "c10::Float8_e4m3fn": "fp8",
    "c10::Float8_e5m2": "fp8",
    "c10::Float8_e4m3fnuz": "fp8",
    "c10::Float8_e5m2fnuz": "fp8",
    "long int": "int64",
    "int": "int32",
    "short int": "int16",
    "signed char": "int8",
    "unsigned char": "uint8",
    "bool": "bool",
}
#: The families whose work runs on the matrix (tensor, cube) units; the others on the vector units.
MATRIX_FAMILIES = ("gemm", "sdpa", "sdpa_bwd", "conv", "conv_bwd", "matmul")
#: Bytes per element and short name of Ascend's `Input Data Types`.
ASCEND_DTYPES = {
    "FLOAT": (4, "fp32"),
    "FLOAT32": (4, "fp32"),
    "DT_FLOAT": (4, "fp32"),
    "FLOAT16": (2, "fp16"),
    "DT_FLOAT16": (2, "fp16"),
    "BF16": (2, "bf16"),
    "DT_BF16": (2, "bf16"),
    "DOUBLE": (8, "fp64"),
    "INT64": (8, "int64"),
    "INT32": (4, "int32"),
    "INT16": (2, "int16"),
    "INT8": (1, "int8"),
    "UINT8": (1, "uint8"),
    "BOOL": (1, "bool"),
}
#: The tensor roles a family reads, in the order its dtype is taken from.
ROLES = (
    "a",
    "b",
    "w",
    "bias",
    "q",
    "k",
    "v",
    "out",
    "grad_out",
    "input",
    "weight",
    "grad_output",
    "x",
    "y",
    "dst",
    "src",
)
DTYPE_ROLE = ("a", "q", "grad_output", "input", "src", "x")
#: How many listed operators deep a task's owners are looked for (PyTorch nests them 2-3 deep).
MAX_NESTING = 16
#: The concrete-input positions a rule may give (op_flops.toml).
PARAM_ARGS = ("causal_arg", "stride_arg", "padding_arg", "dilation_arg", "transposed_arg", "size_arg")

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
        "start_ns": pl.Int64,
        "kernels": pl.UInt32,
        "nested": pl.Boolean,
        "device_ns": pl.Int64,
        "flop": pl.Float64,
        "bytes": pl.Float64,
    }
)


@functools.cache
def op_table() -> pl.DataFrame:
    """The shipped op_flops.toml as a frame: op, family, the input position of each role
    (`pos_<role>`, null when the op has none) and the PARAM_ARGS positions."""
    rows = []
    for rule in rule_tables.entries(rule_tables.shipped("op_flops"), rule_tables.shipped_path("op_flops")):
        args = list(rule.get("args", []))
        row = {"op": rule["name"], "family": rule["family"]}
        row |= {f"pos_{r}": (args.index(r) if r in args else None) for r in ROLES}
        for key in PARAM_ARGS:
            row[key] = rule.get(key)
        rows.append(row)
    schema = {"op": pl.String, "family": pl.String} | {f"pos_{r}": pl.Int64 for r in ROLES}
    schema |= dict.fromkeys(PARAM_ARGS, pl.Int64)
    return pl.DataFrame(rows, schema=schema, orient="row")


@functools.cache
def device_op_table() -> pl.DataFrame:
    """device_op_flops.toml's entries (Ascend operators by Type): op_type, family."""
    entries = rule_tables.entries(rule_tables.shipped("device_op_flops"), rule_tables.shipped_path("device_op_flops"))
    rows = [{"op_type": e["type"], "family": e["family"]} for e in entries]
    return pl.DataFrame(rows, schema={"op_type": pl.String, "family": pl.String}, orient="row")


def op_names() -> list[str]:
    """The operators the roofline covers (op_flops.toml)."""
    return op_table()["op"].to_list()


# --- expressions over one call's inputs ---------------------------------------------------------


def _dims(role: str) -> pl.Expr:
    """The dims of a role's input as List(Int64) (empty for a scalar; null when the op has no such role)."""
    entry = pl.col("_shapes").list.get(pl.col(f"pos_{role}"), null_on_oob=True)
    return entry.str.split(",").list.eval(pl.element().cast(pl.Int64, strict=False)).list.drop_nulls()


def _numel(dims: pl.Expr) -> pl.Expr:
    return dims.list.eval(pl.element().product()).list.first().cast(pl.Float64)


def _last(dims: pl.Expr, i: int) -> pl.Expr:
    return dims.list.get(-i, null_on_oob=True).cast(pl.Float64)


def _bpe(role: str) -> pl.Expr:
    """Bytes per element of a role's input (null when its dtype is not a known tensor dtype)."""
    dtype = pl.col("_types").list.get(pl.col(f"pos_{role}"), null_on_oob=True)
    return dtype.replace_strict(DTYPE_BYTES, default=None, return_dtype=pl.Float64)


def _concrete_ints(arg: str) -> pl.Expr:
    """The integers of a concrete input given as a list ("[16, 16]") at position `arg` (one beyond
    Int64 reads as null)."""
    text = pl.col("_concrete").list.get(pl.col(arg), null_on_oob=True)
    return text.str.extract_all(r"-?\d+").list.eval(pl.element().cast(pl.Int64, strict=False))


def _tensor_numel(role: str) -> pl.Expr:
    """Elements of an optional tensor input: 0 when it was passed as None (its `Input type` entry
    is empty) or is not a tensor (a Scalar), where the product of its empty dims would say 1."""
    return pl.when(_bpe(role).is_not_null()).then(_numel(_dims(role))).otherwise(0.0)


def _transposed() -> pl.Expr:
    return pl.col("_concrete").list.get(pl.col("transposed_arg"), null_on_oob=True) == "True"


def _gemm() -> tuple[pl.Expr, pl.Expr]:
    a = _dims("a")
    b_numel = pl.coalesce(_numel(_dims("b")), _numel(_dims("w")))
    n = pl.coalesce(_last(_dims("b"), 1), _last(_dims("w"), 2))
    k = _last(a, 1)
    rows = _numel(a) / k  # M over every batch
    bias_n = _tensor_numel("bias")
    flop = 2 * rows * n * k + pl.when(bias_n > 0).then(rows * n).otherwise(0)
    data = (_numel(a) + b_numel + rows * n + bias_n) * _bpe("a")
    return flop, data


def _sdpa(backward: bool) -> tuple[pl.Expr, pl.Expr]:
    q, k, v = _dims("q"), _dims("k"), _dims("v")
    rows = _numel(q) / _last(q, 1)  # B * H * Nq
    n_kv = _last(k, 2)
    causal = pl.col("_concrete").list.get(pl.col("causal_arg"), null_on_oob=True) == "True"
    flop = 2 * rows * n_kv * (_last(q, 1) + _last(v, 1)) * pl.when(causal).then(0.5).otherwise(1.0)
    elements = _numel(q) + _numel(k) + _numel(v) + rows * _last(v, 1)
    if backward:
        return 2.5 * flop, 2 * elements * _bpe("q")
    return flop, elements * _bpe("q")


def _spatial(dims: pl.Expr, i: int) -> pl.Expr:
    """Spatial dim i (0-based, after N and C) of a conv tensor; null when the tensor has fewer."""
    return dims.list.get(2 + i, null_on_oob=True).cast(pl.Float64)


def _conv(backward: bool) -> tuple[pl.Expr, pl.Expr]:
    x, w = _dims("input"), _dims("weight")
    kernel = pl.lit(1.0)
    for i in range(3):
        kernel = kernel * _spatial(w, i).fill_null(1.0)
    per_output = 2 * w.list.get(1, null_on_oob=True).cast(pl.Float64) * kernel  # FLOPs per output element
    counted = ~_transposed().fill_null(False)  # a transposed convolution: neither FLOPs nor bytes
    if backward:
        out = _numel(_dims("grad_output"))
        return (
            pl.when(counted).then(2 * out * per_output),
            pl.when(counted).then((out + 2 * _numel(x) + 2 * _numel(w)) * _bpe("input")),
        )
    stride, padding, dilation = (
        _concrete_ints("stride_arg"),
        _concrete_ints("padding_arg"),
        _concrete_ints("dilation_arg"),
    )
    out = x.list.get(0, null_on_oob=True).cast(pl.Float64) * w.list.get(0, null_on_oob=True).cast(pl.Float64)
    for i in range(3):
        size = _spatial(x, i)
        k = _spatial(w, i)
        s = stride.list.get(i, null_on_oob=True).fill_null(1)
        p = padding.list.get(i, null_on_oob=True).fill_null(0)
        d = dilation.list.get(i, null_on_oob=True).fill_null(1)
        o = ((size + 2 * p - d * (k - 1) - 1) // s + 1).cast(pl.Float64)
        out = out * pl.when(size.is_null()).then(1.0).otherwise(o)
    return pl.when(counted).then(out * per_output), pl.when(counted).then((_numel(x) + _numel(w) + out) * _bpe("input"))


def _unary() -> tuple[pl.Expr, pl.Expr]:
    src = pl.when(pl.col("pos_src").is_not_null()).then(_numel(_dims("src"))).otherwise(_numel(_dims("x")))
    bpe_in = pl.coalesce(_bpe("src"), _bpe("x"))
    bpe_out = pl.coalesce(_bpe("dst"), bpe_in)
    return src, src * (bpe_in + bpe_out)


#: Dims compared from the right when broadcasting two inputs (a tensor of more dims is exact up
#: to this many trailing dims).
BROADCAST_DIMS = 8


def _binary() -> tuple[pl.Expr, pl.Expr]:
    x, y = _dims("x"), _dims("y")
    out = pl.lit(1.0)
    for i in range(1, BROADCAST_DIMS + 1):
        out = out * pl.max_horizontal(_last(x, i).fill_null(1.0), _last(y, i).fill_null(1.0))
    bpe_x = _bpe("x")
    data = _numel(x) * bpe_x + (_numel(y) * _bpe("y")).fill_null(0.0) + out * bpe_x
    return out, data


def _resize() -> tuple[pl.Expr, pl.Expr]:
    x = _dims("x")
    size = _concrete_ints("size_arg")
    size_numel = size.list.eval(pl.element().product()).list.first().cast(pl.Float64)
    out = x.list.get(0, null_on_oob=True).cast(pl.Float64) * x.list.get(1, null_on_oob=True).cast(pl.Float64)
    out = pl.when(size.list.len() > 0).then(out * size_numel)
    return out, (_numel(x) + out) * _bpe("x")


def _family_exprs() -> tuple[pl.Expr, pl.Expr]:
    """flop and bytes of a call, by its family."""
    formulas = {
        "gemm": _gemm(),
        "sdpa": _sdpa(backward=False),
        "sdpa_bwd": _sdpa(backward=True),
        "conv": _conv(backward=False),
        "conv_bwd": _conv(backward=True),
        "unary": _unary(),
        "binary": _binary(),
        "resize": _resize(),
    }
    flop = pl.lit(None, pl.Float64)
    data = pl.lit(None, pl.Float64)
    for family, (f, b) in formulas.items():
        flop = pl.when(pl.col("family") == family).then(f).otherwise(flop)
        data = pl.when(pl.col("family") == family).then(b).otherwise(data)
    return flop, data


# --- the calls -----------------------------------------------------------------------------------


def op_calls(tasks: pl.DataFrame, host: pl.DataFrame, op_inputs: pl.DataFrame) -> pl.DataFrame:
    """One row per listed operator call whose inputs were recorded and that launched device tasks
    (CALL_SCHEMA): their count
    (`kernels`), `nested` (inside another listed call), device_ns (their union), step (its first
    task's), input_dims (the recorded shapes text),
    dtype, flop and bytes (null where the formula cannot apply: a transposed convolution, a dtype
    or dim not recorded)."""
    if op_inputs.is_empty():  # recorded without shapes (or no listed operator)
        return pl.DataFrame(schema=CALL_SCHEMA)
    table = op_table()
    ops = (
        host.filter((pl.col("kind") == "operator") & pl.col("name").is_in(table["op"].implode()))
        .select("rank", "pid", "tid", "start_ns", "end_ns", "name", "external_id")
        .with_row_index("_call")
    )
    launched = tasks.filter(pl.col("correlation").is_not_null())
    launches = host.filter(pl.col("kind") == "runtime").select(
        "rank", "pid", "tid", pl.col("start_ns").alias("ts_ns"), "correlation"
    )
    points = launched.select("rank", "correlation", "step", "start_ns", "end_ns").join(
        launches, on=["rank", "correlation"], how="inner"
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
        )
        .with_columns(pl.col("_call").is_in(nested.implode()).alias("nested"))
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
    flop, data = _family_exprs()
    dtype_text = pl.coalesce(*(pl.col("_types").list.get(pl.col(f"pos_{r}"), null_on_oob=True) for r in DTYPE_ROLE))
    return calls.select(
        "rank",
        "step",
        pl.col("name").alias("op"),
        "family",
        pl.col("input_shapes").alias("input_dims"),
        "input_types",
        "concrete_inputs",
        dtype_text.replace_strict(DTYPE_NAMES, default=dtype_text).alias("dtype"),
        "start_ns",
        "kernels",
        "nested",
        pl.col("device_ns").cast(pl.Int64),
        flop.alias("flop"),
        data.alias("bytes"),
    ).sort("rank", "start_ns")


def _entry_dims(column: str, i: int) -> pl.Expr:
    """Entry i of a shapes text column as List(Int64) dims (empty for an entry without dims)."""
    entry = pl.col(column).str.split(";").list.get(i, null_on_oob=True)
    return entry.str.split(",").list.eval(pl.element().cast(pl.Int64, strict=False)).list.drop_nulls()


def _ascend_type(i: int) -> pl.Expr:
    return pl.col("input_types").str.split(";").list.get(i, null_on_oob=True).str.strip_chars().str.to_uppercase()


def _ascend_bpe(i: int) -> pl.Expr:
    bpe = {k: float(v[0]) for k, v in ASCEND_DTYPES.items()}
    return _ascend_type(i).replace_strict(bpe, default=None, return_dtype=pl.Float64)


def device_op_calls(tasks: pl.DataFrame) -> pl.DataFrame:
    """One row per Ascend device task whose Type device_op_flops.toml lists and whose
    input and output shapes were recorded (CALL_SCHEMA; each task is one call: kernels 1, never
    nested, device_ns = its duration; input_dims = its Input Shapes). Formulas: device_op_flops.toml."""
    table = device_op_table()
    if tasks.is_empty() or "output_shapes" not in tasks.columns or table.is_empty():
        return pl.DataFrame(schema=CALL_SCHEMA)
    ops = tasks.filter(pl.col("output_shapes").is_not_null() & pl.col("input_shapes").is_not_null()).join(
        table, on="op_type"
    )
    if ops.is_empty():
        return pl.DataFrame(schema=CALL_SCHEMA)
    out_dims, a_dims, b_dims = (
        _entry_dims("output_shapes", 0),
        _entry_dims("input_shapes", 0),
        _entry_dims("input_shapes", 1),
    )
    out = _numel(out_dims)
    a, b = _numel(a_dims), _numel(b_dims)
    bias = pl.when(_ascend_bpe(2).is_not_null()).then(_numel(_entry_dims("input_shapes", 2))).otherwise(0.0)
    k = a * _last(out_dims, 1) / out
    bpe0 = _ascend_bpe(0)
    family = pl.col("family")
    flop = (
        pl.when(family == "matmul")
        .then(2 * out * k + pl.when(bias > 0).then(out).otherwise(0.0))
        .when(family.is_in(["unary", "binary"]))
        .then(out)
    )
    data = (
        pl.when(family == "matmul")
        .then((a + b + out + bias) * bpe0)
        .when(family == "unary")
        .then((a + out) * bpe0)
        .when(family == "binary")
        .then(a * bpe0 + (b * _ascend_bpe(1)).fill_null(0.0) + out * bpe0)
    )
    short = {k: v[1] for k, v in ASCEND_DTYPES.items()}
    return ops.select(
        "rank",
        "step",
        pl.col("op_type").alias("op"),
        "family",
        pl.col("input_shapes").alias("input_dims"),
        "input_types",
        pl.lit(None, pl.String).alias("concrete_inputs"),
        _ascend_type(0).replace_strict(short, default=_ascend_type(0)).alias("dtype"),
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


def op_roofline(calls: pl.DataFrame, limits: pl.DataFrame) -> pl.DataFrame:
    """Per rank, operator, input dims, dtype, input types and concrete inputs (ROOFLINE_SCHEMA:
    calls that differ in a stride or a second input's dtype do different work, so they are rows
    of their own), longest device time first: count of calls, gflop and bytes per call (their
    mean), device_time_us (all calls), achieved TFLOP/s and TB/s (all calls' FLOPs and bytes over
    their device time); against `limits` (`device_limits`: the rank's memory bandwidth and vector
    rate, and its matrix peak for the row's dtype) the peak used, peak_frac, expected_us (all
    calls) = max(flop / peak, bytes / bandwidth), roofline_frac = expected_us / device_time_us and
    the bound, each null unless both terms are known."""
    if calls.is_empty():
        return pl.DataFrame(schema=ROOFLINE_SCHEMA)
    grouped = calls.group_by(
        "rank", "op", "family", "input_dims", "dtype", "input_types", "concrete_inputs", maintain_order=True
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
    return out.select(ROOFLINE_SCHEMA.names()).sort(["device_time_us", "rank", "op"], descending=[True, False, False])


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


def device_limits(ranks: pl.DataFrame, rules=None) -> pl.DataFrame:
    """Per rank and dtype, the device's limits from the device table (`device_peaks.toml`, a
    user's `[[device_peaks.rule]]` entries first; the first entry matching the device name that
    gives `tflops`): matrix_tflops = its dense peak for the dtype (bf16, fp16, fp8, tf32, fp32,
    fp64 as the table lists them; fp32 work is measured against the fp32 rate, not tf32),
    vector_tflops = its fp32 rate (elementwise work), memory_tbps (any dtype); per device (a
    package's figures / devices_per_package); device_entry names the table entry. A rank whose
    device matches an entry without dtypes has one row with dtype null; one matching no entry has
    no row."""
    import re

    from traceview.analysis.throughput import load_device_peaks

    entries = load_device_peaks(rules)
    rows = []
    for rank, name in ranks.select("rank", "device_name").iter_rows():
        entry = next(
            (
                e
                for e in entries
                if name and isinstance(e.get("tflops"), dict) and re.search(e["match"], name, flags=re.IGNORECASE)
            ),
            None,
        )
        if entry is None:
            continue
        per = int(entry.get("devices_per_package", 1))
        peaks = {k: float(v) / per for k, v in entry["tflops"].items() if isinstance(v, (int, float))}
        bandwidth = entry.get("memory_tbps")
        base = {
            "rank": rank,
            "vector_tflops": peaks.get("fp32"),
            "memory_tbps": float(bandwidth) / per if isinstance(bandwidth, (int, float)) else None,
            "device_entry": entry["name"] + (" (approximate)" if entry.get("approximate") else ""),
        }
        for dtype, tflops in peaks.items():
            rows.append({**base, "dtype": dtype, "matrix_tflops": tflops})
        if not peaks:
            rows.append({**base, "dtype": None, "matrix_tflops": None})
    return pl.DataFrame(rows, schema=LIMITS_SCHEMA, orient="row")


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
    if tasks.is_empty():
        return pl.DataFrame(schema=ANATOMY_SCHEMA)
    total = tasks.group_by("rank").agg((pl.col("dur_ns").sum() / 1e3).alias("_total_us"))
    by_family = (
        calls.group_by("rank", "family").agg(
            pl.col("flop").sum().alias("flops"),
            (pl.col("device_ns").filter(~pl.col("nested")).sum() / 1e3).alias("device_time_us"),
        )
        if calls.height
        else pl.DataFrame(
            schema={"rank": pl.Int64, "family": pl.String, "flops": pl.Float64, "device_time_us": pl.Float64}
        )
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
        .sort(["rank", "device_time_us"], descending=[False, True])
    )
