"""Polars expressions over one operator call's recorded inputs, shared by the FLOP formulas
(`flop_formulas`, `norm_formulas`): a role's dims, elements and bytes per element, a concrete
argument's text and integers. They read the columns `_shapes`, `_types`, `_concrete` (the
op_inputs texts split on ';') and the rule's `pos_<role>` / argument-position columns."""

from __future__ import annotations

import polars as pl

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


def role_dims(role: str) -> pl.Expr:
    """The dims of a role's input as List(Int64) (empty for a scalar; null when the op has no such role)."""
    entry = pl.col("_shapes").list.get(pl.col(f"pos_{role}"), null_on_oob=True)
    return entry.str.split(",").list.eval(pl.element().cast(pl.Int64, strict=False)).list.drop_nulls()


def numel(dims: pl.Expr) -> pl.Expr:
    return dims.list.eval(pl.element().product()).list.first().cast(pl.Float64)


def last_dim(dims: pl.Expr, i: int) -> pl.Expr:
    return dims.list.get(-i, null_on_oob=True).cast(pl.Float64)


def role_bpe(role: str) -> pl.Expr:
    """Bytes per element of a role's input (null when its dtype is not a known tensor dtype)."""
    dtype = pl.col("_types").list.get(pl.col(f"pos_{role}"), null_on_oob=True)
    return dtype.replace_strict(DTYPE_BYTES, default=None, return_dtype=pl.Float64)


def concrete_ints(arg: str) -> pl.Expr:
    """The integers of a concrete input given as a list ("[16, 16]") at position `arg` (one beyond
    Int64 reads as null)."""
    text = pl.col("_concrete").list.get(pl.col(arg), null_on_oob=True)
    return text.str.extract_all(r"-?\d+").list.eval(pl.element().cast(pl.Int64, strict=False))


def tensor_numel(role: str) -> pl.Expr:
    """Elements of an optional tensor input: 0 when it was passed as None (its `Input type` entry
    is empty) or is not a tensor (a Scalar), where the product of its empty dims would say 1."""
    return pl.when(role_bpe(role).is_not_null()).then(numel(role_dims(role))).otherwise(0.0)


def concrete_text(arg: str) -> pl.Expr:
    """The concrete input text at position `arg` (null when the rule gives none)."""
    return pl.col("_concrete").list.get(pl.col(arg), null_on_oob=True)


def list_product(values: pl.Expr) -> pl.Expr:
    """The product of a list of numbers, as Float64 (null for a null list)."""
    return values.list.eval(pl.element().product()).list.first().cast(pl.Float64)


def flag_value(condition: pl.Expr, value) -> pl.Expr:
    """`value` where `condition` holds, else 0 (a term a formula adds only in some cases)."""
    return pl.when(condition).then(value).otherwise(0.0)
