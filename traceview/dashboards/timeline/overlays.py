"""The canvas timeline's overlays: traceview's own analyses drawn over the lanes, served by
/api/timeline/overlays?start&end[&ranks] (`TimelineApi.overlays`).

Built once per `TimelineModel` (the first overlays request; `TimelineApi` keeps it), from the
Trace's memoised analyses and the arithmetic of `traceview.analysis.timeline_overlays`:

- collectives: every row of `Trace.collectives()` (one per instance and rank) on the lane of its
  device task (the model's item with the same rank, start, end and name), split into wait and
  transfer (the analysis' wait_us and transfer_us, as integer ns), with its collective_id and
  whether it is point-to-point (p2p: its wait is not a wait for a peer; the client draws it unsplit
  and unlinked);
- bubbles: the compute-idle stretches of each pipeline rank's pipeline step (`bubble_regions`),
  drawn on the rank's device lanes;
- findings: the findings the dashboard shows (the summary's, else `Trace.findings()`), each on
  the step windows of the rank it fired on (every rank for a profile-wide one); regions of one
  rank and window are merged, listing every finding kind (rule, title, severity) that marks them;
- memory: the records of each memory lane's series (`Trace.memory()`, the series
  `traceview.analysis.memory.lane_series` picks) in the window, with the record before it (the
  value the window starts with); beyond MAX_MEMORY_POINTS per lane, the largest allocated and
  reserved values per 1/MEMORY_BINS of the window (a peak is never lost to the binning). The
  lane's scale is its series' whole-trace peak, so zooming does not rescale it.

A request slices each frame (sorted by start) by binary search and keeps at most MAX_* rows,
the longest first (collectives by whole instances, so a link never loses one end to the bound),
and says how many it left out. Times are sent relative to the model's origin_ns, in ns.
"""

from __future__ import annotations

import polars as pl

from traceview.analysis import memory
from traceview.analysis import timeline_overlays as to
from traceview.analysis.timeline import _overlapping
from traceview.safe_text import one_line

#: The most rows one answer carries per overlay (the rest are counted in *_left_out).
MAX_COLLECTIVES = 4000
MAX_BUBBLES = 4000
MAX_FINDING_REGIONS = 2000
MAX_MEMORY_POINTS = 4000
MEMORY_BINS = 1000
_KEYS = ["rank", "start_ns", "end_ns", "name"]


def _length() -> pl.Expr:
    return pl.col("end_ns") - pl.col("start_ns")


class TimelineOverlays:
    """The overlay frames of one model (module docstring); `window` answers a request."""

    def __init__(self, trace, model, findings: list[dict] | pl.DataFrame | None = None):
        self.origin_ns = model.origin_ns
        self.collectives = self._placed(to.collective_parts(trace.run("collectives")), model)
        self.bubbles = to.bubble_regions(trace.device_tasks, trace.run("bubbles"))
        found = trace.findings() if findings is None else pl.DataFrame(findings, infer_schema_length=None)
        self.finding_kinds, self.findings = self._finding_frames(trace, model, found)
        self.memory, self.memory_scale = self._memory_frames(trace, model)

    @staticmethod
    def _memory_frames(trace, model) -> tuple[pl.DataFrame, dict[int, int]]:
        """(the lanes' records: lane, rank, ts_ns, allocated_bytes, reserved_bytes, by lane and
        time; per lane its scale, the peak of its reserved and allocated bytes)."""
        lanes = model.lanes.filter(pl.col("kind") == "memory").select("lane", "rank")
        series = memory.lane_series(trace.memory_peaks()).join(lanes, on="rank")
        records = (
            trace.memory()
            .join(series.select(*memory.SERIES, "lane"), on=memory.SERIES, how="inner", nulls_equal=True)
            .select("lane", "rank", "ts_ns", "allocated_bytes", "reserved_bytes")
            .sort("lane", "ts_ns", maintain_order=True)
        )
        top = pl.max_horizontal(pl.col("peak_allocated_bytes"), pl.col("peak_reserved_bytes").fill_null(0))
        scale = dict(series.select("lane", top.alias("top")).iter_rows())
        return records, {int(k): int(v or 1) for k, v in scale.items()}

    def _memory_window(self, start_ns: int, end_ns: int, ranks: list[int] | None) -> dict:
        """The memory lanes' points in the window (module docstring): lane, t (relative ns),
        allocated, reserved (bytes; null where not recorded), and `binned` lanes."""
        f = self.memory if ranks is None else self.memory.filter(pl.col("rank").is_in(ranks))
        inside = f.filter((pl.col("ts_ns") >= start_ns) & (pl.col("ts_ns") < end_ns))
        before = f.filter(pl.col("ts_ns") < start_ns).group_by("lane").agg(pl.all().last())
        points = pl.concat([before.select(f.columns), inside]).sort("lane", "ts_ns", maintain_order=True)
        counts = points.group_by("lane").len()
        dense = counts.filter(pl.col("len") > MAX_MEMORY_POINTS)["lane"]
        if dense.len():
            width = max(1, (end_ns - start_ns) // MEMORY_BINS)
            binned = (
                points.filter(pl.col("lane").is_in(dense.implode()))
                .with_columns(
                    (start_ns + ((pl.col("ts_ns") - start_ns).clip(lower_bound=-width) // width) * width).alias("_b")
                )
                .group_by("lane", "_b")
                .agg(pl.col("rank").first(), pl.col("allocated_bytes").max(), pl.col("reserved_bytes").max())
                .select("lane", "rank", pl.col("_b").alias("ts_ns"), "allocated_bytes", "reserved_bytes")
            )
            points = pl.concat([points.filter(~pl.col("lane").is_in(dense.implode())), binned]).sort("lane", "ts_ns")
        o = self.origin_ns
        return {
            "lane": points["lane"].to_numpy(),
            "t": (points["ts_ns"] - o).to_numpy(),
            "allocated": points["allocated_bytes"].to_list(),
            "reserved": points["reserved_bytes"].to_list(),
            "binned": sorted(int(v) for v in dense.to_list()),
        }

    @staticmethod
    def _placed(parts: pl.DataFrame, model) -> pl.DataFrame:
        """`parts` with the lane and item id of their device task (rows without one are dropped)."""
        dev = model.items["device"]
        items = (
            dev.filter(pl.col("kind") == "communication").select(*_KEYS, "lane", "id").unique(_KEYS, keep="first")
            if dev.height
            else pl.DataFrame(schema={**{k: parts.schema[k] for k in _KEYS}, "lane": pl.Int64, "id": pl.Int64})
        )
        return parts.join(items, on=_KEYS, how="inner").sort("start_ns", "rank", "collective_id")

    @staticmethod
    def _finding_frames(trace, model, found: pl.DataFrame) -> tuple[list[dict], pl.DataFrame]:
        """(kinds: the distinct rule, title, severity; regions: rank, start_ns, end_ns, kinds)."""
        schema = {"rank": pl.Int64, "start_ns": pl.Int64, "end_ns": pl.Int64, "kinds": pl.List(pl.Int64)}
        if found.is_empty() or "rank" not in found.columns:
            return [], pl.DataFrame(schema=schema)
        found = found.select(
            pl.col("rank").cast(pl.Int64),
            *[pl.col(c).cast(pl.String).fill_null("") for c in ("rule", "title", "severity")],
        )
        kinds = found.select("rule", "title", "severity").unique(maintain_order=True)
        kind_of = found.join(kinds.with_row_index("kind"), on=["rule", "title", "severity"], how="left")["kind"]
        it = trace.iteration_breakdown()
        windows = it.select(
            "rank", pl.col("iteration_start_ns").alias("start_ns"), pl.col("iteration_end_ns").alias("end_ns")
        )
        extents = pl.concat([f.select("rank", "start_ns", "end_ns") for f in model.items.values() if f.height])
        extents = extents.group_by("rank").agg(pl.col("start_ns").min(), pl.col("end_ns").max())
        regions = to.finding_regions(found, windows.drop_nulls(), extents.drop_nulls())
        regions = (
            regions.with_columns(kind_of.gather(regions["finding"]).cast(pl.Int64).alias("kind"))
            .group_by("rank", "start_ns", "end_ns")
            .agg(pl.col("kind").unique().sort().alias("kinds"))
            .sort("start_ns", "rank")
        )
        return kinds.to_dicts(), regions.cast(schema)

    def window(self, start_ns: int, end_ns: int, ranks: list[int] | None) -> dict:
        """What overlaps [start_ns, end_ns) (absolute ns) on `ranks` (None: all), bounded."""
        o = self.origin_ns
        out: dict = {"start": start_ns - o, "end": end_ns - o}
        kinds: list[str] = []

        def collectives(f: pl.DataFrame) -> dict:
            names = f["collective"].fill_null("").unique(maintain_order=True)
            kinds.extend(one_line(k) for k in names.to_list())
            code = f["collective"].fill_null("").replace_strict(names, range(len(names)), return_dtype=pl.Int64)
            return {
                "id": f["id"].to_numpy(),
                "lane": f["lane"].to_numpy(),
                "rank": f["rank"].to_numpy(),
                "cid": f["collective_id"].to_numpy(),
                "start": (f["start_ns"] - o).to_numpy(),
                "wait": f["wait_ns"].to_numpy(),
                "transfer": f["transfer_ns"].to_numpy(),
                "p2p": f["p2p"].cast(pl.Int64).to_numpy(),
                "kind": code.cast(pl.Int64).to_numpy(),
            }

        def regions(*extra: str):
            def columns(f: pl.DataFrame) -> dict:
                times = {"start": (f["start_ns"] - o).to_numpy(), "end": (f["end_ns"] - o).to_numpy()}
                return {"rank": f["rank"].to_numpy(), **times, **{c: f[c].to_list() for c in extra}}

            return columns

        parts = (
            ("collectives", self.collectives, MAX_COLLECTIVES, "collective_id", collectives),
            ("bubbles", self.bubbles, MAX_BUBBLES, None, regions("step", "bubble_us")),
            ("findings", self.findings, MAX_FINDING_REGIONS, None, regions("kinds")),
        )
        for name, frame, limit, group, columns in parts:
            hit = _overlapping(frame, start_ns, end_ns, ranks)
            shown = to.largest(hit, limit, _length(), group=group)
            out[name] = columns(shown)
            out[f"{name}_total"] = hit.height
            out[f"{name}_left_out"] = hit.height - shown.height
        out["memory"] = self._memory_window(start_ns, end_ns, ranks)
        out["memory_scale"] = {str(k): v for k, v in self.memory_scale.items()}
        out["collective_kinds"] = kinds
        out["finding_kinds"] = [{k: one_line(v) for k, v in kind.items()} for kind in self.finding_kinds]
        return out
