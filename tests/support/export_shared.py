"""What the split modules of test_export.py share (helpers and fixtures)."""

from __future__ import annotations

import orjson
import polars as pl
import pytest

from traceview.analysis import iteration
from traceview.dashboards.perfetto import OVERLAYS, perfetto_json


def _export(trace) -> list[dict]:
    doc = orjson.loads(perfetto_json(trace))
    assert set(doc) == {"displayTimeUnit", "traceEvents"}
    return doc["traceEvents"]


def _check(trace, events: list[dict]) -> None:
    """Every rank a process; the overlay tracks on each rank with iterations; device task time and
    the iteration terms per step equal traceview's own numbers (to the ns: ts/dur are exact)."""
    for e in events:
        assert e["ph"] in {"M", "X", "s", "f", "i"} and isinstance(e["ts"], (int, float)), e
    names = {e["pid"]: e["args"]["name"] for e in events if e["name"] == "process_name"}
    ranks = trace.ranks["rank"].to_list()
    assert len(names) == len(ranks)
    assert [names[i].split(" · ")[0] for i in range(len(ranks))] == [f"rank {r}" for r in ranks]
    pid = {r: i for i, r in enumerate(ranks)}
    frame = pl.DataFrame([e for e in events if e["ph"] == "X"], infer_schema_length=None)
    device = frame.filter(pl.col("tid") < OVERLAYS["iteration"]).filter(pl.col("tid") >= 999_999_999)
    want = trace.device_tasks.group_by("rank").agg(pl.col("dur_ns").sum())
    for r, dur_ns in want.iter_rows():
        got = device.filter(pl.col("pid") == pid[r])["dur"].sum()
        assert got == pytest.approx(dur_ns / 1000, abs=1e-3 * max(1, want.height))
    its = trace.iteration_breakdown()
    tracks = {(e["pid"], e["args"]["name"]) for e in events if e["name"] == "thread_name"}
    terms = frame.filter(pl.col("cat") == "term").with_columns(pl.col("args").struct.field("step").alias("step"))
    for row in its.to_dicts():
        assert all((pid[row["rank"]], track) in tracks for track in OVERLAYS)
        mine = terms.filter((pl.col("pid") == pid[row["rank"]]) & (pl.col("step") == row["step"]))
        for term in ("iteration_computing", "iteration_exposed_comm", "data_loading", "other_idle"):
            if row[f"{term}_us"] is None:
                continue
            got = mine.filter(pl.col("name") == iteration.LABELS[term])["dur"].sum()
            assert got == pytest.approx(row[f"{term}_us"], abs=1e-6 + 1e-3 * mine.height), (
                row["rank"],
                row["step"],
                term,
            )
