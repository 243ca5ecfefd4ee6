"""Collective metadata of Kineto communication tasks: which collective, process group, group size
and message bytes each NCCL/RCCL kernel ran, from its own args (`Collective name`, `Process Group
Name`, `Group size`, `In/Out msg nelems`, `dtype`: recent PyTorch copies them onto the kernels) or
else from the host op that launched it (`record_param_comms`, `nccl:*`)."""

from __future__ import annotations

import polars as pl

from traceview.parsers.base import collective_of

#: Collective metadata args (recent PyTorch: on `record_param_comms` and copied onto NCCL kernels).
COMM_ARGS = pl.Schema(
    {
        "Collective name": pl.String,
        "Process Group Name": pl.String,
        "Group size": pl.Int64,
        "In msg nelems": pl.Int64,
        "Out msg nelems": pl.Int64,
        "dtype": pl.String,
    }
)
#: Canonical column of each collective arg (`_`-prefixed ones are intermediate).
COMM_COLUMNS = {
    "Collective name": "_collective_raw",
    "Process Group Name": "process_group",
    "Group size": "group_size",
    "In msg nelems": "_in_nelems",
    "Out msg nelems": "_out_nelems",
    "dtype": "_dtype",
}
#: Bytes per element of the c10 scalar type names written in the `dtype` arg (lower-cased).
DTYPE_BYTES: dict[str, int] = {
    "double": 8,
    "float": 4,
    "half": 2,
    "bfloat16": 2,
    "long": 8,
    "int": 4,
    "short": 2,
    "char": 1,
    "byte": 1,
    "bool": 1,
    "complexdouble": 16,
    "complexfloat": 8,
    "complexhalf": 4,
    "uint16": 2,
    "uint32": 4,
    "uint64": 8,
    "qint8": 1,
    "quint8": 1,
    "qint32": 4,
    "quint4x2": 1,
    "float8_e4m3fn": 1,
    "float8_e5m2": 1,
    "float8_e4m3fnuz": 1,
    "float8_e5m2fnuz": 1,
    "float8_e8m0fnu": 1,
}
#: Host ops that carry (or may carry) collective metadata.
COLLECTIVE_OP = (pl.col("name") == "record_param_comms") | pl.col("name").str.starts_with("nccl:")


def finish_comm(tasks: pl.DataFrame, host: pl.DataFrame, collective_ops: pl.DataFrame) -> pl.DataFrame:
    """Fill collective / process_group / group_size / msg_bytes of communication tasks.

    From the kernel's own args when present; else from the launching collective op: first the
    ops with a `Collective name` (record_param_comms), then, for what is still missing, `nccl:*`
    annotations (collective from their name, e.g. `nccl:all_to_all`; nothing else). An op launches a
    kernel when it has the kernel's External id, or else when it is the innermost such op that
    contains the kernel's launch (the runtime call with the same correlation) on the same thread.
    msg_bytes = max(In msg nelems, Out msg nelems) x bytes per element of `dtype` (nccl-tests' S).
    `collective_ops`: the host ops matching COLLECTIVE_OP with their collective args, sorted as host.
    """
    is_comm = pl.col("kind") == "communication"
    if tasks.filter(is_comm & pl.col("_collective_raw").is_null()).height:
        unnamed = pl.col("_collective_raw").is_null() & (pl.col("name") != "record_param_comms")
        named = collective_ops.filter(unnamed)
        for ops in (
            collective_ops.filter(pl.col("_collective_raw").is_not_null()),
            named.with_columns(pl.col("name").str.strip_prefix("nccl:").alias("_collective_raw")),
        ):
            if ops.height:
                tasks = _fill_from_ops(tasks, host, ops)
    size = (
        pl.col("_dtype")
        .str.strip_prefix("c10::")
        .str.to_lowercase()
        .replace_strict(DTYPE_BYTES, default=None, return_dtype=pl.Int64)
    )
    comm = pl.when(is_comm)
    return tasks.with_columns(
        comm.then(collective_of(pl.col("_collective_raw"), True)).alias("collective"),
        comm.then(pl.col("process_group")).alias("process_group"),
        comm.then(pl.col("group_size")).alias("group_size"),
        comm.then(pl.max_horizontal("_in_nelems", "_out_nelems") * size).alias("msg_bytes"),
    )


def _fill_from_ops(tasks: pl.DataFrame, host: pl.DataFrame, ops: pl.DataFrame) -> pl.DataFrame:
    """Collective columns of communication tasks that have none, from the op that launched them
    (one lazy query: a rank's few dozen small steps planned and run at once)."""
    meta = list(COMM_COLUMNS.values())
    indexed = tasks.lazy().with_row_index("_t")
    need = indexed.filter((pl.col("kind") == "communication") & pl.col("_collective_raw").is_null()).select(
        "_t", "external_id", "correlation"
    )
    ops = ops.lazy()
    by_ext = ops.drop_nulls("external_id").unique("external_id", keep="last", maintain_order=True)
    found = need.join(by_ext.select("external_id", *meta), on="external_id", how="inner").select("_t", *meta)
    launches = (
        host.lazy()
        .filter((pl.col("kind") == "runtime") & pl.col("correlation").is_not_null())
        .unique("correlation", keep="first", maintain_order=True)
        .select("correlation", "pid", "tid", pl.col("start_ns").alias("_launch_ns"))
    )
    probe = (
        need.join(found.select("_t"), on="_t", how="anti")
        .join(launches, on="correlation", how="inner")
        .drop_nulls(["pid", "tid"])
        .sort("pid", "tid", "_launch_ns")
    )
    right = (
        ops.drop_nulls(["pid", "tid"])
        .select("pid", "tid", "start_ns", pl.col("end_ns").alias("_op_end"), *meta)
        .sort("pid", "tid", "start_ns")
    )
    enclosing = (
        probe.join_asof(
            right,
            left_on="_launch_ns",
            right_on="start_ns",
            by=["pid", "tid"],
            strategy="backward",
            check_sortedness=False,
        )
        .filter(pl.col("_op_end") >= pl.col("_launch_ns"))
        .select("_t", *meta)
    )
    fill = pl.concat([found, enclosing], how="vertical_relaxed").rename({c: f"{c}_op" for c in meta})
    return (
        indexed.join(fill, on="_t", how="left", maintain_order="left")
        .with_columns(
            pl.when(pl.col("_collective_raw").is_null()).then(pl.col(f"{c}_op")).otherwise(pl.col(c)).alias(c)
            for c in meta
        )
        .drop("_t", *(f"{c}_op" for c in meta))
        .collect()
    )
