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


def _concrete(arg: str) -> pl.Expr:
    """The concrete input text at position `arg` (null when the rule gives none)."""
    return pl.col("_concrete").list.get(pl.col(arg), null_on_oob=True)


def _product(values: pl.Expr) -> pl.Expr:
    return values.list.eval(pl.element().product()).list.first().cast(pl.Float64)


#: The families of normalizations (their formulas: `_norm`, `_norm_bwd`, `_rms_norm`).
NORM_FAMILIES = ("batch_norm", "group_norm", "layer_norm", "rms_norm")


def _norm_terms(backward: bool) -> dict[str, pl.Expr]:
    """N (input elements), C (the channels the statistics and affine parameters run over: dim 1
    of a batch or group norm's input, over the groups in a group norm's backward, the product of
    a layer or RMS norm's normalized_shape), affine (a weight was passed), bias (a batch or group
    norm's with the weight; a layer norm's own bias, or its backward's output_mask[2]), training
    (the call's training argument, else the rule's `training`), mask0 / mask1 (output_mask: the
    input's and the weight's gradient wanted; true without a mask) and bpe (the input's bytes per
    element, the output's taken the same)."""
    family = pl.col("family").str.strip_suffix("_bwd")
    x = _dims("x")
    per_shape = _product(_concrete_ints("normalized_shape_arg"))
    dim1 = x.list.get(1, null_on_oob=True).cast(pl.Float64)
    groups = _concrete("groups_arg").cast(pl.Float64, strict=False)
    channels = (
        pl.when(family.is_in(["layer_norm", "rms_norm"]))
        .then(per_shape)
        .when(pl.col("groups_arg").is_not_null())
        .then(dim1 / groups)
        .otherwise(dim1)
    )
    mask = _concrete("output_mask_arg").str.extract_all(r"True|False")
    mask_at = [(mask.list.get(i, null_on_oob=True) == "True").fill_null(True) for i in (0, 1, 2)]
    affine = _bpe("weight").is_not_null()
    layer_bias = mask_at[2] if backward else _bpe("bias").is_not_null()
    flag = _concrete("training_arg")  # an overload may hold another value there: then unknown
    training = pl.when(flag.is_in(["True", "False"])).then(flag == "True").otherwise(pl.col("training")).fill_null(True)
    return {
        "n": _numel(x),
        "c": channels,
        "affine": affine,
        "bias": pl.when(family == "layer_norm").then(layer_bias).otherwise(affine),
        "training": training,
        "mask0": mask_at[0],
        "mask1": mask_at[1],
        "bpe": _bpe("x"),
    }


def _flag(condition: pl.Expr, value) -> pl.Expr:
    return pl.when(condition).then(value).otherwise(0.0)


#: Bytes of a layer norm's per-row statistics, mean and 1/std in fp32 (two values per row).
_LAYER_STATS = 2 * 4


def _is_layer_norm() -> pl.Expr:
    return pl.col("family").str.strip_suffix("_bwd") == "layer_norm"


def _norm() -> tuple[pl.Expr, pl.Expr]:
    """Batch, group and layer norm forward: FLOPs 6·C (the per-channel scale and shift) + 3·N
    (mean and variance, when training) + 2·N (normalize, scale and shift); bytes: the input read
    and output written, C values each for the weight and bias (when passed), and the statistics:
    a batch or group norm's C-sized mean and variance (and running statistics written when
    training), a layer norm's mean and 1/std per row (N / C rows, fp32)."""
    t = _norm_terms(backward=False)
    flop = 6 * t["c"] + _flag(t["training"], 3 * t["n"]) + 2 * t["n"]
    params = _flag(t["affine"], 1.0) + _flag(t["affine"] & t["bias"], 1.0)
    channel_stats = (2 + params + _flag(t["training"], 2.0)) * t["c"] * t["bpe"]
    row_stats = params * t["c"] * t["bpe"] + _LAYER_STATS * t["n"] / t["c"]
    stats = pl.when(_is_layer_norm()).then(row_stats).otherwise(channel_stats)
    return flop, 2 * t["n"] * t["bpe"] + stats


def _norm_bwd() -> tuple[pl.Expr, pl.Expr]:
    """Their backward: FLOPs 4·N (the dot products) + 5·N (the input's gradient from batch
    statistics) or, without that gradient, 2·N, + 3·C (1/std, without training); bytes: the
    output's gradient, the input (twice for the batch-statistics gradient), the statistics read
    (a batch or group norm's C-sized 1/std when training, a layer norm's per-row mean and 1/std),
    the weight, and the weight's and bias's gradients when training."""
    t = _norm_terms(backward=True)
    n, c = t["n"], t["c"]
    flop = _flag(~t["training"], 3 * c) + 4 * n + _flag(t["mask0"] & t["training"], 5 * n) + _flag(~t["mask0"], 2 * n)
    inputs = n + n * pl.when(t["mask0"] & t["training"]).then(2.0).otherwise(1.0)
    params = _flag(t["affine"], c + _flag(t["training"], c * pl.when(t["bias"]).then(2.0).otherwise(1.0)))
    stats = pl.when(_is_layer_norm()).then(_LAYER_STATS * n / c).otherwise(_flag(t["training"], c) * t["bpe"])
    return flop, (inputs + params) * t["bpe"] + stats


def _rms_norm(backward: bool) -> tuple[pl.Expr, pl.Expr]:
    """RMS norm forward: FLOPs (N / C)·(2·C + 2) (the root mean square per row) + N (scale) + N
    (the weight); bytes: input and output, and the weight. Backward: FLOPs N (x̂) + N (the weight)
    + 6·N (the input's gradient) + N (the weight's gradient) + N (its sum over rows, when more
    than one); bytes: the output's gradient, the input twice, the weight and its gradient."""
    t = _norm_terms(backward)
    n, c = t["n"], t["c"]
    if not backward:
        flop = n / c * (2 * c + 2) + n + _flag(t["affine"], n)
        return flop, (2 * n + _flag(t["affine"], c)) * t["bpe"]
    weight_grad = _flag(t["mask1"] & t["affine"], n + _flag(n / c > 1, n))
    flop = _flag(t["affine"], n) + n + _flag(t["mask0"], 6 * n) + weight_grad
    return flop, (3 * n + _flag(t["affine"], 2 * c)) * t["bpe"]


#: Input dims a reduction's output count is worked out over (a tensor of more dims reduces exactly
#: over the first this many).
REDUCE_DIMS = 8


def _reduce(scan: bool) -> tuple[pl.Expr, pl.Expr]:
    """A reduction (sum, mean, max, min, norms, std, var, logsumexp, amax, amin): one FLOP per
    input element; bytes: the input and the output, whose elements are the input's over the
    reduced dims' sizes (the `dim` argument, negative dims from the end; none or [] reduces all
    dims). A scan (cumsum, cumprod) writes as many elements as it reads. A max or min of two
    tensors is elementwise, not a reduction: not counted."""
    x = _dims("x")
    n_in = _numel(x)
    if scan:
        return n_in, 2 * n_in * _bpe("x")
    text = _concrete("dim_arg")
    # a list of dims ("[-1]"), or one integer where the op takes one (max, min); anything else at
    # that position (an overload's dtype) is not a dim: every dim is reduced
    is_dim = text.str.starts_with("[") | (pl.col("dim_scalar").fill_null(False) & text.str.contains(r"^-?\d+$"))
    dims = pl.when(is_dim).then(_concrete_ints("dim_arg"))
    ndim = x.list.len().cast(pl.Int64)
    all_dims = dims.is_null() | (dims.list.len() == 0)
    reduced = pl.lit(1.0)
    for i in range(REDUCE_DIMS):
        hit = dims.list.contains(i) | dims.list.contains(pl.lit(i) - ndim)
        size = x.list.get(i, null_on_oob=True).cast(pl.Float64)
        reduced = reduced * pl.when(hit & size.is_not_null()).then(size).otherwise(1.0)
    n_out = pl.when(all_dims).then(1.0).otherwise(n_in / reduced)
    elementwise = _bpe("y").is_not_null()
    return (
        pl.when(~elementwise).then(n_in),
        pl.when(~elementwise).then((n_in + n_out) * _bpe("x")),
    )


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
    return flop, data, _ascend_type(0).replace_strict(short, default=_ascend_type(0))
