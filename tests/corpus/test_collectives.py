"""Cross-rank collectives. The corpus tests; the topic's description and its other tests:
tests/unit/test_collectives.py.
"""

from __future__ import annotations

import polars as pl

import traceview as tv
from tests.conftest import SHARED_TRACES, needs_shared
from traceview.analysis.collectives import match_collectives, stragglers

DLRM = SHARED_TRACES / "param/et_replay/tests/inputs/dlrm_kineto.tar.gz.extracted/dlrm_kineto"


@needs_shared
def test_real_dlrm_8_ranks_match_consistently():
    t = tv.load(DLRM, use_cache=False)
    assert t.ranks.height == 8
    m = match_collectives(t.device_tasks)
    inst = m.group_by("collective_id").agg(
        pl.col("collective").first(),
        pl.col("n_ranks").first(),
        ((pl.col("end_ns").max() - pl.col("end_ns").min()) / 1000).alias("end_spread_us"),
        (pl.col("wait_us") - (pl.col("start_ns").max() - pl.col("start_ns")) / 1000).abs().max().alias("dev_us"),
        pl.col("rank").sort_by("start_ns").last().alias("last_rank"),
        pl.col("rank").sort_by("dur_us").first().alias("min_dur_rank"),
    )
    # 3 all-reduces + 5 all-to-alls (SendRecv kernels launched inside nccl:all_to_all) per rank
    assert inst["collective"].value_counts().sort("collective").rows() == [("allreduce", 3), ("alltoall", 5)]
    assert set(inst["n_ranks"]) == {8}
    # one host, one clock: a collective ends together on every rank, so each rank's wait equals how
    # much earlier than the last rank it arrived, and the last to arrive has the shortest kernel
    assert inst["end_spread_us"].max() <= 10 and inst["dev_us"].max() <= 10
    assert (inst["last_rank"] == inst["min_dur_rank"]).all()
    assert (m["wait_us"] >= 0).all() and (m["transfer_us"] <= m["dur_us"]).all()
    assert m["transfer_us"].min() > 0 and m["transfer_us"].max() < 1_000  # µs-scale V100 NCCL kernels
    slow = stragglers(m)
    assert slow.filter(pl.col("is_straggler"))["rank"].to_list() == [7]
    assert slow.filter(pl.col("rank") == 7)["last_arrivals"].item() == slow["last_arrivals"].max()
    assert m["msg_bytes"].null_count() == m.height  # this PyTorch recorded no message sizes


@needs_shared
def test_real_hta_trace_filter_pair():
    t = tv.load(SHARED_TRACES / "hta/tests/data/trace_filter", use_cache=False)
    m = match_collectives(t.device_tasks)
    assert sorted(m["rank"].unique()) == [0, 1]
    assert m["collective_id"].n_unique() == 10 and set(m["n_ranks"]) == {2}
    assert dict(m.group_by("collective").agg(pl.col("collective_id").n_unique()).rows()) == {
        "alltoall": 4,
        "allreduce": 4,
        "allgather": 2,
    }
    assert (m["wait_us"] >= 0).all() and (m["transfer_us"] > 0).all()
    assert set(m["step"]) == {551, 552}
    assert stragglers(m)["is_straggler"].sum() == 1


@needs_shared
def test_real_collective_metadata():
    nccl = tv.load(SHARED_TRACES / "hta/tests/data/nccl_parser_config/nccl_data.json.gz", use_cache=False)
    comm = nccl.device_tasks.filter(pl.col("kind") == "communication")
    assert dict(comm["collective"].value_counts().rows()) == {"allreduce": 15, "broadcast": 6}
    assert set(comm["process_group"]) == {"0"} and set(comm["group_size"]) == {2}
    assert 6_637_568 * 4 in comm["msg_bytes"].to_list()  # In msg nelems 6,637,568 Float
    b200 = tv.load(SHARED_TRACES / "tracelens/tests/traces/b200/eager_trace.json.gz", use_cache=False)
    comm = b200.device_tasks.filter(pl.col("kind") == "communication")
    assert dict(comm["collective"].value_counts().rows()) == {"allreduce": 73, "allgather": 1}
    ag = comm.filter(pl.col("collective") == "allgather").row(0, named=True)
    # _allgather_base: out 201,088 = 8 x in 25,136 BFloat16 elements
    assert (ag["process_group"], ag["group_size"], ag["msg_bytes"]) == ("3", 8, 201_088 * 2)
    level1 = tv.load(SHARED_TRACES / "msinsight/test/data/pytorch/text/level1", use_cache=False)
    m = match_collectives(level1.device_tasks)
    assert set(m["collective"]) == {"allreduce"} and set(m["process_group"]) == {"17522688603477080586"}
    assert m["collective_id"].n_unique() == 4 and set(m["n_ranks"]) == {2}
