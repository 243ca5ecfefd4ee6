"""The canvas timeline's data, built once per dashboard from the Trace: lanes and items.

Every drawn interval is an *item* (`traceview.analysis.timeline_tracks`): device tasks (one lane
per rank and stream, named by role: "stream 7 · compute", "stream 20 · NCCL", "HCCL"), host events
(one lane per rank, thread and call depth), and per rank two tracks: the steps (iteration windows
of `Trace.iteration_breakdown`) and the terms (`Trace.iteration_segments`: where each instant of
each iteration went), and a memory lane (no items: the overlays draw its allocated and reserved
lines) where the rank recorded device memory. Items of each family are sorted by start and numbered: an item's id is
its family's base plus its row, so a detail lookup is a slice. Times stay Int64 ns; the API sends
them relative to `origin_ns`.
"""

from __future__ import annotations

import threading

import polars as pl

from traceview.analysis import gaps, memory
from traceview.analysis import timeline as tl
from traceview.analysis import timeline_tracks as tt

FAMILIES = ("tracks", "device", "host")
KIND_ORDER = {"steps": 0, "terms": 1, "device": 2, "memory": 3, "host": 4}
#: The columns of a memory lane row (`memory_lanes`): it holds no items, the overlays draw it.
LANE_COLUMNS = {"rank": pl.Int64, "key": pl.String, "lane_kind": pl.String, "label": pl.String, "depth": pl.Int64}
DETAIL_COLUMNS = {
    "device": ("kind", "stream", "step", "correlation", "launch_op", "launch_delay_ns"),
    "host": ("kind", "stream", "correlation"),
    "tracks": ("kind",),
}


def _empty_items() -> pl.DataFrame:
    return pl.DataFrame(
        schema={
            "rank": pl.Int64,
            "start_ns": pl.Int64,
            "end_ns": pl.Int64,
            "name": pl.String,
            "cls": pl.String,
            "kind": pl.String,
            "key": pl.String,
        }
    )


class TimelineModel:
    """Lanes and items of one profile (module docstring)."""

    def __init__(
        self,
        device: pl.DataFrame,
        host: pl.DataFrame,
        tracks: pl.DataFrame,
        memory: pl.DataFrame | None = None,
        memory_span: tuple[int, int] | None = None,
    ):
        """Each frame: rank, start_ns, end_ns, name, cls, kind, key (lane key within its family:
        the stream / "tid:depth" / "steps" or "terms", as text), plus its detail columns.
        `memory`: the ranks' memory lanes (`memory_lanes`), which hold no items; `memory_span`:
        the first and last time of their records, which the timeline's extent covers too."""
        lane_rows = []
        for frame in (tracks, device, host):
            lane_rows.append(frame.select("rank", "key", "lane_kind", "label", "depth").unique(["rank", "key"]))
        if memory is not None and memory.height:
            lane_rows.append(memory.select(list(LANE_COLUMNS)).cast(lane_rows[0].schema))
        self.lanes = self._ordered(
            pl.concat(lane_rows).with_columns(
                pl.col("lane_kind").replace_strict(KIND_ORDER, return_dtype=pl.Int64).alias("_o")
            )
        )
        key = self.lanes.select("rank", "key", "lane")
        self.items: dict[str, pl.DataFrame] = {}
        self.base: dict[str, int] = {}
        base = 0
        for family, frame in (("tracks", tracks), ("device", device), ("host", host)):
            frame = frame.join(key, on=["rank", "key"], how="left", nulls_equal=True)
            frame = tl.sort_tasks(frame).with_row_index("id", offset=base).with_columns(pl.col("id").cast(pl.Int64))
            self.items[family], self.base[family] = frame, base
            base += frame.height
        self._link_flows()
        starts = [int(f["start_ns"].min()) for f in self.items.values() if f.height]
        ends = [int(f["end_ns"].max()) for f in self.items.values() if f.height]
        if memory_span is not None:
            starts.append(memory_span[0])
            ends.append(memory_span[1] + 1)
        self.origin_ns = min(starts) if starts else 0
        self.end_ns = max(ends) if ends else self.origin_ns + 1
        self.names = {f: frame["name"].drop_nulls().unique() for f, frame in self.items.items()}
        self.classes = {f: frame["cls"].unique() for f, frame in self.items.items()}
        # per family: items by lane and the whole-trace pyramid (wide views never touch every item)
        self._unions: dict[tuple, tt.UnionIndex] = {}  # range selection's unions (`unions`)
        self._unions_lock = threading.Lock()  # the warm-up and a request merge each once
        self.index = {
            f: tt.LaneIndex(frame, self.origin_ns, self.end_ns) for f, frame in self.items.items() if frame.height
        }

    @staticmethod
    def _ordered(lanes: pl.DataFrame) -> pl.DataFrame:
        """Lanes in display order: per rank, steps, terms, device streams (by stream number, HCCL
        last), host threads (by thread, then depth); numbered 0.."""
        num = pl.col("key").str.extract(r"^(-?\d+)", 1).cast(pl.Int64, strict=False)
        depth = pl.col("depth").fill_null(0)
        return (
            lanes.with_columns(num.alias("_n"), depth.alias("_d"))
            .sort(["rank", "_o", "_n", "_d"], nulls_last=True)
            .with_row_index("lane")
            .with_columns(pl.col("lane").cast(pl.Int64))
            .select("lane", "rank", pl.col("lane_kind").alias("kind"), "label", "depth", "key")
        )

    def _link_flows(self) -> None:
        """flow: the id of the item at the other end of a launch (a device task's launch call on
        the host, a launch call's device task), joined on (rank, correlation); null otherwise."""
        dev, host = self.items["device"], self.items["host"]
        if "correlation" not in dev.columns or "correlation" not in host.columns or host.height == 0:
            for f in self.items:
                self.items[f] = self.items[f].with_columns(pl.lit(None, pl.Int64).alias("flow"))
            return
        calls = (
            host.filter((pl.col("kind") == "runtime") & pl.col("correlation").is_not_null())
            .group_by("rank", "correlation")
            .agg(pl.col("id").min().alias("flow"))
        )
        tasks = (
            dev.filter(pl.col("correlation").is_not_null())
            .group_by("rank", "correlation")
            .agg(pl.col("id").min().alias("flow"))
        )
        self.items["device"] = dev.join(calls, on=["rank", "correlation"], how="left", maintain_order="left")
        host = host.join(tasks, on=["rank", "correlation"], how="left", maintain_order="left")
        self.items["host"] = host.with_columns(pl.when(pl.col("kind") == "runtime").then(pl.col("flow")))
        self.items["tracks"] = self.items["tracks"].with_columns(pl.lit(None, pl.Int64).alias("flow"))

    @classmethod
    def from_trace(cls, trace) -> TimelineModel:
        lanes = memory_lanes(trace)
        return cls(device_items(trace), host_items(trace), track_items(trace), lanes, memory_span(trace, lanes))

    def family_of(self, item_id: int) -> str | None:
        for family in reversed(FAMILIES):
            if item_id >= self.base[family] and item_id - self.base[family] < self.items[family].height:
                return family
        return None

    def item(self, item_id: int) -> tuple[str, dict] | None:
        """(family, the item's row as a dict) or None."""
        family = self.family_of(item_id)
        if family is None:
            return None
        return family, self.items[family].row(item_id - self.base[family], named=True)

    def unions(self, family: str, keys: tuple[str, ...], kind: str | None = None) -> tt.UnionIndex:
        """The `UnionIndex` of a family's items by `keys` (only the lanes of `kind` if given),
        built on first use and kept: a range selection then costs two binary searches per group."""
        with self._unions_lock:
            memo = self._unions
            if (family, keys, kind) not in memo:
                items = self.items[family]
                if kind is not None:
                    lanes = self.lanes.filter(pl.col("kind") == kind).select("lane")
                    items = items.join(lanes, on="lane", how="semi")
                memo[family, keys, kind] = tt.UnionIndex(items, keys)
            return memo[family, keys, kind]

    def device_lanes(self) -> list[int]:
        return self.lanes.filter(pl.col("kind") == "device")["lane"].to_list()


def memory_lanes(trace) -> pl.DataFrame:
    """One lane per rank that recorded device memory (`traceview.analysis.memory.lane_series`):
    key "memory", labelled with the device and component it shows."""
    series = memory.lane_series(trace.memory_peaks())
    label = pl.format("memory · {}:{}", "device_type", "device")
    return series.select(
        "rank",
        pl.lit("memory").alias("key"),
        pl.lit("memory").alias("lane_kind"),
        pl.when(pl.col("component").is_null())
        .then(label)
        .otherwise(pl.format("{} {}", label, "component"))
        .alias("label"),
        pl.lit(None, pl.Int64).alias("depth"),
    ).cast(LANE_COLUMNS)


def memory_span(trace, lanes: pl.DataFrame) -> tuple[int, int] | None:
    """(first, last) record time of the memory lanes' ranks, ns; None without memory lanes."""
    if lanes.is_empty():
        return None
    times = trace.memory().filter(pl.col("rank").is_in(lanes["rank"].implode()))["ts_ns"]
    return (int(times.min()), int(times.max())) if times.len() else None


def device_items(trace) -> pl.DataFrame:
    tasks = gaps.with_launch_delay(trace.classified_tasks(), trace.launch_calls())
    roles = tt.stream_roles(tasks)
    tasks = tasks.join(roles, on=["rank", "stream"], how="left", nulls_equal=True)
    label = (
        pl.when(pl.col("stream").is_null())
        .then(pl.lit("HCCL"))
        .otherwise(pl.lit("stream ") + pl.col("stream").cast(pl.String) + pl.lit(" · ") + pl.col("role"))
    )
    return tasks.filter(pl.col("start_ns").is_not_null() & pl.col("end_ns").is_not_null()).select(
        "rank",
        "start_ns",
        "end_ns",
        "name",
        pl.col("compute_class").fill_null(pl.col("kind")).alias("cls"),
        "kind",
        pl.col("stream").cast(pl.String).fill_null("HCCL").alias("key"),
        pl.lit("device").alias("lane_kind"),
        label.alias("label"),
        pl.lit(0, pl.Int64).alias("depth"),
        "stream",
        "step",
        "correlation",
        "launch_op",
        "launch_delay_ns",
    )


def host_items(trace) -> pl.DataFrame:
    ev = trace.host_events.filter(pl.col("start_ns").is_not_null() & pl.col("end_ns").is_not_null())
    if ev.height == 0:
        return _empty_items().with_columns(
            pl.lit(None, pl.String).alias("lane_kind"),
            pl.lit(None, pl.String).alias("label"),
            pl.lit(None, pl.Int64).alias("depth"),
            pl.lit(None, pl.Int64).alias("stream"),
            pl.lit(None, pl.Int64).alias("correlation"),
        )
    thread = ev.select(pl.struct("rank", "tid").rank("dense").cast(pl.Int64))["rank"].to_numpy()
    depth = tt.nesting_depth(thread, ev["start_ns"].to_numpy(), ev["end_ns"].to_numpy())
    ev = ev.with_columns(pl.Series("depth", depth, dtype=pl.Int64))
    tid = pl.col("tid").cast(pl.String).fill_null("?")
    return ev.select(
        "rank",
        "start_ns",
        "end_ns",
        "name",
        pl.col("kind").fill_null("host").alias("cls"),
        "kind",
        (tid + pl.lit(":") + pl.col("depth").cast(pl.String)).alias("key"),
        pl.lit("host").alias("lane_kind"),
        (
            pl.lit("thread ")
            + tid
            + pl.when(pl.col("depth") > 0).then(pl.lit(" · ") + pl.col("depth").cast(pl.String)).otherwise(pl.lit(""))
        ).alias("label"),
        "depth",
        pl.col("tid").alias("stream"),
        "correlation",
    )


def track_items(trace) -> pl.DataFrame:
    """The steps track (iteration windows) and the terms track (iteration segments) per rank."""
    it = trace.iteration_breakdown()
    steps = it.select(
        "rank",
        pl.col("iteration_start_ns").alias("start_ns"),
        pl.col("iteration_end_ns").alias("end_ns"),
        (pl.lit("step ") + pl.col("step").cast(pl.String)).alias("name"),
        pl.lit("step").alias("cls"),
        pl.lit("step").alias("kind"),
        pl.lit("steps").alias("key"),
    )
    # adjacent segments of one term and phase drawn as one (they tile the iteration)
    seg = trace.iteration_segments().sort("rank", "seg_start_ns")
    same = (
        (pl.col("rank") == pl.col("rank").shift())
        & (pl.col("step") == pl.col("step").shift())
        & (pl.col("term") == pl.col("term").shift())
        & (pl.col("wall_phase").eq_missing(pl.col("wall_phase").shift()))
        & (pl.col("seg_start_ns") == pl.col("seg_end_ns").shift())
    )
    seg = (
        seg.with_columns((~same.fill_null(False)).cum_sum().alias("_run"))
        .group_by("_run", maintain_order=True)
        .agg(
            pl.col("rank", "step", "term", "wall_phase").first(),
            pl.col("seg_start_ns").first(),
            pl.col("seg_end_ns").last(),
        )
    )
    term = pl.col("term").str.replace(r"^iteration_", "")
    terms = seg.select(
        "rank",
        pl.col("seg_start_ns").alias("start_ns"),
        pl.col("seg_end_ns").alias("end_ns"),
        (term + pl.lit(" · ") + pl.col("wall_phase").fill_null("")).alias("name"),
        term.alias("cls"),
        pl.lit("term").alias("kind"),
        pl.lit("terms").alias("key"),
    )
    out = pl.concat([steps, terms], how="vertical_relaxed")
    return out.with_columns(
        pl.when(pl.col("key") == "steps").then(pl.lit("steps")).otherwise(pl.lit("terms")).alias("lane_kind"),
        pl.when(pl.col("key") == "steps").then(pl.lit("steps")).otherwise(pl.lit("terms")).alias("label"),
        pl.lit(0, pl.Int64).alias("depth"),
    )
