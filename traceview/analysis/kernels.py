"""Kernel and operator tables across ranks, with names people can read.

- `short_names`: a short, distinct display name for every distinct task name. GPU kernel names are
  C++ signatures hundreds of characters long (`void at::native::vectorized_elementwise_kernel<4,
  at::native::CUDAFunctor_add<float>, ...>(int, ...)`); cutting them at a width makes different
  kernels look alike. The short name drops `void`, the parameter list and the template arguments
  (`at::native::vectorized_elementwise_kernel<…>`); where that leaves several names alike, each gets
  the first identifier of its template arguments that not all of them share, in brackets
  (`[CUDAFunctor_add]`, `[FillFunctor]`; wrappers such as BinaryFunctor are skipped), or else its
  template arguments when they are short (`<float, 512, true>`), and any still alike a number
  (`#1`, `#2` in name order). Only C++ signatures are folded (`void ...`, `name<...`, `name(...`,
  a `::` scope): other names (Ascend ops, anything else) stay as they are. The full name stays
  in the tables (`name`) for hover and details.
- `kernel_short_names`: `short_names` over every task name of the profile, as a frame (name,
  short_name), so that one kernel has one short name in every table and view.
- `kernel_totals`: each task name over all ranks: its time on each rank (min / median / max over
  the ranks that ran it), its total, count and share of all device time.
- `operators`: the TensorBoard plugin's "Operator + Input Shape" view: device tasks grouped by
  their launching host operator (`launch_op`, `traceview.analysis.classes`) and input shapes, with
  the device time they took.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import polars as pl

from traceview.analysis.declare import analysis, use

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
#: A C++ signature, the names folding applies to: `void ...`, or a name that opens a template
#: argument or parameter list right away (`kernel<...`, `kernel(...)`), or one with a `::` scope.
_CPP_SIGNATURE = re.compile(r"^(void |[A-Za-z_]\w*[<(])|::")
#: Identifiers that say nothing about which kernel it is.
_GENERIC = frozenset(
    [
        *("at", "native", "detail", "std", "c10", "cuda", "void", "const", "unsigned", "signed", "long", "int"),
        *("short", "char", "float", "double", "half", "bool", "true", "false", "Half", "BFloat16", "lambda"),
        *("operator", "anonymous", "namespace", "Array", "BinaryFunctor", "BUnaryFunctor", "UnaryFunctor"),
        *("gpu_kernel_impl", "gpu_kernel_impl_nocast", "func_wrapper_t", "ReduceOp", "TensorIterator"),
        *("TensorIteratorBase", "OffsetCalculator", "LoadWithCast", "StoreWithCast", "binary_internal"),
    ]
)
#: Template arguments up to this long are shown whole where no identifier tells kernels apart.
SHORT_ARGS = 48


def _fold(name: str) -> tuple[str, list[str], str]:
    """(the name without `void`, parameters and template arguments; the identifiers of its
    top-level template arguments, in order, generic ones left out; the template arguments'
    text)."""
    text = name.strip().replace("(anonymous namespace)::", "")
    if not _CPP_SIGNATURE.search(text):
        return name, [], ""  # not a C++ signature (an Ascend op, an NCCL kernel, anything else)
    if text.startswith("void "):
        text = text[5:]
    head, inner, angle, paren = [], [], 0, 0
    for ch in text:
        if paren == 0 and angle == 0 and ch == "(" and head:
            break  # the parameter list: the name ends here
        if ch == "<":
            angle += 1
            if angle == 1 and paren == 0:
                head.append("<…>")
                continue
        elif ch == ">" and angle:
            angle -= 1
        elif ch == "(" and angle:
            paren += 1
        elif ch == ")" and paren:
            paren -= 1
        elif angle == 0 and paren == 0:
            head.append(ch)
            continue
        if angle:
            inner.append(ch)
    short = "".join(head).strip() or name
    seen: dict[str, None] = {}
    for word in _IDENT.findall("".join(inner)):
        if word not in _GENERIC and not word.isdigit():
            seen.setdefault(word, None)
    return short, list(seen), "".join(inner)


def short_names(names: Iterable[str]) -> dict[str, str]:
    """{full name: short distinct display name} (module docstring) for the distinct `names`."""
    distinct = sorted({n for n in names if n is not None})
    folded = {n: _fold(n) for n in distinct}
    groups: dict[str, list[str]] = {}
    for n in distinct:
        groups.setdefault(folded[n][0], []).append(n)
    out: dict[str, str] = {}
    for short, members in groups.items():
        if len(members) == 1:
            out[members[0]] = short
            continue
        shared = set.intersection(*(set(folded[m][1]) for m in members))
        for m in members:
            own = next((w for w in folded[m][1] if w not in shared), None)
            args = folded[m][2]
            if own:
                out[m] = f"{short} [{own}]"
            elif args and len(args) <= SHORT_ARGS:  # e.g. cudnn kernels told apart by numbers only
                out[m] = short.replace("<…>", f"<{args}>", 1)
            else:
                out[m] = short
    counts: dict[str, int] = {}
    for m in distinct:
        counts[out[m]] = counts.get(out[m], 0) + 1
    taken: dict[str, int] = {}
    for m in distinct:
        if counts[out[m]] > 1:
            taken[out[m]] = taken.get(out[m], 0) + 1
            out[m] = f"{out[m]} #{taken[out[m]]}"
    return out


@analysis("kernel_short_names", inputs={"tasks": "device_tasks"}, keys=("name",))
def kernel_short_names(tasks: pl.DataFrame) -> pl.DataFrame:
    """Every distinct task name of the profile (all ranks) and its short distinct display name
    (`short_names`). Columns: name, short_name; sorted by name."""
    mapping = short_names(tasks["name"].unique().to_list())
    return pl.DataFrame(
        {"name": list(mapping), "short_name": list(mapping.values())},
        schema={"name": pl.String, "short_name": pl.String},
    ).sort("name")


def short_name(column: str, classified: pl.DataFrame) -> pl.Expr:
    """`column`'s short name, folded over every distinct task name of `classified` (the trace),
    so that one kernel has one short name in every table."""
    mapping = short_names(classified["name"].unique().to_list())
    return pl.col(column).replace_strict(mapping, default=pl.col(column), return_dtype=pl.String)


def _times(ns: str, total: int, name: str, per: str, per_name: str) -> list[pl.Expr]:
    """`ns` (a time, ns) as `name` (µs), its share of `total` ns, and µs per `per` as `per_name`."""
    return [
        (pl.col(ns) / 1000).alias(name),
        (pl.col(ns) / total if total else pl.lit(0.0)).alias("share"),
        (pl.col(ns) / 1000 / pl.col(per)).alias(per_name),
    ]


@analysis(
    "kernel_totals",
    inputs={"classified": use("classified_tasks")},
    keys=("name",),
)
def kernel_totals(classified: pl.DataFrame, n: int = 20) -> pl.DataFrame:
    """The `n` task names with the most device time over all ranks.

    Columns: name, short_name, class, ranks (ranks that ran it), count (tasks), total_us (Σ
    duration over all ranks, µs), share (total_us / all device-task time of all ranks),
    mean_us (total_us / count), rank_min_us / rank_median_us / rank_max_us (its time per rank,
    over the ranks that ran it), max_rank (the rank with rank_max_us; the lowest on a tie).
    Sorted by total_us descending, then name.
    """
    total = classified["dur_ns"].sum()
    per_rank = classified.group_by("name", "rank").agg(
        pl.col("compute_class").first(), pl.len().alias("_n"), pl.col("dur_ns").sum().alias("_t")
    )
    top = (
        per_rank.sort("rank", nulls_last=True)
        .group_by("name")
        .agg(
            pl.col("compute_class").first().alias("class"),
            pl.len().cast(pl.Int64).alias("ranks"),
            pl.col("_n").sum().cast(pl.Int64).alias("count"),
            pl.col("_t").sum().alias("_total"),
            (pl.col("_t").min() / 1000).alias("rank_min_us"),
            (pl.col("_t").median() / 1000).alias("rank_median_us"),
            (pl.col("_t").max() / 1000).alias("rank_max_us"),
            pl.col("rank").sort_by("_t", descending=True, maintain_order=True).first().alias("max_rank"),
        )
        .sort(["_total", "name"], descending=[True, False])
        .head(n)
    )
    return top.select(
        "name",
        short_name("name", classified).alias("short_name"),
        "class",
        "ranks",
        "count",
        *_times("_total", total, "total_us", "count", "mean_us"),
        "rank_min_us",
        "rank_median_us",
        "rank_max_us",
        "max_rank",
    )


@analysis(
    "operators",
    inputs={"classified": use("classified_tasks")},
    keys=("operator", "input_shapes"),
)
def operators(classified: pl.DataFrame, n: int = 20) -> pl.DataFrame:
    """Host operators by name and input shapes, with the device time of the tasks they launched
    (all ranks), the `n` with the most device time.

    Columns: operator (`launch_op`; tasks without one are left out), input_shapes (null when not
    recorded), calls (distinct (rank, External id) of the launching operator; null without External
    ids), kernels (tasks), device_us (Σ task duration, µs), share (of all device-task time),
    device_per_call_us (device_us / calls), top_kernel (the task name with the most device time
    among those it launched), top_kernel_short (its short name). Sorted by device_us descending, then operator,
    input_shapes.
    """
    total = classified["dur_ns"].sum()
    key = ["launch_op", "input_shapes"]
    launched = classified.filter(pl.col("launch_op").is_not_null())
    calls = pl.struct("rank", "external_id").filter(pl.col("external_id").is_not_null()).n_unique()
    by_name = (
        launched.group_by(*key, "name")
        .agg(pl.col("dur_ns").sum().alias("_k"))
        .sort(["_k", "name"], descending=[True, False])
        .group_by(key, maintain_order=True)
        .agg(pl.col("name").first().alias("top_kernel"))
    )
    grouped = (
        launched.group_by(key)
        .agg(
            pl.when(pl.col("external_id").is_not_null().any()).then(calls).cast(pl.Int64).alias("calls"),
            pl.len().cast(pl.Int64).alias("kernels"),
            pl.col("dur_ns").sum().alias("_t"),
        )
        .join(by_name, on=key, how="left", nulls_equal=True)
        .sort(["_t", *key], descending=[True, False, False], nulls_last=True)
        .head(n)
    )
    return grouped.select(
        pl.col("launch_op").alias("operator"),
        "input_shapes",
        "calls",
        "kernels",
        *_times("_t", total, "device_us", "calls", "device_per_call_us"),
        "top_kernel",
        short_name("top_kernel", classified).alias("top_kernel_short"),
    )
