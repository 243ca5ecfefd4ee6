"""The FLOPs and bytes of normalizations and reductions, from a call's recorded inputs (every
formula in docs/roofline.md; the families in `traceview/rules/op_flops.toml`). Units: FLOP, bytes."""

from __future__ import annotations

import polars as pl

from traceview.analysis.shape_exprs import (
    concrete_ints,
    concrete_text,
    flag_value,
    list_product,
    numel,
    role_bpe,
    role_dims,
)

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
    x = role_dims("x")
    per_shape = list_product(concrete_ints("normalized_shape_arg"))
    dim1 = x.list.get(1, null_on_oob=True).cast(pl.Float64)
    groups = concrete_text("groups_arg").cast(pl.Float64, strict=False)
    channels = (
        pl.when(family.is_in(["layer_norm", "rms_norm"]))
        .then(per_shape)
        .when(pl.col("groups_arg").is_not_null())
        .then(dim1 / groups)
        .otherwise(dim1)
    )
    mask = concrete_text("output_mask_arg").str.extract_all(r"True|False")
    mask_at = [(mask.list.get(i, null_on_oob=True) == "True").fill_null(True) for i in (0, 1, 2)]
    affine = role_bpe("weight").is_not_null()
    layer_bias = mask_at[2] if backward else role_bpe("bias").is_not_null()
    flag = concrete_text("training_arg")  # an overload may hold another value there: then unknown
    training = pl.when(flag.is_in(["True", "False"])).then(flag == "True").otherwise(pl.col("training")).fill_null(True)
    return {
        "n": numel(x),
        "c": channels,
        "affine": affine,
        "bias": pl.when(family == "layer_norm").then(layer_bias).otherwise(affine),
        "training": training,
        "mask0": mask_at[0],
        "mask1": mask_at[1],
        "bpe": role_bpe("x"),
    }


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
    flop = 6 * t["c"] + flag_value(t["training"], 3 * t["n"]) + 2 * t["n"]
    params = flag_value(t["affine"], 1.0) + flag_value(t["affine"] & t["bias"], 1.0)
    channel_stats = (2 + params + flag_value(t["training"], 2.0)) * t["c"] * t["bpe"]
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
    flop = (
        flag_value(~t["training"], 3 * c)
        + 4 * n
        + flag_value(t["mask0"] & t["training"], 5 * n)
        + flag_value(~t["mask0"], 2 * n)
    )
    inputs = n + n * pl.when(t["mask0"] & t["training"]).then(2.0).otherwise(1.0)
    params = flag_value(t["affine"], c + flag_value(t["training"], c * pl.when(t["bias"]).then(2.0).otherwise(1.0)))
    stats = pl.when(_is_layer_norm()).then(_LAYER_STATS * n / c).otherwise(flag_value(t["training"], c) * t["bpe"])
    return flop, (inputs + params) * t["bpe"] + stats


def _rms_norm(backward: bool) -> tuple[pl.Expr, pl.Expr]:
    """RMS norm forward: FLOPs (N / C)·(2·C + 2) (the root mean square per row) + N (scale) + N
    (the weight); bytes: input and output, and the weight. Backward: FLOPs N (x̂) + N (the weight)
    + 6·N (the input's gradient) + N (the weight's gradient) + N (its sum over rows, when more
    than one); bytes: the output's gradient, the input twice, the weight and its gradient."""
    t = _norm_terms(backward)
    n, c = t["n"], t["c"]
    if not backward:
        flop = n / c * (2 * c + 2) + n + flag_value(t["affine"], n)
        return flop, (2 * n + flag_value(t["affine"], c)) * t["bpe"]
    weight_grad = flag_value(t["mask1"] & t["affine"], n + flag_value(n / c > 1, n))
    flop = flag_value(t["affine"], n) + n + flag_value(t["mask0"], 6 * n) + weight_grad
    return flop, (3 * n + flag_value(t["affine"], 2 * c)) * t["bpe"]


#: Input dims a reduction's output count is worked out over (a tensor of more dims reduces exactly
#: over the first this many).
REDUCE_DIMS = 8


def _reduce(scan: bool) -> tuple[pl.Expr, pl.Expr]:
    """A reduction (sum, mean, max, min, norms, std, var, logsumexp, amax, amin): one FLOP per
    input element; bytes: the input and the output, whose elements are the input's over the
    reduced dims' sizes (the `dim` argument, negative dims from the end; none or [] reduces all
    dims). A scan (cumsum, cumprod) writes as many elements as it reads. A max or min of two
    tensors is elementwise, not a reduction: not counted."""
    x = role_dims("x")
    n_in = numel(x)
    if scan:
        return n_in, 2 * n_in * role_bpe("x")
    text = concrete_text("dim_arg")
    # a list of dims ("[-1]"), or one integer where the op takes one (max, min); anything else at
    # that position (an overload's dtype) is not a dim: every dim is reduced
    is_dim = text.str.starts_with("[") | (pl.col("dim_scalar").fill_null(False) & text.str.contains(r"^-?\d+$"))
    dims = pl.when(is_dim).then(concrete_ints("dim_arg"))
    ndim = x.list.len().cast(pl.Int64)
    all_dims = dims.is_null() | (dims.list.len() == 0)
    reduced = pl.lit(1.0)
    for i in range(REDUCE_DIMS):
        hit = dims.list.contains(i) | dims.list.contains(pl.lit(i) - ndim)
        size = x.list.get(i, null_on_oob=True).cast(pl.Float64)
        reduced = reduced * pl.when(hit & size.is_not_null()).then(size).otherwise(1.0)
    n_out = pl.when(all_dims).then(1.0).otherwise(n_in / reduced)
    elementwise = role_bpe("y").is_not_null()
    return (
        pl.when(~elementwise).then(n_in),
        pl.when(~elementwise).then((n_in + n_out) * role_bpe("x")),
    )
