"""Compute classes: which kind of work each device task is, and how the device time splits.

Every device task gets a fine class and its group (docs/metrics.md):

| group              | fine classes                                       |
|--------------------|----------------------------------------------------|
| tensor_contraction | gemm, attention, convolution                       |
| normalization      | normalization, softmax                             |
| elementwise        | elementwise, reduction, optimizer, embedding       |
| communication      | communication                                      |
| memory             | memcpy, memset                                     |
| other              | other (no rule matched: the *unclassified* time)   |

The rules are data (`traceview/rules/compute_classes.toml`, extendable by a user's file): first the
`[kinds]` table maps a task `kind` that already says what the task is (communication, memcpy,
memset) to its class; every other task (kind "kernel") takes the class of the first rule of the
ordered `[[rule]]` list whose conditions all hold, or "other" when none does. A rule's conditions:

- `name`: regex searched in the device task name (GPU kernel name, Ascend op name);
- `launch_op`: regex searched in the launching host operator (see below; null never matches);
- `op_type`, `core_type`: regex searched in the Ascend `Type` and `Accelerator Core`;
- `cube` / `vector` (booleans): the Ascend cube (`aic_mac_ns`) / vector (`aiv_vec_ns`) unit time is
  positive (true) or is zero/absent (false).

Regexes are Rust-regex syntax (polars), case-insensitive, and match anywhere in the text unless
anchored (`^`, `$`); look-around and back-references are not supported.

Launching operator (`launch_op`), GPU traces: the innermost host operator (kind "operator",
Kineto cat cpu_op) that is open on the launching thread when the launch call starts. The launch
call is the runtime host event (cudaLaunchKernel, hipExtModuleLaunchKernel, cudaMemcpyAsync, ...)
with the task's `correlation` on the same rank; "open" is start <= launch start < end. Wherever the
kernel's `external_id` names a cpu_op, that op is the one found (they agree on every such task of
the real-trace corpus); some traces (HTA's and PARAM's 2023 samples) give kernels an External id
equal to their correlation id instead, and only the thread-and-time rule finds their operator.
Tasks without a recorded launch call (CUDA-graph replays, GPU-only traces, Ascend) or launched
outside any operator have a null launch_op.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import polars as pl

from traceview import rules as rule_tables
from traceview.analysis.declare import analysis, use

#: The shipped rule table.
RULES_FILE = rule_tables.shipped_path("compute_classes")

#: Fine classes, in report order.
CLASSES: tuple[str, ...] = (
    "gemm",
    "attention",
    "convolution",
    "normalization",
    "softmax",
    "elementwise",
    "reduction",
    "optimizer",
    "embedding",
    "communication",
    "memcpy",
    "memset",
    "other",
)
#: Groups, in report order.
GROUPS: tuple[str, ...] = (
    "tensor_contraction",
    "normalization",
    "elementwise",
    "communication",
    "memory",
    "other",
)

#: Our as-of joins sort within their `by` groups; polars would warn it cannot check that.
_ASOF_KW = {"check_sortedness": False}

#: Rule condition keys -> the column they test: regex searches, and unit-busy flags (value > 0).
_REGEX_KEYS = {"name": "name", "launch_op": "launch_op", "op_type": "op_type", "core_type": "core_type"}
_FLAG_KEYS = {"cube": "aic_mac_ns", "vector": "aiv_vec_ns"}
_RULE_KEYS = {"class", "note", *_REGEX_KEYS, *_FLAG_KEYS}


@dataclasses.dataclass(frozen=True)
class Rule:
    """One classification rule: all of its (non-None) conditions must hold."""

    cls: str
    name: str | None = None
    launch_op: str | None = None
    op_type: str | None = None
    core_type: str | None = None
    cube: bool | None = None
    vector: bool | None = None
    note: str | None = None

    def condition(self) -> pl.Expr:
        """Polars Boolean expression: the rule matches the row (nulls never match)."""
        parts: list[pl.Expr] = []
        for key, col in _REGEX_KEYS.items():
            pattern = getattr(self, key)
            if pattern is not None:
                parts.append(pl.col(col).str.contains("(?i)" + pattern).fill_null(False))
        for key, col in _FLAG_KEYS.items():
            flag = getattr(self, key)
            if flag is not None:
                positive = (pl.col(col) > 0).fill_null(False)
                parts.append(positive if flag else ~positive)
        out = parts[0]
        for p in parts[1:]:
            out = out & p
        return out


@dataclasses.dataclass(frozen=True)
class Rules:
    """An ordered rule list (first match wins), the kind -> class table and the class -> group map."""

    rules: tuple[Rule, ...]
    kinds: dict[str, str]
    groups: dict[str, str]
    sources: tuple[str, ...] = ()


def _rule_label(i: int, raw: dict) -> str:
    cls = raw.get("class") if isinstance(raw, dict) else None
    return f"rule {i} (class {cls!r})" if cls is not None else f"rule {i}"


def _parse_rules(raw_rules: object, path: str, classes: set[str]) -> list[Rule]:
    if not isinstance(raw_rules, list):
        raise ValueError(f"{path}: 'rule' must be an array of tables ([[rule]] entries)")
    out: list[Rule] = []
    for i, raw in enumerate(raw_rules, start=1):
        where = f"{path}: {_rule_label(i, raw)}"
        if not isinstance(raw, dict):
            raise ValueError(f"{where}: each rule must be a table with 'class' and match conditions")
        unknown = sorted(set(raw) - _RULE_KEYS)
        if unknown:
            raise ValueError(f"{where}: unknown key(s) {', '.join(unknown)} (allowed: {', '.join(sorted(_RULE_KEYS))})")
        cls = raw.get("class")
        if cls not in classes:
            raise ValueError(f"{where}: unknown class {cls!r} (one of: {', '.join(CLASSES)})")
        fields: dict = {"cls": cls, "note": raw.get("note")}
        for key in _REGEX_KEYS:
            if key in raw:
                fields[key] = rule_tables.check_regex(raw[key], where, key, prefix="(?i)")
        for key in _FLAG_KEYS:
            if key in raw:
                if not isinstance(raw[key], bool):
                    raise ValueError(f"{where}: '{key}' must be true or false, got {raw[key]!r}")
                fields[key] = raw[key]
        if not any(k in raw for k in (*_REGEX_KEYS, *_FLAG_KEYS)):
            raise ValueError(
                f"{where}: no match condition (give at least one of: {', '.join([*_REGEX_KEYS, *_FLAG_KEYS])})"
            )
        out.append(Rule(**fields))
    return out


def class_rules(user: Sequence[tuple[str, dict]] = ()) -> Rules:
    """The compute-class rule table: the user's rules (`user`: (file, its compute-class part)
    pairs, in order, from `traceview.ruleset`) first so they win, then the shipped ones.

    The shipped file has `[kinds]` (task kind -> class), `[groups]` (class -> group) and the ordered
    `[[rule]]` list. A user's part holds `[[rule]]` entries only (`[[rules]]`, the old spelling,
    too), with the same keys (see the module docstring). Raises ValueError naming the file and the
    rule for an unknown key or class, a rule without conditions, or an invalid regex.
    """
    base_path = RULES_FILE
    base = rule_tables.shipped("compute_classes")
    groups = base.get("groups")
    kinds = base.get("kinds", {})
    if not isinstance(groups, dict) or set(groups) != set(CLASSES) or not set(groups.values()) <= set(GROUPS):
        raise ValueError(f"{base_path}: [groups] must map each of {', '.join(CLASSES)} to one of {', '.join(GROUPS)}")
    if not isinstance(kinds, dict) or not set(kinds.values()) <= set(CLASSES):
        raise ValueError(f"{base_path}: [kinds] must map task kinds to classes ({', '.join(CLASSES)})")
    rules = _parse_rules(
        rule_tables.entries(base, base_path, allowed=("kinds", "groups")), str(base_path), set(CLASSES)
    )
    sources = [str(base_path)]
    user_rules: list[Rule] = []
    for label, doc in user:
        key = "rules" if "rules" in doc and "rule" not in doc else "rule"
        user_rules += _parse_rules(rule_tables.entries(doc, label, key=key), label, set(CLASSES))
        sources.insert(len(sources) - 1, label)
    rules = user_rules + rules
    return Rules(rules=tuple(rules), kinds=dict(kinds), groups=dict(groups), sources=tuple(sources))


# --- launching operator ------------------------------------------------------------------------

_THREAD = ["rank", "pid", "tid"]


def launch_ops(device_tasks: pl.DataFrame, host_events: pl.DataFrame) -> pl.Series:
    """Name of the launching host operator of each device task (String, null when unknown).

    Definition (see the module docstring): the innermost `operator` host event on the launch call's
    thread with start <= launch start < end, where the launch call is the `runtime` host event with
    the task's correlation id on the same rank. Returned in the order of `device_tasks`.

    Method (vectorised): the operators of each thread are swept as +1/-1 events; the nesting depth
    d at the launch time and each operator's own depth (level) are cumulative sums; the innermost
    open operator is then the latest-starting operator of level d (an as-of join per thread and
    level), kept only if it indeed still runs at the launch time. Every sort is by time only: the
    per-thread sums and as-of joins need time order within each thread, which a global time order
    gives without sorting by thread first (multi-key sorts cost most here). Operators of one thread nest in
    practice; if some overlapped without nesting, a task could get an outer open operator or null,
    never one that is not open at its launch.
    """
    n = device_tasks.height
    empty = pl.Series("launch_op", [None] * n, dtype=pl.String)
    if n == 0 or host_events.height == 0 or "correlation" not in device_tasks.columns:
        return empty
    runtime = (
        host_events.filter((pl.col("kind") == "runtime") & pl.col("correlation").is_not_null())
        .sort("start_ns")
        .unique(["rank", "correlation"], keep="first", maintain_order=True)
        .select(*_THREAD, "correlation", pl.col("start_ns").alias("_t"))
    )
    ops = (
        host_events.filter(
            (pl.col("kind") == "operator")
            & (pl.col("end_ns") > pl.col("start_ns"))
            & pl.col("pid").is_not_null()
            & pl.col("tid").is_not_null()
        )
        .select(*_THREAD, "start_ns", "end_ns", "name")
        # name breaks ties between operators with the same interval: the result never depends
        # on the order of the events in the file (found by tests/integration/test_properties.py)
        .sort("start_ns", "end_ns", "name", descending=[False, True, False], nulls_last=True)
        .with_row_index("_k")
    )
    if ops.height == 0 or runtime.height == 0:
        return empty
    # ends (order 0) before starts (order 1) at the same time; starts in operator order (outer first)
    sweep = pl.concat(
        [
            ops.select(
                *_THREAD,
                "_k",
                pl.col("start_ns").alias("_x"),
                pl.lit(1, pl.Int8).alias("_o"),
                pl.lit(1, pl.Int32).alias("_d"),
            ),
            ops.select(
                *_THREAD,
                "_k",
                pl.col("end_ns").alias("_x"),
                pl.lit(0, pl.Int8).alias("_o"),
                pl.lit(-1, pl.Int32).alias("_d"),
            ),
        ]
    ).sort("_x", "_o", "_k")
    sweep = sweep.with_columns(pl.col("_d").cum_sum().over(_THREAD).alias("_depth"))
    levels = sweep.filter(pl.col("_o") == 1).select("_k", pl.col("_depth").alias("_level"))
    ops = ops.join(levels, on="_k", how="left", maintain_order="left")

    tasks = (
        device_tasks.select("rank", "correlation")
        .with_row_index("_i")
        .filter(pl.col("correlation").is_not_null())
        .join(runtime, on=["rank", "correlation"], how="inner")
        .filter(pl.col("pid").is_not_null() & pl.col("tid").is_not_null())
        .sort("_t")
    )
    if tasks.height == 0:
        return empty
    # depth after every sweep event at or before the launch time (last row among equal times)
    at = tasks.join_asof(
        sweep.select(*_THREAD, "_x", "_depth"),
        left_on="_t",
        right_on="_x",
        by=_THREAD,
        strategy="backward",
        **_ASOF_KW,
    ).filter(pl.col("_depth") > 0)
    at = at.join_asof(
        ops.select(*_THREAD, pl.col("_level").alias("_depth"), "start_ns", "end_ns", "name"),
        left_on="_t",
        right_on="start_ns",
        by=[*_THREAD, "_depth"],
        strategy="backward",
        **_ASOF_KW,
    ).filter(pl.col("end_ns") > pl.col("_t"))
    found = (
        pl.DataFrame({"_i": pl.int_range(n, eager=True, dtype=pl.UInt32)})
        .join(at.select(pl.col("_i").cast(pl.UInt32), "name"), on="_i", how="left")
        .sort("_i")
    )
    return found["name"].alias("launch_op")


# --- classification ----------------------------------------------------------------------------

_KEY_COLS = ["kind", "name", "launch_op", "op_type", "core_type", "_cube", "_vector"]


def _class_expr(rules: Rules) -> pl.Expr:
    expr = None
    for kind, cls in rules.kinds.items():
        cond = pl.col("kind") == kind
        expr = pl.when(cond).then(pl.lit(cls)) if expr is None else expr.when(cond).then(pl.lit(cls))
    for rule in rules.rules:
        cond = rule.condition()
        expr = pl.when(cond).then(pl.lit(rule.cls)) if expr is None else expr.when(cond).then(pl.lit(rule.cls))
    if expr is None:
        return pl.lit(None, pl.String)
    return expr.otherwise(pl.lit(None, pl.String))  # null: no kind entry and no rule matched


def classify(device_tasks: pl.DataFrame, host_events: pl.DataFrame | None, rules: Rules) -> pl.DataFrame:
    """`device_tasks` with three added columns (input not modified):

    - `launch_op` (String): the launching host operator (see `launch_ops`), null when unknown;
    - `compute_class` (String): the fine class (`CLASSES`): `rules.kinds[kind]` when the task kind
      is in that table, else the class of the first rule that matches, else "other";
    - `compute_group` (String): the class's group (`rules.groups`);
    - `classified` (Boolean): a kind entry or a rule matched. False means unclassified (class
      "other" by default); a rule may also put a task in "other" on purpose (e.g. a sleep kernel),
      which is classified.

    The rules are evaluated once per distinct (kind, name, launch_op, op_type, core_type, cube>0,
    vector>0) combination and joined back, so the cost grows with distinct kernels, not tasks.
    """
    if host_events is None:
        host_events = pl.DataFrame()
    added = ("launch_op", "compute_class", "compute_group", "classified")
    tasks = device_tasks.drop([c for c in added if c in device_tasks.columns])  # classified before
    tasks = tasks.with_columns(launch_ops(tasks, host_events))
    flags = [
        (pl.col(c) > 0).fill_null(False).alias(f"_{k}") if c in tasks.columns else pl.lit(False).alias(f"_{k}")
        for k, c in _FLAG_KEYS.items()
    ]
    missing = [pl.lit(None, pl.String).alias(c) for c in ("op_type", "core_type") if c not in tasks.columns]
    keyed = tasks.with_columns(*flags, *missing)
    keys = keyed.select(_KEY_COLS).unique()
    # conditions read the flag columns through their source names
    keys = keys.with_columns(
        pl.when(pl.col("_cube")).then(1).otherwise(0).alias("aic_mac_ns"),
        pl.when(pl.col("_vector")).then(1).otherwise(0).alias("aiv_vec_ns"),
    ).with_columns(_class_expr(rules).alias("compute_class"))
    keys = keys.with_columns(
        pl.col("compute_class").is_not_null().alias("classified"), pl.col("compute_class").fill_null("other")
    )
    keys = keys.with_columns(
        pl.col("compute_class").replace_strict(rules.groups, return_dtype=pl.String).alias("compute_group")
    ).select(*_KEY_COLS, "compute_class", "compute_group", "classified")
    out = keyed.join(keys, on=_KEY_COLS, how="left", maintain_order="left", nulls_equal=True)
    return out.drop("_cube", "_vector", *[c.meta.output_name() for c in missing])


# --- summaries ---------------------------------------------------------------------------------


#: The columns `classify` adds to device_tasks (what a rank caches of `classified_tasks`: the rest
#: are the device tasks themselves).
CLASS_COLUMNS = ("launch_op", "compute_class", "compute_group", "classified")


@analysis(
    "classified_tasks",
    inputs={"device_tasks": "device_tasks", "host_events": "host_events", "rules": "rules.compute_classes"},
    scope="rank",
    keys=("rank", "stream", "start_ns"),
    stored_columns=CLASS_COLUMNS,
)
def classified_tasks(device_tasks: pl.DataFrame, host_events: pl.DataFrame, rules: Rules) -> pl.DataFrame:
    """device_tasks with compute_class, compute_group and launch_op columns, by the trace's
    compute-class rules (a user's first: `traceview.ruleset`). See `classify`."""
    return classify(device_tasks, host_events, rules)


def _with_total(per: pl.DataFrame, classified: pl.DataFrame, by: list[str]) -> pl.DataFrame:
    """`per` with `_total`: the sum of all task durations (ns) of its group-by key."""
    if not by:
        return per.with_columns(pl.lit(classified["dur_ns"].sum(), dtype=pl.Int64).alias("_total"))
    totals = classified.group_by(by).agg(pl.col("dur_ns").sum().alias("_total"))
    return per.join(totals, on=by, how="left", nulls_equal=True)


@analysis(
    "compute_classes",
    inputs={"classified": use("classified_tasks")},
    scope="rank",
    keys=("rank", "class"),
)
def class_summary(classified: pl.DataFrame, by: Sequence[str] = ("rank",)) -> pl.DataFrame:
    """Device time per compute class, per group-by key (default: per rank).

    Columns: `by`..., class, group, time_us (sum of the durations of the key's tasks of that class,
    µs; raw sum, not a union: concurrent tasks on several streams all count), share (time_us /
    the key's total device-task time, all classes including communication and memory, 0-1), count
    (tasks). Only classes with at least one task appear; sorted by key, then time_us descending.
    """
    by = list(by)
    per = classified.group_by(*by, "compute_class", "compute_group").agg(
        pl.col("dur_ns").sum().alias("_t"), pl.len().alias("count")
    )
    return (
        _with_total(per, classified, by)
        .select(
            *by,
            pl.col("compute_class").alias("class"),
            pl.col("compute_group").alias("group"),
            (pl.col("_t") / 1000).alias("time_us"),
            pl.when(pl.col("_total") > 0).then(pl.col("_t") / pl.col("_total")).otherwise(0.0).alias("share"),
            pl.col("count").cast(pl.Int64),
        )
        .sort(*by, "time_us", "class", descending=[False] * len(by) + [True, False], nulls_last=True)
    )


@analysis(
    "top_kernels",
    inputs={"classified": use("classified_tasks")},
    scope="rank",
    keys=("rank", "name"),
)
def top_kernels(
    classified: pl.DataFrame, n: int = 10, by: Sequence[str] = ("rank",), ranks: Sequence[int] | None = None
) -> pl.DataFrame:
    """The `n` task names (with their class) that took the most device time, per group-by key,
    over the tasks of `ranks` (all ranks when None).

    Columns: `by`..., name, class, count (tasks), total_us (sum of durations, µs), mean_us
    (total_us / count), share (total_us / the key's total device-task time, 0-1). Sorted by key,
    then total_us descending (ties by name).
    """
    by = list(by)
    if ranks is not None:
        classified = classified.filter(pl.col("rank").is_in(list(ranks)))
    per = _with_total(
        classified.group_by(*by, "name", "compute_class").agg(
            pl.len().alias("count"), pl.col("dur_ns").sum().alias("_t")
        ),
        classified,
        by,
    ).sort(*by, "_t", "name", descending=[False] * len(by) + [True, False], nulls_last=True)
    ranked = per.with_columns(pl.int_range(pl.len()).over(by).alias("_r")) if by else per.with_row_index("_r")
    return ranked.filter(pl.col("_r") < n).select(
        *by,
        "name",
        pl.col("compute_class").alias("class"),
        pl.col("count").cast(pl.Int64),
        (pl.col("_t") / 1000).alias("total_us"),
        (pl.col("_t") / 1000 / pl.col("count")).alias("mean_us"),
        pl.when(pl.col("_total") > 0).then(pl.col("_t") / pl.col("_total")).otherwise(0.0).alias("share"),
    )


@analysis(
    "unclassified_share",
    inputs={"classified": use("classified_tasks")},
    scope="rank",
)
def unclassified_share(classified: pl.DataFrame) -> pl.DataFrame:
    """Per rank: how much device time no rule classified.

    Columns: rank, other_us (sum of durations of unclassified tasks, µs: class "other" because no
    rule matched, not by a rule's choice), total_us (sum of all device-task durations, µs),
    unclassified_share (other_us / total_us, 0-1; 0 when total is 0).
    """
    return (
        classified.group_by("rank")
        .agg(
            pl.col("dur_ns").filter(~pl.col("classified")).sum().alias("_o"),
            pl.col("dur_ns").sum().alias("_t"),
        )
        .select(
            "rank",
            (pl.col("_o") / 1000).alias("other_us"),
            (pl.col("_t") / 1000).alias("total_us"),
            pl.when(pl.col("_t") > 0).then(pl.col("_o") / pl.col("_t")).otherwise(0.0).alias("unclassified_share"),
        )
        .sort("rank", nulls_last=True)
    )
