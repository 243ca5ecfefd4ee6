"""Sample ascend_2rank (torch_npu layout): the timeline of both ranks and every CSV/JSON file."""

from __future__ import annotations

import csv
import io
import json
import random
from pathlib import Path

from .ascend_tables import ASC, ASC_ALLREDUCE, ASC_OPS, KD_HEADER, STEP_TRACE_HEADER
from .ascend_trace_view import asc_trace_view
from .intervals import clip, overlap_breakdown, union
from .output import us3, write_bytes, write_json


def asc_build():
    """Device/host timeline of both ranks (integer ns, epoch clock)."""
    world = ASC["world"]
    rngs = [random.Random(777 + r) for r in range(world)]
    ranks = [{"rank": r, "tasks": [], "host": [], "hccl": [], "steps": {}} for r in range(world)]
    host_t = [ASC["t0_ns"] + 1_000 * r for r in range(world)]
    task_id = [11_040 + 3 * r for r in range(world)]
    conn = [900 for _ in range(world)]
    ar_index = 0
    for step in ASC["steps"]:
        # per rank: compute the device timeline up to each all-reduce "ready" point; the all-reduce end needs both
        per = []
        for r in range(world):
            rng = rngs[r]
            slow = ASC["slow_factor"] if r == ASC["slow_rank"] else 1.0
            st = {"step": step, "host_start": host_t[r], "ops": [], "ready": []}
            t_host = host_t[r] + rng.randint(18_000, 26_000)  # ProfilerStep begin -> first launch
            dev_free = None
            for k, (name, typ, core, base, hop, *_rest) in enumerate(ASC_OPS):
                phase = _rest[-1]
                if phase == "opt":
                    break
                d = int(round(base * slow * (1.0 + rng.uniform(-0.015, 0.015))))
                launch = t_host
                t_host += rng.randint(9_000, 16_000)
                if phase == "bwd" and ASC_OPS[k - 1][-1] == "fwd":
                    # loss.item() after the forward: the host waits for the device, then ~0.3 ms of host work
                    # before backward launches anything -> a host-bound gap on the device (counted as Free)
                    item_start = t_host
                    t_sync = max(t_host + rng.randint(4_000, 6_000), dev_free + rng.randint(7_000, 9_000))
                    st["item"] = (item_start, t_sync - item_start)
                    t_host = t_sync + rng.randint(280_000, 320_000)
                    launch = t_host
                start = (
                    launch + rng.randint(6_000, 9_000)
                    if dev_free is None
                    else max(launch + rng.randint(6_000, 9_000), dev_free + rng.randint(2_000, 6_500))
                )
                st["ops"].append((k, start, start + d, launch))
                dev_free = start + d
                if phase.startswith("bwd_ar"):
                    st["ready"].append((dev_free + rng.randint(4_000, 7_000), t_host))
                    t_host += rng.randint(20_000, 30_000)
            st["t_host"], st["dev_free"] = t_host, dev_free
            per.append(st)
        # all-reduces: same end on both ranks; a later one queues behind the previous one
        ar = []
        prev_end = 0
        for j, (count, T) in enumerate(ASC_ALLREDUCE):
            starts = [max(per[r]["ready"][j][0], prev_end) for r in range(world)]
            end = max(starts) + T
            ar.append((starts, end, T, count))
            prev_end = end
        for r in range(world):
            rng = rngs[r]
            slow = ASC["slow_factor"] if r == ASC["slow_rank"] else 1.0
            st = per[r]
            t_host = st["t_host"]
            dev_free = max(st["dev_free"], ar[-1][1])  # optimizer waits for the gradients
            for k, (name, typ, core, base, hop, *_rest) in enumerate(ASC_OPS):
                if _rest[-1] != "opt":
                    continue
                d = int(round(base * slow * (1.0 + rng.uniform(-0.015, 0.015))))
                launch = t_host
                t_host += rng.randint(9_000, 16_000)
                start = max(launch + rng.randint(6_000, 9_000), dev_free + rng.randint(2_000, 6_500))
                st["ops"].append((k, start, start + d, launch))
                dev_free = start + d
            host_end = max(t_host, dev_free) + rng.randint(25_000, 40_000)  # aten::item() syncs
            rk = ranks[r]
            prev_stream_end = rk.get("last_end")
            for k, s, e, launch in st["ops"]:
                task_id[r] += 1
                conn[r] += 1
                rk["tasks"].append(
                    {
                        "step": step,
                        "op": k,
                        "start": s,
                        "end": e,
                        "launch": launch,
                        "task_id": task_id[r],
                        "conn": conn[r],
                        "wait": 0 if prev_stream_end is None else s - prev_stream_end,
                    }
                )
                prev_stream_end = e
            rk["last_end"] = prev_stream_end
            for j, (starts, end, T, count) in enumerate(ar):
                conn[r] += 1
                rk["hccl"].append(
                    {
                        "step": step,
                        "index": ar_index + j,
                        "start": starts[r],
                        "end": end,
                        "transfer": T,
                        "count": count,
                        "launch": st["ready"][j][1],
                        "conn": conn[r],
                    }
                )
            rk["steps"][step] = {"host_start": st["host_start"], "host_end": host_end, "item": st["item"]}
            host_t[r] = host_end + rng.randint(60_000, 90_000)
        ar_index += len(ASC_ALLREDUCE)
    # wait time of HCCL rows: gap since the previous HCCL op of the rank (0 for the first)
    for rk in ranks:
        prev = None
        for h in rk["hccl"]:
            h["wait"] = 0 if prev is None else max(0, h["start"] - prev)
            prev = h["end"]
    return ranks


def asc_step_values(rk, step):
    """step_trace_time.csv row values (ns) from the raw tasks, docs/metrics.md."""
    comp = [(t["start"], t["end"]) for t in rk["tasks"] if t["step"] == step]
    comm = [(h["start"], h["end"]) for h in rk["hccl"] if h["step"] == step]
    allb = union(comp + comm)
    lo, hi = allb[0][0], allb[-1][1]
    b = overlap_breakdown(clip(union(comp), lo, hi), clip(union(comm), lo, hi))
    bubble = 0  # no hcom_receive ops
    v = {
        "Computing": b["computing_ns"],
        "Communication(Not Overlapped)": b["communication_not_overlapped_ns"],
        "Overlapped": b["overlapped_ns"],
        "Communication": b["communication_ns"],
        "Free": b["free_ns"],
        "Stage": (hi - lo) - bubble,
        "Bubble": bubble,
        "Communication(Not Overlapped and Exclude Receive)": b["communication_not_overlapped_ns"] - bubble,
        "Preparing": lo - rk["steps"][step]["host_start"],
    }
    assert v["Computing"] + v["Communication(Not Overlapped)"] + v["Free"] == hi - lo
    return v, (lo, hi)


def asc_num(ns):
    """Microsecond value the way torch_npu writes it (a Python float)."""
    return repr(ns / 1000)


def asc_metrics(core, dur_ns, block, rng):
    """aicore/aiv columns (21..45) in the style of the real file."""
    us = dur_ns / 1000
    na = ["N/A"] * 25
    if core == "HCCL":
        return na
    zeros_aic = ["0.0", "0", "0.0", "0.0", "0.0", "0.0", "0.0", "0.0", "0.0", "0.0", "0.0", "0.0", "0.0"]
    if core == "AI_CORE":
        t = round(us * rng.uniform(0.985, 0.997), 3)
        r = [
            rng.uniform(0.4, 0.6),
            rng.uniform(0.5, 0.8),
            rng.uniform(0.7, 0.9),
            rng.uniform(0.8, 0.95),
            rng.uniform(0.05, 0.1),
        ]
        aic = [f"{t}", str(int(round(t * 1800 * block)))]
        for x in r:
            aic += [f"{round(t * x, 3)}", f"{round(x, 3)}"]
        aic += [f"{round(rng.uniform(0.0, 0.01), 3)}"]
        aiv = ["0.0", "0"] + ["0.0"] * 9
        return aic + aiv + [f"{round(r[0] * 100 * 1.2, 3)}"]
    t = round(us * rng.uniform(0.86, 0.95), 3)
    r = [rng.uniform(0.05, 0.3), rng.uniform(0.05, 0.2), rng.uniform(0.3, 0.6), rng.uniform(0.2, 0.6)]
    aiv = [f"{t}", str(int(round(t * 1800 * block)))]
    for x in r:
        aiv += [f"{round(t * x, 3)}", f"{round(x, 3)}"]
    aiv += [f"{round(rng.uniform(0.01, 0.4), 3)}"]
    return zeros_aic + aiv + ["0"]


def write_csv(path: Path, header, rows):
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\r\n")
    w.writerow(header)
    for row in rows:
        w.writerow(row)
    write_bytes(path, buf.getvalue().encode())


def write_ascend(out: Path):
    ranks = asc_build()
    expected = {"description": "ascend_2rank known values (ns, epoch clock; files are in us)", "ranks": {}}
    for rk in ranks:
        r = rk["rank"]
        base = out / f"rank{r}_ascend_pt"
        pid = ASC["pids"][r]
        rng = random.Random(4242 + r)
        # ---- profiler_info_{r}.json / profiler_metadata.json ----
        first = min(t["start"] for t in rk["tasks"])
        last = max(max(t["end"] for t in rk["tasks"]), max(h["end"] for h in rk["hccl"]))
        info = {
            "config": {
                "common_config": {
                    "activities": ["ProfilerActivity.CPU", "ProfilerActivity.NPU"],
                    "schedule": {"wait": 1, "active": 2, "warmup": 1, "repeat": 1, "skip_first": 5},
                    "record_shapes": True,
                    "profile_memory": False,
                    "with_stack": False,
                    "with_flops": False,
                    "with_modules": False,
                },
                "experimental_config": {
                    "_profiler_level": "Level1",
                    "_aic_metrics": "ACL_AICORE_PIPE_UTILIZATION",
                    "_l2_cache": False,
                    "_msprof_tx": False,
                    "_data_simplification": True,
                    "record_op_args": False,
                    "_export_type": "text",
                    "_op_attr": False,
                    "_gc_detect_threshold": None,
                },
            },
            "start_info": {
                "syscnt_enable": True,
                "freq": 100,
                "start_cnt": 19_330_412_508_116 + 2_170 * r,
                "start_monotonic": 193_304_125_081_160 + 21_700 * r,
            },
            "end_info": {
                "collectionTimeEnd": last + 310_000_000 + 3_333 * r,
                "MonotonicTimeEnd": 193_304_125_081_160 + 21_700 * r + (last - first) + 812_000_000,
            },
            "rank_id": r,
        }
        write_bytes(base / f"profiler_info_{r}.json", json.dumps(info, indent=4).encode())
        meta = {
            "ENV_VARIABLES": {
                "ASCEND_GLOBAL_LOG_LEVEL": "",
                "HCCL_RDMA_TC": "",
                "HCCL_RDMA_SL": "",
                "ACLNN_CACHE_LIMIT": "",
                "HOST_CACHE_CAPACITY": "",
                "ASCEND_ENHANCE_ENABLE": "",
                "PYTORCH_NPU_ALLOC_CONF": "",
                "ASCEND_LAUNCH_BLOCKING": "",
            },
            "parallel_group_info": {
                "7180232591842061712": {"group_name": "default_group", "group_rank": r, "global_ranks": [0, 1]}
            },
        }
        write_bytes(base / "profiler_metadata.json", json.dumps(meta, indent=4).encode())
        # ---- kernel_details.csv ----
        rows = []
        for t in rk["tasks"]:
            name, typ, core, _, _, ishape, idt, ifmt, oshape, block, _ = ASC_OPS[t["op"]]
            mix = "0"
            ctx = "0" if core == "MIX_AIV" else "N/A"
            hf32 = "YES" if typ in ("Conv2D",) else "NO"
            odt = idt.split(";")[-1] if ishape != "N/A" else "N/A"
            ofmt = (
                (
                    "FRACTAL_Z"
                    if typ == "Conv2DBackpropFilter"
                    else "NC1HWC0"
                    if typ.startswith("Conv2D")
                    else ifmt.split(";")[0]
                )
                if ishape != "N/A"
                else "N/A"
            )
            if typ == "NLLLoss":
                odt, ofmt = "FLOAT;FLOAT", "FORMAT_ND;FORMAT_ND"
            rows.append(
                (
                    t["start"],
                    [
                        str(t["step"]),
                        "4294967295",
                        str(t["task_id"]),
                        str(ASC["compute_stream"]),
                        name,
                        typ,
                        "dynamic",
                        core,
                        us3(t["start"]) + "\t",
                        us3(t["end"] - t["start"]),
                        us3(t["wait"]),
                        str(block),
                        mix,
                        hf32,
                        ishape,
                        idt,
                        ifmt,
                        oshape,
                        odt,
                        ofmt,
                        ctx,
                    ]
                    + asc_metrics(core, t["end"] - t["start"], block, rng),
                )
            )
        for h in rk["hccl"]:
            name = f"hcom_allReduce__{ASC['hccl_group']}_{h['index']}_1"
            rows.append(
                (
                    h["start"],
                    [
                        str(h["step"]),
                        "4294967295",
                        "N/A",
                        "N/A",
                        name,
                        "hcom_allReduce_",
                        "N/A",
                        "HCCL",
                        us3(h["start"]) + "\t",
                        us3(h["end"] - h["start"]),
                        us3(h["wait"]),
                        "0",
                    ]
                    + ["N/A"] * 34,
                )
            )
        rows.sort(key=lambda x: x[0])
        assert all(len(r_) == len(KD_HEADER) for _, r_ in rows)
        write_csv(base / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv", KD_HEADER, [r_ for _, r_ in rows])
        # ---- step_trace_time.csv ----
        st_rows, exp_steps = [], {}
        for step in ASC["steps"]:
            v, (lo, hi) = asc_step_values(rk, step)
            st_rows.append([str(step)] + [asc_num(v[k]) if k != "Bubble" else "0" for k in STEP_TRACE_HEADER[1:]])
            exp_steps[str(step)] = dict(
                {k + "_ns": v[k] for k in STEP_TRACE_HEADER[1:]},
                first_task_start_ns=lo,
                last_task_end_ns=hi,
                host_step_start_ns=rk["steps"][step]["host_start"],
                host_step_end_ns=rk["steps"][step]["host_end"],
            )
        write_csv(base / "ASCEND_PROFILER_OUTPUT" / "step_trace_time.csv", STEP_TRACE_HEADER, st_rows)
        # ---- trace_view.json ----
        write_bytes(
            base / "ASCEND_PROFILER_OUTPUT" / "trace_view.json", json.dumps(asc_trace_view(rk, pid, rng)).encode()
        )
        expected["ranks"][str(r)] = {
            "dir": f"rank{r}_ascend_pt",
            "host_pid": pid,
            "n_compute_tasks": len(rk["tasks"]),
            "n_hccl_ops": len(rk["hccl"]),
            "steps": exp_steps,
            "hccl": [
                {
                    "name": f"hcom_allReduce__{ASC['hccl_group']}_{h['index']}_1",
                    "step": h["step"],
                    "start_ns": h["start"],
                    "end_ns": h["end"],
                    "dur_ns": h["end"] - h["start"],
                    "transfer_ns": h["transfer"],
                    "count": h["count"],
                }
                for h in rk["hccl"]
            ],
        }
    write_json(out / "expected.json", expected)
    return ranks, expected
