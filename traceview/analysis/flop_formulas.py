"""The FLOPs and bytes of an operator call, from its recorded input shapes, dtypes and concrete
arguments, as polars expressions (every formula in docs/roofline.md).

Two kinds of call:
- a Kineto host operator listed in `traceview/rules/op_flops.toml` (`op_table`: each rule's
  family and the input position of each role), evaluated over the columns `_shapes`, `_types`,
  `_concrete` (the op_inputs texts split on ';') and the rule's `pos_<role>` / PARAM_ARGS columns
  (`with_flops`, `family_formulas`);
- an Ascend device task whose Type `traceview/rules/device_op_flops.toml` lists
  (`device_op_table`), over its input_shapes, input_types and output_shapes (`device_op_exprs`).
A formula that cannot apply (a dtype or dim not recorded, a transposed convolution) gives null.
Units: FLOP and bytes.
"""

from __future__ import annotations

import functools

import polars as pl

from traceview import rules as rule_tables
from traceview.analysis.norm_formulas import _norm, _norm_bwd, _reduce, _rms_norm
from traceview.analysis.shape_exprs import (
    concrete_ints,
    last_dim,
    numel,
    role_bpe,
    role_dims,
    tensor_numel,
)
from traceview.terms import MATRIX_FAMILIES  # noqa: F401 - re-exported

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
# MATRIX_FAMILIES (`traceview.terms`): the families whose work runs on the matrix units.
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
#: The yes/no keys a rule may give (op_flops.toml): `training`, the value when the op has no
#: training argument; `dim_scalar`, the dim argument may be one integer (max, min) rather than a list.
FLAGS = ("training", "dim_scalar")
#: The concrete-input positions a rule may give (op_flops.toml).
PARAM_ARGS = (
    "causal_arg",
    "stride_arg",
    "padding_arg",
    "dilation_arg",
    "transposed_arg",
    "size_arg",
    "normalized_shape_arg",
    "training_arg",
    "output_mask_arg",
    "groups_arg",
    "dim_arg",
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
        for key in FLAGS:
            row[key] = rule.get(key)
        rows.append(row)
    schema = {"op": pl.String, "family": pl.String} | {f"pos_{r}": pl.Int64 for r in ROLES}
    schema |= dict.fromkeys(PARAM_ARGS, pl.Int64)
    schema |= dict.fromkeys(FLAGS, pl.Boolean)
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


def _transposed() -> pl.Expr:
    return pl.col("_concrete").list.get(pl.col("transposed_arg"), null_on_oob=True) == "True"


def _gemm() -> tuple[pl.Expr, pl.Expr]:
    a = role_dims("a")
    b_numel = pl.coalesce(numel(role_dims("b")), numel(role_dims("w")))
    n = pl.coalesce(last_dim(role_dims("b"), 1), last_dim(role_dims("w"), 2))
    k = last_dim(a, 1)
    rows = numel(a) / k  # M over every batch
    bias_n = tensor_numel("bias")
    flop = 2 * rows * n * k + pl.when(bias_n > 0).then(rows * n).otherwise(0)
    data = (numel(a) + b_numel + rows * n + bias_n) * role_bpe("a")
    return flop, data


def _sdpa(backward: bool) -> tuple[pl.Expr, pl.Expr]:
    q, k, v = role_dims("q"), role_dims("k"), role_dims("v")
    rows = numel(q) / last_dim(q, 1)  # B * H * Nq
    n_kv = last_dim(k, 2)
    causal = pl.col("_concrete").list.get(pl.col("causal_arg"), null_on_oob=True) == "True"
    flop = 2 * rows * n_kv * (last_dim(q, 1) + last_dim(v, 1)) * pl.when(causal).then(0.5).otherwise(1.0)
    elements = numel(q) + numel(k) + numel(v) + rows * last_dim(v, 1)
    if backward:
        return 2.5 * flop, 2 * elements * role_bpe("q")
    return flop, elements * role_bpe("q")


def _spatial(dims: pl.Expr, i: int) -> pl.Expr:
    """Spatial dim i (0-based, after N and C) of a conv tensor; null when the tensor has fewer."""
    return dims.list.get(2 + i, null_on_oob=True).cast(pl.Float64)


def _conv(backward: bool) -> tuple[pl.Expr, pl.Expr]:
    x, w = role_dims("input"), role_dims("weight")
    kernel = pl.lit(1.0)
    for i in range(3):
        kernel = kernel * _spatial(w, i).fill_null(1.0)
    per_output = 2 * w.list.get(1, null_on_oob=True).cast(pl.Float64) * kernel  # FLOPs per output element
    counted = ~_transposed().fill_null(False)  # a transposed convolution: neither FLOPs nor bytes
    if backward:
        out = numel(role_dims("grad_output"))
        return (
            pl.when(counted).then(2 * out * per_output),
            pl.when(counted).then((out + 2 * numel(x) + 2 * numel(w)) * role_bpe("input")),
        )
    stride, padding, dilation = (
        concrete_ints("stride_arg"),
        concrete_ints("padding_arg"),
        concrete_ints("dilation_arg"),
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
    return pl.when(counted).then(out * per_output), pl.when(counted).then(
        (numel(x) + numel(w) + out) * role_bpe("input")
    )


def _unary() -> tuple[pl.Expr, pl.Expr]:
    src = pl.when(pl.col("pos_src").is_not_null()).then(numel(role_dims("src"))).otherwise(numel(role_dims("x")))
    bpe_in = pl.coalesce(role_bpe("src"), role_bpe("x"))
    bpe_out = pl.coalesce(role_bpe("dst"), bpe_in)
    return src, src * (bpe_in + bpe_out)


#: Dims compared from the right when broadcasting two inputs (a tensor of more dims is exact up
#: to this many trailing dims).
BROADCAST_DIMS = 8


def _binary() -> tuple[pl.Expr, pl.Expr]:
    x, y = role_dims("x"), role_dims("y")
    out = pl.lit(1.0)
    for i in range(1, BROADCAST_DIMS + 1):
        out = out * pl.max_horizontal(last_dim(x, i).fill_null(1.0), last_dim(y, i).fill_null(1.0))
    bpe_x = role_bpe("x")
    data = numel(x) * bpe_x + (numel(y) * role_bpe("y")).fill_null(0.0) + out * bpe_x
    return out, data


def _resize() -> tuple[pl.Expr, pl.Expr]:
    x = role_dims("x")
    size = concrete_ints("size_arg")
    size_numel = size.list.eval(pl.element().product()).list.first().cast(pl.Float64)
    out = x.list.get(0, null_on_oob=True).cast(pl.Float64) * x.list.get(1, null_on_oob=True).cast(pl.Float64)
    out = pl.when(size.list.len() > 0).then(out * size_numel)
    return out, (numel(x) + out) * role_bpe("x")


def family_formulas() -> dict[str, tuple[pl.Expr, pl.Expr]]:
    """flop and bytes of a call of each family (evaluate each over its family's rows only:
    `with_flops`)."""
    return {
        "gemm": _gemm(),
        "sdpa": _sdpa(backward=False),
        "sdpa_bwd": _sdpa(backward=True),
        "conv": _conv(backward=False),
        "conv_bwd": _conv(backward=True),
        "unary": _unary(),
        "binary": _binary(),
        "resize": _resize(),
        "batch_norm": _norm(),
        "group_norm": _norm(),
        "layer_norm": _norm(),
        "batch_norm_bwd": _norm_bwd(),
        "group_norm_bwd": _norm_bwd(),
        "layer_norm_bwd": _norm_bwd(),
        "rms_norm": _rms_norm(backward=False),
        "rms_norm_bwd": _rms_norm(backward=True),
        "reduce": _reduce(scan=False),
        "scan": _reduce(scan=True),
    }


def with_flops(calls: pl.DataFrame) -> pl.DataFrame:
    """`calls` (columns family, _shapes, _types, _concrete and the rule's positions) with flop and
    bytes added, each family's formula evaluated over its own rows (one when/then chain over
    every row would evaluate all eighteen); row order kept. A formula that reads a concrete
    argument (a stride, is_causal, a dim) gives null on a trace that recorded none (Concrete
    Inputs came with PyTorch 1.13): null, not a guess."""
    formulas = family_formulas()
    unknown = pl.any_horizontal(pl.col(a).is_not_null() for a in NEEDS_CONCRETE) & pl.col("_concrete").is_null()
    indexed = calls.with_row_index("_order")
    parts = []
    for (family,), part in indexed.group_by("family", maintain_order=True):
        flop, data = formulas.get(family, (pl.lit(None, pl.Float64), pl.lit(None, pl.Float64)))
        parts.append(
            part.with_columns(
                pl.when(~unknown).then(flop).cast(pl.Float64).alias("flop"),
                pl.when(~unknown).then(data).cast(pl.Float64).alias("bytes"),
            )
        )
    if not parts:
        return calls.with_columns(pl.lit(None, pl.Float64).alias("flop"), pl.lit(None, pl.Float64).alias("bytes"))
    return pl.concat(parts, how="vertical_relaxed").sort("_order").drop("_order")


#: The concrete arguments a formula cannot do without (a transposed flag missing reads as not
#: transposed; a training flag missing as the rule's `training`, else true).
NEEDS_CONCRETE = (
    "causal_arg",
    "stride_arg",
    "padding_arg",
    "dilation_arg",
    "size_arg",
    "normalized_shape_arg",
    "output_mask_arg",
    "groups_arg",
    "dim_arg",
)


def _entry_dims(column: str, i: int) -> pl.Expr:
    """Entry i of a shapes text column as List(Int64) dims (empty for an entry without dims)."""
    entry = pl.col(column).str.split(";").list.get(i, null_on_oob=True)
    return entry.str.split(",").list.eval(pl.element().cast(pl.Int64, strict=False)).list.drop_nulls()


def _ascend_type(i: int) -> pl.Expr:
    return pl.col("input_types").str.split(";").list.get(i, null_on_oob=True).str.strip_chars().str.to_uppercase()


def _ascend_bpe(i: int) -> pl.Expr:
    bpe = {k: float(v[0]) for k, v in ASCEND_DTYPES.items()}
    return _ascend_type(i).replace_strict(bpe, default=None, return_dtype=pl.Float64)


def device_op_exprs() -> tuple[pl.Expr, pl.Expr, pl.Expr]:
    """flop, bytes and dtype (short name) of an Ascend device task of a `device_op_table` family
    (columns family, input_shapes, input_types, output_shapes; formulas: device_op_flops.toml)."""
    out_dims, a_dims, b_dims = (
        _entry_dims("output_shapes", 0),
        _entry_dims("input_shapes", 0),
        _entry_dims("input_shapes", 1),
    )
    out = numel(out_dims)
    a, b = numel(a_dims), numel(b_dims)
    bias = pl.when(_ascend_bpe(2).is_not_null()).then(numel(_entry_dims("input_shapes", 2))).otherwise(0.0)
    k = a * last_dim(out_dims, 1) / out
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
    return flop, data, _ascend_type(0).replace_strict(short, default=_ascend_type(0))
