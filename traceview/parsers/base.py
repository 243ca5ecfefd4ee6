"""What every parser returns: the canonical frames of one rank, its metadata and its warnings."""

from __future__ import annotations

from dataclasses import dataclass, field

import polars as pl

from traceview import schema
from traceview.errors import Warnings
from traceview.parsers import kinds
from traceview.safe_text import path_text

#: Canonical collective of a communication task, from its "Collective name" (Kineto args) or, when
#: there is none, from the task name (Ascend `hcom_allReduce__712_0_1`, NCCL kernel names, symmetric-
#: memory kernels). Ordered (first match wins) case-insensitive regexes matched against the text
#: lower-cased with every non-alphanumeric character removed (`_allgather_base` -> `allgatherbase`).
COLLECTIVE_PATTERNS: tuple[tuple[str, str], ...] = (
    (r"allreduce|crossdevicereduce", "allreduce"),
    (r"reducescatter", "reduce_scatter"),
    (r"allgather", "allgather"),
    (r"alltoall", "alltoall"),
    (r"sendrecv", "sendrecv"),
    (r"broadcast", "broadcast"),
    (r"barrier", "barrier"),
    (r"coalesced", "coalesced"),
    (r"send", "send"),
    (r"recv|receive", "recv"),
    (r"reduce", "reduce"),
    (r"gather", "gather"),
    (r"scatter", "scatter"),
)


def collective_of(text: pl.Expr, keep_unmatched: bool) -> pl.Expr:
    """Canonical collective (see COLLECTIVE_PATTERNS) of a name; unmatched text stays as written
    (lower-cased) when `keep_unmatched`, else null."""
    key = text.str.to_lowercase().str.replace_all(r"[^a-z0-9]", "")
    out = pl.when(text.is_null()).then(pl.lit(None, pl.String))
    for pattern, canonical in COLLECTIVE_PATTERNS:
        out = out.when(key.str.contains(pattern)).then(pl.lit(canonical))
    return out.otherwise(text.str.to_lowercase() if keep_unmatched else pl.lit(None, pl.String))


def fill_collective(tasks: pl.DataFrame, communication: pl.DataFrame | None = None) -> pl.DataFrame:
    """Communication tasks without a `collective` get it from their name; Ascend tasks without a
    `process_group` get the communicator group of the same op in communication.json (`comm_group`).
    """
    if tasks.is_empty() or "name" not in tasks.columns or "kind" not in tasks.columns:
        return tasks
    for col in ("collective", "process_group"):
        if col not in tasks.columns:
            tasks = tasks.with_columns(pl.lit(None, pl.String).alias(col))
    is_comm = pl.col("kind") == "communication"
    if not tasks["kind"].eq("communication").any():  # nothing to fill: a few operations saved
        # as below: only a communication task keeps a collective
        no_collective = tasks["collective"].null_count() == tasks.height
        return tasks if no_collective else tasks.with_columns(pl.lit(None, pl.String).alias("collective"))
    # Match the (few, long) names of communication tasks once each, not every task's name.
    from_name = (
        tasks.filter(is_comm & pl.col("collective").is_null())
        .select("name")
        .unique()
        .with_columns(collective_of(pl.col("name"), False).alias("_from_name"))
    )
    tasks = (
        tasks.join(from_name, on="name", how="left", maintain_order="left")
        .with_columns(pl.when(is_comm).then(pl.coalesce("collective", "_from_name")).alias("collective"))
        .drop("_from_name")
    )
    if communication is not None and communication.height and "op_name" in communication.columns:
        groups = (
            communication.drop_nulls(["op_name", "comm_group"])
            .unique(["rank", "op_name"], keep="first", maintain_order=True)
            .select(
                pl.col("rank").alias("_rank"), pl.col("op_name").alias("name"), pl.col("comm_group").alias("_group")
            )
        )
        tasks = (
            tasks.with_columns(pl.col("rank").alias("_rank"))
            .join(groups, on=["_rank", "name"], how="left", nulls_equal=True, maintain_order="left")
            .with_columns(
                pl.when(is_comm)
                .then(pl.coalesce("process_group", "_group"))
                .otherwise("process_group")
                .alias("process_group")
            )
            .drop("_rank", "_group")
        )
    return tasks


@dataclass
class ParsedRank:
    """One rank's canonical frames (table name -> frame conforming to `traceview.schema`).

    `frames` must hold every table of `schema.TABLES` except `ranks`; `meta` holds the columns of the
    `ranks` table (rank, world_size, format, source, device_name, device_type); `warnings` holds
    one line per kind of recoverable oddity (see `traceview.errors.Warnings`). `analyses`: the
    rank-local analyses computed where the rank was parsed (`traceview.per_rank`), or None;
    `analyses_rules`: the digest of the rules they were computed with (`RuleSet.digest`, "" =
    the shipped ones). `packed`: the cache-entry files this rank was read from (`traceview.cache.unpack`), or None.
    `group`: set when the rank was parsed with other small ranks (`RankGroup`): its frames are then
    the group's rows whose `rank` is `index`, and `frames` is empty.
    """

    frames: dict[str, pl.DataFrame]
    meta: dict
    warnings: list[str] = field(default_factory=list)
    analyses: dict[str, bytes] | None = None
    analyses_rules: str = ""
    packed: dict[str, bytes] | None = field(default=None, repr=False)
    group: RankGroup | None = field(default=None, repr=False)
    index: int = 0

    @classmethod
    def build(cls, frames: dict[str, pl.DataFrame], meta: dict, warnings: list[str]) -> ParsedRank:
        """Conform the given frames to the schema (missing tables become empty) and fill `rank`."""
        rank = meta.get("rank")
        out = {}
        for table in schema.TABLES:
            if table == "ranks":
                continue
            df = frames.get(table)
            if df is None:
                out[table] = schema.empty(table)
                continue
            if "rank" not in df.columns or df["rank"].null_count() == df.height:
                df = df.with_columns(pl.lit(rank, dtype=pl.Int64).alias("rank"))
            out[table] = schema.conform(df, table)
        net = Warnings(meta.get("source") or "")
        for table, what in TIMED_TABLES.items():
            out[table] = drop_bad_times(out[table], what, net)
        tasks, copies = drop_duplicate_tasks(out["device_tasks"])
        warnings = list(warnings) + net.messages()
        if copies:
            warnings.append(f"{meta.get('source')}: {copies:,} {DUPLICATE_TASKS}")
        out["device_tasks"] = tasks
        nul = 0
        for table in NAMED_TABLES:
            out[table], n = replace_nul(out[table])
            nul += n
        if nul:
            warnings.append(f"{meta.get('source')}: {nul:,} {NUL_NAMES}")
        tasks = out["device_tasks"]
        out["device_tasks"] = schema.conform(fill_collective(tasks, out["ascend_communication"]), "device_tasks")
        full_meta = {col: meta.get(col) for col in schema.RANKS}
        full_meta["graph_capture"] = is_graph_capture(out["host_events"])
        full_meta["source"] = None if meta.get("source") is None else path_text(meta["source"])
        return cls(frames=out, meta=full_meta, warnings=[path_text(w) for w in warnings])


@dataclass
class RankGroup:
    """Small ranks parsed, cached and assembled together (`traceview.rank_groups`), so that a
    folder of thousands of small ranks costs a few polars operations per group, not per rank.

    `frames`: every table of the members concatenated in member order, each row's `rank` the
    member's index (0..k-1) among the members that parsed; `metas` / `warnings`: per such member.
    `errors`: per source of the group, in order, the error line of a source that could not be
    read (None for one that parsed). `analyses`: the rank-local analyses of all members at once
    (`traceview.per_rank`, `rank` = member index), or None, computed with the rules whose digest
    is `analyses_rules`. `packed`: the cache-entry files."""

    frames: dict[str, pl.DataFrame]
    metas: list[dict]
    warnings: list[list[str]]
    errors: list[str | None]
    analyses: dict[str, bytes] | None = None
    analyses_rules: str = ""
    packed: dict[str, bytes] | None = field(default=None, repr=False)

    @property
    def complete(self) -> bool:
        """Whether every source of the group parsed (only such a group is cached)."""
        return all(e is None for e in self.errors)

    def members(self) -> list[ParsedRank | str]:
        """Per source of the group, in order: its ParsedRank (frames in the group), or its error line."""
        out: list[ParsedRank | str] = []
        index = 0
        for error in self.errors:
            if error is not None:
                out.append(error)
                continue
            out.append(ParsedRank({}, self.metas[index], self.warnings[index], group=self, index=index))
            index += 1
        return out


#: The columns that make two device tasks the same task: one stream runs one task at a time, so
#: two rows equal in all of these are one task written twice (a buggy trace merge, a repeated CSV
#: row); counting both would double its time in every sum.
DUPLICATE_KEY = ("device", "stream", "kind", "name", "start_ns", "end_ns", "correlation")
DUPLICATE_TASKS = "exact duplicate device tasks (same name, stream, start and end) dropped"


def is_graph_capture(host_events: pl.DataFrame) -> bool:
    """Whether a rank's trace captures CUDA/HIP graphs and replays none: runtime calls that begin a
    stream capture and no graph launch (`kinds.GRAPH_CAPTURE_PATTERN` / `GRAPH_LAUNCH_PATTERN`):
    the capture trace of a graph-replaying run (schema `ranks.graph_capture`)."""
    if host_events.is_empty() or not host_events["name"].str.contains("Capture", literal=True).any():
        return False  # (a literal search first: most traces hold no capture call at all)
    runtime = host_events.filter(pl.col("kind") == "runtime").select(pl.col("name").unique())["name"]
    return bool(
        runtime.str.contains(kinds.GRAPH_CAPTURE_PATTERN).any()
        and not runtime.str.contains(kinds.GRAPH_LAUNCH_PATTERN).any()
    )


#: A time beyond this many ns from its clock's zero (about 146 years) is no real time: the
#: difference of two such times (a span, a duration) would overflow Int64 and wrap around.
TIME_BOUND_NS = 1 << 62
#: What each timed table's rows are called in warnings.
TIMED_TABLES = {"device_tasks": "device tasks", "host_events": "host events"}


def bad_time_warnings(what: str) -> tuple[str, str, str]:
    """The three warnings (missing time, end before start, time out of range) for rows called `what`."""
    return (
        f"{what} with a missing start or end time dropped",
        f"{what} with an end before their start (a negative duration) dropped",
        f"{what} with a time beyond ±2**62 ns (146 years from the clock's zero) dropped",
    )


def _times_usable(start: pl.Series, end: pl.Series, open_end: bool = False) -> bool:
    """Whether every row has both times (`open_end`: its start; an end may be missing), within
    ±TIME_BOUND_NS, and ends at or after its start."""
    if start.null_count() or (end.null_count() and not open_end):
        return False
    bounds = [v for v in (start.min(), start.max(), end.min(), end.max()) if v is not None]
    if any(abs(v) >= TIME_BOUND_NS for v in bounds):
        return False
    return not (end < start).any()


def drop_bad_times(
    df: pl.DataFrame,
    what: str,
    warn: Warnings,
    start: str = "start_ns",
    end: str = "end_ns",
    open_end: bool = False,
) -> pl.DataFrame:
    """`df` without the rows no number can use, each kind counted in `warn`
    (`bad_time_warnings`): a null start or end, an end before the start, a time whose magnitude
    reaches TIME_BOUND_NS. Every reader calls it on its device tasks and host events before their
    steps are built, and `ParsedRank.build` again on what it is given (any reader). `start` /
    `end`: the time columns (ns); `open_end`: a missing end is no fault (an allocation not released
    within the trace), only a missing start is."""
    if df.is_empty() or not {start, end} <= set(df.columns):
        return df
    if _times_usable(df[start], df[end], open_end):  # the common case, in a few Series calls
        return df
    first, last = pl.col(start), pl.col(end)
    missing = first.is_null() if open_end else first.is_null() | last.is_null()
    beyond = [(t >= TIME_BOUND_NS) | (t <= -TIME_BOUND_NS) for t in (first, last)]  # (abs(-2**63) wraps)
    huge = ~missing & (beyond[0] | beyond[1]).fill_null(False)
    negative = ~missing & ~huge & (last < first).fill_null(False)
    counts = df.select(missing.sum().alias("m"), negative.sum().alias("n"), huge.sum().alias("h")).row(0)
    if not any(counts):
        return df
    for message, n in zip(bad_time_warnings(what), counts):
        warn.add(message, n)
    return df.filter(~(missing | huge | negative))


#: Tables whose `name` is shown to people (text, HTML, CSV): NUL characters there are replaced.
NAMED_TABLES = ("device_tasks", "host_events", "device_annotations")
NUL_NAMES = "event names with NUL characters: those replaced by U+FFFD"


def replace_nul(df: pl.DataFrame) -> tuple[pl.DataFrame, int]:
    """`df` with NUL characters in `name` replaced by U+FFFD (a NUL is valid JSON, `\\u0000`, but
    ends C strings, breaks CSV readers and is a parse error in HTML), and how many names had one."""
    if df.is_empty() or "name" not in df.columns:
        return df, 0
    has_nul = df["name"].str.contains("\x00", literal=True)
    n = int(has_nul.sum())
    if not n:
        return df, 0
    return df.with_columns(pl.col("name").str.replace_all("\x00", "\ufffd", literal=True)), n


def drop_duplicate_tasks(tasks: pl.DataFrame) -> tuple[pl.DataFrame, int]:
    """`tasks` without the repeated copies of a task (the first is kept, order unchanged), and how
    many copies were dropped. Duplicates: equal in every DUPLICATE_KEY column (nulls equal)."""
    if tasks.height < 2:
        return tasks, 0
    first = tasks.select(pl.struct(list(DUPLICATE_KEY)).is_first_distinct()).to_series()
    copies = tasks.height - int(first.sum())
    return (tasks.filter(first), copies) if copies else (tasks, 0)
