"""Comparing two runs: the pure frame functions behind `traceview.diff` (see docs/diff.md).

Every quantity is first reduced, in each run separately, to a mean *per rank-step*: the run's
total over its compared windows divided by the number of those windows, so that runs that captured
different numbers of steps (or ranks) compare directly. Then the two runs are joined side by side:

    base_X, new_X          the quantity in each run (per rank-step)
    delta_X = new_X − base_X
    delta_pct = 100 × delta / base   (null when the base value is 0 or missing)

Compared windows of a run, per rank: its profiled steps (`ProfilerStep#N` / Ascend `Step Id`,
optionally one step only), or, for a run without steps that have device tasks, each rank's whole
trace (first to last device task) as one window. Two normalisers follow:

- raw sums (task time and counts per kernel, compute class and collective, exposed time per
  collective) are divided by n = the number of compared (rank, step) windows, a step without any
  device task counting as a step with no device work;
- step time and the decomposition terms are means over the windows that have a device window
  (`Trace.step_breakdown` / `Trace.trace_breakdown` rows): a step without device tasks has no
  device window and so no step time.

The iteration (`ITERATION_TERMS`: iteration_us and its terms, `traceview.analysis.iteration`) is
compared the same way, as means over the compared rank-steps that have an iteration; since its
terms add up to it in every rank-step, the terms' deltas add up to the iteration's delta, and
`share_of_change` attributes that change to the terms.

Identities (exact per window, hence for means and deltas):
- duration = computing + communication_not_overlapped + exposed_memcpy + idle
  (busy = U(COMP ∪ COMM ∪ MEM) is partitioned by the first three; idle = duration − busy);
- busy_span = computing + communication_not_overlapped + exposed_memcpy + free
  (busy_span = last busy end − first busy start; free = busy_span − busy);
- Σ over kernels of delta_us = Σ over compute classes of delta_us = the delta of the device time
  (raw sum of all task durations per rank-step).

Units: `_us` columns are µs, `_pct` percent, `share` a fraction 0-1, `count` tasks (per rank-step
unless named `_total`).
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from traceview.analysis import intervals as iv
from traceview.analysis import iteration, phases
from traceview.terms import DIFF_TERMS  # noqa: F401 - re-exported (terms compared, in report order)

#: Task kinds that form COMP in the exposure of a collective (as in `traceview.analysis.breakdown`).
COMP_KINDS = ("kernel", "memset")


def pct(delta: pl.Expr, base: pl.Expr) -> pl.Expr:
    """100 × delta / base; null when base is 0 or null."""
    return pl.when(base != 0).then(100.0 * delta / base).otherwise(None)


def side_by_side(
    base: pl.DataFrame, new: pl.DataFrame, on: Sequence[str], values: Sequence[str], absent_is_zero: bool = True
) -> pl.DataFrame:
    """Full join of two runs' frames on the keys `on`: base_<v>, new_<v> for each name in `values`.

    A key present in one run only gets 0 in the other when `absent_is_zero` (additive quantities:
    a kernel that does not run takes no time), else null. Also `_in_base` / `_in_new` (Boolean).
    """
    on = list(on)

    def side(df: pl.DataFrame, prefix: str) -> pl.DataFrame:
        return df.select(*on, *[pl.col(v).alias(f"{prefix}_{v}") for v in values], pl.lit(True).alias(f"_in_{prefix}"))

    out = side(base, "base").join(side(new, "new"), on=on, how="full", coalesce=True, nulls_equal=True)
    fills = [pl.col("_in_base").fill_null(False), pl.col("_in_new").fill_null(False)]
    if absent_is_zero:
        fills += [pl.col(f"{p}_{v}").fill_null(0) for p in ("base", "new") for v in values]
    return out.with_columns(fills)


def _status() -> pl.Expr:
    """ "added" (only in the new run), "removed" (only in the base run) or "both" (`side_by_side` flags)."""
    return (
        pl.when(~pl.col("_in_base"))
        .then(pl.lit("added"))
        .when(~pl.col("_in_new"))
        .then(pl.lit("removed"))
        .otherwise(pl.lit("both"))
        .alias("status")
    )


def with_delta(
    df: pl.DataFrame, value: str, delta: str = "delta_us", percent: str | None = "delta_pct"
) -> pl.DataFrame:
    """Add delta = new_<value> − base_<value> (and its percentage of the base)."""
    d = pl.col(f"new_{value}") - pl.col(f"base_{value}")
    out = df.with_columns(d.alias(delta))
    return out.with_columns(pct(pl.col(delta), pl.col(f"base_{value}")).alias(percent)) if percent else out


def select_tasks(tasks: pl.DataFrame, windows: pl.DataFrame | None) -> pl.DataFrame:
    """The tasks a comparison counts: those whose (rank, step) is a compared window; all tasks when
    `windows` is None (whole-trace comparison)."""
    if windows is None:
        return tasks
    return tasks.join(windows.select("rank", "step").unique(), on=["rank", "step"], how="semi", nulls_equal=True)


def step_times(breakdown: pl.DataFrame, by: Sequence[str]) -> pl.DataFrame:
    """Step time per `by` key (e.g. rank; () for the whole run): steps (windows), mean_us and
    median_us of the window length `duration_us` (µs)."""
    aggs = [
        pl.len().cast(pl.Int64).alias("steps"),
        pl.col("duration_us").mean().alias("mean_us"),
        pl.col("duration_us").median().alias("median_us"),
    ]
    return breakdown.group_by(list(by)).agg(aggs) if by else breakdown.select(aggs)


def term_means(breakdown: pl.DataFrame, by: Sequence[str]) -> pl.DataFrame:
    """Mean of each DIFF_TERMS term over the windows of `breakdown` (step_breakdown /
    trace_breakdown rows, with first_busy_ns / last_busy_ns), long format: `by`..., term, us (µs).
    busy_span = last busy end − first busy start of the window. A term that is null in every window
    (preparing over whole traces) is null."""
    wide = breakdown.with_columns(((pl.col("last_busy_ns") - pl.col("first_busy_ns")) / 1000.0).alias("busy_span_us"))
    cols = [pl.col(f"{t}_us").mean().alias(t) for t in DIFF_TERMS]
    means = wide.group_by(list(by)).agg(cols) if by else wide.select(cols)
    return means.unpivot(index=list(by), on=list(DIFF_TERMS), variable_name="term", value_name="us")


#: The iteration, its terms and its wall-time phases (`traceview.analysis.iteration`,
#: `traceview.analysis.phases`), compared first; the terms add up to the iteration, and so do the
#: phases.
ITERATION_TERMS: tuple[str, ...] = ("iteration", *iteration.TERMS, *phases.WALL_COLUMNS)


def iteration_means(
    iterations: pl.DataFrame, by: Sequence[str], terms: Sequence[str] = ITERATION_TERMS
) -> pl.DataFrame:
    """Mean of the iteration and each of its terms (`terms`: columns `<term>_us` of the rows;
    ITERATION_TERMS unless told) over the compared rank-steps (`iteration_breakdown` rows), long
    format: `by`..., term, us (µs). A host term unknown in every row (no host events) is null."""
    cols = [pl.col(f"{t}_us").mean().alias(t) for t in terms]
    means = iterations.group_by(list(by)).agg(cols) if by else iterations.select(cols)
    return means.unpivot(index=list(by), on=list(terms), variable_name="term", value_name="us")


#: The iteration's change must reach this share of the base iteration (and 1 µs) before it is
#: attributed to the terms: a near-zero change would give meaningless shares (-50,000 %).
ATTRIBUTION_MIN_CHANGE_FRAC = 0.005


def with_attribution(both: pl.DataFrame, by: Sequence[str]) -> pl.DataFrame:
    """Add `share_of_change` to each term row of an iteration comparison (`delta_us` per `by`
    key and term): the term's delta / the iteration's delta; null for the iteration itself, and
    when the iteration changed by less than ATTRIBUTION_MIN_CHANGE_FRAC of its base (or 1 µs).
    The terms add up to the iteration in each rank-step, so the shares of one key add up to 1
    where every term is known in both runs (host terms are unknown without host events)."""
    total = both.filter(pl.col("term") == "iteration").select(
        *by, pl.col("delta_us").alias("_total"), pl.col("base_us").alias("_base")
    )
    out = both.join(total, on=list(by), how="left", nulls_equal=True, maintain_order="left")
    moved = pl.col("_total").abs() >= pl.max_horizontal(
        pl.lit(1.0), ATTRIBUTION_MIN_CHANGE_FRAC * pl.col("_base").abs()
    )
    return out.with_columns(
        pl.when((pl.col("term") != "iteration") & moved)
        .then(pl.col("delta_us") / pl.col("_total"))
        .alias("share_of_change")
    ).drop("_total", "_base")


def per_step(tasks: pl.DataFrame, by: Sequence[str], n: int) -> pl.DataFrame:
    """Raw sums of task durations per `by` key, per rank-step: count_total (tasks), total_us (Σ dur,
    µs), count and us (the same ÷ n, n = compared rank-steps), mean_us (total_us / count_total)."""
    n = max(n, 1)
    return (
        tasks.group_by(list(by))
        .agg(pl.len().cast(pl.Int64).alias("count_total"), (pl.col("dur_ns").sum() / 1000.0).alias("total_us"))
        .with_columns(
            (pl.col("count_total") / n).alias("count"),
            (pl.col("total_us") / n).alias("us"),
            (pl.col("total_us") / pl.col("count_total")).alias("mean_us"),
        )
    )


def kernel_diff(base: pl.DataFrame, new: pl.DataFrame, n_base: int, n_new: int) -> pl.DataFrame:
    """Device tasks of the two runs matched by exact name (all kinds: kernels, memcpy, memset,
    communication), from classified tasks (`compute_class` column) already restricted to the
    compared windows.

    Columns: name, kind, class (the class most of its tasks got; the new run's when both have it),
    status ("added": only in new, "removed": only in base, "both"), base_/new_count_total (tasks),
    base_/new_count (per rank-step), base_/new_total_us, base_/new_us (per rank-step),
    delta_us, delta_pct (of base_us), base_/new_mean_us (mean task duration; null when absent),
    mean_delta_pct. Sorted by |delta_us| descending, then name.
    """

    def attrs(df: pl.DataFrame, n: int) -> pl.DataFrame:
        totals = per_step(df, ["name"], n)
        kind = df.group_by("name").agg(
            pl.col("kind").mode().sort().first(), pl.col("compute_class").mode().sort().first()
        )
        return totals.join(kind, on="name", how="left")

    b, w = attrs(base, n_base), attrs(new, n_new)
    values = ["count_total", "count", "total_us", "us"]
    out = side_by_side(b, w, ["name"], values)
    means = side_by_side(b, w, ["name"], ["mean_us", "kind", "compute_class"], absent_is_zero=False)
    out = with_delta(out.join(means.drop("_in_base", "_in_new"), on="name"), "us")
    return out.select(
        "name",
        pl.coalesce("new_kind", "base_kind").alias("kind"),
        pl.coalesce("new_compute_class", "base_compute_class").alias("class"),
        _status(),
        "base_count_total",
        "new_count_total",
        "base_count",
        "new_count",
        "base_total_us",
        "new_total_us",
        "base_us",
        "new_us",
        "delta_us",
        "delta_pct",
        "base_mean_us",
        "new_mean_us",
        pct(pl.col("new_mean_us") - pl.col("base_mean_us"), pl.col("base_mean_us")).alias("mean_delta_pct"),
    ).sort(pl.col("delta_us").abs(), "name", descending=[True, False])


def class_diff(base: pl.DataFrame, new: pl.DataFrame, n_base: int, n_new: int) -> pl.DataFrame:
    """Device time per compute class, per rank-step, from per-(rank[, step]) class summaries
    (`classes.class_summary` rows: class, group, time_us, count) already restricted to the compared
    windows.

    Columns: class, group, base_/new_us (Σ task durations of the class per rank-step, µs),
    delta_us, delta_pct, base_/new_share (of the run's device time, 0-1), delta_share,
    base_/new_count (tasks per rank-step). Sorted by |delta_us| descending, then class.
    """

    def totals(df: pl.DataFrame, n: int) -> pl.DataFrame:
        n = max(n, 1)
        per = (
            df.group_by("class", "group")
            .agg(  # sorted: the same input always sums in the same order
                (pl.col("time_us").sum() / n).alias("us"), (pl.col("count").sum() / n).alias("count")
            )
            .sort("class", "group")
        )
        whole = per["us"].sum()
        return per.with_columns((pl.col("us") / whole if whole else pl.lit(0.0)).alias("share"))

    both = side_by_side(totals(base, n_base), totals(new, n_new), ["class", "group"], ["us", "share", "count"])
    out = with_delta(both, "us")
    return out.select(
        "class",
        "group",
        "base_us",
        "new_us",
        "delta_us",
        "delta_pct",
        "base_share",
        "new_share",
        (pl.col("new_share") - pl.col("base_share")).alias("delta_share"),
        "base_count",
        "new_count",
    ).sort(pl.col("delta_us").abs(), "class", descending=[True, False])


def collective_exposure(device_tasks: pl.DataFrame, windows: pl.DataFrame | None) -> pl.DataFrame:
    """Exposed time of each (collective, process_group): |U(its communication tasks) − U(COMP)|,
    summed over the compared windows, per rank (COMP = kernels and memsets, U = union over the
    rank's streams, all clipped to the window as in `traceview.analysis.breakdown`).

    `windows`: rank, step, win_start_ns, win_end_ns, clip (Boolean: the GPU-annotation rule, whose
    tasks are clipped to the window; otherwise the step's member tasks form the window). None: each
    rank's whole trace. Returns rank, collective, process_group, exposed_us (µs; 0 when fully
    hidden behind compute).

    The exposed times of different collectives add up to the step's communication_not_overlapped
    when they never run at the same time as each other; time during which two collectives run
    together, with no compute, counts for both.
    """
    comm = device_tasks.filter(pl.col("kind") == "communication")
    schema = {"rank": pl.Int64, "collective": pl.String, "process_group": pl.String, "exposed_us": pl.Float64}
    if comm.is_empty():
        return pl.DataFrame(schema=schema)
    keys = (
        comm.select("collective", "process_group")
        .unique()
        .sort("collective", "process_group", nulls_last=True)
        .with_row_index("_k")
        .with_columns(pl.format("c{}", "_k").alias("set"))
    )
    sets = ["comp", *keys["set"].to_list()]
    labelled = pl.concat(
        [
            comm.join(keys, on=["collective", "process_group"], how="left", nulls_equal=True).select(
                "rank", "step", "set", "start_ns", "end_ns"
            ),
            device_tasks.filter(pl.col("kind").is_in(COMP_KINDS)).select(
                "rank", "step", pl.lit("comp").alias("set"), "start_ns", "end_ns"
            ),
        ]
    )
    measures = {s: pl.col(s) & ~pl.col("comp") for s in sets[1:]}
    if windows is None:
        parts = [iv.lengths(iv.segments(labelled, ["rank"], sets), ["rank"], measures)]
    else:
        parts = []
        clip = windows.filter(pl.col("clip"))
        if clip.height:
            tasks = labelled.drop("step").join(clip.select("rank").unique(), on="rank", how="semi", nulls_equal=True)
            segs = iv.segments(tasks, ["rank"], sets, cuts=iv.window_cuts(clip, ["rank"]))
            parts.append(iv.lengths(iv.clip_to_windows(segs, clip, ["rank"], "step"), ["rank", "step"], measures))
        member = windows.filter(~pl.col("clip"))
        if member.height:
            tasks = select_tasks(labelled, member)
            parts.append(iv.lengths(iv.segments(tasks, ["rank", "step"], sets), ["rank", "step"], measures))
        parts = [p.drop("step") for p in parts]
    if not parts:
        return pl.DataFrame(schema=schema)
    exposed = (
        pl.concat(parts)
        .unpivot(index="rank", on=sets[1:], variable_name="set", value_name="_ns")
        .group_by("rank", "set")
        .agg(pl.col("_ns").sum())
    )
    return (
        exposed.join(keys, on="set")
        .select("rank", "collective", "process_group", (pl.col("_ns").fill_null(0) / 1000.0).alias("exposed_us"))
        .sort("rank", "collective", "process_group", nulls_last=True)
    )


def collective_diff(
    base_tasks: pl.DataFrame,
    new_tasks: pl.DataFrame,
    base_exposed: pl.DataFrame,
    new_exposed: pl.DataFrame,
    n_base: int,
    n_new: int,
) -> pl.DataFrame:
    """Communication per (collective, process_group), per rank-step, side by side.

    Inputs: each run's device tasks restricted to its compared windows, its `collective_exposure`
    and its number of compared rank-steps. Columns: collective, process_group, status (added /
    removed / both), base_/new_count (communication tasks per rank-step), base_/new_us (Σ their
    durations per rank-step, µs), delta_us, base_/new_exposed_us (exposed time per rank-step),
    delta_exposed_us, delta_exposed_pct. Sorted by |delta_exposed_us|, then |delta_us|, descending.
    """
    on = ["collective", "process_group"]

    def side(tasks: pl.DataFrame, exposed: pl.DataFrame, n: int) -> pl.DataFrame:
        comm = per_step(tasks.filter(pl.col("kind") == "communication"), on, n)
        exp = exposed.group_by(on).agg((pl.col("exposed_us").sum() / max(n, 1)).alias("exposed_us"))
        return comm.join(exp, on=on, how="left", nulls_equal=True).with_columns(pl.col("exposed_us").fill_null(0.0))

    out = side_by_side(
        side(base_tasks, base_exposed, n_base), side(new_tasks, new_exposed, n_new), on, ["count", "us", "exposed_us"]
    )
    out = with_delta(with_delta(out, "us", percent=None), "exposed_us", "delta_exposed_us", "delta_exposed_pct")
    return out.select(
        *on,
        _status(),
        "base_count",
        "new_count",
        "base_us",
        "new_us",
        "delta_us",
        "base_exposed_us",
        "new_exposed_us",
        "delta_exposed_us",
        "delta_exposed_pct",
    ).sort(
        pl.col("delta_exposed_us").abs(),
        pl.col("delta_us").abs(),
        *on,
        descending=[True, True, False, False],
        nulls_last=True,
    )


def memory_diff(base_peaks: pl.DataFrame, new_peaks: pl.DataFrame, step: int | None = None) -> pl.DataFrame:
    """Peak device memory of two runs (`traceview.analysis.memory.memory_peaks` frames): per rank
    the series its timeline lane shows (`memory.lane_series`), and for the whole run (rank null)
    the largest over the ranks. Over the whole trace, or step `step` only. Columns: rank, series
    ("cuda:0", "npu:0 PTA+GE"), base_/new_peak_allocated_bytes, allocated_delta_bytes,
    allocated_delta_pct, base_/new_peak_reserved_bytes, reserved_delta_bytes. A rank that recorded
    memory in one run only has nulls on the other side. Empty when neither run recorded any."""
    from traceview.analysis import memory

    values = ["peak_allocated_bytes", "peak_reserved_bytes"]

    def per_rank(peaks: pl.DataFrame) -> pl.DataFrame:
        lanes = memory.lane_series(peaks).select(memory.SERIES)
        rows = peaks.filter(pl.col("step").is_null() if step is None else pl.col("step") == step)
        rows = rows.join(lanes, on=memory.SERIES, how="semi", nulls_equal=True)
        label = pl.format("{}:{}", "device_type", "device")
        series = pl.when(pl.col("component").is_null()).then(label).otherwise(pl.format("{} {}", label, "component"))
        ranks = rows.select("rank", series.alias("series"), *values)
        whole = ranks.select(pl.lit(None, pl.Int64).alias("rank"), pl.lit(None, pl.String).alias("series"), *values)
        whole = whole.select(pl.col("rank"), pl.col("series"), *(pl.col(v).max() for v in values)).head(1)
        return pl.concat([ranks, whole]) if ranks.height else ranks

    base, new = per_rank(base_peaks), per_rank(new_peaks)
    if base.is_empty() and new.is_empty():
        schema = {"rank": pl.Int64, "series": pl.String}
        for v in values:
            schema |= {f"base_{v}": pl.Int64, f"new_{v}": pl.Int64}
        schema |= {
            "allocated_delta_bytes": pl.Int64,
            "allocated_delta_pct": pl.Float64,
            "reserved_delta_bytes": pl.Int64,
        }
        return pl.DataFrame(schema=schema)
    out = side_by_side(base.drop("series"), new.drop("series"), ["rank"], values, absent_is_zero=False)
    series = pl.concat([base.select("rank", "series"), new.select("rank", "series")]).unique("rank", keep="first")
    out = out.join(series, on="rank", how="left", nulls_equal=True)
    out = with_delta(out, "peak_allocated_bytes", "allocated_delta_bytes", "allocated_delta_pct")
    out = with_delta(out, "peak_reserved_bytes", "reserved_delta_bytes", None)
    return out.sort("rank", nulls_last=True).select(
        "rank",
        "series",
        "base_peak_allocated_bytes",
        "new_peak_allocated_bytes",
        "allocated_delta_bytes",
        "allocated_delta_pct",
        "base_peak_reserved_bytes",
        "new_peak_reserved_bytes",
        "reserved_delta_bytes",
    )


OPERATOR_KEYS = ["op", "input_dims", "dtype"]


def operator_diff(base_rows: pl.DataFrame, new_rows: pl.DataFrame) -> pl.DataFrame:
    """Each operator row of two runs (`traceview.analysis.roofline.op_roofline` frames, summed over
    ranks, input types and concrete inputs), matched by operator, input dims and dtype: base_/new_
    count, device_time_us, achieved_tflops_per_s (all calls' FLOPs over all calls' device time),
    tflops_delta and tflops_delta_pct, device_delta_us, status (both / added / removed). Largest
    device time change first. Empty when neither run recorded shapes."""
    values = ["count", "device_time_us", "achieved_tflops_per_s"]

    def merged(rows: pl.DataFrame) -> pl.DataFrame:
        return (
            rows.group_by(OPERATOR_KEYS)
            .agg(
                pl.col("count").sum().cast(pl.Int64),
                pl.col("device_time_us").sum(),
                (pl.col("gflop") * pl.col("count")).sum().alias("_gflop"),
            )
            .with_columns((pl.col("_gflop") / pl.col("device_time_us") * 1e-3).alias("achieved_tflops_per_s"))
            .drop("_gflop")
        )

    if base_rows.is_empty() and new_rows.is_empty():
        schema = dict.fromkeys(OPERATOR_KEYS, pl.String) | {"status": pl.String}
        for v in values:
            schema |= {f"base_{v}": pl.Float64, f"new_{v}": pl.Float64}
        schema |= {"tflops_delta": pl.Float64, "tflops_delta_pct": pl.Float64, "device_delta_us": pl.Float64}
        return pl.DataFrame(schema=schema)
    out = side_by_side(merged(base_rows), merged(new_rows), OPERATOR_KEYS, values, absent_is_zero=False)
    status = (
        pl.when(pl.col("_in_base") & pl.col("_in_new"))
        .then(pl.lit("both"))
        .when(pl.col("_in_new"))
        .then(pl.lit("added"))
        .otherwise(pl.lit("removed"))
    )
    out = with_delta(out, "achieved_tflops_per_s", "tflops_delta", "tflops_delta_pct")
    out = out.with_columns(
        status.alias("status"),
        (pl.col("new_device_time_us").fill_null(0) - pl.col("base_device_time_us").fill_null(0)).alias(
            "device_delta_us"
        ),
    )
    return out.drop("_in_base", "_in_new").sort(
        pl.col("device_delta_us").abs(), *OPERATOR_KEYS, descending=[True, False, False, False], nulls_last=True
    )
