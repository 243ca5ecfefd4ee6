"""Sample pp4_1f1b: a 4-stage 1F1B pipeline (m=8, 2 steps) with NCCL SendRecv."""

from __future__ import annotations

import hashlib
import random
from pathlib import Path

from .dp4 import kineto_step_windows
from .intervals import clip, length, subtract, union
from .kernels import NCCL_SENDRECV
from .kineto_rank import KERNEL_COLLECTIVE_KEYS, collective_args, kineto_header, sample_ranks, shape_args
from .output import gzip_bytes, write_bytes, write_json

# Sample 2: pp4_1f1b
PP = {
    "p": 4,
    "m": 8,
    "steps": [1, 2],
    "F_ns": 1_200_000,
    "B_ns": 2_400_000,
    "transfer_ns": 6_000,
    "act_nelems": 1_048_576,  # one micro-batch activation: 1 x 512 tokens x 2048 hidden, bf16 = 2 MiB
    "hidden": 2048,
    "tokens": 512,
    "vocab": 32000,
    "pids": [51302, 51317, 51333, 51348],
    "file_ids": [1767225934100118528, 1767225934100120064, 1767225934100126720, 1767225934100129280],
    "t0_ns": 1_214_402_880_000_000,
    "host_lead_ns": 150_000,  # host ProfilerStep begin -> first device task of the rank
    "p2p_streams": {"prev": 24, "next": 28},
}


def pp_programs(p, m):
    """Megatron forward_backward_pipelining_without_interleaving, per stage: compute ops ('F'/'B', mb) and
    blocking batched P2P ops ('P', sends, recvs) with messages (kind, mb)."""
    progs = []
    for s in range(p):
        first, last = s == 0, s == p - 1
        W = min(p - s - 1, m)
        R_ = m - W
        prog = []

        def p2p(sends, recvs):
            if sends or recvs:
                prog.append(("P", tuple(sends), tuple(recvs)))

        def alone(op, tensor, mb, receives, sends):
            """A warm-up forward or a cool-down backward: receive its input, compute, send its output."""
            if receives:
                p2p([], [(tensor, mb)])
            prog.append((op, mb))
            if sends:
                p2p([(tensor, mb)], [])

        fi = bi = 0
        for _ in range(W):  # warm-up: recv_forward, forward, send_forward
            alone("F", "act", fi, not first, not last)
            fi += 1
        if R_ > 0 and not first:
            p2p([], [("act", fi)])
        for i in range(R_):  # steady 1F1B
            prog.append(("F", fi))
            if not last:
                p2p([("act", fi)], [("grad", bi)])  # send_forward_recv_backward
            fi += 1
            prog.append(("B", bi))
            if not first:
                if i == R_ - 1:
                    p2p([("grad", bi)], [])  # send_backward
                else:
                    p2p([("grad", bi)], [("act", fi)])  # send_backward_recv_forward
            bi += 1
        for _ in range(W):  # cool-down: recv_backward, backward, send_backward
            alone("B", "grad", bi, not last, not first)
            bi += 1
        progs.append(prog)
    return progs


def pp_schedule(p, m, F, B, tau, ready):
    """Device schedule.  Compute op: starts when the stage's previous op (compute or P2P) ended.  P2P kernel
    (one ncclDevKernel_SendRecv per batched call): starts when the stage's previous compute ended (ready[s] for the
    first one); every message is transferred in [max(sender kernel start, receiver kernel start), +tau]; the kernel
    ends when all its messages are done; the compute stream waits for it."""
    progs = pp_programs(p, m)
    ptr, tfree = [0] * p, list(ready)
    post = {}
    out = [[] for _ in range(p)]
    while any(ptr[s] < len(progs[s]) for s in range(p)):
        moved = False
        for s in range(p):
            while ptr[s] < len(progs[s]):
                op = progs[s][ptr[s]]
                if op[0] in "FB":
                    d = F if op[0] == "F" else B
                    out[s].append({"op": op[0], "mb": op[1], "start": tfree[s], "end": tfree[s] + d})
                    tfree[s] += d
                    ptr[s] += 1
                    moved = True
                    continue
                _, sends, recvs = op
                st = tfree[s]
                keys = []
                for k, i in sends:
                    dst = s + 1 if k == "act" else s - 1
                    keys.append(((k, i, s, dst), "s"))
                for k, i in recvs:
                    src = s - 1 if k == "act" else s + 1
                    keys.append(((k, i, src, s), "r"))
                for key, side in keys:
                    post.setdefault((key, side), st)
                if all((key, "s") in post and (key, "r") in post for key, _ in keys):
                    en = max(max(post[(key, "s")], post[(key, "r")]) + tau for key, _ in keys)
                    out[s].append(
                        {
                            "op": "P",
                            "sends": sends,
                            "recvs": recvs,
                            "start": st,
                            "end": en,
                            "peer": "next"
                            if (sends and sends[0][0] == "act") or (recvs and recvs[0][0] == "grad")
                            else "prev",
                        }
                    )
                    tfree[s] = en
                    ptr[s] += 1
                    moved = True
                else:
                    break
        if not moved:
            raise RuntimeError("pipeline schedule deadlock")
    return out


def pp_stage_kernels(s, p, kind):
    """Kernel keys (with relative weights) of one micro-batch forward/backward on stage s; 2 layers per stage."""
    if kind == "F":
        layer = [
            ("ln_fwd", 3),
            ("gemm_tn_big", 24),
            ("flash_fwd", 18),
            ("gemm_tn", 8),
            ("add", 2),
            ("ln_fwd", 3),
            ("gemm_tn_big", 32),
            ("gelu_fwd", 4),
            ("gemm_tn_big", 32),
            ("add", 2),
        ]
        ks = layer * 2
        if s == 0:
            ks = [("emb_fwd", 6)] + ks
        if s == p - 1:
            ks = ks + [("ln_fwd", 3), ("gemm_head", 40), ("softmax_fwd", 9), ("nll_fwd", 1)]
    else:
        layer = [
            ("gemm_nn", 30),
            ("gemm_nt", 32),
            ("ln_bwd_in", 3),
            ("ln_bwd_gb", 2),
            ("gemm_nn", 30),
            ("gemm_nt", 32),
            ("gelu_bwd", 6),
            ("gemm_nn", 30),
            ("gemm_nt", 32),
            ("ln_bwd_in", 3),
            ("ln_bwd_gb", 2),
            ("gemm_nn", 8),
            ("gemm_nt", 9),
            ("flash_bwd_dot", 2),
            ("flash_bwd_dq", 44),
            ("flash_bwd_cvt", 2),
            ("gemm_nn", 24),
            ("gemm_nt", 25),
        ]
        ks = layer * 2
        if s == p - 1:
            ks = [
                ("nll_bwd", 1),
                ("softmax_bwd", 12),
                ("gemm_head_nn", 40),
                ("gemm_head_nt", 42),
                ("ln_bwd_in", 3),
                ("ln_bwd_gb", 2),
            ] + ks
        if s == 0:
            ks = ks + [("emb_bwd", 8)]
    return ks


def split_exact(total, weights, rng):
    """Integer durations proportional to weights (with a little jitter) that sum exactly to total."""
    w = [x * (1.0 + rng.uniform(-0.03, 0.03)) for x in weights]
    sw = sum(w)
    d = [int(total * x / sw) for x in w]
    d[-1] += total - sum(d)
    assert sum(d) == total and min(d) > 0
    return d


def pp_host_op_for_kernel(R, key, dur, at):
    """Host op tree for one kernel in the pipeline sample (simple but shaped like the real thing)."""
    real_key = {"gemm_head": "gemm_tn_big", "gemm_head_nn": "gemm_nn", "gemm_head_nt": "gemm_nt"}.get(key, key)
    names = {
        "ln_fwd": ["aten::layer_norm", "aten::native_layer_norm"],
        "gemm_tn_big": ["aten::linear", "aten::mm"],
        "gemm_tn": ["aten::linear", "aten::mm"],
        "gemm_head": ["aten::linear", "aten::mm"],
        "flash_fwd": ["aten::_scaled_dot_product_flash_attention", "aten::_flash_attention_forward"],
        "add": ["aten::add"],
        "gelu_fwd": ["aten::gelu"],
        "emb_fwd": ["aten::embedding", "aten::index_select"],
        "softmax_fwd": ["aten::log_softmax", "aten::_log_softmax"],
        "nll_fwd": ["aten::nll_loss_forward"],
        "gemm_nn": ["aten::mm"],
        "gemm_nt": ["aten::mm"],
        "gemm_head_nn": ["aten::mm"],
        "gemm_head_nt": ["aten::mm"],
        "ln_bwd_in": ["aten::native_layer_norm_backward"],
        "ln_bwd_gb": ["aten::native_layer_norm_backward"],
        "gelu_bwd": ["aten::gelu_backward"],
        "flash_bwd_dot": ["aten::_flash_attention_backward"],
        "flash_bwd_dq": ["aten::_flash_attention_backward"],
        "flash_bwd_cvt": ["aten::_flash_attention_backward"],
        "nll_bwd": ["aten::nll_loss_backward"],
        "softmax_bwd": ["aten::_log_softmax_backward_data"],
        "emb_bwd": ["aten::embedding_dense_backward"],
    }[key]
    cms = [R.op(n, pre=R.j(1500, 3000), post=R.j(500, 1200)) for n in names]
    for cm in cms:
        cm.__enter__()
    R.launch(real_key, dur, at=at, tag=key)
    for cm in reversed(cms):
        cm.__exit__(None, None, None)


def write_pp4(out: Path):
    p, m, F, B, tau = PP["p"], PP["m"], PP["F_ns"], PP["B_ns"], PP["transfer_ns"]
    ranks = sample_ranks(PP, p, clock_step_ns=2_110, seed=31337, corr_stride=5000, corr_offset=3, kernel_gap=(0, 0))
    host_start = [PP["t0_ns"] + 40_000 + 2_110 * r for r in range(p)]
    schedules = {}
    for step in PP["steps"]:
        ready = [host_start[r] + PP["host_lead_ns"] for r in range(p)]
        sched = pp_schedule(p, m, F, B, tau, ready)
        schedules[step] = sched
        for r, R in enumerate(ranks):
            R.step = step
            R.tid = R.main_tid
            R.t = host_start[r]
            stage_rng = random.Random(1000 * step + r)
            with R.op(f"ProfilerStep#{step}", cat="user_annotation", pre=R.j(20_000, 30_000), post=R.j(4000, 6000)):
                with R.op("Optimizer.zero_grad#AdamW.zero_grad", cat="user_annotation"):
                    pass
                first_dev = True
                for ev in sched[r]:
                    if ev["op"] in "FB":
                        keys = pp_stage_kernels(r, p, ev["op"])
                        durs = split_exact(F if ev["op"] == "F" else B, [w for _, w in keys], stage_rng)
                        t = ev["start"]
                        if ev["op"] == "B":
                            R.tid = R.bwd_tid
                        label = "forward_step" if ev["op"] == "F" else "backward_step"
                        with R.op(
                            f"## {label} microbatch {ev['mb']} ##",
                            cat="user_annotation",
                            pre=R.j(3000, 5000),
                            post=R.j(1000, 2000),
                        ):
                            for (key, _), d in zip(keys, durs):
                                pp_host_op_for_kernel(R, key, d, t)
                                t += d
                        R.tid = R.main_tid
                        assert t == ev["end"]
                    else:
                        pp_p2p_host_and_kernel(R, ev, r, p, step, first=first_dev)
                    first_dev = False
                # end of step: torch.cuda.synchronize() (e.g. for the loss report)
                with R.op("aten::item"):
                    last_end = max(e["end"] for e in sched[r])
                    R.runtime("cudaDeviceSynchronize", max(0, last_end - R.t) + R.j(7_000, 11_000))
            host_start[r] = R.t + R.j(180_000, 260_000)
    # ---- write traces ----
    trace_end = max(max(t["end"] for t in R.tasks) for R in ranks) + 120_000
    files = []
    for R in ranks:
        name = f"rank{R.rank}.{PP['file_ids'][R.rank]}.pt.trace.json.gz"
        header = kineto_header(
            rank=R.rank, world=p, n_gpus=p, trace_id=hashlib.md5(f"pp4-{R.rank}".encode()).hexdigest().upper()
        )
        write_bytes(
            out / name,
            gzip_bytes(
                R.to_json_bytes(header=header, n_gpus=p, trace_name=f"./pp4_1f1b/{name[:-3]}", trace_end=trace_end)
            ),
        )
        files.append(name)
    expected = pp_expected(ranks, schedules, files)
    write_json(out / "expected.json", expected)
    return ranks, expected, files


def pp_p2p_host_and_kernel(R, ev, r, p, step, first):
    """Host side of one blocking batched P2P call and its ncclDevKernel_SendRecv kernel (device times from ev)."""
    stream = PP["p2p_streams"][ev["peer"]]
    n = PP["act_nelems"]
    parts = [("send", k, i) for k, i in ev["sends"]] + [("recv", k, i) for k, i in ev["recvs"]]
    coalesced = len(parts) > 1
    peer = r + 1 if ev["peer"] == "next" else r - 1

    def part_ops(kind):
        cname = "send" if kind == "send" else "recv"
        cargs = collective_args(cname, n, n, p, r)
        opname = "c10d::send" if kind == "send" else "c10d::recv_"
        with R.op(opname, args=shape_args([[n], [], [], []], ["TensorList", "", "Scalar", "Scalar"])):
            with R.op("record_param_comms", args=cargs):
                if not coalesced:
                    title = f"nccl:send {r}->{peer}" if kind == "send" else f"nccl:recv {r}<-{peer}"
                    with R.op(title, cat="user_annotation", args=shape_args([[n]])):
                        return launch(cname, cargs)
        return cargs

    def launch(cname, cargs):
        R.runtime("cudaEventRecord", R.j(1500, 2600))
        R.runtime("cudaStreamWaitEvent", R.j(1200, 2200))
        c, rt_start, ext = R.runtime("cudaLaunchKernelExC", R.j(8000, 12500))
        if first:
            assert rt_start + 1_000 <= ev["start"], "host too late for the first P2P kernel"
        kargs = {k: cargs[k] for k in KERNEL_COLLECTIVE_KEYS}
        kargs["Collective name"] = cname
        R.device_task(
            "kernel",
            NCCL_SENDRECV,
            ev["start"],
            ev["end"],
            stream,
            c,
            ext,
            rt_start,
            extra=kargs,
            cls="communication",
            tag=("p2p", step, tuple(x[0] for x in parts)),
        )
        # the compute stream waits for the P2P kernel (Work.wait())
        R.runtime("cudaStreamWaitEvent", R.j(1200, 2200))
        return cargs

    if coalesced:
        with R.op("nccl:coalesced", cat="user_annotation"):
            cargs = None
            for kind, _, _ in parts:
                cargs = part_ops(kind)
            launch("coalesced", cargs)
    else:
        part_ops(parts[0][0])


def pp_expected(ranks, schedules, files):
    p, m, F, B, tau = PP["p"], PP["m"], PP["F_ns"], PP["B_ns"], PP["transfer_ns"]
    ideal_step = (m + p - 1) * (F + B)
    ideal_bubble = (p - 1) * (F + B)
    exp = {
        "description": "pp4_1f1b known values; integer ns on the trace clock (Kineto ts * 1000)",
        "p": p,
        "m": m,
        "F_ns": F,
        "B_ns": B,
        "transfer_ns": tau,
        "schedule": "1F1B (Megatron "
        "forward_backward_pipelining_without_interleaving), blocking batched P2P (ncclDevKernel_SendRecv)",
        "ideal_bubble_fraction": f"{p - 1}/{m + p - 1}",
        "ideal_bubble_fraction_value": (p - 1) / (m + p - 1),
        "ideal_step_ns": ideal_step,
        "ideal_bubble_ns": ideal_bubble,
        "definition": {
            "pipeline_window": "W_N = [earliest compute-kernel start, latest compute-kernel end] of step N over "
            "all 4 ranks (= rank 0's first forward .. rank 0's last backward)",
            "compute_busy_ns": "|U(compute kernels of rank r in step N)| = m*(F+B)",
            "bubble_ns": "|W_N| - compute_busy_ns: time inside the pipeline step during which stage r computes nothing",
            "transfer_excess_ns": "|W_N| - (m+p-1)*(F+B): the P2P transfers on the critical path; bubble_ns - "
            "transfer_excess_ns == (p-1)*(F+B) exactly, so (bubble_ns - transfer_excess_ns) / "
            "(|W_N| - transfer_excess_ns) == (p-1)/(m+p-1) exactly",
            "local_window": "the rank's own GPU-side ProfilerStep#N window (union of its gpu_user_annotation spans "
            "= first to last device task of the rank, P2P kernels included)",
            "local_exposed_p2p_ns": "|U(P2P kernels) - U(compute)| inside the local window; here every P2P kernel "
            "blocks the compute stream, so it equals the raw sum of P2P kernel durations and "
            "local_window_ns - compute_busy_ns",
        },
        "steps": {},
    }
    for step in PP["steps"]:
        sched = schedules[step]
        comp_iv = [(e["start"], e["end"]) for r in range(p) for e in sched[r] if e["op"] in "FB"]
        lo, hi = min(s for s, _ in comp_iv), max(e for _, e in comp_iv)
        st = {
            "pipeline_window_start_ns": lo,
            "pipeline_window_end_ns": hi,
            "step_duration_ns": hi - lo,
            "transfer_excess_ns": hi - lo - ideal_step,
            "transfer_excess_in_transfers": (hi - lo - ideal_step) / tau,
            "ranks": {},
        }
        for r, R in enumerate(ranks):
            comp = union((e["start"], e["end"]) for e in sched[r] if e["op"] in "FB")
            p2p = [(e["start"], e["end"]) for e in sched[r] if e["op"] == "P"]
            busy = length(clip(comp, lo, hi))
            llo, lhi, _ = kineto_step_windows(R, f"ProfilerStep#{step}")
            exposed = length(subtract(clip(union(p2p), llo, lhi), comp))
            st["ranks"][str(r)] = {
                "file": files[r],
                "stage": r,
                "compute_busy_ns": busy,
                "bubble_ns": (hi - lo) - busy,
                "bubble_fraction": ((hi - lo) - busy) / (hi - lo),
                "bubble_minus_transfer_excess_ns": (hi - lo) - busy - (hi - lo - ideal_step),
                "n_compute_kernels": sum(1 for t in R.tasks if t["step"] == step and t["cls"] != "communication"),
                "n_p2p_kernels": len(p2p),
                "p2p_kernel_time_ns": sum(e - s for s, e in p2p),
                "local_window_start_ns": llo,
                "local_window_end_ns": lhi,
                "local_window_ns": lhi - llo,
                "local_exposed_p2p_ns": exposed,
                "local_idle_ns": (lhi - llo) - busy,
                "first_compute_start_ns": comp[0][0],
                "last_compute_end_ns": comp[-1][1],
            }
        exp["steps"][f"ProfilerStep#{step}"] = st
    return exp
