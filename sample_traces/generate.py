#!/usr/bin/env python3
"""(Re)generate the sample traces shipped in ``sample_traces/``.

    python sample_traces/generate.py            # write every sample, then run the checks
    python sample_traces/generate.py --check    # only check the files that are already there

Deterministic: fixed seeds, fixed ids and timestamps, gzip headers with mtime 0, no wall clock anywhere in the
output; two runs produce byte-identical files.  Standard library only.

Samples (details, layouts and every value known by construction: README.md, which this script also writes):
  dp4_nccl/      4-rank DDP GPU training (Kineto JSON .gz per rank), NCCL all-reduce on a dedicated stream,
                 rank 2 deliberately slow; expected.json holds the per-rank/per-step numbers.
  pp4_1f1b/      4-stage 1F1B pipeline (m=8 micro-batches, 2 steps) with NCCL SendRecv; expected.json.
  ascend_2rank/  2-rank torch_npu layout (kernel_details.csv, trace_view.json, step_trace_time.csv, ...).
  cpu_single/    a verbatim copy of a real torch.profiler CPU trace (copied, not generated).

All known values are computed by the small interval functions below (``union``/``intersect``/``subtract``) from
the very task intervals that are written to the files, so the files and the documented numbers cannot drift apart.
"""

from __future__ import annotations

import argparse
import csv
import gzip
import hashlib
import io
import json
import random
import shutil
import sys
from contextlib import contextmanager
from decimal import Decimal
from pathlib import Path

HERE = Path(__file__).resolve().parent
SHARED_CPU_DIR = HERE.parent.parent / "shared" / "traces" / "generated_cpu"
CPU_TRACE_NAME = "rank0.1795315865798409430.pt.trace.json.gz"
SIZE_LIMIT_BYTES = 5 * 1024 * 1024


# ----------------------------------------------------------------------------------------------------------------
# Interval algebra (half-open [start, end) integer nanoseconds).  Deliberately plain and slow: these are the
# reference computations the README numbers come from.
# ----------------------------------------------------------------------------------------------------------------
def union(intervals):
    """Merge intervals into a sorted list of disjoint [s, e) pairs (touching intervals are merged)."""
    out = []
    for s, e in sorted((s, e) for s, e in intervals if e > s):
        if out and s <= out[-1][1]:
            if e > out[-1][1]:
                out[-1][1] = e
        else:
            out.append([s, e])
    return [(s, e) for s, e in out]


def length(u):
    return sum(e - s for s, e in u)


def intersect(a, b):
    """Intersection of two merged interval lists."""
    out, i, j = [], 0, 0
    while i < len(a) and j < len(b):
        s, e = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if s < e:
            out.append((s, e))
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return out


def subtract(a, b):
    """a minus b, both merged interval lists."""
    out = []
    for s, e in a:
        cur = s
        for bs, be in b:
            if be <= cur or bs >= e:
                continue
            if bs > cur:
                out.append((cur, bs))
            cur = max(cur, be)
            if cur >= e:
                break
        if cur < e:
            out.append((cur, e))
    return out


def clip(u, lo, hi):
    return intersect(u, [(lo, hi)])


def gaps(u):
    """Total length of the gaps between consecutive merged intervals."""
    return sum(u[k + 1][0] - u[k][1] for k in range(len(u) - 1))


def overlap_breakdown(comp, comm, mem=()):
    """DESIGN.md section 3 numbers for one rank and one window, given already-clipped interval lists."""
    uc, um, ux = union(comp), union(comm), union(mem)
    busy = union(list(uc) + list(um) + list(ux))
    return {
        "computing_ns": length(uc),
        "communication_ns": length(um),
        "overlapped_ns": length(intersect(uc, um)),
        "communication_not_overlapped_ns": length(subtract(um, uc)),
        "exposed_memcpy_ns": length(subtract(subtract(ux, uc), um)),
        "busy_ns": length(busy),
        "free_ns": gaps(busy),
        "first_busy_start_ns": busy[0][0] if busy else None,
        "last_busy_end_ns": busy[-1][1] if busy else None,
    }


# ----------------------------------------------------------------------------------------------------------------
# Output helpers
# ----------------------------------------------------------------------------------------------------------------
class US(int):
    """A time in integer nanoseconds, written as microseconds with exactly 3 decimals (Kineto style)."""


def us3(ns: int) -> str:
    sign = "-" if ns < 0 else ""
    ns = abs(int(ns))
    return f"{sign}{ns // 1000}.{ns % 1000:03d}"


def jv(v) -> str:
    """JSON text for one value; US values become exact 3-decimal microsecond numbers."""
    if isinstance(v, US):
        return us3(v)
    if isinstance(v, dict):
        return "{" + ", ".join(f"{json.dumps(k)}: {jv(x)}" for k, x in v.items()) + "}"
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(jv(x) for x in v) + "]"
    return json.dumps(v)


def write_bytes(path: Path, data: bytes):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def gzip_bytes(data: bytes) -> bytes:
    buf = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buf, mtime=0, compresslevel=9) as g:
        g.write(data)
    return buf.getvalue()


def write_json(path: Path, obj, indent=2):
    write_bytes(path, (json.dumps(obj, indent=indent) + "\n").encode())


# ----------------------------------------------------------------------------------------------------------------
# Kineto (torch.profiler) trace builder, shared by the GPU samples
# ----------------------------------------------------------------------------------------------------------------
CBID = {
    "cudaLaunchKernel": 211,
    "cudaLaunchKernelExC": 430,
    "cudaMemcpyAsync": 41,
    "cudaMemsetAsync": 51,
    "cudaStreamSynchronize": 131,
    "cudaDeviceSynchronize": 165,
    "cudaEventRecord": 135,
    "cudaStreamWaitEvent": 147,
}

H100_PROPS = {
    "name": "NVIDIA H100 80GB HBM3",
    "totalGlobalMem": 85017755648,
    "computeMajor": 9,
    "computeMinor": 0,
    "maxThreadsPerBlock": 1024,
    "maxThreadsPerMultiprocessor": 2048,
    "regsPerBlock": 65536,
    "warpSize": 32,
    "sharedMemPerBlock": 49152,
    "numSms": 132,
    "regsPerMultiprocessor": 65536,
    "sharedMemPerBlockOptin": 232448,
    "sharedMemPerMultiprocessor": 233472,
}
NUM_SMS = H100_PROPS["numSms"]

COMPUTE_STREAM = 7


def _k(name, grid, block, regs, smem, occ, cls):
    return {"name": name, "grid": grid, "block": block, "regs": regs, "smem": smem, "occ": occ, "cls": cls}


_GEMM = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_{}_n_tilesize{}_warpgroupsize{}_execute_segment_k_off_kernel__5x_cublas"
_FLASH_BWD_TRAITS = (
    "Flash_bwd_kernel_traits<128, 64, 128, 8, 2, 4, 2, false, false, cutlass::bfloat16_t, "
    "Flash_kernel_traits<128, 64, 128, 8, cutlass::bfloat16_t> >"
)
_GELU = (
    "at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() "
    "const::{lambda()#4}::operator()() const::{lambda(c10::BFloat16)#1}"
)
_GELU_B = (
    "at::native::GeluBackwardCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::"
    "operator()() const::{lambda()#4}::operator()() const::{lambda(c10::BFloat16, c10::BFloat16)#1}"
)
_ADD = "at::native::CUDAFunctor_add<c10::BFloat16>"
_DIV = (
    "at::native::BinaryFunctor<c10::BFloat16, c10::BFloat16, c10::BFloat16, "
    "at::native::binary_internal::DivFunctor<c10::BFloat16> >"
)
_ADAMW = (
    "at::native::(anonymous namespace)::FusedOptimizerTensorListMetadata<4>, "
    "at::native::(anonymous namespace)::FusedAdamMathFunctor<float, 4, (at::native::ADAM_MODE)1, false>, "
    "float*, double, double, double, double, double, bool, float*, float*"
)
_LPNORM = (
    "at::native::(anonymous namespace)::TensorListMetadata<1>, at::native::(anonymous namespace)::"
    "LpNormFunctor<c10::BFloat16, (at::native::(anonymous namespace)::NormType)1, float, float>, float*, int"
)
_FMUL = (
    "at::native::(anonymous namespace)::TensorListMetadata<1>, at::native::(anonymous namespace)::"
    "BinaryOpScalarTensorFunctor<c10::BFloat16, 1, 1, 0>, std::multiplies<float>, float*"
)
_NORM2 = "at::native::ReduceOp<float, at::native::NormTwoOps<float, float, float>, unsigned int, float, 4, 4>"

KSPEC = {
    "gemm_tn_big": _k(_GEMM.format("tn", "128x256x64", "2x1x1"), [32, 48, 1], [384, 1, 1], 168, 213248, 9, "gemm"),
    "gemm_tn": _k(_GEMM.format("tn", "128x128x64", "1x1x1"), [32, 32, 1], [384, 1, 1], 168, 180224, 9, "gemm"),
    "gemm_nn": _k(_GEMM.format("nn", "128x256x64", "2x1x1"), [32, 48, 1], [384, 1, 1], 168, 213248, 9, "gemm"),
    "gemm_nt": _k(_GEMM.format("nt", "128x128x64", "1x1x1"), [96, 32, 1], [384, 1, 1], 168, 180224, 9, "gemm"),
    "flash_fwd": _k(
        "void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, "
        "cutlass::bfloat16_t, Flash_kernel_traits<128, 128, 64, 4, cutlass::bfloat16_t> >, false, true, "
        "false, false, true, true, false, false>(pytorch_flash::Flash_fwd_params)",
        [16, 64, 2],
        [128, 1, 1],
        255,
        49152,
        6,
        "attention",
    ),
    "flash_bwd_dot": _k(
        f"void pytorch_flash::flash_bwd_dot_do_o_kernel<true, {_FLASH_BWD_TRAITS} >(pytorch_flash::Flash_bwd_params)",
        [32, 2, 32],
        [256, 1, 1],
        40,
        0,
        50,
        "attention",
    ),
    "flash_bwd_dq": _k(
        f"void pytorch_flash::flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<{_FLASH_BWD_TRAITS}, "
        "true, true, false, false, false, true, false, false>(pytorch_flash::Flash_bwd_params)",
        [32, 2, 32],
        [256, 1, 1],
        255,
        114688,
        12,
        "attention",
    ),
    "flash_bwd_cvt": _k(
        f"void pytorch_flash::flash_bwd_convert_dq_kernel<{_FLASH_BWD_TRAITS} >(pytorch_flash::Flash_bwd_params, int)",
        [32, 2, 32],
        [256, 1, 1],
        64,
        32768,
        38,
        "attention",
    ),
    "ln_fwd": _k(
        "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::BFloat16, float>(int, "
        "float, c10::BFloat16 const*, c10::BFloat16 const*, c10::BFloat16 const*, float*, float*, "
        "c10::BFloat16*)",
        [4096, 1, 1],
        [128, 1, 1],
        30,
        0,
        88,
        "normalization",
    ),
    "ln_bwd_in": _k(
        "void at::native::(anonymous namespace)::layer_norm_grad_input_kernel_vectorized<c10::BFloat16, "
        "float>(c10::BFloat16 const*, c10::BFloat16 const*, float const*, float const*, "
        "c10::BFloat16 const*, c10::BFloat16*, int)",
        [4096, 1, 1],
        [128, 1, 1],
        40,
        0,
        79,
        "normalization",
    ),
    "ln_bwd_gb": _k(
        "void at::native::(anonymous namespace)::GammaBetaBackwardCUDAKernel_32x32<c10::BFloat16, float>"
        "(long, long, c10::BFloat16 const*, c10::BFloat16 const*, float const*, float const*, "
        "c10::BFloat16*, c10::BFloat16*)",
        [128, 1, 1],
        [32, 32, 1],
        64,
        8448,
        47,
        "normalization",
    ),
    "add": _k(
        f"void at::native::vectorized_elementwise_kernel<4, {_ADD}, std::array<char*, 3ul> >(int, {_ADD}, "
        "std::array<char*, 3ul>)",
        [16384, 1, 1],
        [128, 1, 1],
        28,
        0,
        91,
        "elementwise",
    ),
    "gelu_fwd": _k(
        f"void at::native::vectorized_elementwise_kernel<4, {_GELU}, std::array<char*, 2ul> >(int, "
        f"{_GELU}, std::array<char*, 2ul>)",
        [65536, 1, 1],
        [128, 1, 1],
        32,
        0,
        90,
        "elementwise",
    ),
    "gelu_bwd": _k(
        f"void at::native::vectorized_elementwise_kernel<4, {_GELU_B}, std::array<char*, 3ul> >(int, "
        f"{_GELU_B}, std::array<char*, 3ul>)",
        [65536, 1, 1],
        [128, 1, 1],
        32,
        0,
        89,
        "elementwise",
    ),
    "div": _k(
        f"void at::native::vectorized_elementwise_kernel<4, {_DIV}, std::array<char*, 3ul> >(int, {_DIV}, "
        "std::array<char*, 3ul>)",
        [524288, 1, 1],
        [128, 1, 1],
        26,
        0,
        92,
        "elementwise",
    ),
    "softmax_fwd": _k(
        "void at::native::(anonymous namespace)::cunn_SoftMaxForward<8, c10::BFloat16, float, "
        "c10::BFloat16, at::native::(anonymous namespace)::LogSoftMaxForwardEpilogue>(c10::BFloat16*, "
        "c10::BFloat16 const*, int)",
        [4096, 1, 1],
        [1024, 1, 1],
        38,
        64,
        78,
        "softmax",
    ),
    "softmax_bwd": _k(
        "void at::native::(anonymous namespace)::cunn_SoftMaxBackward<8, c10::BFloat16, float, "
        "c10::BFloat16, at::native::(anonymous namespace)::LogSoftMaxBackwardEpilogue>(c10::BFloat16*, "
        "c10::BFloat16 const*, c10::BFloat16 const*, long)",
        [4096, 1, 1],
        [1024, 1, 1],
        40,
        64,
        77,
        "softmax",
    ),
    "nll_fwd": _k(
        "void at::native::(anonymous namespace)::nll_loss_forward_reduce_cuda_kernel_2d<c10::BFloat16, "
        "float, long>(c10::BFloat16*, c10::BFloat16*, c10::BFloat16 const*, long const*, "
        "c10::BFloat16 const*, bool, long, long, long, long)",
        [1, 1, 1],
        [1024, 1, 1],
        30,
        8192,
        2,
        "reduction",
    ),
    "nll_bwd": _k(
        "void at::native::(anonymous namespace)::nll_loss_backward_reduce_cuda_kernel_2d<c10::BFloat16, "
        "long>(c10::BFloat16*, c10::BFloat16 const*, long const*, c10::BFloat16 const*, "
        "c10::BFloat16 const*, bool, int, int, long, long)",
        [1, 1, 1],
        [1024, 1, 1],
        24,
        0,
        2,
        "elementwise",
    ),
    "emb_fwd": _k(
        "void at::native::(anonymous namespace)::indexSelectLargeIndex<c10::BFloat16, long, unsigned int, "
        "2, 2, -2, true>(at::cuda::detail::TensorInfo<c10::BFloat16, unsigned int>, "
        "at::cuda::detail::TensorInfo<c10::BFloat16 const, unsigned int>, "
        "at::cuda::detail::TensorInfo<long const, unsigned int>, int, int, unsigned int, unsigned int, "
        "long)",
        [8192, 1, 1],
        [128, 1, 1],
        32,
        0,
        84,
        "embedding",
    ),
    "emb_bwd": _k(
        "void at::native::(anonymous namespace)::embedding_backward_feature_kernel<c10::BFloat16, float, "
        "long>(long const*, c10::BFloat16 const*, c10::BFloat16*, int, long, int, int)",
        [128, 1, 1],
        [32, 32, 1],
        56,
        12288,
        44,
        "embedding",
    ),
    "lpnorm": _k(
        f"void at::native::(anonymous namespace)::multi_tensor_apply_kernel<{_LPNORM}>({_LPNORM})",
        [4736, 1, 1],
        [512, 1, 1],
        38,
        4096,
        63,
        "optimizer",
    ),
    "norm_reduce": _k(
        f"void at::native::reduce_kernel<512, 1, {_NORM2} >({_NORM2})", [1, 1, 1], [32, 16, 1], 32, 16, 3, "reduction"
    ),
    "foreach_mul": _k(
        f"void at::native::(anonymous namespace)::multi_tensor_apply_kernel<{_FMUL}>({_FMUL})",
        [4736, 1, 1],
        [512, 1, 1],
        30,
        0,
        66,
        "optimizer",
    ),
    "adamw": _k(
        f"void at::native::(anonymous namespace)::multi_tensor_apply_kernel<{_ADAMW}>({_ADAMW})",
        [7296, 1, 1],
        [512, 1, 1],
        72,
        0,
        49,
        "optimizer",
    ),
    "memset": {"name": "Memset (Device)", "cls": "memset"},
    "memcpy_h2d": {"name": "Memcpy HtoD (Pinned -> Device)", "cls": "memcpy"},
    "memcpy_d2h": {"name": "Memcpy DtoH (Device -> Pinned)", "cls": "memcpy"},
}

NCCL_ALLREDUCE = "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)"
NCCL_SENDRECV = "ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)"


def shape_args(dims, types=None):
    """torch.profiler record_shapes=True args for an op with the given input dims."""
    types = types or ["c10::BFloat16" if d else "Scalar" for d in dims]
    strides = []
    for d in dims:
        st, acc = [], 1
        for n in reversed(d):
            st.append(acc)
            acc *= n
        strides.append(list(reversed(st)))
    return {
        "Concrete Inputs": ["" for _ in dims],
        "Input type": types,
        "Input Strides": strides,
        "Input Dims": [list(d) for d in dims],
    }


class KinetoRank:
    """Builds one rank's Kineto trace.  Host time is one cursor (``self.t``, ns); device tasks are placed on
    per-stream queues: start = max(launch + latency, stream free + gap, explicit dependency)."""

    def __init__(self, *, rank, world, pid, device, t0, seed, kernel_gap=(900, 2400), first_corr=1):
        self.rank, self.world, self.pid, self.device = rank, world, pid, device
        self.main_tid = pid
        self.bwd_tid = pid + 97 + 13 * rank
        self.tid = self.main_tid
        self.t = t0
        self.trace_start = t0
        self.rng = random.Random(seed)
        self.kernel_gap = kernel_gap
        self.host, self.rt, self.gpu, self.flows = [], [], [], []
        self.stack = []
        self.ext = 0
        self.corr = first_corr
        self.evidx = 0
        self.fwdbwd_id = 0
        self.stream_free = {}
        self.tasks = []  # analysis copy of every device task
        self.annot = {}  # id(user_annotation event) -> {stream: [min start, max end]}
        self.step = None

    # -- host ----------------------------------------------------------------------------------------------------
    def j(self, lo, hi):
        return self.rng.randint(lo, hi)

    @contextmanager
    def op(self, name, *, cat="cpu_op", args=None, seq=None, bwd_seq=None, pre=None, post=None, tid=None):
        start = self.t
        self.ext += 1
        a = {"External id": self.ext}
        if seq is not None:
            a["Sequence number"] = seq
            a["Fwd thread id"] = 0
        if bwd_seq is not None:
            a["Sequence number"] = bwd_seq
            a["Fwd thread id"] = 1
        a["Record function id"] = 0
        if args:
            a.update(args)
        a["Ev Idx"] = self.evidx
        self.evidx += 1
        ev = {
            "ph": "X",
            "cat": cat,
            "name": name,
            "pid": self.pid,
            "tid": tid or self.tid,
            "ts": US(start),
            "dur": US(0),
            "args": a,
        }
        self.host.append(ev)
        self.stack.append(ev)
        if cat == "user_annotation":
            self.annot[id(ev)] = (ev, {})
        self.t += self.j(1800, 5200) if pre is None else pre
        try:
            yield ev
        finally:
            self.t += self.j(700, 2600) if post is None else post
            ev["dur"] = US(self.t - start)
            self.stack.pop()

    def fwdbwd(self, fwd_ev, bwd_ev):
        self.fwdbwd_id += 1
        i = self.fwdbwd_id
        self.flows.append(
            {
                "ph": "s",
                "id": i,
                "pid": self.pid,
                "tid": fwd_ev["tid"],
                "ts": fwd_ev["ts"],
                "cat": "fwdbwd",
                "name": "fwdbwd",
            }
        )
        self.flows.append(
            {
                "ph": "f",
                "id": i,
                "pid": self.pid,
                "tid": bwd_ev["tid"],
                "ts": bwd_ev["ts"],
                "cat": "fwdbwd",
                "name": "fwdbwd",
                "bp": "e",
            }
        )

    def runtime(self, api, dur=None):
        """A CUDA runtime call at the host cursor; returns (correlation, start)."""
        self.corr += 1
        c = self.corr
        ext = self.stack[-1]["args"]["External id"] if self.stack else 0
        start = self.t
        d = dur if dur is not None else self.j(3100, 6900)
        self.t += d
        self.rt.append(
            {
                "ph": "X",
                "cat": "cuda_runtime",
                "name": api,
                "pid": self.pid,
                "tid": self.tid,
                "ts": US(start),
                "dur": US(d),
                "args": {"External id": ext, "cbid": CBID[api], "correlation": c},
            }
        )
        return c, start, ext

    # -- device --------------------------------------------------------------------------------------------------
    def device_task(
        self, kind, key_or_name, start, end, stream, corr, ext, rt_start, *, extra=None, nbytes=None, cls=None, tag=None
    ):
        assert end > start >= rt_start, (key_or_name, start, end, rt_start)
        spec = KSPEC.get(key_or_name)
        name = spec["name"] if spec else key_or_name
        cls = cls or (spec["cls"] if spec else "communication")
        if kind == "kernel":
            grid = spec["grid"] if spec else [16, 1, 1]
            block = spec["block"] if spec else [640, 1, 1]
            blocks = grid[0] * grid[1] * grid[2]
            bps = round(blocks / NUM_SMS, 6)
            a = {
                "External id": ext,
                "queued": 0,
                "device": self.device,
                "context": 1,
                "stream": stream,
                "correlation": corr,
                "registers per thread": spec["regs"] if spec else 96,
                "shared memory": spec["smem"] if spec else 103808,
                "blocks per SM": bps,
                "warps per SM": round(bps * block[0] * block[1] * block[2] / 32, 6),
                "grid": grid,
                "block": block,
                "est. achieved occupancy %": spec["occ"] if spec else 0,
            }
            cat = "kernel"
        else:
            secs = (end - start) / 1e9
            a = {
                "External id": ext,
                "device": self.device,
                "context": 1,
                "stream": stream,
                "correlation": corr,
                "bytes": nbytes,
                "memory bandwidth (GB/s)": round(nbytes / secs / 1e9, 6),
            }
            cat = "gpu_memcpy" if kind == "memcpy" else "gpu_memset"
        if extra:
            a.update(extra)
        ev = {
            "ph": "X",
            "cat": cat,
            "name": name,
            "pid": self.device,
            "tid": stream,
            "ts": US(start),
            "dur": US(end - start),
            "args": a,
        }
        self.gpu.append(ev)
        self.flows_rt_gpu(corr, rt_start, start, stream)
        self.tasks.append(
            {
                "kind": kind,
                "cls": cls,
                "name": name,
                "stream": stream,
                "start": start,
                "end": end,
                "corr": corr,
                "ext": ext,
                "step": self.step,
                "tag": tag,
            }
        )
        self.stream_free[stream] = max(self.stream_free.get(stream, 0), end)
        for frame in self.stack:
            if frame["cat"] == "user_annotation":
                spans = self.annot[id(frame)][1]
                lo, hi = spans.get(stream, (start, end))
                spans[stream] = (min(lo, start), max(hi, end))
        return ev

    def flows_rt_gpu(self, corr, rt_start, start, stream):
        self.rt.append(
            {"ph": "s", "id": corr, "pid": self.pid, "tid": self.tid, "ts": US(rt_start), "cat": "ac2g", "name": "ac2g"}
        )
        self.gpu.append(
            {
                "ph": "f",
                "id": corr,
                "pid": self.device,
                "tid": stream,
                "ts": US(start),
                "cat": "ac2g",
                "name": "ac2g",
                "bp": "e",
            }
        )

    def launch(self, key, dur, *, stream=COMPUTE_STREAM, after=0, nbytes=None, at=None, tag=None):
        """Launch a kernel / memcpy / memset described by KSPEC[key] that runs ``dur`` ns on ``stream``."""
        kind = "memcpy" if key.startswith("memcpy") else "memset" if key == "memset" else "kernel"
        api = {"kernel": "cudaLaunchKernel", "memcpy": "cudaMemcpyAsync", "memset": "cudaMemsetAsync"}[kind]
        c, rt_start, ext = self.runtime(api)
        earliest = rt_start + self.j(2400, 4300)
        prev = self.stream_free.get(stream)
        start = max(earliest, after, prev + self.j(*self.kernel_gap) if prev is not None else 0)
        if at is not None:  # a precomputed schedule (pipeline sample): the host must be early enough
            assert at >= earliest, ("host launched too late", key, at, earliest)
            assert prev is None or at >= prev, (key, at, prev)
            start = at
        return self.device_task(kind, key, start, start + dur, stream, c, ext, rt_start, nbytes=nbytes, tag=tag)

    # -- output --------------------------------------------------------------------------------------------------
    def gpu_annotations(self):
        out = []
        for ev, spans in self.annot.values():
            for stream in sorted(spans):
                lo, hi = spans[stream]
                out.append(
                    {
                        "ph": "X",
                        "cat": "gpu_user_annotation",
                        "name": ev["name"],
                        "pid": self.device,
                        "tid": stream,
                        "ts": US(lo),
                        "dur": US(hi - lo),
                        "args": {"External id": ev["args"]["External id"]},
                    }
                )
        return out

    def metadata_events(self, streams, n_gpus):
        ts = US(self.trace_start)
        m = []

        def add(name, pid, tid, args):
            m.append({"ph": "M", "name": name, "ts": ts, "pid": pid, "tid": tid, "args": args})

        add("process_name", self.pid, 0, {"name": "python3"})
        add("process_labels", self.pid, 0, {"labels": "CPU"})
        add("process_sort_index", self.pid, 0, {"sort_index": self.pid})
        for g in range(n_gpus):
            add("process_name", g, 0, {"name": "python3"})
            add("process_labels", g, 0, {"labels": f"GPU {g}"})
            add("process_sort_index", g, 0, {"sort_index": 5000000 + g})
        for s in streams:
            add("thread_name", self.device, s, {"name": f"stream {s} "})
            add("thread_sort_index", self.device, s, {"sort_index": s})
        for tid, tname in ((self.main_tid, "python3"), (self.bwd_tid, f"pt_autograd_{self.device}")):
            add("thread_name", self.pid, tid, {"name": f"thread {tid} ({tname})"})
            add("thread_sort_index", self.pid, tid, {"sort_index": tid})
        return m

    def to_json_bytes(self, *, header, n_gpus, trace_name, trace_end):
        streams = sorted({t["stream"] for t in self.tasks})
        host = sorted(self.host + self.flows, key=lambda e: (int(e["ts"]), -int(e.get("dur", 0))))
        rt = sorted(self.rt, key=lambda e: (int(e["ts"]), e["ph"] != "X"))
        gpu = sorted(
            self.gpu + self.gpu_annotations(),
            key=lambda e: (int(e["ts"]), e["cat"] != "gpu_user_annotation", e["ph"] == "X"),
        )
        tail = [
            {
                "ph": "X",
                "cat": "Trace",
                "name": "PyTorch Profiler (0)",
                "pid": "Spans",
                "tid": "PyTorch Profiler",
                "ts": US(self.trace_start),
                "dur": US(trace_end - self.trace_start),
                "args": {"Op count": 0},
            },
            {
                "ph": "M",
                "name": "process_sort_index",
                "ts": US(self.trace_start),
                "pid": "Spans",
                "tid": 0,
                "args": {"sort_index": 536870912},
            },
            {
                "ph": "i",
                "s": "g",
                "name": "Iteration Start: PyTorch Profiler",
                "pid": "Traces",
                "tid": "Trace PyTorch Profiler",
                "ts": US(self.trace_start),
            },
            {"ph": "i", "s": "g", "name": "Record Window End", "pid": "", "tid": "", "ts": US(trace_end)},
        ]
        events = self.metadata_events(streams, n_gpus) + host + rt + gpu + tail
        lines = ["{"]
        for k, v in header.items():
            lines.append(f"  {json.dumps(k)}: {jv(v)},")
        lines.append('  "traceEvents": [')
        chunks = []
        for ev in events:
            body = []
            for k, v in ev.items():
                if k == "args":
                    inner = ", ".join(f"{json.dumps(ak)}: {jv(av)}" for ak, av in v.items())
                    body.append(f'    "args": {{\n      {inner}\n    }}')
                else:
                    body.append(f"    {json.dumps(k)}: {jv(v)}")
            chunks.append("  {\n" + ",\n".join(body) + "\n  }")
        lines.append(",\n".join(chunks))
        lines.append(f'  ],\n  "traceName": {json.dumps(trace_name)}\n}}\n')
        return "\n".join(lines).encode()


def kineto_header(*, rank, world, n_gpus, trace_id, pg_desc="default_pg"):
    return {
        "schemaVersion": 1,
        "deviceProperties": [dict({"id": g}, **H100_PROPS) for g in range(n_gpus)],
        "cupti_version": 24,
        "cuda_runtime_version": 12040,
        "cuda_driver_version": 12040,
        "distributedInfo": {
            "backend": "nccl",
            "rank": rank,
            "world_size": world,
            "pg_count": 1,
            "pg_config": [
                {
                    "pg_name": "0",
                    "pg_desc": pg_desc,
                    "backend_config": "cuda:nccl",
                    "pg_size": world,
                    "ranks": list(range(world)),
                }
            ],
            "nccl_version": "2.20.5",
        },
        "record_shapes": 1,
        "trace_id": trace_id,
        "displayTimeUnit": "ms",
        "baseTimeNanoseconds": 1767225600000000000,
    }


def collective_args(name, nelems_in, nelems_out, world, rank, dtype="BFloat16"):
    """Collective metadata as recent PyTorch writes it on record_param_comms (and Kineto copies onto the kernel)."""
    return {
        "Collective name": name,
        "dtype": dtype,
        "In msg nelems": nelems_in,
        "Out msg nelems": nelems_out,
        "Group size": world,
        "Global rank start": 0,
        "Global rank stride": 1,
        "In split size": "[]",
        "Out split size": "[]",
        "Process Group Name": "0",
        "Process Group Description": "default_pg",
        "Process Group Ranks": "[" + ", ".join(str(r) for r in range(world)) + "]",
        "Rank": rank,
    }


KERNEL_COLLECTIVE_KEYS = (
    "Collective name",
    "In msg nelems",
    "Out msg nelems",
    "Group size",
    "dtype",
    "In split size",
    "Out split size",
    "Process Group Name",
    "Process Group Description",
    "Process Group Ranks",
)


# ----------------------------------------------------------------------------------------------------------------
# Model building blocks (host op trees + kernels), shared by dp4 and pp4
# ----------------------------------------------------------------------------------------------------------------
# forward entries: (op path, kernel keys, autograd node or None, input dims of the outer op)
def layer_forward_spec(tokens, h):
    t3 = [2, tokens // 2, h]
    return [
        (["aten::layer_norm", "aten::native_layer_norm"], ["ln_fwd"], "NativeLayerNormBackward0", [t3, [h], [h]]),
        (["aten::linear", "aten::matmul", "aten::mm"], ["gemm_tn_big"], "MmBackward0", [t3, [3 * h, h]]),
        (
            [
                "aten::scaled_dot_product_attention",
                "aten::_scaled_dot_product_flash_attention",
                "aten::_flash_attention_forward",
            ],
            ["flash_fwd"],
            "ScaledDotProductFlashAttentionBackward0",
            [[2, 32, tokens // 2, h // 32]] * 3,
        ),
        (["aten::linear", "aten::matmul", "aten::mm"], ["gemm_tn"], "MmBackward0", [t3, [h, h]]),
        (["aten::add"], ["add"], "AddBackward0", [t3, t3, []]),
        (["aten::layer_norm", "aten::native_layer_norm"], ["ln_fwd"], "NativeLayerNormBackward0", [t3, [h], [h]]),
        (["aten::linear", "aten::matmul", "aten::mm"], ["gemm_tn_big"], "MmBackward0", [t3, [4 * h, h]]),
        (["aten::gelu"], ["gelu_fwd"], "GeluBackward0", [[2, tokens // 2, 4 * h], []]),
        (
            ["aten::linear", "aten::matmul", "aten::mm"],
            ["gemm_tn_big"],
            "MmBackward0",
            [[2, tokens // 2, 4 * h], [h, 4 * h]],
        ),
        (["aten::add"], ["add"], "AddBackward0", [t3, t3, []]),
    ]


BACKWARD_KERNELS = {
    "NativeLayerNormBackward0": (["aten::native_layer_norm_backward"], ["ln_bwd_in", "ln_bwd_gb"]),
    "MmBackward0": (["aten::mm"], ["gemm_nn", "gemm_nt"]),
    "ScaledDotProductFlashAttentionBackward0": (
        ["aten::_scaled_dot_product_flash_attention_backward", "aten::_flash_attention_backward"],
        ["flash_bwd_dot", "flash_bwd_dq", "flash_bwd_cvt"],
    ),
    "AddBackward0": ([], []),
    "GeluBackward0": (["aten::gelu_backward"], ["gelu_bwd"]),
    "EmbeddingBackward0": (["aten::embedding_backward", "aten::embedding_dense_backward"], ["memset", "emb_bwd"]),
    "LogSoftmaxBackward0": (["aten::_log_softmax_backward_data"], ["softmax_bwd"]),
    "NllLossBackward0": (["aten::nll_loss_backward"], ["memset", "nll_bwd"]),
}


def run_forward_entry(R, path, kernels, node, dims, dur_of, seq):
    """Host ops for one forward entry; returns (outer op event, node, seq) for the backward pass."""
    cms, outer = [], None
    for i, name in enumerate(path):
        cm = R.op(name, args=shape_args(dims) if i == 0 else None, seq=seq if i == 0 else None)
        ev = cm.__enter__()
        cms.append(cm)
        outer = outer or ev
        if name == "aten::linear":
            with R.op("aten::t"):
                with R.op("aten::transpose"):
                    pass
    for k in kernels:
        R.launch(k, dur_of(k))
    for cm in reversed(cms):
        cm.__exit__(None, None, None)
    return outer, node, seq


def run_backward_entry(R, fwd_ev, node, seq, dur_of):
    """autograd::engine::evaluate_function: <node> -> <node> -> aten ops with their kernels."""
    with R.op(f"autograd::engine::evaluate_function: {node}", bwd_seq=seq) as ev:
        R.fwdbwd(fwd_ev, ev)
        with R.op(node, bwd_seq=seq):
            path, kernels = BACKWARD_KERNELS[node]
            if node == "MmBackward0":
                for k in kernels:
                    with R.op("aten::t"):
                        pass
                    with R.op("aten::mm"):
                        R.launch(k, dur_of(k))
            elif path:
                cms = [R.op(n) for n in path]
                for cm in cms:
                    cm.__enter__()
                for k in kernels:
                    if k == "memset":
                        with R.op("aten::zero_"):
                            with R.op("aten::fill_"):
                                R.launch(k, dur_of(k), nbytes=262144)
                    else:
                        R.launch(k, dur_of(k))
                for cm in reversed(cms):
                    cm.__exit__(None, None, None)
    return ev


# ----------------------------------------------------------------------------------------------------------------
# Sample 1: dp4_nccl
# ----------------------------------------------------------------------------------------------------------------
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
    ranks = [
        KinetoRank(
            rank=r,
            world=world,
            pid=DP["pids"][r],
            device=r,
            t0=DP["t0_ns"] + 1_370 * r,
            seed=20240 + r,
            first_corr=1000 * (r + 1) + 17,
        )
        for r in range(world)
    ]
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
        "definitions": "DESIGN.md section 3; window = GPU-side ProfilerStep#N (union of its "
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


# ----------------------------------------------------------------------------------------------------------------
# Sample 2: pp4_1f1b
# ----------------------------------------------------------------------------------------------------------------
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

        fi = bi = 0
        for _ in range(W):  # warm-up: recv_forward, forward, send_forward
            if not first:
                p2p([], [("act", fi)])
            prog.append(("F", fi))
            if not last:
                p2p([("act", fi)], [])
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
            if not last:
                p2p([], [("grad", bi)])
            prog.append(("B", bi))
            if not first:
                p2p([("grad", bi)], [])
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
    ranks = [
        KinetoRank(
            rank=r,
            world=p,
            pid=PP["pids"][r],
            device=r,
            t0=PP["t0_ns"] + 2_110 * r,
            seed=31337 + r,
            kernel_gap=(0, 0),
            first_corr=5000 * (r + 1) + 3,
        )
        for r in range(p)
    ]
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


# ----------------------------------------------------------------------------------------------------------------
# Sample 3: ascend_2rank (torch_npu layout)
# ----------------------------------------------------------------------------------------------------------------
KD_HEADER = [
    "Step Id",
    "Model ID",
    "Task ID",
    "Stream ID",
    "Name",
    "Type",
    "OP State",
    "Accelerator Core",
    "Start Time(us)",
    "Duration(us)",
    "Wait Time(us)",
    "Block Dim",
    "Mix Block Dim",
    "HF32 Eligible",
    "Input Shapes",
    "Input Data Types",
    "Input Formats",
    "Output Shapes",
    "Output Data Types",
    "Output Formats",
    "Context ID",
    "aicore_time(us)",
    "aic_total_cycles",
    "aic_mac_time(us)",
    "aic_mac_ratio",
    "aic_scalar_time(us)",
    "aic_scalar_ratio",
    "aic_mte1_time(us)",
    "aic_mte1_ratio",
    "aic_mte2_time(us)",
    "aic_mte2_ratio",
    "aic_fixpipe_time(us)",
    "aic_fixpipe_ratio",
    "aic_icache_miss_rate",
    "aiv_time(us)",
    "aiv_total_cycles",
    "aiv_vec_time(us)",
    "aiv_vec_ratio",
    "aiv_scalar_time(us)",
    "aiv_scalar_ratio",
    "aiv_mte2_time(us)",
    "aiv_mte2_ratio",
    "aiv_mte3_time(us)",
    "aiv_mte3_ratio",
    "aiv_icache_miss_rate",
    "cube_utilization(%)",
]
STEP_TRACE_HEADER = [
    "Step",
    "Computing",
    "Communication(Not Overlapped)",
    "Overlapped",
    "Communication",
    "Free",
    "Stage",
    "Bubble",
    "Communication(Not Overlapped and Exclude Receive)",
    "Preparing",
]

ASC = {
    "world": 2,
    "steps": [8, 9],
    "pids": [61423, 61488],
    "slow_rank": 1,
    "slow_factor": 1.06,
    "t0_ns": 1_767_225_988_120_000_000,  # epoch ns; written as 16-digit us text
    "compute_stream": 2,
    "hccl_group": "712",
}
# (name, type, core, base dur ns, host op, input shapes, dtypes, formats, output shapes, block dim, phase)
ASC_OPS = [
    (
        "Conv2D1",
        "Conv2D",
        "AI_CORE",
        312_880,
        "aten::convolution",
        '"32,1,224,224,16;16,4,16,16"',
        "FLOAT16;FLOAT16",
        "NC1HWC0;FRACTAL_Z",
        '"32,4,112,112,16"',
        24,
        "fwd",
    ),
    (
        "aclnnInplaceRelu_Relu_Relu",
        "Relu",
        "AI_VECTOR_CORE",
        41_230,
        "aten::relu_",
        '"32,64,112,112"',
        "FLOAT16",
        "NCHW",
        '"32,64,112,112"',
        48,
        "fwd",
    ),
    (
        "Conv2D2",
        "Conv2D",
        "AI_CORE",
        268_410,
        "aten::convolution",
        '"32,4,112,112,16;36,8,16,16"',
        "FLOAT16;FLOAT16",
        "NC1HWC0;FRACTAL_Z",
        '"32,8,56,56,16"',
        24,
        "fwd",
    ),
    (
        "aclnnInplaceRelu_Relu_Relu",
        "Relu",
        "AI_VECTOR_CORE",
        22_760,
        "aten::relu_",
        '"32,128,56,56"',
        "FLOAT16",
        "NCHW",
        '"32,128,56,56"',
        48,
        "fwd",
    ),
    (
        "aclnnMm_MatMulCommon_MatMulV2",
        "MatMulV2",
        "AI_CORE",
        186_350,
        "aten::mm",
        '"32,401408;401408,1024"',
        "FLOAT16;FLOAT16",
        "ND;ND",
        '"32,1024"',
        24,
        "fwd",
    ),
    (
        "aclnnAdd_AddAiCore_Add",
        "Add",
        "AI_VECTOR_CORE",
        6_520,
        "aten::add",
        '"32,1024;1024"',
        "FLOAT16;FLOAT16",
        "ND;ND",
        '"32,1024"',
        8,
        "fwd",
    ),
    (
        "aclnnMm_MatMulCommon_MatMulV2",
        "MatMulV2",
        "AI_CORE",
        21_870,
        "aten::mm",
        '"32,1024;1024,1000"',
        "FLOAT16;FLOAT16",
        "ND;ND",
        '"32,1000"',
        24,
        "fwd",
    ),
    (
        "aclnnLogSoftmax_LogSoftmaxV2AiCore_LogSoftmaxV2",
        "LogSoftmaxV2",
        "AI_VECTOR_CORE",
        8_940,
        "aten::_log_softmax",
        '"32,1000"',
        "FLOAT",
        "ND",
        '"32,1000"',
        32,
        "fwd",
    ),
    (
        "aclnnNLLLoss_NLLLossAiCore_MemSet",
        "MemSet",
        "AI_VECTOR_CORE",
        5_180,
        "aten::nll_loss_forward",
        "N/A",
        "N/A",
        "N/A",
        "N/A",
        48,
        "fwd",
    ),
    (
        "aclnnNLLLoss_NLLLossAiCore_NLLLoss",
        "NLLLoss",
        "MIX_AIV",
        12_180,
        "aten::nll_loss_forward",
        '"32,1000;32;1000"',
        "FLOAT;INT64;FLOAT",
        "FORMAT_ND;FORMAT_ND;FORMAT_ND",
        '";"',
        48,
        "fwd",
    ),
    (
        "aclnnNLLLossBackward_NLLLossGradAiCore_NLLLossGrad",
        "NLLLossGrad",
        "AI_VECTOR_CORE",
        8_400,
        "aten::nll_loss_backward",
        '"32,1000;32;32;1000;"',
        "FLOAT;FLOAT;INT64;FLOAT;FLOAT",
        "ND;ND;ND;ND;ND",
        '"32,1000"',
        32,
        "bwd",
    ),
    (
        "aclnnLogSoftmaxBackward_LogSoftmaxGradAiCore_LogSoftmaxGrad",
        "LogSoftmaxGrad",
        "AI_VECTOR_CORE",
        9_660,
        "aten::_log_softmax_backward_data",
        '"32,1000;32,1000"',
        "FLOAT;FLOAT",
        "ND;ND",
        '"32,1000"',
        32,
        "bwd",
    ),
    (
        "aclnnMm_MatMulCommon_MemSet",
        "MemSet",
        "AI_VECTOR_CORE",
        11_260,
        "aten::mm",
        "N/A",
        "N/A",
        "N/A",
        "N/A",
        48,
        "bwd",
    ),
    (
        "aclnnMm_MatMulCommon_MatMulV2",
        "MatMulV2",
        "AI_CORE",
        23_410,
        "aten::mm",
        '"32,1000;1000,1024"',
        "FLOAT16;FLOAT16",
        "ND;ND",
        '"32,1024"',
        24,
        "bwd",
    ),
    (
        "aclnnMm_MatMulCommon_MatMulV2",
        "MatMulV2",
        "AI_CORE",
        24_980,
        "aten::mm",
        '"1000,32;32,1024"',
        "FLOAT16;FLOAT16",
        "ND;ND",
        '"1000,1024"',
        24,
        "bwd",
    ),
    (
        "aclnnReduceSum_ReduceSumAiCore_ReduceSum",
        "ReduceSum",
        "MIX_AIV",
        7_720,
        "aten::sum",
        '"32,1024"',
        "FLOAT16",
        "ND",
        '"1024"',
        48,
        "bwd",
    ),
    (
        "aclnnMm_MatMulCommon_MatMulV2",
        "MatMulV2",
        "AI_CORE",
        198_730,
        "aten::mm",
        '"32,1024;1024,401408"',
        "FLOAT16;FLOAT16",
        "ND;ND",
        '"32,401408"',
        24,
        "bwd",
    ),
    (
        "aclnnMm_MatMulCommon_MatMulV2",
        "MatMulV2",
        "AI_CORE",
        204_550,
        "aten::mm",
        '"1024,32;32,401408"',
        "FLOAT16;FLOAT16",
        "ND;ND",
        '"1024,401408"',
        24,
        "bwd_ar0",
    ),  # -> all-reduce 0 (fc grads)
    (
        "aclnnThresholdBackward_ReluGrad_ReluGrad",
        "ReluGrad",
        "AI_VECTOR_CORE",
        24_310,
        "aten::threshold_backward",
        '"32,128,56,56;32,128,56,56"',
        "FLOAT16;FLOAT16",
        "NCHW;NCHW",
        '"32,128,56,56"',
        48,
        "bwd",
    ),
    (
        "Conv2DBackpropInput3",
        "Conv2DBackpropInput",
        "AI_CORE",
        287_640,
        "aten::convolution_backward",
        '"4;36,8,16,16;32,8,56,56,16"',
        "INT32;FLOAT16;FLOAT16",
        "ND;FRACTAL_Z;NC1HWC0",
        '"32,4,112,112,16"',
        24,
        "bwd",
    ),
    (
        "Conv2DBackpropFilter4_MemSet",
        "MemSet",
        "AI_VECTOR_CORE",
        12_620,
        "aten::convolution_backward",
        "N/A",
        "N/A",
        "N/A",
        "N/A",
        48,
        "bwd",
    ),
    (
        "Conv2DBackpropFilter4",
        "Conv2DBackpropFilter",
        "AI_CORE",
        301_270,
        "aten::convolution_backward",
        '"32,4,112,112,16;4;32,8,56,56,16"',
        "FLOAT16;INT32;FLOAT16",
        "NC1HWC0;ND;NC1HWC0",
        '"36,8,16,16"',
        24,
        "bwd_ar1",
    ),  # -> all-reduce 1 (conv2 grads)
    (
        "aclnnThresholdBackward_ReluGrad_ReluGrad",
        "ReluGrad",
        "AI_VECTOR_CORE",
        45_090,
        "aten::threshold_backward",
        '"32,64,112,112;32,64,112,112"',
        "FLOAT16;FLOAT16",
        "NCHW;NCHW",
        '"32,64,112,112"',
        48,
        "bwd",
    ),
    (
        "Conv2DBackpropFilter5_MemSet",
        "MemSet",
        "AI_VECTOR_CORE",
        12_280,
        "aten::convolution_backward",
        "N/A",
        "N/A",
        "N/A",
        "N/A",
        48,
        "bwd",
    ),
    (
        "Conv2DBackpropFilter5",
        "Conv2DBackpropFilter",
        "AI_CORE",
        342_170,
        "aten::convolution_backward",
        '"32,1,224,224,16;4;32,4,112,112,16"',
        "FLOAT16;INT32;FLOAT16",
        "NC1HWC0;ND;NC1HWC0",
        '"16,4,16,16"',
        24,
        "bwd_ar2",
    ),  # -> all-reduce 2 (conv1 grads), exposed
    (
        "aclnnForeachMulScalar_ForeachMulScalar_ForeachMulScalar",
        "ForeachMulScalar",
        "AI_VECTOR_CORE",
        58_410,
        "aten::_foreach_mul_",
        '"1024,401408"',
        "FLOAT16",
        "ND",
        '"1024,401408"',
        48,
        "opt",
    ),
    (
        "aclnnForeachAddList_ForeachAddList_ForeachAddList",
        "ForeachAddList",
        "AI_VECTOR_CORE",
        97_330,
        "aten::_foreach_add_",
        '"1024,401408;1024,401408"',
        "FLOAT16;FLOAT16",
        "ND;ND",
        '"1024,401408"',
        48,
        "opt",
    ),
]
# gradient all-reduces per step (fp16 element counts); transfer = 25 us latency + bytes / 180 B/ns
ASC_ALLREDUCE_COUNTS = [51_380_224, 11_010_048, 8_650_752]


def asc_transfer_ns(count):
    return 25_000 + -(-2 * count // 180)


ASC_ALLREDUCE = [(c, asc_transfer_ns(c)) for c in ASC_ALLREDUCE_COUNTS]


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
    """step_trace_time.csv row values (ns) from the raw tasks, DESIGN.md section 3."""
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


def asc_trace_view(rk, pid, rng):
    """trace_view.json: a bare JSON array, string ts, torch_npu process layout."""
    hw, cann, hccl, ovl = pid * 1024 + 416, pid * 1024 + 224, pid * 1024 + 480, pid * 1024 + 736
    main_tid, bwd_tid = pid, pid + 8571
    ev = []

    def M(name, p, tid, args):
        ev.append({"ph": "M", "name": name, "pid": p, "tid": tid, "args": args})

    M("process_name", pid, 0, {"name": "Python"})
    M("process_labels", pid, 0, {"labels": "CPU"})
    M("process_sort_index", pid, 0, {"sort_index": 0})
    for tid in (main_tid, bwd_tid):
        M("thread_name", pid, tid, {"name": f"Thread {tid}"})
        M("thread_sort_index", pid, tid, {"sort_index": tid})
    M("process_name", hw, 0, {"name": "Ascend Hardware"})
    M("thread_name", hw, ASC["compute_stream"], {"name": f"Stream {ASC['compute_stream']}"})
    M("thread_sort_index", hw, ASC["compute_stream"], {"sort_index": ASC["compute_stream"]})
    M("process_labels", hw, 0, {"labels": "NPU"})
    M("process_sort_index", hw, 0, {"sort_index": 13})
    M("process_name", hccl, 0, {"name": "HCCL"})
    M("thread_name", hccl, 0, {"name": "Group 0 Communication"})
    M("thread_sort_index", hccl, 0, {"sort_index": 0})
    M("thread_name", hccl, 1, {"name": "Plane 0"})
    M("thread_sort_index", hccl, 1, {"sort_index": 1})
    M("process_labels", hccl, 0, {"labels": "NPU"})
    M("process_sort_index", hccl, 0, {"sort_index": 15})
    M("process_name", cann, 0, {"name": "CANN"})
    M("process_labels", cann, 0, {"labels": "CPU"})
    M("process_sort_index", cann, 0, {"sort_index": 7})
    M("process_name", ovl, 0, {"name": "Overlap Analysis"})
    for i, n in enumerate(["Computing", "Communication", "Communication(Not Overlapped)", "Free"]):
        M("thread_name", ovl, i, {"name": n})
    M("process_labels", ovl, 0, {"labels": "NPU"})
    M("process_sort_index", ovl, 0, {"sort_index": 23})

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


# ----------------------------------------------------------------------------------------------------------------
# Sample 4: cpu_single (copied)
# ----------------------------------------------------------------------------------------------------------------
CPU_PROVENANCE = """# Provenance: cpu_single/

`{name}` is a verbatim copy of `traces/generated_cpu/single/{name}` from the project's shared real-trace corpus
(`../shared/traces`), which describes it as follows (adapted from its `generated_cpu/PROVENANCE.md`):

Real torch.profiler (Kineto) output, recorded on a 2-core x86-64 CPU machine with torch 2.13.0+cpu on 2026-11-22:
a tiny Transformer trained for 8 steps under `torch.profiler.profile(schedule(wait=1, warmup=1, active=5),
record_shapes=True, on_trace_ready=tensorboard_trace_handler)`.
- `single/`: one process; ProfilerStep#2..#6; about 11k events.
No GPU events: use it for CPU-only handling and host-side step analysis.
`traceName` fields were rewritten to relative paths; nothing else was changed.

This file is the only shipped sample that is copied rather than generated: `sample_traces/generate.py` copies it
again when `../shared/traces` is present and leaves this copy alone otherwise.
SHA-256 of the copy: `{sha}`.
"""


def write_cpu_single(out: Path):
    src = SHARED_CPU_DIR / "single" / CPU_TRACE_NAME
    dst = out / CPU_TRACE_NAME
    if src.is_file():
        out.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, dst)
    elif not dst.is_file():
        print(f"warning: {src} is absent and no copy exists in {out}; cpu_single not written", file=sys.stderr)
        return None
    sha = hashlib.sha256(dst.read_bytes()).hexdigest()
    write_bytes(out / "PROVENANCE.md", CPU_PROVENANCE.format(name=CPU_TRACE_NAME, sha=sha).encode())
    data = json.loads(gzip.decompress(dst.read_bytes()))
    steps = sorted(
        {e["name"] for e in data["traceEvents"] if e.get("name", "").startswith("ProfilerStep#")},
        key=lambda n: int(n.split("#")[1]),
    )
    return {
        "file": CPU_TRACE_NAME,
        "sha256": sha,
        "events": len(data["traceEvents"]),
        "steps": steps,
        "step_durations_ns": {
            e["name"]: round(e["dur"] * 1000)
            for e in data["traceEvents"]
            if e.get("name", "").startswith("ProfilerStep#")
        },
    }


# ----------------------------------------------------------------------------------------------------------------
# Checks
# ----------------------------------------------------------------------------------------------------------------
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
                for k in (
                    "computing_ns",
                    "communication_ns",
                    "overlapped_ns",
                    "communication_not_overlapped_ns",
                    "exposed_memcpy_ns",
                    "free_ns",
                    "busy_ns",
                ):
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


# ----------------------------------------------------------------------------------------------------------------
# README
# ----------------------------------------------------------------------------------------------------------------
def fmt_ns(ns):
    return f"{ns:,}"


def readme_text(dp_exp, pp_exp, asc_exp, cpu_info, sizes, file_list):
    L = []
    a = L.append
    a("# sample_traces")
    a("")
    a("Small traces shipped with traceview for the quickstart and the tests.  Everything here except")
    a("`cpu_single/` is **synthetic**: written by `generate.py` in the file formats of torch.profiler")
    a("(Kineto) and torch_npu, with timelines built so that the numbers the analyses must produce are known by")
    a("construction.  This README is also written by `generate.py`; do not edit it by hand.")
    a("")
    a("```")
    a("python sample_traces/generate.py          # rewrite every sample + this README, then run the checks")
    a("python sample_traces/generate.py --check  # only verify the files that are there")
    a("```")
    a("")
    a("The script is deterministic (fixed seeds, ids and clocks; gzip mtime 0): re-running it gives byte-identical")
    a('files.  It uses only the Python standard library.  All "known values" below and in the `expected.json`')
    a("files are computed by the small interval-union functions at the top of `generate.py` (`union`, `intersect`,")
    a("`subtract`, `gaps`, `overlap_breakdown`) from the same task intervals that are written to the files, and")
    a("`--check` recomputes them from the written files.  Times are integer nanoseconds; Kineto `ts`/`dur` are")
    a("microseconds with exactly 3 decimals (parse them exactly: value * 1000 is an integer).")
    a("")
    a("| sample | what | files | bytes |")
    a("|---|---|---|---|")
    for k, v in sizes.items():
        a(f"| `{k}/` | {v[0]} | {v[1]} | {v[2]:,} |")
    a("")
    a("Definitions follow `DESIGN.md` section 3 (U = union of intervals over all streams of one device, |X| =")
    a("length): computing = |U(COMP)|, communication = |U(COMM)|, overlapped = |U(COMP) ∩ U(COMM)|,")
    a("communication_not_overlapped = |U(COMM) − U(COMP)|, exposed_memcpy = |U(MEM) − U(COMP) − U(COMM)|, free =")
    a("gaps between consecutive merged busy intervals inside the window.  COMP = compute kernels + memsets, COMM =")
    a("NCCL/HCCL kernels/ops, MEM = memcpys.")
    a("")
    # ---------------- dp4 ----------------
    a("## 1. `dp4_nccl/` - 4-rank data-parallel training on H100 (DDP, NCCL)")
    a("")
    a('Layout as `tensorboard_trace_handler(worker_name=f"rank{r}")` writes it: one')
    a("`rank{r}.<id>.pt.trace.json.gz` per rank (ids fixed), plus `expected.json` (all known values, machine-")
    a("readable).  Each file: Kineto JSON (schemaVersion 1, `deviceProperties` of 4 x `NVIDIA H100 80GB HBM3`,")
    a("`distributedInfo` {backend nccl, rank r, world_size 4, pg_config default_pg, nccl_version}, cupti/cuda")
    a("versions, `record_shapes`, `trace_id`, `baseTimeNanoseconds`, `traceName`), `M` process/thread name events,")
    a("and the events below.")
    a("")
    a("- Rank r runs on GPU r: device events have `pid` = r and `args.device` = r (not 0 for ranks 1-3).")
    a("- Host: main thread (`thread <pid> (python3)`) runs `ProfilerStep#3..#5` (cat `user_annotation`), two")
    a("  input copies (`aten::to` → `Memcpy HtoD (Pinned -> Device)`), `Optimizer.zero_grad#AdamW.zero_grad`,")
    a("  `DistributedDataParallel.forward` (embedding, 4 transformer layers: `aten::layer_norm`, `aten::linear`,")
    a("  `aten::scaled_dot_product_attention`, `aten::add`, `aten::gelu`; final LayerNorm and lm-head),")
    a("  `aten::cross_entropy_loss`, `Optimizer.step#AdamW.step` (`aten::_foreach_norm`, `aten::linalg_vector_norm`,")
    a("  `aten::_foreach_mul_`, `aten::_fused_adamw_`) and `aten::item` (`Memcpy DtoH (Device -> Pinned)` +")
    a("  `cudaStreamSynchronize`, so the host waits for the GPU at the end of every step).  Backward runs on the")
    a("  autograd thread (`thread <tid> (pt_autograd_<r>)`) as `autograd::engine::evaluate_function: XBackward0` →")
    a("  `XBackward0` → aten ops; `fwdbwd` flow events link each forward op to its backward op (Sequence number).")
    a("- cpu_ops carry `External id`, `Record function id`, `Ev Idx`, and with record_shapes `Concrete Inputs`,")
    a("  `Input type`, `Input Strides`, `Input Dims`.  Every kernel/memcpy/memset has exactly one `cuda_runtime`")
    a("  launch (`cudaLaunchKernel` cbid 211 for compute kernels, `cudaLaunchKernelExC` cbid 430 for NCCL kernels,")
    a("  `cudaMemcpyAsync` 41, `cudaMemsetAsync` 51) with the same `args.correlation` and `External id`, and an")
    a("  `ac2g` flow pair (`s` at the launch, `f` at the kernel).  Correlation ids are unique per rank.")
    a("- Device: compute on stream 7: cuBLAS `sm90_xmma_gemm_bf16bf16_bf16f32_f32_{tn,nn,nt}_...`, flash attention")
    a("  (`pytorch_flash::flash_fwd_kernel`, `flash_bwd_*`), LayerNorm (`vectorized_layer_norm_kernel`,")
    a("  `layer_norm_grad_input_kernel_vectorized`, `GammaBetaBackwardCUDAKernel_32x32`), softmax")
    a("  (`cunn_SoftMaxForward/Backward`), elementwise (`vectorized_elementwise_kernel<4, ...add/Gelu/Div...>`),")
    a("  embedding (`indexSelectLargeIndex`, `embedding_backward_feature_kernel`), NLL loss, a `reduce_kernel`,")
    a("  optimizer `multi_tensor_apply_kernel<...LpNormFunctor / BinaryOpScalarTensorFunctor / FusedAdamMathFunctor")
    a("  ...>`; per step 2 HtoD + 1 DtoH memcpy and 2 `Memset (Device)`.  Kernel args: `External id`, `queued`,")
    a("  `device`, `context`, `stream`, `correlation`, `registers per thread`, `shared memory`, `blocks per SM`,")
    a("  `warps per SM`, `grid`, `block`, `est. achieved occupancy %`.")
    a("- Communication: DDP gradient buckets (4 per step, reverse layer order) → on the autograd thread")
    a("  `aten::div_` (bucket /= world size, an elementwise kernel on stream 7), then `c10d::allreduce_`")
    a("  → `record_param_comms` → `nccl:all_reduce` (user_annotation) → `cudaEventRecord`, `cudaStreamWaitEvent`,")
    a(f"  `cudaLaunchKernelExC` → `{NCCL_ALLREDUCE}` on the dedicated stream {DP['nccl_stream']}.")
    a("  Collective metadata on `record_param_comms` (as recent PyTorch writes it): `Collective name` (allreduce),")
    a("  `dtype` (BFloat16), `In msg nelems`, `Out msg nelems`, `Group size` (4), `Global rank start`, `Global rank")
    a('  stride`, `In split size`, `Out split size`, `Process Group Name` ("0"), `Process Group Description`')
    a('  (default_pg), `Process Group Ranks` ("[0, 1, 2, 3]"), `Rank`.  The NCCL kernels carry the subset Kineto')
    a("  copies onto kernels: `Collective name`, `In msg nelems`, `Out msg nelems`, `Group size`, `dtype`, `In split")
    a("  size`, `Out split size`, `Process Group Name`, `Process Group Description`, `Process Group Ranks`.")
    a("- GPU-side annotations (cat `gpu_user_annotation`, one per stream that has work, as Kineto does):")
    a("  `ProfilerStep#N` on stream 7 and 20, `DistributedDataParallel.forward` and `Optimizer.step#AdamW.step` on")
    a("  stream 7, `nccl:all_reduce` on stream 20.  The step window used below = union of the `ProfilerStep#N`")
    a("  spans = first to last device task launched inside the host step (the stream-7 span covers it).")
    a("")
    a("Construction.  Host launches run ahead of the GPU (GPU-bound); kernels on a stream start at max(launch +")
    a("2.4-4.3 µs, previous kernel end + 0.9-2.4 µs, dependencies).  Base kernel durations (fast rank) are listed")
    a('in `generate.py` (`DP["dur"]`), each launch jittered ±2 % with a fixed seed.  **Rank 2 is the slow rank:**')
    a(f"every compute kernel is {DP['slow_factor']}x longer.  An all-reduce kernel on rank r starts at")
    a("max(launch, end of the compute kernels enqueued before it (stream wait), previous NCCL kernel end) and all")
    a("four ranks' kernels end together at max over ranks of the start + transfer, transfer =")
    a("ceil(2(n-1)/n x bytes / 360 B/ns).  So the rank that arrives last (rank 2) has the transfer-only duration")
    a("and the others wait in their all-reduce.  DDP's finalize makes the compute stream wait for the last")
    a("all-reduce before the optimizer, so the last bucket is exposed at the end of the backward pass; earlier")
    a("buckets are hidden behind backward compute.")
    a("")
    a(
        "Buckets (elements, bf16): "
        + "; ".join(f"{i}: {b['nelems']:,} ({b['what']})" for i, b in enumerate(DP_BUCKETS))
        + "."
    )
    a("")
    a("Known per-rank, per-step values (ns; window = GPU-side ProfilerStep#N; identity computing +")
    a("comm_not_overlapped + exposed_memcpy + free = window holds exactly):")
    a("")
    a(
        "| rank | step | window | computing | communication | overlapped | comm not overlapped | exposed memcpy | "
        "free (= idle) |"
    )
    a("|---|---|---|---|---|---|---|---|---|")
    for r, info in dp_exp["ranks"].items():
        for sname, st in info["steps"].items():
            a(
                f"| {r} | {sname} | {fmt_ns(st['window_ns'])} | {fmt_ns(st['computing_ns'])} | "
                f"{fmt_ns(st['communication_ns'])} | {fmt_ns(st['overlapped_ns'])} | "
                f"{fmt_ns(st['communication_not_overlapped_ns'])} | {fmt_ns(st['exposed_memcpy_ns'])} | "
                f"{fmt_ns(st['free_ns'])} |"
            )
    a("")
    a("Window bounds, host step bounds, kernel counts and the compute-kernel time per rank are in `expected.json`.")
    tot = {r: i["compute_kernel_time_ns"] for r, i in dp_exp["ranks"].items()}
    a(
        "Total compute-kernel time over the 3 steps (memcpy/memset/NCCL excluded): "
        + ", ".join(f"rank {r} {fmt_ns(v)}" for r, v in tot.items())
        + f" (rank 2 / mean of the others = {tot['2'] / ((tot['0'] + tot['1'] + tot['3']) / 3):.4f})."
    )
    a("")
    a("Cross-rank collectives (transfer = min duration over ranks = rank 2's duration; wait_r = dur_r − transfer;")
    a("bus bandwidth = 2(n−1)/n x bytes / transfer):")
    a("")
    a("| step | bucket | nelems | transfer ns | wait ns rank 0,1,2,3 | busbw GB/s |")
    a("|---|---|---|---|---|---|")
    for c in dp_exp["collectives"]:
        a(
            f"| {c['step']} | {c['bucket']} | {c['nelems']:,} | {fmt_ns(c['transfer_ns'])} | "
            f"{', '.join(fmt_ns(w) for w in c['wait_ns'])} | {c['bus_bandwidth_GBps']} |"
        )
    a("")
    a("Rank 2 never waits (wait 0 in every collective); it is the slow rank the others wait for.")
    a("")
    # ---------------- pp4 ----------------
    a("## 2. `pp4_1f1b/` - 4-stage pipeline parallel, 1F1B, m = 8 micro-batches, 2 steps")
    a("")
    a("Same Kineto layout as `dp4_nccl/` (4 files `rank{r}.<id>.pt.trace.json.gz`, world 4, GPU r for rank r),")
    a("steps `ProfilerStep#1..#2`, plus `expected.json`.  Rank r is pipeline stage r (2 transformer layers each;")
    a("stage 0 also the embedding, stage 3 also the lm-head and loss).  There is no optimizer step and no data")
    a("loading in this sample (only the pipeline), so the bubble is known exactly.")
    a("")
    F, B, tau = pp_exp["F_ns"], pp_exp["B_ns"], pp_exp["transfer_ns"]
    a("Construction.  Schedule = Megatron `forward_backward_pipelining_without_interleaving` (warm-up")
    a(f"min(p−s−1, m) forwards, steady 1F1B, cool-down).  Every micro-batch forward is exactly F = {fmt_ns(F)} ns")
    a(f"and every backward exactly B = 2F = {fmt_ns(B)} ns of back-to-back kernels on stream 7 (no gaps inside an")
    a("op; host `## forward_step microbatch i ##` / `## backward_step microbatch i ##` user annotations, backward on")
    a("the autograd thread).  Activations / gradients (1,048,576 bf16 elements) move with blocking batched P2P")
    a(f"calls, each one `{NCCL_SENDRECV}` kernel on the stream of that peer pair (stream")
    a(f"{PP['p2p_streams']['prev']} = with stage r−1, stream {PP['p2p_streams']['next']} = with stage r+1): host")
    a('`nccl:coalesced` (send+recv, kernel `Collective name` "coalesced") or `nccl:send r->peer` /')
    a("`nccl:recv r<-peer` user annotations over `c10d::send` / `c10d::recv_` → `record_param_comms` (`Collective")
    a("name` send/recv, `In/Out msg nelems` 1,048,576) → `cudaLaunchKernelExC`.  A P2P kernel starts when the")
    a("stage's previous compute op ends; each message is transferred in [max(sender kernel start, receiver kernel")
    a(f"start), + transfer], transfer = {fmt_ns(tau)} ns; the kernel ends when all its messages are through, and the")
    a("compute stream waits for it (so idle gaps appear exactly where 1F1B has bubbles, plus the small transfer")
    a("hops).  At the end of each step every rank calls `cudaDeviceSynchronize`.")
    a("")
    a("**Bubble definition (GPU).**  For step N, the pipeline window W_N = [earliest compute-kernel start,")
    a("latest compute-kernel end] of step N over all 4 ranks (rank 0's first forward to rank 0's last backward).")
    a("For rank r: compute_busy = |U(compute kernels of r) ∩ W_N| and **bubble = |W_N| − compute_busy**, the time")
    a("inside the pipeline step during which stage r computes nothing.  With zero transfer time this is exactly")
    a(
        f"(p−1)/(m+p−1) = {pp_exp['ideal_bubble_fraction']} of |W_N| = (p−1)(F+B) = {fmt_ns(pp_exp['ideal_bubble_ns'])}"
        " ns on every rank."
    )
    st1 = pp_exp["steps"]["ProfilerStep#1"]
    a("With the non-zero transfer the step is longer by transfer_excess = |W_N| − (m+p−1)(F+B) =")
    a(f"{fmt_ns(st1['transfer_excess_ns'])} ns = {st1['transfer_excess_in_transfers']:.0f} transfer times on the")
    a("critical path, so exactly: bubble − transfer_excess = (p−1)(F+B) and (bubble − transfer_excess) / (|W_N| −")
    a(f"transfer_excess) = {pp_exp['ideal_bubble_fraction']}.")
    a("A single-rank (local) view is also given: local window = the rank's own GPU-side `ProfilerStep#N` span")
    a("(first to last device task of the rank, P2P kernels included); there, every idle nanosecond of the compute")
    a("stream lies inside a P2P kernel, so local_exposed_p2p = |U(P2P) − U(COMP)| = raw sum of the P2P kernel")
    a('durations = local window − compute_busy (the analogue of torch_npu\'s "Bubble = receive time").')
    a("")
    a(
        "| step | rank | pipeline window | compute busy | bubble | bubble fraction | bubble − excess | local window | "
        "local exposed P2P | P2P kernels |"
    )
    a("|---|---|---|---|---|---|---|---|---|---|")
    for sname, st in pp_exp["steps"].items():
        for r, e in st["ranks"].items():
            a(
                f"| {sname} | {r} | {fmt_ns(st['step_duration_ns'])} | {fmt_ns(e['compute_busy_ns'])} | "
                f"{fmt_ns(e['bubble_ns'])} | {e['bubble_fraction']:.6f} | "
                f"{fmt_ns(e['bubble_minus_transfer_excess_ns'])} | {fmt_ns(e['local_window_ns'])} | "
                f"{fmt_ns(e['local_exposed_p2p_ns'])} | {e['n_p2p_kernels']} |"
            )
    a("")
    a(
        f"Ideal: step (m+p−1)(F+B) = {fmt_ns(pp_exp['ideal_step_ns'])} ns, bubble fraction "
        f"{pp_exp['ideal_bubble_fraction']} = {pp_exp['ideal_bubble_fraction_value']:.6f}.  Window bounds (ns) are in"
    )
    a("`expected.json`.")
    a("")
    # ---------------- ascend ----------------
    a("## 3. `ascend_2rank/` - torch_npu (Ascend) 2-rank data parallel, 2 steps")
    a("")
    a("```")
    a("ascend_2rank/rank{0,1}_ascend_pt/")
    a("    profiler_info_{r}.json          config / start_info / end_info / rank_id (torch_npu layout)")
    a("    profiler_metadata.json          ENV_VARIABLES + parallel_group_info (default_group, global_ranks [0, 1])")
    a("    ASCEND_PROFILER_OUTPUT/")
    a("        kernel_details.csv          46-column header of a real Level1 export, CRLF, Start Time = 16-digit")
    a("                                    us with 3 decimals followed by a TAB; rows sorted by start")
    a("        trace_view.json             a bare JSON array; ts are strings (us, 3 decimals)")
    a("        step_trace_time.csv         computed by construction (below), CRLF")
    a("ascend_2rank/expected.json          the same numbers in ns + the HCCL ops")
    a("```")
    a("")
    a("Per step (`Step Id` 8 and 9 = `ProfilerStep#8/#9`), on `Stream ID` 2: AI_CORE `Conv2D`, `MatMulV2`,")
    a("`Conv2DBackpropInput`, `Conv2DBackpropFilter`; AI_VECTOR_CORE `Relu`, `Add`, `LogSoftmaxV2`, `NLLLossGrad`,")
    a("`LogSoftmaxGrad`, `ReluGrad`, `ForeachMulScalar`, `ForeachAddList` and 4 `MemSet`; MIX_AIV `NLLLoss`,")
    a("`ReduceSum`.  Three `hcom_allReduce_` rows per step (`Accelerator Core` HCCL, `Stream ID`/`Task ID` N/A as")
    a("in the real file, names `hcom_allReduce__712_<k>_1`): the first two start during the backward pass and")
    a("overlap compute, the third starts after the last backward task and is exposed; the optimizer tasks wait for")
    a("it.  Both ranks' all-reduces end together (end = latest start + transfer); rank 1 computes 6 % slower, so")
    a("rank 0 waits.  A ~0.3 ms host-bound gap between forward and backward shows up as Free.  `Wait Time(us)` =")
    a("gap to the previous task on the same stream (HCCL rows: to the previous HCCL op).  aicore/aiv columns are")
    a("plausible fillers (cycles = time x 1800 MHz x block dim).")
    a("")
    a("trace_view.json: process `Python` (host pid; `ProfilerStep#N` cpu_op ranges with string ts, the host ops")
    a("that launch each task on the main / backward thread, `c10d::allreduce_`), `Ascend Hardware` (`Stream 2`")
    a("lane mirroring every kernel_details compute row, args Model Id / Task Type / Physic Stream Id / Task Id /")
    a("connection_id), `HCCL` (`Group 0 Communication` with the `hcom_allReduce_` ops, `Plane 0` with a")
    a("`Notify_Wait` (waiting) and a `Reduce_Inline` (transfer) sub-task per op), `CANN` (metadata only),")
    a("`Overlap Analysis` (Computing / Communication / Communication(Not Overlapped) / Free lanes, consistent with")
    a("step_trace_time.csv - analyses must not read numbers from this lane), and `async_npu` `torch_to_npu` flows")
    a("from host op to device task.")
    a("")
    a("step_trace_time.csv is computed inside `generate.py` with the interval-union functions from the rows of")
    a("kernel_details.csv of that `Step Id`: COMP = all compute rows, COMM = the hcom rows, window = first task")
    a("start to last task end of the step; Computing = |U(COMP)|, Communication(Not Overlapped) = |U(COMM) −")
    a("U(COMP)|, Overlapped = |U(COMP) ∩ U(COMM)|, Communication = |U(COMM)|, Free = gaps between merged busy")
    a("intervals, Stage = last task end − first task start − Bubble, Bubble = 0 (no `hcom_receive`),")
    a("Communication(Not Overlapped and Exclude Receive) = Communication(Not Overlapped) − Bubble, Preparing =")
    a("first task start − `ProfilerStep#N` host start.  Values are written in µs as Python floats (like")
    a("torch_npu); × 1000 gives the exact ns below.")
    a("")
    a(
        "| rank | step | Computing | Comm (Not Overlapped) | Overlapped | Communication | Free | Stage | Bubble | "
        "Preparing |"
    )
    a("|---|---|---|---|---|---|---|---|---|---|")
    for r, info in asc_exp["ranks"].items():
        for step, v in info["steps"].items():
            a(
                f"| {r} | {step} | {fmt_ns(v['Computing_ns'])} | {fmt_ns(v['Communication(Not Overlapped)_ns'])} | "
                f"{fmt_ns(v['Overlapped_ns'])} | {fmt_ns(v['Communication_ns'])} | {fmt_ns(v['Free_ns'])} | "
                f"{fmt_ns(v['Stage_ns'])} | 0 | {fmt_ns(v['Preparing_ns'])} |"
            )
    a("")
    a("(ns; identity Computing + Communication(Not Overlapped) + Free = Stage holds exactly.)  HCCL op intervals")
    a("and transfer times per rank are in `expected.json`.")
    a("")
    # ---------------- cpu ----------------
    a("## 4. `cpu_single/` - a real torch.profiler CPU trace (copied)")
    a("")
    if cpu_info:
        a(f"`{cpu_info['file']}` is a verbatim copy of the real trace `../shared/traces/generated_cpu/single/` (torch")
        a("2.13.0+cpu, a tiny Transformer, tensorboard_trace_handler output; see `cpu_single/PROVENANCE.md`).  It is")
        a("the one sample that `generate.py` copies instead of generating; without `../shared` the existing copy is")
        a(
            f"kept.  Facts read from the file: {cpu_info['events']:,} trace events, steps "
            f"{', '.join(cpu_info['steps'])} (cat `user_annotation`), no GPU events, SHA-256 `{cpu_info['sha256']}`."
        )
        a(
            "Host step durations (ns): "
            + ", ".join(f"{k} {fmt_ns(v)}" for k, v in cpu_info["step_durations_ns"].items())
            + "."
        )
    a("")
    a("## What `--check` verifies (run after every generation)")
    a("")
    a("- Kineto files: valid JSON after gunzip (parsed with exact decimals); every kernel / memcpy / memset has")
    a("  exactly one `cuda_runtime` launch (`cudaLaunchKernel*` / `cudaMemcpyAsync` / `cudaMemsetAsync`) with the")
    a("  same `correlation` and `External id`, launched no later than the task starts, plus both `ac2g` flow")
    a("  events; `pid`/`tid` = `args.device`/`args.stream`; every `ts`/`dur` is exact at 1 ns.")
    a("- dp4_nccl: per rank and step, the numbers recomputed from the file equal `expected.json`; overlapped > 0")
    a("  (hidden communication) and communication_not_overlapped > 0 (exposed) in every step; the identity holds;")
    a("  rank 2 waits 0 ns in every all-reduce while every other rank waits > 0; rank 2's compute time is")
    a("  1.13-1.17x the others'.")
    a("- pp4_1f1b: compute busy = m(F+B) on every rank; bubble and local exposed P2P recomputed from the files")
    a("  equal `expected.json`; bubble − transfer_excess = (p−1)(F+B); every idle ns of a rank's local window is")
    a("  inside one of its P2P kernels.")
    a("- ascend_2rank: header, CRLF and Start Time format (16 digits, 3 decimals, TAB); step_trace_time.csv equals")
    a("  the values recomputed from kernel_details.csv; the first two all-reduces of each step overlap compute and")
    a("  the last one is fully exposed; the Overlap Analysis lane agrees.")
    a("- cpu_single: the copy is byte-identical to the shared original (when `../shared` is present).")
    a("- The whole folder stays under 5 MB.")
    a("")
    a("## Files")
    a("")
    a("| file | bytes |")
    a("|---|---|")
    for rel, n in file_list:
        a(f"| `{rel}` | {n:,} |")
    a("")
    a("## Notes and deliberate simplifications")
    a("")
    a("- NCCL kernels use the NCCL >= 2.19 names (`ncclDevKernel_*`) but are launched through `cudaLaunchKernelExC`")
    a("  (cat `cuda_runtime`); the newest stacks launch them with `cuLaunchKernelEx` (cat `cuda_driver`), see")
    a("  `../shared/traces/tracelens/tests/traces/b200/eager_trace.json.gz`.")
    a("- All ranks of a sample share one clock (one node), so cross-rank times compare directly.")
    a('- The P2P kernel `Collective name` for a batched send+recv is written as "coalesced"; real PyTorch versions')
    a("  differ in what they attach to coalesced P2P kernels.")
    a("- No file contents from `../shared/traces` were copied into the synthetic samples; only formats were.")
    a("")
    return "\n".join(L)


# ----------------------------------------------------------------------------------------------------------------
def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="only verify the existing files")
    args = ap.parse_args(argv)
    if not args.check:
        for sub in ("dp4_nccl", "pp4_1f1b", "ascend_2rank"):
            d = HERE / sub
            if d.exists():
                shutil.rmtree(d)
        _, dp_exp, dp_files = write_dp4(HERE / "dp4_nccl")
        _, pp_exp, pp_files = write_pp4(HERE / "pp4_1f1b")
        _, asc_exp = write_ascend(HERE / "ascend_2rank")
        cpu_info = write_cpu_single(HERE / "cpu_single")

        def du(sub):
            fs = [p for p in (HERE / sub).rglob("*") if p.is_file()]
            return len(fs), sum(p.stat().st_size for p in fs)

        sizes = {}
        for sub, what in (
            ("dp4_nccl", "4 x Kineto .json.gz, DDP + NCCL all-reduce, slow rank 2"),
            ("pp4_1f1b", "4 x Kineto .json.gz, 1F1B p=4 m=8, NCCL SendRecv"),
            ("ascend_2rank", "2 x torch_npu *_ascend_pt, HCCL all-reduce"),
            ("cpu_single", "real torch 2.13 CPU trace (copy) + PROVENANCE.md"),
        ):
            n, b = du(sub)
            sizes[sub] = (what, n, b)
        file_list = [
            (p.relative_to(HERE).as_posix(), p.stat().st_size)
            for p in sorted(HERE.rglob("*"))
            if p.is_file() and p.parent != HERE
        ]
        write_bytes(HERE / "README.md", readme_text(dp_exp, pp_exp, asc_exp, cpu_info, sizes, file_list).encode())
    problems = check_all()
    if problems:
        print(f"{len(problems)} check(s) failed", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
