"""A profile as one Chrome-trace JSON document that Perfetto UI (ui.perfetto.dev) and
chrome://tracing open: `traceview export PATH --format perfetto -o out.json`.

One process per rank ("rank N · device · format"), holding:

- the host threads' events (name, category and correlation / External id as written) and one
  thread per device stream with its tasks (a stream that runs communication is named so: "stream
  7 · communication"; Ascend's HCCL ops, which have no stream, are the "HCCL" thread);
- a flow arrow from each launch call to the device task it launched (Perfetto draws them on
  click), graph replays included;
- three overlay tracks from traceview's own analyses: "iteration" (each step's iteration window,
  with iteration_us and its rule), "iteration terms" and "phases (wall time)" (every instant of
  every iteration, labelled by the term and the wall phase it counts for: the segments of
  `Trace.iteration_segments()`, consecutive segments of one label merged, so that the durations of
  one label inside one step add up to the summary's number exactly);
- the findings on the rank as instant events at its first iteration (or first task), title in
  the name, message and advice in the args; profile-wide findings on the first rank.

Times are written exactly: `ts` and `dur` are µs with three decimals printed from the Int64 ns
(never through a float, which would round Ascend's epoch-based clocks). Everything is built with
polars expressions (`struct.json_encode` for the text fields, which JSON-escapes them).
"""

from __future__ import annotations

import polars as pl

from traceview.terms import ITERATION_LABELS, PHASES

#: Thread ids of the overlay tracks and the offset of device stream threads (host tids are the
#: trace's own).
STREAM_TID = 1_000_000_000
HCCL_TID = STREAM_TID - 1
OVERLAYS = {"iteration": 2_000_000_001, "iteration terms": 2_000_000_002, "phases (wall time)": 2_000_000_003}
#: The track of the iteration windows and the findings.
TRACK = pl.lit(OVERLAYS["iteration"], pl.Int64)


def _us_text(ns: pl.Expr) -> pl.Expr:
    """Int64 ns -> the exact µs number as JSON text ("-12.345"; 3 decimals)."""
    sign = pl.when(ns < 0).then(pl.lit("-")).otherwise(pl.lit(""))
    mag = ns.abs()
    return pl.concat_str(sign, (mag // 1000).cast(pl.String), pl.lit("."), (mag % 1000).cast(pl.String).str.zfill(3))


def _lines(frame: pl.DataFrame) -> pl.Series:
    """One JSON object per row: every column but ts_ns / dur_ns as written by polars' JSON encoder
    (an `args` struct column becomes the args object), then ts (and dur) printed exactly."""
    fields = [c for c in frame.columns if c not in ("ts_ns", "dur_ns")]
    head = pl.struct(*fields).struct.json_encode().str.strip_suffix("}")
    parts = [head, pl.lit(',"ts":'), _us_text(pl.col("ts_ns"))]
    if "dur_ns" in frame.columns:
        parts += [pl.lit(',"dur":'), _us_text(pl.col("dur_ns"))]
    return frame.select(pl.concat_str(*parts, pl.lit("}")).alias("line"))["line"]


def _event(
    ph: str,
    name: pl.Expr,
    cat: str | pl.Expr,
    tid: pl.Expr,
    args: list[str],
    ts: pl.Expr,
    dur: pl.Expr | None = None,
    **extra: str,
) -> list[pl.Expr]:
    """The columns of one kind of event (`_lines` writes them): ph, name, cat, pid, tid, the
    `extra` constant fields, args (a struct of the `args` columns), ts_ns and dur_ns."""
    cat = pl.lit(cat) if isinstance(cat, str) else cat
    cols = [pl.lit(ph).alias("ph"), name.alias("name"), cat.alias("cat"), pl.col("pid"), tid.alias("tid")]
    cols += [pl.lit(v).alias(k) for k, v in extra.items()]
    cols += [pl.struct(*args).alias("args"), ts.alias("ts_ns")]
    return cols + ([dur.alias("dur_ns")] if dur is not None else [])


def _named(kind: str, frame: pl.DataFrame, value: pl.Expr, tid: bool = True) -> pl.Series:
    """Metadata events of the (pid[, tid]) rows of `frame`: process_name / thread_name (args
    {"name": value}) or process_sort_index / thread_sort_index (args {"sort_index": value})."""
    key = "sort_index" if kind.endswith("sort_index") else "name"
    cols = [pl.lit("M").alias("ph"), pl.lit(kind).alias("name"), "pid", *(["tid"] if tid else [])]
    return _lines(frame.select(*cols, pl.struct(value.alias(key)).alias("args"), pl.lit(0, pl.Int64).alias("ts_ns")))


def _merged_runs(segs: pl.DataFrame, label: str) -> pl.DataFrame:
    """Consecutive segments of one rank and step with the same `label` merged: rank, step, label,
    ts_ns, dur_ns."""
    run = (
        (pl.col(label) != pl.col(label).shift(1))
        | (pl.col("step") != pl.col("step").shift(1))
        | (pl.col("seg_start_ns") != pl.col("seg_end_ns").shift(1))
    ).fill_null(True)
    return (
        segs.filter(pl.col(label).is_not_null())
        .sort("rank", "seg_start_ns")
        .with_columns(run.cum_sum().over("rank").alias("_run"))
        .group_by("rank", "_run", maintain_order=True)
        .agg(pl.col("step").first(), pl.col(label).first(), pl.col("seg_start_ns").min(), pl.col("seg_end_ns").max())
        .select(
            "rank",
            "step",
            label,
            pl.col("seg_start_ns").alias("ts_ns"),
            (pl.col("seg_end_ns") - pl.col("seg_start_ns")).alias("dur_ns"),
        )
    )


def _device(trace, pid_of: pl.DataFrame) -> list[pl.Series]:
    """The device streams' threads and tasks."""
    tid = pl.when(pl.col("stream").is_null()).then(pl.lit(HCCL_TID, pl.Int64)).otherwise(STREAM_TID + pl.col("stream"))
    tasks = trace.device_tasks.join(
        pid_of, on="rank", how="inner", nulls_equal=True, maintain_order="left"
    ).with_columns(tid.alias("tid"))
    lanes = (
        tasks.group_by("pid", "tid", "stream")
        .agg((pl.col("kind") == "communication").any().alias("_comm"))
        .sort("pid", "tid")
    )
    lane_name = (
        pl.when(pl.col("stream").is_null())
        .then(pl.lit("HCCL"))
        .otherwise(
            pl.format("stream {}", "stream")
            + pl.when(pl.col("_comm")).then(pl.lit(" · communication")).otherwise(pl.lit(""))
        )
    )
    args = ["correlation", "step", "collective", "op_type"]
    events = tasks.select(
        _event("X", pl.col("name"), pl.col("kind"), pl.col("tid"), args, pl.col("start_ns"), pl.col("dur_ns"))
    )
    return [_named("thread_name", lanes, lane_name), _named("thread_sort_index", lanes, pl.col("tid")), _lines(events)]


def _host(trace, pid_of: pl.DataFrame) -> list[pl.Series]:
    """The host threads' events, and a flow from each launch call to the tasks it launched."""
    host = trace.host_events.join(pid_of, on="rank", how="inner", nulls_equal=True, maintain_order="left").with_columns(
        pl.col("tid").fill_null(0)
    )
    threads = host.select("pid", "tid").unique().sort("pid", "tid")
    args = ["correlation", "external_id"]
    events = host.select(
        _event("X", pl.col("name"), pl.col("cat"), pl.col("tid"), args, pl.col("start_ns"), pl.col("dur_ns"))
    )
    launch = (
        host.filter((pl.col("kind") == "runtime") & pl.col("correlation").is_not_null())
        .sort("start_ns")
        .group_by("rank", "correlation")
        .agg(pl.col("pid").first(), pl.col("tid").first(), pl.col("start_ns").first())
    )
    tasks = trace.device_tasks.filter(pl.col("correlation").is_not_null()).join(
        launch.rename({"start_ns": "_launch_ns", "tid": "_host_tid"}),
        on=["rank", "correlation"],
        how="inner",
        maintain_order="left",
    )
    tid = pl.when(pl.col("stream").is_null()).then(pl.lit(HCCL_TID, pl.Int64)).otherwise(STREAM_TID + pl.col("stream"))
    flow_id = pl.int_range(pl.len(), dtype=pl.Int64) + 1
    tasks = tasks.with_columns(flow_id.alias("id"), tid.alias("tid"))
    common = [pl.lit("launch").alias("name"), pl.lit("flow").alias("cat"), "pid", "id"]
    starts = tasks.select(
        pl.lit("s").alias("ph"), *common, pl.col("_host_tid").alias("tid"), pl.col("_launch_ns").alias("ts_ns")
    )
    ends = tasks.select(
        pl.lit("f").alias("ph"), *common, "tid", pl.lit("e").alias("bp"), pl.col("start_ns").alias("ts_ns")
    )
    return [
        _named("thread_name", threads, pl.format("host thread {}", "tid")),
        _lines(events),
        _lines(starts),
        _lines(ends),
    ]


def _overlays(trace, pid_of: pl.DataFrame) -> list[pl.Series]:
    """The iteration, terms and phases tracks."""
    windows = trace.iteration_breakdown().join(pid_of, on="rank", how="inner", nulls_equal=True, maintain_order="left")
    segs = trace.iteration_segments().join(pid_of, on="rank", how="inner", nulls_equal=True, maintain_order="left")
    tracks = pid_of.join(pl.DataFrame({"track": list(OVERLAYS), "tid": list(OVERLAYS.values())}), how="cross")
    out = [
        _named("thread_name", tracks, pl.col("track")),
        _named("thread_sort_index", tracks, pl.col("tid") - 2_000_000_000),
    ]
    start, end = pl.col("iteration_start_ns"), pl.col("iteration_end_ns")
    step = _event(
        "X", pl.format("step {}", "step"), "iteration", TRACK, ["iteration_us", "iteration_rule"], start, end - start
    )
    out.append(_lines(windows.select(step)))
    labels = {**ITERATION_LABELS, **{p: p for p in PHASES}}
    for label, track in (("term", "iteration terms"), ("wall_phase", "phases (wall time)")):
        runs = _merged_runs(segs, label).join(pid_of, on="rank", how="inner", nulls_equal=True, maintain_order="left")
        out.append(
            _lines(
                runs.select(
                    _event(
                        "X",
                        pl.col(label).replace_strict(labels, default=pl.col(label)),
                        label,
                        pl.lit(OVERLAYS[track], pl.Int64),
                        ["step"],
                        pl.col("ts_ns"),
                        pl.col("dur_ns"),
                    )
                )
            )
        )
    return out


def _findings(trace, pid_of: pl.DataFrame) -> pl.Series:
    """The findings as instant events at each rank's first iteration (or first task)."""
    first = (
        pl.concat(
            [
                trace.iteration_breakdown().select("rank", pl.col("iteration_start_ns").alias("t")),
                trace.device_tasks.select("rank", pl.col("start_ns").alias("t")),
            ]
        )
        .group_by("rank")
        .agg(pl.col("t").min())
        .sort("rank")
    )
    found = trace.findings()
    rank = pl.coalesce("rank", pl.lit(pid_of["rank"][0] if pid_of.height else None, pl.Int64))
    found = found.with_columns(rank.alias("rank")).join(
        pid_of, on="rank", how="inner", nulls_equal=True, maintain_order="left"
    )
    found = found.join(first, on="rank", how="left", nulls_equal=True, maintain_order="left")
    fields = ["rule", "severity", "term", "message", "advice"]
    name = pl.format("finding: {}", "title")
    return _lines(found.select(_event("i", name, "finding", TRACK, fields, pl.col("t").fill_null(0), s="p")))


def perfetto_lines(trace) -> pl.Series:
    """Every event of the export (module docstring), one JSON object per row."""
    pids = (
        trace.ranks.select("rank", "device_name", "format")
        .with_row_index("pid")
        .with_columns(pl.col("pid").cast(pl.Int64))
    )
    pid_of = pids.select("rank", "pid")
    process = pl.format(
        "rank {} · {} · {}",
        pl.col("rank").cast(pl.String).fill_null("?"),
        pl.col("device_name").fill_null("unknown device"),
        "format",
    )
    parts = [
        _named("process_name", pids, process, tid=False),
        _named("process_sort_index", pids, pl.col("pid"), tid=False),
    ]
    parts += _device(trace, pid_of) + _host(trace, pid_of) + _overlays(trace, pid_of) + [_findings(trace, pid_of)]
    return pl.concat(parts)


def perfetto_json(trace) -> bytes:
    """The export as one Chrome-trace JSON document (bytes)."""
    lines = perfetto_lines(trace)
    body = lines.str.join(",\n")[0] if lines.len() else ""
    return ('{"displayTimeUnit":"ns","traceEvents":[\n' + body + "\n]}\n").encode()
