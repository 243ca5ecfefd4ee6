"""The canvas timeline's JSON API: Flask routes on the dashboard's server (GET only).

The routes parse and bound their parameters, call the pure functions of
`traceview.analysis.timeline_tracks` on the `TimelineModel` (built on first use) and serialise
the result as compact columnar JSON: arrays per column, never an object per task, times in ns
relative to the model's origin (`origin_ns`, sent as text: epoch ns exceed JavaScript's 2**53),
names sent once per distinct name (a dictionary; each item carries its index).

- /api/timeline/meta: origin, extent, lanes (id, rank, kind, label, depth), classes and colours, steps.
- /api/timeline/window?start&end&px[&ranks&host&cls&name]: per lane either raw items (lane, id,
  start, dur, name, cls, flow) or stacked bins (lane, bin, cls, busy) with the bin edges; `px` bins.
- /api/timeline/task?id: one item's fields (text) and the item at the other end of its launch.
- /api/timeline/search?q[&ranks&host&cls&name]: the items whose name contains q (case-insensitive).
- /api/timeline/range?start&end[&ranks&cls&name]: busy time by class, lane and iteration term.
- /api/timeline/overlays?start&end[&ranks]: collectives split into wait and transfer, pipeline
  bubbles and findings as regions (`traceview.dashboards.timeline.overlays`).

`cls` (classes, comma-separated) and `name` (a substring, case-insensitive) are the dashboard's
filter bar (the URL's `class=` and `q=`): they keep only the device tasks of those classes whose
name contains it, as the Overview's tables do; the steps, terms and host lanes stay whole. A
filtered set of device items and its lane index are built on first use and kept for the last
`FILTERS_KEPT` filter sets.

Bad parameters answer 400 with a one-line reason.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict

import orjson
import polars as pl

from traceview.analysis import timeline_tracks as tt
from traceview.dashboards.colors import ITERATION_COLORS, class_color
from traceview.dashboards.query import MAX_NAME, ascii_int
from traceview.dashboards.timeline.model import FAMILIES, TimelineModel
from traceview.dashboards.timeline.overlays import TimelineOverlays
from traceview.safe_text import one_line

API = "/api/timeline/"
ROUTES = ("meta", "window", "task", "search", "range", "overlays")
MAX_PX = 8192
MAX_SEARCH = 5000
MAX_TEXT = MAX_NAME  # a search or name filter, characters (a kernel's whole name fits)
MAX_CLASSES = 100  # classes in one `cls` filter
FILTERS_KEPT = 8  # filtered device items (and their lane index) kept per filter set
#: The largest magnitude of an integer parameter: times relative to the origin (epoch ns, ~2**61
#: today) stay inside Int64 once the origin is added back.
MAX_INT = 2**60
#: The columns of a window's raw items and stacked bins (an empty answer has them too).
RAW_SCHEMA = {
    "lane": pl.Int64,
    "id": pl.Int64,
    "start_ns": pl.Int64,
    "end_ns": pl.Int64,
    "name": pl.String,
    "cls": pl.String,
    "flow": pl.Int64,
}
STACKED_SCHEMA = {"lane": pl.Int64, "bin": pl.Int64, "cls": pl.String, "busy_ns": pl.Int64}
#: colours of what is not a compute class: host event kinds, iteration terms, steps
EXTRA_COLORS = {
    "operator": "#6B8EC8",
    "runtime": "#A3A3A3",
    "annotation": "#9BB870",
    "host": "#B0B0B0",
    "step": "#4B5563",
    # the iteration's terms in the colours every other view gives them (dashboards/colors.py)
    "computing": ITERATION_COLORS["iteration_computing"],
    "exposed_comm": ITERATION_COLORS["iteration_exposed_comm"],
    "exposed_memcpy": ITERATION_COLORS["iteration_exposed_memcpy"],
    "host_runtime": ITERATION_COLORS["host_overhead"],
    "host_framework": "#C4A98F",  # host overhead's brown, lighter: framework code rather than launches
    "data_loading": ITERATION_COLORS["data_loading"],
    "other_idle": "#E5E7EB",
}


class BadRequest(ValueError):
    pass


def _int(args, name: str, default=None, lo=None, hi=None) -> int:
    raw = args.get(name)
    if raw is None or raw == "":
        if default is None:
            raise BadRequest(f"missing parameter {name}")
        return default
    value = ascii_int(raw)
    if value is None:
        raise BadRequest(f"{name} must be an integer (ASCII digits)")
    if abs(value) > MAX_INT or (lo is not None and value < lo) or (hi is not None and value > hi):
        raise BadRequest(f"{name} out of range")
    return value


def _ranks(args, model: TimelineModel) -> list[int] | None:
    raw = args.get("ranks") or ""
    if not raw:
        return None
    parsed = [ascii_int(r) for r in raw.split(",") if r != ""]
    ranks = [r for r in parsed if r is not None]
    if len(ranks) != len(parsed):
        raise BadRequest("ranks must be integers (ASCII digits) separated by commas")
    if any(abs(r) > MAX_INT for r in ranks):
        raise BadRequest("ranks out of range")
    return ranks


def _filter(args) -> tuple[tuple[str, ...], str]:
    """(classes, lower-case name substring) of the `cls` / `name` parameters; empty: no filter."""
    classes = tuple(sorted({c for c in (args.get("cls") or "").split(",") if c}))
    name = (args.get("name") or "").strip()
    if len(classes) > MAX_CLASSES or any(len(c) > MAX_TEXT for c in classes):
        raise BadRequest(f"cls must be at most {MAX_CLASSES} classes of at most {MAX_TEXT} characters")
    if len(name) > MAX_TEXT:
        raise BadRequest(f"name must be at most {MAX_TEXT} characters")
    return classes, name.lower()  # measured before lowering: lowering may lengthen a text


def _named(names: pl.Series, text: str) -> pl.Expr:
    """Items whose name is one of the distinct `names` containing `text` (lower case): the
    distinct names are matched, not every item."""
    matched = names.filter(names.str.to_lowercase().str.contains(text, literal=True).fill_null(False))
    return pl.col("name").is_in(matched.implode())


def _color(cls: str | None) -> str:
    return EXTRA_COLORS.get(cls or "") or class_color(cls or "other")


class TimelineApi:
    """The routes over one DashboardState's Trace (the model is built on the first request)."""

    def __init__(self, trace, findings: list[dict] | None = None):
        self.trace = trace
        self._model: TimelineModel | None = None
        self._lock = threading.Lock()
        self._meta: dict | None = None
        self._findings = findings  # the findings the dashboard shows (None: Trace.findings())
        self._overlays: TimelineOverlays | None = None
        self._overlays_lock = threading.Lock()
        self._filtered: OrderedDict[tuple, tuple[pl.DataFrame, tt.LaneIndex | None]] = OrderedDict()

    @property
    def model(self) -> TimelineModel:
        with self._lock:
            if self._model is None:
                self._model = TimelineModel.from_trace(self.trace)
            return self._model

    def warm(self) -> threading.Thread:
        """Build the model, its meta, the overlays and the range selection's unions in a daemon
        thread and return it: `traceview serve` starts it once the summary is built, so the
        Timeline's first open finds them built (a 4M-task profile takes tens of seconds). A
        request meanwhile waits on the lock instead of building a second model. A failure is
        left to the first request, which reports it."""

        def build() -> None:
            try:
                self.meta({})
                self.overlays({"start": "0", "end": "1"})
                self.range({"start": "0", "end": "1"})  # merges the unions a range selection reads
            except Exception as exc:  # noqa: BLE001 - what failed was not kept: the request that needs it reports it
                logging.getLogger("traceview.serve").warning("timeline warm-up stopped: %s", str(exc)[:200])

        thread = threading.Thread(target=build, name="traceview-timeline-warm", daemon=True)
        thread.start()
        return thread

    def filtered_device(self, args) -> tuple[pl.DataFrame, tt.LaneIndex | None]:
        """The device items kept by the request's `cls` / `name` filter and their lane index
        (None when none is kept); all of them, and the model's index, without a filter."""
        m = self.model
        key = _filter(args)
        if key == ((), ""):
            return m.items["device"], m.index.get("device")
        with self._lock:
            if key in self._filtered:
                self._filtered.move_to_end(key)
                return self._filtered[key]
        classes, name = key
        keep = pl.lit(True)
        if classes:
            keep = keep & pl.col("cls").is_in(list(classes))
        if name:
            keep = keep & _named(m.names["device"], name)
        items = m.items["device"].filter(keep)  # a filter keeps the start order
        index = tt.LaneIndex(items, m.origin_ns, m.end_ns) if items.height else None
        with self._lock:
            self._filtered[key] = (items, index)
            while len(self._filtered) > FILTERS_KEPT:
                self._filtered.popitem(last=False)
        return items, index

    # ---- the answers (dicts ready for orjson) ----

    def meta(self, args) -> dict:
        if self._meta is None:
            self._meta = self._build_meta()
        return self._meta

    def _build_meta(self) -> dict:
        m = self.model
        classes = sorted({c for f in m.classes.values() for c in f.drop_nulls().to_list()} | set(EXTRA_COLORS))
        steps = m.items["tracks"].filter(pl.col("kind") == "step")
        lanes = m.lanes
        return {
            "origin_ns": str(m.origin_ns),
            "end": m.end_ns - m.origin_ns,
            "lanes": {
                "lane": lanes["lane"].to_list(),
                "rank": lanes["rank"].to_list(),
                "kind": lanes["kind"].to_list(),
                "label": [one_line(x) for x in lanes["label"].to_list()],
                "depth": lanes["depth"].fill_null(0).to_list(),
            },
            "ranks": sorted(lanes["rank"].drop_nulls().unique().to_list()),
            "colors": {c: _color(c) for c in classes},
            "steps": {
                "rank": steps["rank"].to_list(),
                "name": steps["name"].to_list(),
                "start": (steps["start_ns"] - m.origin_ns).to_list(),
                "end": (steps["end_ns"] - m.origin_ns).to_list(),
            },
        }

    def _families(self, args) -> list[str]:
        return [f for f in FAMILIES if f != "host" or args.get("host") == "1"]

    def window(self, args) -> dict:
        m = self.model
        start, end = _bounded_span(args, m.origin_ns)
        px = _int(args, "px", 1000, 1, MAX_PX)
        ranks = _ranks(args, m)
        raws, stacks, binned, edges = [], [], [], None
        lanes = None if ranks is None else m.lanes.filter(pl.col("rank").is_in(ranks))["lane"].to_list()
        for family in self._families(args):
            index = self.filtered_device(args)[1] if family == "device" else m.index.get(family)
            if index is None:
                continue
            out = index.window(start, end, px, lanes=lanes)
            raws.append(out["raw"].select("lane", "id", "start_ns", "end_ns", "name", "cls", "flow"))
            stacks.append(out["stacked"])
            binned += out["binned_lanes"]
            edges = out["edges"]
        if not raws:  # nothing to draw: a filter that keeps no device task on a trace without steps
            raws.append(pl.DataFrame(schema=RAW_SCHEMA))
            stacks.append(pl.DataFrame(schema=STACKED_SCHEMA))
        raw = pl.concat(raws, how="vertical_relaxed")
        stacked = pl.concat(stacks, how="vertical_relaxed")
        names = raw["name"].fill_null("").unique(maintain_order=True)
        classes = pl.concat([raw["cls"], stacked["cls"]]).fill_null("other").unique(maintain_order=True)
        # cast: with nothing in view the codes are empty, and an empty mapping gives a Null column
        name_idx = (
            raw["name"].fill_null("").replace_strict(names, range(len(names)), return_dtype=pl.Int64).cast(pl.Int64)
        )
        cls_idx = lambda s: s.fill_null("other").replace_strict(classes, range(len(classes))).cast(pl.Int64)  # noqa: E731
        return {
            "start": start - m.origin_ns,
            "end": end - m.origin_ns,
            "px": px,
            "names": [one_line(n) for n in names.to_list()],
            "classes": classes.to_list(),
            "raw": {
                "lane": raw["lane"].to_numpy(),
                "id": raw["id"].to_numpy(),
                "start": (raw["start_ns"] - m.origin_ns).to_numpy(),
                "dur": (raw["end_ns"] - raw["start_ns"]).to_numpy(),
                "name": name_idx.to_numpy(),
                "cls": cls_idx(raw["cls"]).to_numpy(),
                "flow": raw["flow"].fill_null(-1).to_numpy(),
            },
            "binned_lanes": binned,
            "edges": (edges - m.origin_ns) if edges is not None else [],
            "bins": {
                "lane": stacked["lane"].to_numpy(),
                "bin": stacked["bin"].to_numpy(),
                "cls": cls_idx(stacked["cls"]).to_numpy(),
                "busy": stacked["busy_ns"].to_numpy(),
            },
        }

    def task(self, args) -> dict:
        m = self.model
        found = m.item(_int(args, "id", lo=0))
        if found is None:
            raise BadRequest("no such item")
        family, row = found
        lane = m.lanes.row(row["lane"], named=True) if row.get("lane") is not None else {}
        fields = [
            ("name", row["name"]),
            ("class", row["cls"]),
            ("rank", row["rank"]),
            ("lane", lane.get("label")),
            ("start", f"{(row['start_ns'] - m.origin_ns) / 1e6:.6f} ms ({row['start_ns']} ns)"),
            ("duration", f"{(row['end_ns'] - row['start_ns']) / 1000:.3f} µs"),
        ]
        for col in ("kind", "step", "correlation", "launch_op", "launch_delay_ns"):
            if col in row and row[col] is not None:
                value = f"{row[col] / 1000:.3f} µs" if col == "launch_delay_ns" else row[col]
                fields.append((col.replace("_ns", "").replace("_", " "), value))
        flow = None
        if row.get("flow") is not None:
            other = m.item(int(row["flow"]))
            if other is not None:
                o = other[1]
                flow = {
                    "id": o["id"],
                    "lane": o["lane"],
                    "start": o["start_ns"] - m.origin_ns,
                    "dur": o["end_ns"] - o["start_ns"],
                    "name": one_line(o["name"]),
                }
                fields.append(("launched by" if family == "device" else "launches", o["name"]))
        return {
            "id": row["id"],
            "lane": row["lane"],
            "start": row["start_ns"] - m.origin_ns,
            "dur": row["end_ns"] - row["start_ns"],
            "fields": [[k, one_line("" if v is None else str(v))] for k, v in fields],
            "flow": flow,
        }

    def search(self, args) -> dict:
        m = self.model
        q = (args.get("q") or "").strip()
        if not q or len(q) > MAX_TEXT:
            raise BadRequest(f"q must be 1 to {MAX_TEXT} characters")
        q = q.lower()
        ranks = _ranks(args, m)
        hits = []
        for family in self._families(args):
            f = self.filtered_device(args)[0] if family == "device" else m.items[family]
            keep = _named(m.names[family], q)
            if ranks is not None:
                keep = keep & pl.col("rank").is_in(ranks)
            hits.append(f.lazy().filter(keep).select("id", "lane", "start_ns", "end_ns").collect())
        found = (
            pl.concat(hits).sort("start_ns")
            if hits
            else pl.DataFrame(schema={"id": pl.Int64, "lane": pl.Int64, "start_ns": pl.Int64, "end_ns": pl.Int64})
        )
        shown = found.head(MAX_SEARCH)
        return {
            "count": found.height,
            "id": shown["id"].to_numpy(),
            "lane": shown["lane"].to_numpy(),
            "start": (shown["start_ns"] - m.origin_ns).to_numpy(),
            "dur": (shown["end_ns"] - shown["start_ns"]).to_numpy(),
        }

    def range(self, args) -> dict:
        m = self.model
        start, end = _bounded_span(args, m.origin_ns)
        ranks = _ranks(args, m)
        items = self.filtered_device(args)[0]
        if items is m.items["device"]:  # no filter: the unions merged once (two binary searches a group)
            by_lane = m.unions("device", ("rank", "lane")).totals(start, end, ranks)
            by_class = m.unions("device", ("rank", "cls")).totals(start, end, ranks)
        else:
            dev = tt.range_totals(items, start, end, ranks, parts=("by_lane", "by_rank_class"))
            by_lane, by_class = (dev[p].filter(pl.col("busy_ns") > 0) for p in ("by_lane", "by_rank_class"))
        by_term = m.unions("tracks", ("rank", "cls"), kind="terms").totals(start, end, ranks)
        terms = by_term.group_by("cls").agg(pl.col("busy_ns").sum())
        classes = by_class.group_by("cls").agg(pl.col("busy_ns").sum())
        lanes = by_lane.select("lane", "busy_ns").join(m.lanes.select("lane", "rank", "label"), on="lane").sort("lane")
        return {
            "start": start - m.origin_ns,
            "end": end - m.origin_ns,
            "by_class": _pairs(classes, "cls"),
            "by_term": _pairs(terms, "cls"),
            "by_lane": [
                [f"rank {r} · {one_line(label)}", ns / 1000]
                for r, label, ns in zip(lanes["rank"], lanes["label"], lanes["busy_ns"])
            ],
        }

    def overlays(self, args) -> dict:
        m = self.model
        start, end = _bounded_span(args, m.origin_ns)
        ranks = _ranks(args, m)
        with self._overlays_lock:  # not the model's lock: other requests go on meanwhile
            if self._overlays is None:
                self._overlays = TimelineOverlays(self.trace, m, self._findings)
        return self._overlays.window(start, end, ranks)


def _bounded_span(args, origin_ns: int) -> tuple[int, int]:
    """start, end (relative ns, at most MAX_INT away from the origin) as absolute ns; end > start."""
    start = _int(args, "start") + origin_ns
    end = _int(args, "end") + origin_ns
    if not -(2**63) <= start < end < 2**63 - 1:
        if end <= start:
            raise BadRequest("end must be greater than start")
        raise BadRequest("start and end out of range")
    if end <= start:
        raise BadRequest("end must be greater than start")
    return start, end


def _pairs(frame: pl.DataFrame, key: str) -> list:
    frame = frame.sort("busy_ns", key, descending=[True, False])
    return [[one_line(str(k)), ns / 1000] for k, ns in zip(frame[key], frame["busy_ns"])]


def register(server, api: TimelineApi) -> None:
    """Add the routes to the Flask `server` (one view function per route)."""
    from flask import Response, request

    def answer(name: str):
        def view():
            try:
                body = getattr(api, name)(request.args)
            except BadRequest as exc:
                return Response(str(exc), status=400, mimetype="text/plain")
            return Response(orjson.dumps(body, option=orjson.OPT_SERIALIZE_NUMPY), mimetype="application/json")

        view.__name__ = f"timeline_api_{name}"
        return view

    for name in ROUTES:
        server.add_url_rule(API + name, endpoint=f"timeline_api_{name}", view_func=answer(name), methods=["GET"])
