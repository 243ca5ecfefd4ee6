"""trace_view.json of the ascend_2rank sample."""

from __future__ import annotations

from .ascend_tables import ASC, ASC_OPS
from .intervals import subtract, union
from .output import us3


def asc_trace_view(rk, pid, rng):
    """trace_view.json: a bare JSON array, string ts, torch_npu process layout."""
    hw, cann, hccl, ovl = pid * 1024 + 416, pid * 1024 + 224, pid * 1024 + 480, pid * 1024 + 736
    main_tid, bwd_tid = pid, pid + 8571
    ev = []

    def M(name, p, tid, args):
        ev.append({"ph": "M", "name": name, "pid": p, "tid": tid, "args": args})

    def process(p, name, labels, sort_index, threads=()):
        """A process's metadata: its name, its threads (tid, name, sort index or None), its labels, its sort index."""
        M("process_name", p, 0, {"name": name})
        for tid, thread, thread_sort in threads:
            M("thread_name", p, tid, {"name": thread})
            if thread_sort is not None:
                M("thread_sort_index", p, tid, {"sort_index": thread_sort})
        M("process_labels", p, 0, {"labels": labels})
        M("process_sort_index", p, 0, {"sort_index": sort_index})

    process(pid, "Python", "CPU", 0)
    for tid in (main_tid, bwd_tid):
        M("thread_name", pid, tid, {"name": f"Thread {tid}"})
        M("thread_sort_index", pid, tid, {"sort_index": tid})
    stream = ASC["compute_stream"]
    process(hw, "Ascend Hardware", "NPU", 13, [(stream, f"Stream {stream}", stream)])
    process(hccl, "HCCL", "NPU", 15, [(0, "Group 0 Communication", 0), (1, "Plane 0", 1)])
    process(cann, "CANN", "CPU", 7)
    lanes = ["Computing", "Communication", "Communication(Not Overlapped)", "Free"]
    process(ovl, "Overlap Analysis", "NPU", 23, [(i, n, None) for i, n in enumerate(lanes)])

    def X(name, p, tid, ts, dur, args=None, cat=None):
        e = {"ph": "X", "name": name, "pid": p, "tid": tid, "ts": us3(ts), "dur": dur / 1000}
        if cat:
            e["cat"] = cat
        if args is not None:
            e["args"] = args
        ev.append(e)
        return e

    def flow(host_ts, host_tid, dev_ts, dev_pid, dev_tid):
        ev.append(
            {
                "ph": "s",
                "bp": "e",
                "name": "torch_to_npu",
                "id": dev_ts,
                "pid": pid,
                "tid": host_tid,
                "ts": us3(host_ts),
                "cat": "async_npu",
            }
        )
        ev.append(
            {
                "ph": "f",
                "bp": "e",
                "name": "torch_to_npu",
                "id": dev_ts,
                "pid": dev_pid,
                "tid": dev_tid,
                "ts": us3(dev_ts),
                "cat": "async_npu",
            }
        )

    cpu_args = {"Sequence number": -1, "Fwd thread id": 0}
    for step in ASC["steps"]:
        s = rk["steps"][step]
        X(
            f"ProfilerStep#{step}",
            pid,
            main_tid,
            s["host_start"],
            s["host_end"] - s["host_start"],
            dict(cpu_args),
            "cpu_op",
        )
        X("aten::item", pid, main_tid, s["item"][0], s["item"][1], dict(cpu_args), "cpu_op")
        tasks = [t for t in rk["tasks"] if t["step"] == step]
        for t in tasks:
            name, typ, core, _, hop, ishape, idt, *_ = ASC_OPS[t["op"]]
            phase = ASC_OPS[t["op"]][-1]
            tid = bwd_tid if phase.startswith("bwd") else main_tid
            hdur = rng.randint(7_000, 12_000)
            a = dict(cpu_args)
            if ishape != "N/A":
                a["Input Dims"] = ishape.strip('"').replace(";", ";\r\n")
                a["Input type"] = idt.replace(";", ";\r\n").lower()
            X(hop, pid, tid, t["launch"], hdur, a, "cpu_op")
            flow(t["launch"] + 1_000, tid, t["start"], hw, ASC["compute_stream"])
            X(
                name,
                hw,
                ASC["compute_stream"],
                t["start"],
                t["end"] - t["start"],
                {
                    "Model Id": 4294967295,
                    "Task Type": "MIX_AIV" if core == "MIX_AIV" else "AI_CORE",
                    "Physic Stream Id": ASC["compute_stream"],
                    "Task Id": t["task_id"],
                    "Batch Id": 0,
                    "Subtask Id": 0 if core == "MIX_AIV" else 4294967295,
                    "connection_id": t["conn"],
                },
            )
        for h in [h for h in rk["hccl"] if h["step"] == step]:
            name = f"hcom_allReduce__{ASC['hccl_group']}_{h['index']}_1"
            X("c10d::allreduce_", pid, bwd_tid, h["launch"], rng.randint(18_000, 26_000), dict(cpu_args), "cpu_op")
            flow(h["launch"] + 2_000, bwd_tid, h["start"], hccl, 0)
            X(
                name,
                hccl,
                0,
                h["start"],
                h["end"] - h["start"],
                {
                    "connection_id": h["conn"],
                    "model id": 4294967295,
                    "data_type": "FP16",
                    "alg_type": "MESH-RING",
                    "count": h["count"],
                },
            )
            wait = h["end"] - h["start"] - h["transfer"]
            sub = {
                "notify_id": "92",
                "duration estimated(us)": 0.02,
                "stream id": 4,
                "task id": h["conn"],
                "context id": 0,
                "task type": "Notify_Wait",
                "src rank": 1 - rk["rank"],
                "dst rank": rk["rank"],
                "transport type": "LOCAL",
                "size(Byte)": 0,
                "data type": "INVALID_TYPE",
                "link type": "INVALID_TYPE",
                "bandwidth(GB/s)": 0.0,
                "model id": 4294967295,
            }
            if wait > 0:
                X("Notify_Wait", hccl, 1, h["start"], wait, sub)
            nbytes = 2 * h["count"]
            X(
                "Reduce_Inline",
                hccl,
                1,
                h["end"] - h["transfer"],
                h["transfer"],
                dict(
                    sub,
                    **{
                        "notify_id": "18446744073709551615",
                        "context id": 1,
                        "task type": "Reduce_Inline",
                        "transport type": "SDMA",
                        "size(Byte)": nbytes,
                        "data type": "FP16",
                        "link type": "HCCS",
                        "bandwidth(GB/s)": round(nbytes / h["transfer"], 6),
                    },
                ),
            )
        # Overlap Analysis lanes (the precomputed view torch_npu writes; numbers must not be taken from here)
        comp = union((t["start"], t["end"]) for t in tasks)
        comm = union((h["start"], h["end"]) for h in rk["hccl"] if h["step"] == step)
        busy = union(comp + comm)
        for s_, e_ in comp:
            X("Computing", ovl, 0, s_, e_ - s_)
        for s_, e_ in comm:
            X("Communication", ovl, 1, s_, e_ - s_)
        for s_, e_ in subtract(comm, comp):
            X("Communication(Not Overlapped)", ovl, 2, s_, e_ - s_)
        for k in range(len(busy) - 1):
            X("Free", ovl, 3, busy[k][1], busy[k + 1][0] - busy[k][1])
    return ev
