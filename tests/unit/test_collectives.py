"""Cross-rank collectives: matching, transfer / wait / skew, bandwidth, straggler, step skew, and the
collective metadata the parsers attach to communication tasks.

This file holds the topic's unit tests; the others are in tests/corpus/test_collectives.py.
"""

from __future__ import annotations

import json

import polars as pl
import pytest

import traceview as tv
from tests.conftest import SAMPLES
from tests.support.samples import shared_sample
from traceview import schema
from traceview.analysis.collectives import bus_factor, match_collectives, step_skew, stragglers

DP4 = SAMPLES / "dp4_nccl"


ASCEND2 = SAMPLES / "ascend_2rank"


def _task(rank, start, dur, collective="allreduce", pg="0", size=None, msg=None, step=None, name="nccl"):
    return {
        "rank": rank,
        "name": name,
        "kind": "communication",
        "start_ns": start,
        "end_ns": start + dur,
        "dur_ns": dur,
        "step": step,
        "stream": 20,
        "collective": collective,
        "process_group": pg,
        "group_size": size,
        "msg_bytes": msg,
    }


def _frame(rows: list[dict]) -> pl.DataFrame:
    return schema.conform(pl.DataFrame(rows), "device_tasks")


def test_hand_written_transfer_wait_skew_and_bandwidth():
    rows = [
        # all-reduce #0 of pg 0 on 3 ranks: rank 2 arrives last (start 300) and only transfers 1,000 ns
        _task(0, 100, 1_200, size=3, msg=3_000),
        _task(1, 200, 1_100, size=3, msg=3_000),
        _task(2, 300, 1_000, size=3, msg=3_000),
        # all-gather #0 of pg 1 on ranks 0,1 interleaved with the all-reduces (its own sequence)
        _task(0, 1_500, 400, "allgather", "1", size=2, msg=800),
        _task(1, 1_450, 450, "allgather", "1", size=2, msg=800),
        # all-reduce #1 of pg 0: rank 0 arrives last this time; no message size recorded
        _task(0, 5_000, 2_000, size=3),
        _task(1, 4_000, 3_000, size=3),
        _task(2, 4_500, 2_500, size=3),
        # a kernel of an unrecorded collective (null type / group), alone on rank 0
        _task(0, 9_000, 10, None, None),
        # a compute kernel is ignored
        {**_task(1, 0, 5), "kind": "kernel", "collective": None},
    ]
    m = match_collectives(_frame(rows))
    assert m.columns[:6] == ["collective_id", "collective", "process_group", "step", "seq", "rank"]
    ids = m.group_by("collective_id", maintain_order=True).agg(pl.col("collective").first(), pl.col("rank"))
    # instances numbered by earliest start: allreduce#0 (100), allgather#0 (1,450), allreduce#1 (4,000), null (9,000)
    assert ids["collective"].to_list() == ["allreduce", "allgather", "allreduce", None]
    assert ids["rank"].to_list() == [[0, 1, 2], [0, 1], [0, 1, 2], [0]]

    ar0 = m.filter(pl.col("collective_id") == 0)
    assert ar0["transfer_us"].to_list() == [1.0, 1.0, 1.0]
    assert ar0["wait_us"].to_list() == [0.2, 0.1, 0.0]
    assert ar0["start_skew_us"].to_list() == [0.0, 0.1, 0.2]
    assert ar0["seq"].to_list() == [0, 0, 0] and ar0["n_ranks"].to_list() == [3, 3, 3]
    # algbw = 3,000 B / 1,000 ns = 3 GB/s; busbw = 3 x 2(3-1)/3 = 4 GB/s
    assert ar0["algbw_gbps"].to_list() == pytest.approx([3.0] * 3)
    assert ar0["busbw_gbps"].to_list() == pytest.approx([4.0] * 3)

    ag = m.filter(pl.col("collective_id") == 1)
    assert ag["transfer_us"].to_list() == [0.4, 0.4] and ag["wait_us"].to_list() == pytest.approx([0.0, 0.05])
    assert ag["busbw_gbps"].to_list() == pytest.approx([800 / 400 * 0.5] * 2)  # (n-1)/n with n = 2

    ar1 = m.filter(pl.col("collective_id") == 2)
    assert ar1["seq"].to_list() == [1, 1, 1]
    assert ar1["transfer_us"].to_list() == [2.0, 2.0, 2.0] and ar1["wait_us"].to_list() == [0.0, 1.0, 0.5]
    assert ar1["algbw_gbps"].null_count() == 3 and ar1["busbw_gbps"].null_count() == 3

    lone = m.filter(pl.col("collective_id") == 3).row(0, named=True)
    assert (lone["n_ranks"], lone["wait_us"], lone["busbw_gbps"]) == (1, 0.0, None)

    slow = stragglers(m)
    # only multi-rank instances count: rank 0 waits 0.2 + 0 + 0 = 0.2 µs over 3, rank 2 waits 0.5 µs over 2
    assert slow["rank"].to_list() == [0, 1, 2]
    assert slow["instances"].to_list() == [3, 3, 2]
    assert slow["total_wait_us"].to_list() == pytest.approx([0.2, 1.15, 0.5])
    assert slow["last_arrivals"].to_list() == [2, 0, 1]  # ar1 and ag (rank 0 starts last in both)
    assert slow["is_straggler"].to_list() == [True, False, False]


def test_by_step_keys_instances_per_step():
    rows = [
        # rank 1's profile misses step 1's all-reduce: by step, step 2's all-reduces still pair up
        _task(0, 0, 50, step=1),
        _task(0, 1_000, 50, step=2),
        _task(1, 1_010, 40, step=2),
    ]
    m = match_collectives(_frame(rows))
    assert m.filter(pl.col("step") == 2)["n_ranks"].to_list() == [2, 2]
    assert m.filter(pl.col("step") == 2)["wait_us"].to_list() == [pytest.approx(0.01), 0.0]
    flat = match_collectives(_frame(rows), by_step=False)  # pure sequence numbers pair rank 1 with step 1
    assert flat.filter(pl.col("collective_id") == 0)["rank"].to_list() == [0, 1]


def test_bus_factors():
    df = pl.DataFrame(
        {
            "c": ["allreduce", "allgather", "reduce_scatter", "alltoall", "broadcast", "send", "recv", "barrier", None],
            "n": [4, 8, 8, 8, 8, 2, 2, 8, 8],
        }
    )
    got = df.select(bus_factor(pl.col("c"), pl.col("n")).alias("f"))["f"].to_list()
    assert got[:7] == pytest.approx([1.5, 7 / 8, 7 / 8, 7 / 8, 1.0, 1.0, 1.0])
    assert got[7] is None and got[8] is None


def test_slow_ranks_none_when_nobody_waits_and_empty_inputs():
    m = match_collectives(_frame([_task(0, 0, 100), _task(1, 0, 100)]))
    assert stragglers(m)["is_straggler"].to_list() == [False, False]
    single = match_collectives(_frame([_task(0, 0, 100)]))
    assert stragglers(single).is_empty()
    assert match_collectives(schema.empty("device_tasks")).is_empty()


def test_step_skew_hand_written():
    d = pl.DataFrame(
        {
            "rank": [0, 1, 2, 0, 1, 2],
            "step": [1, 1, 1, 2, 2, 2],
            "duration_us": [100.0, 130.0, 90.0, 100.0, 100.0, None],
        }
    )
    s = step_skew(d)
    assert s["step"].to_list() == [1, 2]
    assert s["skew_us"].to_list() == [40.0, 0.0]
    assert s["longest_step_rank"].to_list() == [1, 0] and s["shortest_step_rank"].to_list() == [
        2,
        0,
    ]  # ties: lowest rank
    assert s["n_ranks"].to_list() == [3, 2]
    assert s["skew_frac"][0] == pytest.approx(40 / 130)
    assert s["mean_us"][0] == pytest.approx(320 / 3)


@pytest.fixture(scope="module")
def dp4():
    return tv.load(DP4, use_cache=False), json.loads((DP4 / "expected.json").read_text())


def test_dp4_collective_metadata_from_the_kernels(dp4):
    t, exp = dp4
    comm = t.device_tasks.filter(pl.col("kind") == "communication")
    assert comm.height == 48
    assert set(comm["collective"]) == {"allreduce"} and set(comm["process_group"]) == {"0"}
    assert set(comm["group_size"]) == {4}
    # bf16: 2 bytes per element
    assert sorted(set(comm["msg_bytes"])) == sorted({c["bytes"] for c in exp["collectives"]})
    assert t.device_tasks.filter(pl.col("kind") != "communication")["collective"].null_count() == (
        t.device_tasks.height - 48
    )


def test_dp4_transfer_wait_and_slow_rank_match_expected(dp4):
    t, exp = dp4
    m = match_collectives(t.device_tasks)
    assert m["collective_id"].n_unique() == len(exp["collectives"]) == 12
    assert set(m["n_ranks"]) == {4}
    for cid, c in enumerate(exp["collectives"]):  # expected.json lists them in time order
        rows = m.filter(pl.col("collective_id") == cid).sort("rank")
        assert rows["step"][0] == int(c["step"].split("#")[1])
        assert rows["start_ns"].to_list() == c["start_ns"]
        assert rows["msg_bytes"].to_list() == [c["bytes"]] * 4
        for r in range(4):
            assert abs(rows["transfer_us"][r] * 1000 - c["transfer_ns"]) <= 1
            assert abs(rows["wait_us"][r] * 1000 - c["wait_ns"][r]) <= 1
            assert abs(rows["dur_us"][r] * 1000 - c["dur_ns"][r]) <= 1
        # transfer = ceil(1.5 x bytes / 360 B/ns): busbw within 1 ns of transfer of 360 GB/s
        assert rows["busbw_gbps"].to_list() == pytest.approx([c["bus_bandwidth_GBps"]] * 4, rel=1e-6)
        assert rows["algbw_gbps"][0] == pytest.approx(rows["busbw_gbps"][0] / 1.5)
    slow = stragglers(m)
    assert slow.filter(pl.col("is_straggler"))["rank"].to_list() == [exp["slow_rank"]] == [2]
    assert slow.filter(pl.col("rank") == 2).row(0, named=True)["total_wait_us"] == 0.0
    assert slow.filter(pl.col("rank") == 2)["last_arrivals"].to_list() == [12]
    waits = {r: sum(c["wait_ns"][r] for c in exp["collectives"]) / 1000 for r in range(4)}
    assert slow["total_wait_us"].to_list() == pytest.approx([waits[r] for r in range(4)], abs=0.012)


def test_dp4_step_skew_from_step_windows(dp4):
    t, exp = dp4
    durations = t.steps.select(
        "rank", "step", ((pl.col("device_end_ns") - pl.col("device_start_ns")) / 1000).alias("duration_us")
    )
    s = step_skew(durations)
    for row in s.iter_rows(named=True):
        windows = {int(r): exp["ranks"][r]["steps"][f"ProfilerStep#{row['step']}"]["window_ns"] for r in exp["ranks"]}
        assert row["max_us"] * 1000 == pytest.approx(max(windows.values()), abs=1e-3)
        assert row["min_us"] * 1000 == pytest.approx(min(windows.values()), abs=1e-3)
        assert row["skew_us"] * 1000 == pytest.approx(max(windows.values()) - min(windows.values()), abs=1e-3)
        assert row["longest_step_rank"] == max(windows, key=windows.get)
    assert s["step"].to_list() == exp["steps"]


def test_pipeline_point_to_point_is_matched_but_left_out_of_slow_ranks():
    t = shared_sample("pp4_1f1b")
    m = match_collectives(t.device_tasks)
    assert set(m["collective"]) == {"send", "recv", "coalesced"}  # from the kernels' Collective name
    assert m.height == t.device_tasks.filter(pl.col("kind") == "communication").height == 120
    sends = m.filter(pl.col("collective") == "send")
    # send: factor 1, so busbw = algbw = 2,097,152 B / transfer (the shortest send of the instance)
    assert sends["busbw_gbps"].null_count() == 0
    assert sends["busbw_gbps"].to_list() == pytest.approx((2_097_152 / (sends["transfer_us"] * 1000)).to_list())
    assert m.filter(pl.col("collective") == "coalesced")["busbw_gbps"].null_count() == 72  # no factor defined
    assert stragglers(m).is_empty()  # a send is not paired with its recv: no straggler verdict
    assert stragglers(m, include_p2p=True)["rank"].to_list() == [0, 1, 2, 3]


WORLD, SLOW, N_AR = 4, 1, 6


T0_NS = 1_700_000_000_000_000  # integer µs * 1000: exact


def _us(ns: int) -> float:
    return ns / 1000


def _generate(folder, delays: dict[int, list[int]], transfer: list[int], nelems: list[int]) -> None:
    """One Kineto file per rank: an all-reduce k on rank r starts at base_k + delays[r][k] and every
    rank's kernel ends at base_k + max_r delays[r][k] + transfer[k]. Even k: the collective metadata
    is only on `record_param_comms` (the kernel's External id is the nested `nccl:all_reduce`'s, so
    the parser must find the op that contains the launch); odd k: the kernel has the op's External id.
    One all-gather of group "1" per rank carries its metadata on the kernel itself."""
    for r in range(WORLD):
        ev = []
        ext = 100
        for k in range(N_AR):
            base = T0_NS + k * 1_000_000
            host = base - 500_000 + r * 1_000
            corr = 10_000 + k
            op_ext, ann_ext = ext, ext + 1
            ext += 2
            ev.append(
                {
                    "ph": "X",
                    "cat": "cpu_op",
                    "name": "record_param_comms",
                    "pid": 7,
                    "tid": 7,
                    "ts": _us(host),
                    "dur": 50.0,
                    "args": {
                        "External id": op_ext,
                        "Collective name": "allreduce",
                        "dtype": "Float",
                        "In msg nelems": nelems[k],
                        "Out msg nelems": nelems[k],
                        "Group size": WORLD,
                        "Process Group Name": "0",
                        "Process Group Description": "default_pg",
                        "Process Group Ranks": "[0, 1, 2, 3]",
                    },
                }
            )
            ev.append(
                {
                    "ph": "X",
                    "cat": "user_annotation",
                    "name": "nccl:all_reduce",
                    "pid": 7,
                    "tid": 7,
                    "ts": _us(host + 5_000),
                    "dur": 40.0,
                    "args": {"External id": ann_ext},
                }
            )
            kernel_ext = ann_ext if k % 2 == 0 else op_ext
            ev.append(
                {
                    "ph": "X",
                    "cat": "cuda_runtime",
                    "name": "cudaLaunchKernelExC",
                    "pid": 7,
                    "tid": 7,
                    "ts": _us(host + 10_000),
                    "dur": 5.0,
                    "args": {"correlation": corr, "External id": kernel_ext},
                }
            )
            start = base + delays[r][k]
            end = base + max(d[k] for d in delays.values()) + transfer[k]
            ev.append(
                {
                    "ph": "X",
                    "cat": "kernel",
                    "name": "ncclDevKernel_AllReduce_Sum_f32_RING_LL(x)",
                    "pid": r,
                    "tid": 20,
                    "ts": _us(start),
                    "dur": _us(end - start),
                    "args": {"correlation": corr, "External id": kernel_ext, "stream": 20, "device": r},
                }
            )
        start = T0_NS + N_AR * 1_000_000 + r * 2_000
        ev.append(
            {
                "ph": "X",
                "cat": "kernel",
                "name": "ncclDevKernel_AllGather_RING_LL(x)",
                "pid": r,
                "tid": 21,
                "ts": _us(start),
                "dur": _us(T0_NS + N_AR * 1_000_000 + 10_000 - start),
                "args": {
                    "correlation": 99_999,
                    "stream": 21,
                    "device": r,
                    "Collective name": "_allgather_base",
                    "In msg nelems": 1_000,
                    "Out msg nelems": 4_000,
                    "Group size": WORLD,
                    "dtype": "BFloat16",
                    "Process Group Name": "1",
                },
            }
        )
        doc = {
            "distributedInfo": {"backend": "nccl", "rank": r, "world_size": WORLD},
            "deviceProperties": [{"id": r, "name": "NVIDIA H100 80GB HBM3"}],
            "traceEvents": ev,
        }
        (folder / f"rank{r}.pt.trace.json").write_text(json.dumps(doc))


def test_generated_profile_with_a_delayed_rank(tmp_path):
    # rank SLOW arrives 200-700 µs late at every all-reduce; the others jitter by a few µs
    delays = {r: [((r * 7 + k * 3) % 5) * 1_000 for k in range(N_AR)] for r in range(WORLD)}
    delays[SLOW] = [200_000 + k * 100_000 for k in range(N_AR)]
    transfer = [50_000 + k * 10_000 for k in range(N_AR)]
    nelems = [1_000_000 * (k + 1) for k in range(N_AR)]
    _generate(tmp_path, delays, transfer, nelems)
    t = tv.load(tmp_path, use_cache=False)
    comm = t.device_tasks.filter(pl.col("kind") == "communication").sort("rank", "start_ns")
    # metadata found through the enclosing record_param_comms (even k) and by External id (odd k)
    ar = comm.filter(pl.col("collective") == "allreduce")
    assert ar.height == WORLD * N_AR and ar["process_group"].unique().to_list() == ["0"]
    assert ar["group_size"].unique().to_list() == [WORLD]
    assert ar.filter(pl.col("rank") == 0)["msg_bytes"].to_list() == [4 * n for n in nelems]  # Float: 4 B
    ag = comm.filter(pl.col("collective") == "allgather")
    assert ag["msg_bytes"].to_list() == [8_000] * WORLD and ag["process_group"].unique().to_list() == ["1"]

    m = match_collectives(t.device_tasks)
    assert m["collective_id"].n_unique() == N_AR + 1
    for k in range(N_AR):
        rows = m.filter((pl.col("collective") == "allreduce") & (pl.col("seq") == k)).sort("rank")
        latest = max(d[k] for d in delays.values())
        assert rows["transfer_us"].to_list() == [transfer[k] / 1000] * WORLD
        assert rows["wait_us"].to_list() == pytest.approx(
            [(latest - delays[r][k]) / 1000 for r in range(WORLD)], abs=1e-9
        )
        assert rows["start_skew_us"].to_list() == pytest.approx(
            [(delays[r][k] - min(d[k] for d in delays.values())) / 1000 for r in range(WORLD)], abs=1e-9
        )
        assert rows["busbw_gbps"][0] == pytest.approx(4 * nelems[k] / transfer[k] * 2 * 3 / 4)
    agm = m.filter(pl.col("collective") == "allgather")
    assert agm["transfer_us"].to_list() == [4.0] * WORLD  # rank 3 starts last: 10,000 - 6,000 ns
    assert agm["busbw_gbps"][0] == pytest.approx(8_000 / 4_000 * 3 / 4)
    slow = stragglers(m)
    assert slow.filter(pl.col("is_straggler"))["rank"].to_list() == [SLOW]
    assert slow.filter(pl.col("rank") == SLOW)["last_arrivals"].item() == N_AR
    assert slow.filter(pl.col("rank") != SLOW)["mean_wait_us"].min() > 100


def test_ascend_sample_transfer_and_straggler():
    t = tv.load(ASCEND2, use_cache=False)
    exp = json.loads((ASCEND2 / "expected.json").read_text())
    comm = t.device_tasks.filter(pl.col("kind") == "communication")
    assert comm.height == 12 and set(comm["collective"]) == {"allreduce"}
    m = match_collectives(t.device_tasks)
    assert m["collective_id"].n_unique() == 6 and set(m["n_ranks"]) == {2}
    for op in exp["ranks"]["0"]["hccl"]:
        rows = m.filter((pl.col("rank") == 0) & (pl.col("name") == op["name"]) & (pl.col("step") == op["step"]))
        assert rows.height == 1
        assert abs(rows["transfer_us"][0] * 1000 - op["transfer_ns"]) <= 1
    # rank 1 computes 6 % slower, so rank 0 waits in every all-reduce
    slow = stragglers(m)
    assert slow.filter(pl.col("is_straggler"))["rank"].to_list() == [1]
    assert slow.filter(pl.col("rank") == 1)["total_wait_us"].item() == 0.0
