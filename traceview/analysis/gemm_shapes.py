"""A GEMM's M, N and K from its recorded input shapes, and whether tensor cores run it at full
speed (all three multiples of `GEMM_ALIGNMENT`). Read by the facts (`gemm_unaligned_*`) for the
kernels' launching operators and for the roofline's operator rows."""

from __future__ import annotations

import polars as pl

#: GEMM dims must be multiples of this (elements) for fp16/bf16 tensor cores to run at full speed.
GEMM_ALIGNMENT = 8


def gemm_dims(shapes: pl.Series, alignment: int = GEMM_ALIGNMENT) -> pl.DataFrame:
    """M, N, K of each GEMM from its input_shapes text, and whether all are multiples of `alignment`.

    input_shapes (docs/schema.md): one ';'-separated entry per input, a tensor's dims joined by ','
    ("8192,4096;4096,4096"; "1024;8944,1024;1024,1024;;" for addmm, bias first). The matrix
    operands A and B are the first two inputs with at least 2 dims. The shared dim K must appear in
    both, which also tells the layout (shapes as stored: Ascend writes transposed operands as such):

    - B has 2 dims and A's last dim is one of B's (mm, addmm, linear over [..., K]):
      K = A[-1], M = the product of A's other dims (the rows cuBLAS sees), N = B's other dim;
    - both have 2 dims and A's first dim is one of B's (A stored transposed): K = A[0], M = A[1];
    - both have the same number d >= 3 of dims and share a dim among their last two (bmm,
      baddbmm): M, K, N are those last two dims (leading dims are the batch);
    - anything else (no shared dim, other ranks): unknown.

    With K shared, "M, N and K are multiples of `alignment`" is "M and the last two dims of B, and
    K, all are". Returns input_shapes (the distinct non-null values), m, n, k (Int64, null when
    unknown) and gemm_aligned (Boolean, null when unknown).
    """
    distinct = pl.DataFrame({"input_shapes": shapes}).drop_nulls().unique().with_row_index("_s")
    operands = (
        distinct.with_columns(pl.col("input_shapes").str.split(";").alias("_in"))
        .explode("_in")
        .filter(pl.col("_in").str.contains(","))
        .with_columns(pl.int_range(pl.len()).over("_s").alias("_j"))
        .filter(pl.col("_j") < 2)
        .with_columns(
            pl.col("_in")
            .str.split(",")
            .list.eval(pl.element().str.strip_chars().cast(pl.Int64, strict=False))
            .alias("_d")
        )
        .sort("_s", "_j")
        .group_by("_s")
        .agg(pl.col("_d").first().alias("_a"), pl.col("_d").last().alias("_b"), pl.len().alias("_n"))
    )
    a, b = pl.col("_a"), pl.col("_b")
    ra, rb = a.list.len(), b.list.len()
    a_first, a_prev, a_last = a.list.first(), a.list.get(-2), a.list.get(-1)
    b_prev, b_last = b.list.get(-2), b.list.get(-1)
    in_b = pl.concat_list(b_prev, b_last)  # B's last two dims
    rows_m = a.list.slice(0, ra - 1).list.eval(pl.element().product()).list.first()
    linear = (rb == 2) & (ra >= 2) & a_last.is_in(in_b)
    transposed = ~linear & (ra == 2) & (rb == 2) & a_first.is_in(in_b)
    batched = ~linear & ~transposed & (ra == rb) & (ra >= 3) & (a_prev.is_in(in_b) | a_last.is_in(in_b))
    k = (
        pl.when(linear)
        .then(a_last)
        .when(transposed)
        .then(a_first)
        .when(batched)
        .then(pl.when(a_last.is_in(in_b)).then(a_last).otherwise(a_prev))
    )
    m = (
        pl.when(linear)
        .then(rows_m)
        .when(transposed)
        .then(a_last)
        .when(batched)
        .then(pl.when(k == a_last).then(a_prev).otherwise(a_last))
    )
    n = pl.when(k.is_null()).then(None).when(k == b_prev).then(b_last).otherwise(b_prev)
    dims = operands.filter(pl.col("_n") == 2).with_columns(k.alias("k")).with_columns(m.alias("m"), n.alias("n"))
    aligned = (pl.col("m") % alignment == 0) & (pl.col("n") % alignment == 0) & (pl.col("k") % alignment == 0)
    return distinct.join(dims.select("_s", "m", "n", "k"), on="_s", how="left").select(
        "input_shapes", "m", "n", "k", pl.when(pl.col("k").is_not_null()).then(aligned).alias("gemm_aligned")
    )
