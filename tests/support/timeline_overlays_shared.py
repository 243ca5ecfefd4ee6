"""What the split modules of test_timeline_overlays.py share (helpers and fixtures)."""

from __future__ import annotations

import polars as pl

import traceview as tv
from traceview.dashboards.app import create_app
from traceview.summary import build_summary


def _served(path):
    trace = tv.load(path)
    summary = build_summary(trace, details=False)
    client = create_app(trace, summary).server.test_client()
    meta = client.get("/api/timeline/meta").get_json()
    return trace, summary, client, meta


def _whole(client, meta, ranks=""):
    r = client.get(f"/api/timeline/overlays?start=0&end={meta['end'] + 1}&ranks={ranks}")
    assert r.status_code == 200, r.data
    return r.get_json()


def _drawn_collectives(o, meta) -> pl.DataFrame:
    """What the client draws: wait [start, start + wait), transfer after it, as absolute ns."""
    origin = int(meta["origin_ns"])
    c = pl.DataFrame(o["collectives"]).with_columns(pl.col("start") + origin)
    return c.select(
        pl.col("cid").alias("collective_id"),
        "rank",
        "lane",
        "id",
        pl.col("start").alias("start_ns"),
        (pl.col("start") + pl.col("wait") + pl.col("transfer")).alias("end_ns"),
        (pl.col("wait") / 1000).alias("wait_us"),
        (pl.col("transfer") / 1000).alias("transfer_us"),
    )


def _check_collectives(trace, client, meta):
    o = _whole(client, meta)
    want = trace.run("collectives").select("collective_id", "rank", "start_ns", "end_ns", "wait_us", "transfer_us")
    got = _drawn_collectives(o, meta)
    assert o["collectives_left_out"] == 0 and got.height == want.height == o["collectives_total"] > 0
    both = want.join(got, on=["collective_id", "rank"], how="inner", suffix="_drawn")
    assert both.height == want.height
    for col in ("start_ns", "end_ns"):
        assert (both[col] == both[f"{col}_drawn"]).all(), col
    for col in ("wait_us", "transfer_us"):
        assert (both[col] - both[f"{col}_drawn"]).abs().max() < 1e-9, col
    # each on its rank's communication lane, on the item of its kernel
    lanes = meta["lanes"]
    assert all(lanes["rank"][ln] == r and lanes["kind"][ln] == "device" for ln, r in zip(got["lane"], got["rank"]))
    first = got.row(0, named=True)
    task = client.get(f"/api/timeline/task?id={first['id']}").get_json()
    assert task["lane"] == first["lane"] and task["start"] + int(meta["origin_ns"]) == first["start_ns"]
    assert dict(task["fields"])["class"] == "communication"
    return o, got
