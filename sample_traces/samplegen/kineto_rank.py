"""The Kineto (torch.profiler) trace builder shared by the GPU samples: one rank's host ops, launches, kernels and collectives."""

from __future__ import annotations

import json
import random
from contextlib import contextmanager

from .kernels import CBID, COMPUTE_STREAM, H100_PROPS, KSPEC, NUM_SMS
from .output import US, jv


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


def sample_ranks(cfg, world, *, clock_step_ns, seed, corr_stride, corr_offset, **kwargs):
    """The KinetoRank of each rank r of a multi-rank sample: GPU r, pid cfg["pids"][r], clock from
    cfg["t0_ns"] + r x clock_step_ns, seed seed + r, correlation ids from corr_stride x (r + 1) + corr_offset."""
    return [
        KinetoRank(
            rank=r,
            world=world,
            pid=cfg["pids"][r],
            device=r,
            t0=cfg["t0_ns"] + clock_step_ns * r,
            seed=seed + r,
            first_corr=corr_stride * (r + 1) + corr_offset,
            **kwargs,
        )
        for r in range(world)
    ]


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
