"""Checks of the written samples against what they were built from."""

from __future__ import annotations

import csv
import gzip
import io
import json
from decimal import Decimal
from pathlib import Path

from .ascend_tables import KD_HEADER, STEP_TRACE_HEADER
from .dp4 import DP
from .intervals import OVERLAP_TERMS_NS, clip, intersect, length, overlap_breakdown, subtract, union
from .kernels import COMPUTE_STREAM
from .paths import CPU_TRACE_NAME, HERE, SHARED_CPU_DIR, SIZE_LIMIT_BYTES


# Checks
class CheckError(AssertionError):
    pass


def need(cond, msg):
    if not cond:
        raise CheckError(msg)


def load_kineto(path: Path):
    """Parse a Kineto .json.gz with exact decimals (float64 cannot hold 1.2e12 us at ns resolution)."""
    raw = gzip.decompress(path.read_bytes())
    return json.loads(raw, parse_float=Decimal)


def check_kineto_file(path: Path):
    """Valid JSON after gunzip; every device task has exactly one launch with the same correlation and External
    id, launched before it started; ns-exact timestamps.  Returns the parsed device tasks."""
    d = load_kineto(path)
    for k in ("schemaVersion", "deviceProperties", "distributedInfo", "traceEvents", "baseTimeNanoseconds"):
        need(k in d, f"{path.name}: missing {k}")
    need(d["deviceProperties"][0]["name"] == "NVIDIA H100 80GB HBM3", f"{path.name}: device name")
    ev = d["traceEvents"]
    launches = {}
    for e in ev:
        if e.get("cat") == "cuda_runtime" and "correlation" in e.get("args", {}):
            need(e["args"]["correlation"] not in launches, f"{path.name}: duplicate correlation")
            launches[e["args"]["correlation"]] = e
    s_flows = {e["id"] for e in ev if e.get("ph") == "s" and e.get("cat") == "ac2g"}
    f_flows = {e["id"] for e in ev if e.get("ph") == "f" and e.get("cat") == "ac2g"}
    tasks = []
    for e in ev:
        if e.get("cat") not in ("kernel", "gpu_memcpy", "gpu_memset"):
            continue
        a = e["args"]
        c = a["correlation"]
        need(c in launches, f"{path.name}: no launch for correlation {c}")
        L = launches[c]
        want = {"kernel": "cudaLaunchKernel", "gpu_memcpy": "cudaMemcpyAsync", "gpu_memset": "cudaMemsetAsync"}
        need(L["name"].startswith(want[e["cat"]]), f"{path.name}: {e['name'][:40]} launched by {L['name']}")
        need(L["args"]["External id"] == a["External id"], f"{path.name}: External id mismatch for {c}")
        need(L["ts"] <= e["ts"], f"{path.name}: task starts before its launch ({c})")
        need(c in s_flows and c in f_flows, f"{path.name}: ac2g flow missing for {c}")
        need(e["tid"] == a["stream"] and e["pid"] == a["device"], f"{path.name}: pid/tid vs device/stream")
        tasks.append(e)
    for e in ev:
        for k in ("ts", "dur"):
            if isinstance(e.get(k), Decimal):
                need((e[k] * 1000) % 1 == 0, f"{path.name}: {k} not exact at ns")
    return d, tasks


def check_all(verbose=True):
    problems = []

    def run(name, fn):
        try:
            msg = fn()
            if verbose:
                print(f"ok   {name}{': ' + msg if msg else ''}")
        except CheckError as exc:
            problems.append(f"{name}: {exc}")
            print(f"FAIL {name}: {exc}")

    # ---- dp4 ----
    def dp4():
        exp = json.loads((HERE / "dp4_nccl" / "expected.json").read_text())
        n = 0
        for r, info in exp["ranks"].items():
            d, tasks = check_kineto_file(HERE / "dp4_nccl" / info["file"])
            need(d["distributedInfo"]["rank"] == int(r) and d["distributedInfo"]["world_size"] == 4, "distInfo")
            need(d["distributedInfo"]["backend"] == "nccl", "backend")
            n += len(tasks)
            nccl = [t for t in tasks if t["name"].startswith("ncclDevKernel_AllReduce")]
            need(nccl and all(t["args"]["stream"] == DP["nccl_stream"] for t in nccl), "NCCL stream")
            need(all(t["args"]["stream"] == COMPUTE_STREAM for t in tasks if t not in nccl), "compute stream")
            need(all(t["args"]["Collective name"] == "allreduce" for t in nccl), "kernel collective args")
            steps = [
                e
                for e in d["traceEvents"]
                if e.get("cat") == "gpu_user_annotation"
                and e["name"].startswith("ProfilerStep#")
                and e["tid"] == COMPUTE_STREAM
            ]
            need(len(steps) == 3, "3 GPU-side ProfilerStep annotations on the compute stream")
            host_steps = [
                e
                for e in d["traceEvents"]
                if e.get("cat") == "user_annotation" and e["name"].startswith("ProfilerStep#")
            ]
            need(
                [e["name"] for e in host_steps] == ["ProfilerStep#3", "ProfilerStep#4", "ProfilerStep#5"], "host steps"
            )
            # recompute the step numbers from the file and compare with expected.json
            for st_name, st in info["steps"].items():
                lo, hi = st["window_start_ns"], st["window_end_ns"]
                iv = lambda pred: clip(
                    union((round(t["ts"] * 1000), round((t["ts"] + t["dur"]) * 1000)) for t in tasks if pred(t)), lo, hi
                )
                comp = iv(lambda t: t["cat"] in ("kernel", "gpu_memset") and not t["name"].startswith("nccl"))
                comm = iv(lambda t: t["name"].startswith("nccl"))
                mem = iv(lambda t: t["cat"] == "gpu_memcpy")
                b = overlap_breakdown(comp, comm, mem)
                for k in (*OVERLAP_TERMS_NS, "busy_ns"):
                    need(b[k] == st[k], f"rank {r} {st_name} {k}: file {b[k]} != expected {st[k]}")
                need(st["overlapped_ns"] > 0, f"rank {r} {st_name}: no hidden communication")
                need(st["communication_not_overlapped_ns"] > 0, f"rank {r} {st_name}: no exposed communication")
                need(
                    st["computing_ns"] + st["communication_not_overlapped_ns"] + st["free_ns"] + st["exposed_memcpy_ns"]
                    == st["window_ns"],
                    f"rank {r} {st_name}: identity",
                )
                gpu_step = [e for e in steps if e["name"] == st_name][0]
                need(round(gpu_step["ts"] * 1000) == lo, "window start = GPU-side ProfilerStep start")
        # slow rank: everyone else waits; rank 2 has the transfer-only (minimum) duration
        for c in exp["collectives"]:
            need(c["wait_ns"][DP["slow_rank"]] == 0, f"collective {c['step']}/{c['bucket']}: slow rank waits")
            need(all(w > 0 for i, w in enumerate(c["wait_ns"]) if i != DP["slow_rank"]), "fast ranks wait")
        ratios = [
            exp["ranks"]["2"]["compute_kernel_time_ns"] / exp["ranks"][str(r)]["compute_kernel_time_ns"]
            for r in (0, 1, 3)
        ]
        need(all(1.13 < x < 1.17 for x in ratios), f"slow-rank ratio {ratios}")
        return f"{n} device tasks, rank-2 compute ratio {min(ratios):.3f}..{max(ratios):.3f}"

    # ---- pp4 ----
    def pp4():
        exp = json.loads((HERE / "pp4_1f1b" / "expected.json").read_text())
        p, m, F, B = exp["p"], exp["m"], exp["F_ns"], exp["B_ns"]
        files = sorted((HERE / "pp4_1f1b").glob("rank*.pt.trace.json.gz"))
        need(len(files) == p, "4 rank files")
        parsed = {}
        for f in files:
            d, tasks = check_kineto_file(f)
            parsed[d["distributedInfo"]["rank"]] = (d, tasks)
        for step_name, st in exp["steps"].items():
            lo, hi = st["pipeline_window_start_ns"], st["pipeline_window_end_ns"]
            need(st["step_duration_ns"] - st["transfer_excess_ns"] == (m + p - 1) * (F + B), "ideal step")
            for r in range(p):
                d, tasks = parsed[r]
                ann = [e for e in d["traceEvents"] if e.get("cat") == "gpu_user_annotation" and e["name"] == step_name]
                llo = min(round(e["ts"] * 1000) for e in ann)
                lhi = max(round((e["ts"] + e["dur"]) * 1000) for e in ann)
                comp = union(
                    (round(t["ts"] * 1000), round((t["ts"] + t["dur"]) * 1000))
                    for t in tasks
                    if not t["name"].startswith("nccl") and llo <= t["ts"] * 1000 < lhi
                )
                p2p = union(
                    (round(t["ts"] * 1000), round((t["ts"] + t["dur"]) * 1000))
                    for t in tasks
                    if t["name"].startswith("ncclDevKernel_SendRecv") and llo <= t["ts"] * 1000 < lhi
                )
                e_r = st["ranks"][str(r)]
                busy = length(clip(comp, lo, hi))
                need(busy == m * (F + B) == e_r["compute_busy_ns"], f"rank {r} compute busy {busy}")
                need((hi - lo) - busy == e_r["bubble_ns"], f"rank {r} bubble")
                need(e_r["bubble_minus_transfer_excess_ns"] == (p - 1) * (F + B), f"rank {r} bubble - excess")
                need(llo == e_r["local_window_start_ns"] and lhi == e_r["local_window_end_ns"], "local window")
                need(
                    length(subtract(p2p, comp)) == e_r["local_exposed_p2p_ns"] == (lhi - llo) - busy,
                    f"rank {r}: every idle ns of the local window is inside a P2P kernel",
                )
                # forward kernels of stage r exactly F per micro-batch, contiguous (no gaps inside an op)
                need(length(comp) == busy, "compute inside the pipeline window")
        frac = exp["steps"]["ProfilerStep#1"]["ranks"]["0"]["bubble_fraction"]
        return (
            f"bubble fraction {frac:.6f} (ideal {exp['ideal_bubble_fraction']} = "
            f"{exp['ideal_bubble_fraction_value']:.6f}; excess = "
            f"{exp['steps']['ProfilerStep#1']['transfer_excess_in_transfers']:.0f} transfers)"
        )

    # ---- ascend ----
    def ascend():
        exp = json.loads((HERE / "ascend_2rank" / "expected.json").read_text())
        for r, info in exp["ranks"].items():
            base = HERE / "ascend_2rank" / info["dir"]
            raw = (base / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv").read_bytes()
            need(raw.startswith(b"Step Id,Model ID,Task ID,Stream ID,Name,Type,OP State,Accelerator Core,"), "hdr")
            need(b"\r\n" in raw, "CRLF")
            rows = list(csv.reader(io.StringIO(raw.decode(), newline="")))
            need(rows[0] == KD_HEADER, "kernel_details header")
            comp, comm = {}, {}
            for row in rows[1:]:
                st = row[8]
                need(
                    st.endswith("\t") and len(st.split(".")[0]) == 16 and len(st.strip().split(".")[1]) == 3,
                    f"Start Time format {st!r}",
                )
                s_ns = int(st.strip().replace(".", ""))
                e_ns = s_ns + int(row[9].replace(".", ""))
                tgt = comm if row[7] == "HCCL" or row[4].startswith("hcom_") else comp
                tgt.setdefault(row[0], []).append((s_ns, e_ns))
            need(
                any(row[7] == "MIX_AIV" for row in rows[1:]) and any(row[5] == "MemSet" for row in rows[1:]),
                "MIX_AIV and MemSet rows",
            )
            tv = json.loads((base / "ASCEND_PROFILER_OUTPUT" / "trace_view.json").read_bytes())
            need(isinstance(tv, list) and all(isinstance(e.get("ts", ""), str) for e in tv), "trace_view shape")
            steps_tv = {e["name"]: e for e in tv if e.get("name", "").startswith("ProfilerStep#")}
            st_rows = list(
                csv.reader(
                    io.StringIO(
                        (base / "ASCEND_PROFILER_OUTPUT" / "step_trace_time.csv").read_bytes().decode(), newline=""
                    )
                )
            )
            need(st_rows[0] == STEP_TRACE_HEADER, "step_trace_time header")
            for row in st_rows[1:]:
                step = row[0]
                c, m_ = union(comp[step]), union(comm[step])
                lo, hi = union(comp[step] + comm[step])[0][0], union(comp[step] + comm[step])[-1][1]
                b = overlap_breakdown(c, m_)
                host = steps_tv[f"ProfilerStep#{step}"]
                host_start = int(host["ts"].replace(".", ""))
                want = [
                    b["computing_ns"],
                    b["communication_not_overlapped_ns"],
                    b["overlapped_ns"],
                    b["communication_ns"],
                    b["free_ns"],
                    hi - lo,
                    0,
                    b["communication_not_overlapped_ns"],
                    lo - host_start,
                ]
                got = [round(float(x) * 1000) for x in row[1:]]
                need(got == want, f"rank {r} step {step}: csv {got} != recomputed {want}")
                need(b["overlapped_ns"] > 0 and b["communication_not_overlapped_ns"] > 0, "overlap + exposure")
                need(b["computing_ns"] + b["communication_not_overlapped_ns"] + b["free_ns"] == hi - lo, "identity")
                e_st = info["steps"][step]
                need(e_st["Computing_ns"] == want[0] and e_st["Preparing_ns"] == want[8], "expected.json")
                # narrative: all-reduces 0 and 1 of the step overlap compute, the last one is fully exposed
                ops = sorted(comm[step])
                need(len(ops) == 3, "3 all-reduces per step")
                need(all(length(intersect(c, [op])) > 0 for op in ops[:2]), "first two all-reduces overlap compute")
                need(length(intersect(c, [ops[2]])) == 0, "last all-reduce is fully exposed")
                need(max(e for _, e in comp[step]) > ops[2][1], "optimizer runs after the last all-reduce")
                # Overlap Analysis lane agrees too
                ovl = [
                    e
                    for e in tv
                    if e.get("name") in ("Computing", "Free") and "ts" in e and lo <= int(e["ts"].replace(".", "")) < hi
                ]
                need(round(sum(e["dur"] for e in ovl if e["name"] == "Computing") * 1000) == want[0], "lane")
        return "step_trace_time.csv == recomputed from kernel_details.csv (both ranks, both steps)"

    def cpu():
        f = HERE / "cpu_single" / CPU_TRACE_NAME
        need(f.is_file(), "missing copy")
        d = load_kineto(f)
        need(any(e.get("name", "").startswith("ProfilerStep#") for e in d["traceEvents"]), "no ProfilerStep")
        src = SHARED_CPU_DIR / "single" / CPU_TRACE_NAME
        if src.is_file():
            need(src.read_bytes() == f.read_bytes(), "copy differs from the shared original")
        return f"{len(d['traceEvents'])} events"

    def size():
        total = sum(p.stat().st_size for p in HERE.rglob("*") if p.is_file())
        need(total < SIZE_LIMIT_BYTES, f"sample_traces is {total} bytes (limit {SIZE_LIMIT_BYTES})")
        return f"{total:,} bytes in all files"

    for name, fn in (
        ("dp4_nccl", dp4),
        ("pp4_1f1b", pp4),
        ("ascend_2rank", ascend),
        ("cpu_single", cpu),
        ("size", size),
    ):
        run(name, fn)
    return problems
