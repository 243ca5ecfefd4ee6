"""Sample dp4_nccl: 4-rank DDP with NCCL all-reduce on a dedicated stream, rank 2 slow."""

from __future__ import annotations

import hashlib
from pathlib import Path

from .intervals import clip, overlap_breakdown, union
from .kernels import COMPUTE_STREAM, NCCL_ALLREDUCE
from .kineto_rank import KERNEL_COLLECTIVE_KEYS, collective_args, kineto_header, sample_ranks, shape_args
from .layers import layer_forward_spec, run_backward_entry, run_forward_entry
from .output import gzip_bytes, write_bytes, write_json

# Sample 1: dp4_nccl
DP = {
    "world": 4,
    "steps": [3, 4, 5],
    "layers": 4,
    "hidden": 4096,
    "tokens": 4096,
    "vocab": 32000,
    "slow_rank": 2,
    "slow_factor": 1.15,
    "nccl_stream": 20,
    "busbw_bytes_per_ns": 360,
    "pids": [48211, 48226, 48240, 48257],
    "file_ids": [1767225712044311040, 1767225712044317952, 1767225712044321536, 1767225712044326144],
    "t0_ns": 1_214_381_520_000_000,
    # base kernel durations (ns) on a fast rank; every launch gets +-2 % deterministic jitter
    "dur": {
        "emb_fwd": 85_000,
        "ln_fwd": 42_000,
        "gemm_tn_big": 690_000,
        "gemm_tn": 232_000,
        "flash_fwd": 540_000,
        "add": 48_000,
        "gelu_fwd": 101_000,
        "gemm_head": 1_800_000,
        "softmax_fwd": 260_000,
        "nll_fwd": 18_000,
        "nll_bwd": 16_000,
        "memset": 6_000,
        "softmax_bwd": 380_000,
        "ln_bwd_in": 70_000,
        "ln_bwd_gb": 55_000,
        "gemm_nn": 700_000,
        "gemm_nt": 720_000,
        "flash_bwd_dot": 40_000,
        "flash_bwd_dq": 1_350_000,
        "flash_bwd_cvt": 30_000,
        "gelu_bwd": 150_000,
        "emb_bwd": 210_000,
        "div": 268_000,
        "lpnorm": 610_000,
        "norm_reduce": 9_000,
        "foreach_mul": 700_000,
        "adamw": 2_600_000,
    },
}
# Gradient buckets (reverse parameter order, as DDP fills them): ready after these backward layer indices
DP_BUCKETS = [
    {"after_layer": 3, "nelems": 332_423_168, "what": "lm_head (131,072,000) + final LayerNorm (8,192) + layer 3"},
    {"after_layer": 2, "nelems": 201_342_976, "what": "layer 2 (12*4096^2 + 4*4096)"},
    {"after_layer": 1, "nelems": 201_342_976, "what": "layer 1"},
    {"after_layer": -1, "nelems": 332_414_976, "what": "layer 0 + token embedding (131,072,000)"},
]


def allreduce_transfer_ns(nelems, world, busbw):
    nbytes = 2 * nelems
    num = 2 * (world - 1) * nbytes
    den = world * busbw
    return -(-num // den)  # ceil


def dp_rank_program(R):
    """Generator: builds rank R's 3 profiled steps; yields at each all-reduce launch to get its device times."""
    rank = R.rank
    slow = DP["slow_factor"] if rank == DP["slow_rank"] else 1.0
    h, tok, L = DP["hidden"], DP["tokens"], DP["layers"]
    nccl_stream = DP["nccl_stream"]

    def dur_of(key):
        base = DP["dur"][key]
        d = base * (1.0 + R.rng.uniform(-0.02, 0.02))
        if key not in ("memset",):
            d *= slow
        return int(round(d))

    seq = [100]

    def nseq():
        seq[0] += 1
        return seq[0]

    results = []
    R.t += R.j(310_000, 420_000)  # profiler start -> first ProfilerStep
    for step in DP["steps"]:
        R.step = step
        R.tid = R.main_tid
        with R.op(f"ProfilerStep#{step}", cat="user_annotation", pre=R.j(9000, 14000), post=R.j(4000, 6000)) as ps:
            step_ev = ps
            for what in ("input_ids", "labels"):
                with R.op(
                    "aten::to",
                    args=shape_args([[2, tok // 2], [], [], [], []], ["long int", "Scalar", "Scalar", "", ""]),
                ):
                    with R.op("aten::_to_copy"):
                        with R.op("aten::empty_strided"):
                            pass
                        with R.op("aten::copy_"):
                            R.launch("memcpy_h2d", R.j(3_600, 4_400), nbytes=2 * tok * 4)
            with R.op("Optimizer.zero_grad#AdamW.zero_grad", cat="user_annotation"):
                pass
            saved = []  # (fwd op event, node, seq) in forward order
            with R.op("DistributedDataParallel.forward", cat="user_annotation"):
                s = nseq()
                with R.op(
                    "aten::embedding",
                    args=shape_args(
                        [[DP["vocab"], h], [2, tok // 2], [], [], []],
                        ["c10::BFloat16", "long int", "Scalar", "Scalar", "Scalar"],
                    ),
                    seq=s,
                ) as ev:
                    with R.op("aten::reshape"):
                        with R.op("aten::view"):
                            pass
                    with R.op("aten::index_select"):
                        R.launch("emb_fwd", dur_of("emb_fwd"))
                saved.append((ev, "EmbeddingBackward0", s))
                for layer in range(L):
                    for path, kernels, node, dims in layer_forward_spec(tok, h):
                        saved.append(run_forward_entry(R, path, kernels, node, dims, dur_of, nseq()))
                saved.append(
                    run_forward_entry(
                        R,
                        ["aten::layer_norm", "aten::native_layer_norm"],
                        ["ln_fwd"],
                        "NativeLayerNormBackward0",
                        [[2, tok // 2, h], [h], [h]],
                        dur_of,
                        nseq(),
                    )
                )
                saved.append(
                    run_forward_entry(
                        R,
                        ["aten::linear", "aten::matmul", "aten::mm"],
                        ["gemm_tn_big"],
                        "MmBackward0",
                        [[2, tok // 2, h], [DP["vocab"], h]],
                        lambda k: dur_of("gemm_head"),
                        nseq(),
                    )
                )
            with R.op(
                "aten::cross_entropy_loss", args=shape_args([[tok, DP["vocab"]], [tok]], ["c10::BFloat16", "long int"])
            ):
                saved.append(
                    run_forward_entry(
                        R,
                        ["aten::log_softmax", "aten::_log_softmax"],
                        ["softmax_fwd"],
                        "LogSoftmaxBackward0",
                        [[tok, DP["vocab"]], []],
                        dur_of,
                        nseq(),
                    )
                )
                saved.append(
                    run_forward_entry(
                        R,
                        ["aten::nll_loss_nd", "aten::nll_loss", "aten::nll_loss_forward"],
                        ["nll_fwd"],
                        "NllLossBackward0",
                        [[tok, DP["vocab"]], [tok]],
                        dur_of,
                        nseq(),
                    )
                )
            # ---- backward on the autograd device thread ----
            R.t += R.j(20_000, 30_000)
            R.tid = R.bwd_tid
            bucket_iter = iter(enumerate(DP_BUCKETS))
            bidx, bucket = next(bucket_iter)
            ar_ends = []

            def do_bucket(bidx, bucket):
                with R.op("autograd::engine::evaluate_function: torch::autograd::AccumulateGrad"):
                    with R.op("torch::autograd::AccumulateGrad"):
                        pass
                # DDP: bucket.div_(world_size) then c10d::allreduce_ on the NCCL stream
                with R.op("aten::div_", args=shape_args([[bucket["nelems"]], []])):
                    R.launch("div", int(round(DP["dur"]["div"] * bucket["nelems"] / 201_342_976 * slow)))
                cargs = collective_args("allreduce", bucket["nelems"], bucket["nelems"], R.world, R.rank)
                with R.op(
                    "c10d::allreduce_",
                    args=shape_args([[bucket["nelems"]], [], [], [], []], ["TensorList", "", "", "", "Scalar"]),
                ):
                    with R.op("record_param_comms", args=cargs):
                        with R.op("nccl:all_reduce", cat="user_annotation", args=shape_args([[bucket["nelems"]]])):
                            R.runtime("cudaEventRecord", R.j(1500, 2600))
                            R.runtime("cudaStreamWaitEvent", R.j(1200, 2200))
                            c, rt_start, ext = R.runtime("cudaLaunchKernelExC", R.j(8000, 12500))
                            ready = max(
                                rt_start + R.j(4000, 6000),
                                R.stream_free[COMPUTE_STREAM],
                                R.stream_free.get(nccl_stream, 0),
                            )
                            T = allreduce_transfer_ns(bucket["nelems"], R.world, DP["busbw_bytes_per_ns"])
                            start, end = yield ("allreduce", (step, bidx), ready, T)
                            kargs = {k: cargs[k] for k in KERNEL_COLLECTIVE_KEYS}
                            R.device_task(
                                "kernel",
                                NCCL_ALLREDUCE,
                                start,
                                end,
                                nccl_stream,
                                c,
                                ext,
                                rt_start,
                                extra=kargs,
                                cls="communication",
                                tag=("allreduce", step, bidx),
                            )
                ar_ends.append(end)

            for idx in range(len(saved) - 1, -1, -1):
                fwd_ev, node, s = saved[idx]
                if node == "MmBackward0" and fwd_ev["args"]["Input Dims"][1][0] == DP["vocab"]:
                    run_backward_entry(
                        R,
                        fwd_ev,
                        node,
                        s,
                        lambda k: dur_of("gemm_head") if k == "gemm_nn" else int(round(dur_of("gemm_head") * 1.03)),
                    )
                else:
                    run_backward_entry(R, fwd_ev, node, s, dur_of)
                if bucket is not None and bucket_ready(idx, bucket):
                    yield from do_bucket(bidx, bucket)
                    nxt = next(bucket_iter, None)
                    bidx, bucket = nxt if nxt else (None, None)
            # DDP finalize_backward: the compute stream waits for every bucket's all-reduce
            with R.op("autograd::engine::evaluate_function: torch::autograd::AccumulateGrad"):
                R.runtime("cudaStreamWaitEvent", R.j(1200, 2200))
            after_comm = max(ar_ends)
            R.t += R.j(12_000, 20_000)
            R.tid = R.main_tid
            # ---- optimizer ----
            with R.op("Optimizer.step#AdamW.step", cat="user_annotation"):
                with R.op("aten::_foreach_norm", args=shape_args([[h, h], []], ["TensorList", "Scalar"])):
                    R.launch("lpnorm", dur_of("lpnorm"), after=after_comm)
                with R.op("aten::stack"):
                    with R.op("aten::cat"):
                        pass
                with R.op("aten::linalg_vector_norm"):
                    R.launch("norm_reduce", dur_of("norm_reduce"))
                with R.op("aten::_foreach_mul_"):
                    R.launch("foreach_mul", dur_of("foreach_mul"))
                with R.op(
                    "aten::_fused_adamw_",
                    args=shape_args(
                        [[h, h], [h, h], [h, h], [h, h], [], []],
                        ["TensorList", "TensorList", "TensorList", "TensorList", "Scalar", "Scalar"],
                    ),
                ):
                    R.launch("adamw", dur_of("adamw"))
                    R.launch("adamw", dur_of("adamw"))
            # ---- loss.item(): device -> host copy and a host sync ----
            with R.op("aten::item", args=shape_args([[]], ["c10::BFloat16"])):
                with R.op("aten::_local_scalar_dense"):
                    ev = R.launch("memcpy_d2h", R.j(2_100, 2_600), nbytes=2)
                    end = int(ev["ts"]) + int(ev["dur"])
                    wait = max(0, end - R.t) + R.j(6_000, 9_000)
                    R.runtime("cudaStreamSynchronize", wait)
        results.append(step_ev)
        R.t += R.j(30_000, 60_000)  # dataloader / python between steps
    return results


def bucket_ready(idx, bucket):
    """True when the backward of forward entry ``idx`` completes ``bucket``'s gradients."""
    if bucket["after_layer"] == -1:
        return idx == 0  # the embedding, the very last backward op
    # first forward entry of layer L is at index 1 + L * 10 (index 0 is the embedding)
    return idx == 1 + bucket["after_layer"] * 10


def build_dp4():
    world = DP["world"]
    ranks = sample_ranks(DP, world, clock_step_ns=1_370, seed=20240, corr_stride=1000, corr_offset=17)
    progs = [dp_rank_program(R) for R in ranks]
    reqs = [next(p) for p in progs]
    collectives = []
    finished = [False] * world
    results = [None] * world
    while not all(finished):
        keys = {req[1] for req in reqs}
        assert len(keys) == 1, keys
        key = reqs[0][1]
        T = reqs[0][3]
        starts = [req[2] for req in reqs]
        end = max(starts) + T
        collectives.append(
            {
                "step": key[0],
                "bucket": key[1],
                "nelems": DP_BUCKETS[key[1]]["nelems"],
                "transfer_ns": T,
                "start_ns": starts,
                "end_ns": end,
            }
        )
        new = []
        for r, p in enumerate(progs):
            try:
                new.append(p.send((starts[r], end)))
            except StopIteration as stop:
                finished[r] = True
                results[r] = stop.value
                new.append(None)
        if all(finished):
            break
        assert not any(finished), "ranks disagree on the number of collectives"
        reqs = new
    return ranks, collectives


def kineto_step_windows(R, step_name):
    """GPU-side ProfilerStep window = union over streams of its gpu_user_annotation spans."""
    for ev, spans in R.annot.values():
        if ev["name"] == step_name:
            return min(s for s, _ in spans.values()), max(e for _, e in spans.values()), ev
    raise KeyError(step_name)


def gpu_breakdown(R, step):
    lo, hi, host_ev = kineto_step_windows(R, f"ProfilerStep#{step}")
    comp = [
        (t["start"], t["end"]) for t in R.tasks if t["kind"] in ("kernel", "memset") and t["cls"] != "communication"
    ]
    comm = [(t["start"], t["end"]) for t in R.tasks if t["cls"] == "communication"]
    mem = [(t["start"], t["end"]) for t in R.tasks if t["kind"] == "memcpy"]
    b = overlap_breakdown(clip(union(comp), lo, hi), clip(union(comm), lo, hi), clip(union(mem), lo, hi))
    b.update(
        {
            "window_start_ns": lo,
            "window_end_ns": hi,
            "window_ns": hi - lo,
            "host_step_start_ns": int(host_ev["ts"]),
            "host_step_end_ns": int(host_ev["ts"]) + int(host_ev["dur"]),
        }
    )
    b["idle_ns"] = b["window_ns"] - b["busy_ns"]
    return b


def write_dp4(out: Path):
    ranks, collectives = build_dp4()
    files = []
    expected = {
        "description": "dp4_nccl known values; times in integer ns on the trace clock (Kineto ts * 1000)",
        "definitions": "docs/metrics.md; window = GPU-side ProfilerStep#N (union of its "
        "gpu_user_annotation spans over streams) = first to last device task of the step",
        "world_size": DP["world"],
        "slow_rank": DP["slow_rank"],
        "slow_factor": DP["slow_factor"],
        "steps": DP["steps"],
        "ranks": {},
        "collectives": [],
    }
    trace_end = max(max(t["end"] for t in R.tasks) for R in ranks) + 150_000
    for R in ranks:
        name = f"rank{R.rank}.{DP['file_ids'][R.rank]}.pt.trace.json.gz"
        header = kineto_header(
            rank=R.rank,
            world=DP["world"],
            n_gpus=DP["world"],
            trace_id=hashlib.md5(f"dp4-{R.rank}".encode()).hexdigest().upper(),
        )
        data = R.to_json_bytes(
            header=header, n_gpus=DP["world"], trace_name=f"./dp4_nccl/{name[:-3]}", trace_end=trace_end
        )
        write_bytes(out / name, gzip_bytes(data))
        files.append(name)
        per_step = {}
        for step in DP["steps"]:
            per_step[f"ProfilerStep#{step}"] = gpu_breakdown(R, step)
        comp_all = sum(t["end"] - t["start"] for t in R.tasks if t["cls"] not in ("communication", "memcpy", "memset"))
        expected["ranks"][str(R.rank)] = {
            "file": name,
            "pid": R.pid,
            "device": R.device,
            "main_tid": R.main_tid,
            "autograd_tid": R.bwd_tid,
            "n_kernels": sum(t["kind"] == "kernel" for t in R.tasks),
            "n_nccl_kernels": sum(t["cls"] == "communication" for t in R.tasks),
            "n_memcpy": sum(t["kind"] == "memcpy" for t in R.tasks),
            "n_memset": sum(t["kind"] == "memset" for t in R.tasks),
            "compute_kernel_time_ns": comp_all,
            "steps": per_step,
        }
    for c in collectives:
        durs = [c["end_ns"] - s for s in c["start_ns"]]
        mn = min(durs)
        expected["collectives"].append(
            {
                "step": f"ProfilerStep#{c['step']}",
                "bucket": c["bucket"],
                "nelems": c["nelems"],
                "bytes": 2 * c["nelems"],
                "kernel": NCCL_ALLREDUCE,
                "start_ns": c["start_ns"],
                "end_ns": c["end_ns"],
                "dur_ns": durs,
                "transfer_ns": mn,
                "wait_ns": [d - mn for d in durs],
                "slowest_rank_by_arrival": max(range(DP["world"]), key=lambda r: c["start_ns"][r]),
                "bus_bandwidth_GBps": round(2 * (DP["world"] - 1) / DP["world"] * 2 * c["nelems"] / mn, 3),
            }
        )
    write_json(out / "expected.json", expected)
    return ranks, expected, files
