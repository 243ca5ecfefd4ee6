"""Small 1F1B pipeline-parallel Kineto profiles whose bubble is known by construction.

`write_1f1b(folder, p, m, F, B, transfer)` simulates one training step per profiler step of a
p-stage pipeline running m micro-batches with the non-interleaved 1F1B schedule (Megatron's
`forward_backward_pipelining_without_interleaving`: stage s runs min(p-s-1, m) warm-up forwards,
then alternates one forward / one backward, then the remaining backwards) and writes one Kineto
file `rank{r}.pt.trace.json` per rank. Deterministic: same arguments, byte-identical files.

The model (all times integer ns):
- a forward takes exactly F and a backward exactly B, as `kernels_per_op` back-to-back kernels on
  stream 7 (cat `kernel`, launched by `cudaLaunchKernel` with a unique `correlation`);
- F(s, i) needs F(s-1, i)'s activation, B(s, i) needs B(s+1, i)'s gradient (the last stage's
  backward only its own forward); a message leaves when its producer op ends and arrives
  `transfer` later;
- between two compute ops a stage runs one batched P2P kernel `ncclDevKernel_SendRecv` on stream
  20 (the sends of the op just finished and the receive the next op needs): it starts when the
  previous op ends and ends at max(start + transfer, arrival of the awaited input); the compute
  stream waits for it. Zero-length P2P kernels (transfer 0 and nothing to wait for) are not
  written. With transfer = 0 this is the ideal dataflow 1F1B: stage 0 spans (m+p-1)(F+B) and every
  stage computes m(F+B) of it, so its bubble is exactly (p-1)(F+B), the fraction (p-1)/(m+p-1).
- every step starts on all ranks at the same instant of one shared clock (one host); steps are
  separated by a host-side gap, and every rank's host `ProfilerStep#N` (cat `user_annotation`)
  encloses the launches of that step; GPU-side `ProfilerStep#N` (cat `gpu_user_annotation`) spans
  each stream's work of the step.
- `replicas` > 1 adds data-parallel copies of the pipeline (world = p x replicas, rank =
  stage x replicas + replica, Megatron's layout); replica d runs d x 500 ns later.
- P2P kernels carry the args recent PyTorch copies onto NCCL kernels: `Collective name` (send or
  recv for one message, coalesced for several), `Process Group Name` (one group per pipeline copy:
  "1", "2", ...) and `Group size` (p). Their launches are enclosed by a host `nccl:coalesced`
  annotation (batched P2P, as `batch_isend_irecv` records it); with `peer_titles=True` the launch
  is preceded by one `nccl:send s->peer` / `nccl:recv s<-peer` annotation per message instead (what
  unbatched `isend`/`irecv` record: ranks in the P2P group, here the stage numbers).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from tests.support.kineto import complete_event

P2P_KERNEL = "ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)"
FWD_KERNELS = (
    "void at::native::vectorized_layer_norm_kernel<c10::BFloat16, float>(int, float, c10::BFloat16 const*)",
    "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off",
    "void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, false>>(Flash_fwd_params)",
)
BWD_KERNELS = (
    "void pytorch_flash::flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<Flash_bwd_kernel_traits>(Flash_bwd_params)",
    "sm90_xmma_gemm_bf16bf16_bf16f32_f32_nt_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off",
    "void at::native::(anonymous namespace)::layer_norm_grad_input_kernel_vectorized<c10::BFloat16, float>",
)
COMPUTE_STREAM = 7
P2P_STREAM = 20
BASE_NS = 1_700_000_000_000_000  # shared clock origin (ns); ts = ns / 1000 µs with 3 decimals
STEP_GAP_NS = 200_000  # host-side gap between the end of one step and the next step's first launch
LAUNCH_SPACING_NS = 100  # host launches are 100 ns apart, all before the step's device work starts
REPLICA_SKEW_NS = 500


def order_1f1b(p: int, m: int, s: int) -> list[tuple[str, int]]:
    """Op order of stage s: [("F", i) | ("B", i)], Megatron's non-interleaved 1F1B."""
    warm = min(p - s - 1, m)
    ops = [("F", i) for i in range(warm)]
    for i in range(m - warm):
        ops += [("F", warm + i), ("B", i)]
    return ops + [("B", i) for i in range(m - warm, m)]


@dataclass
class Stage:
    """One stage's timeline in one step, relative to the step start (ns)."""

    ops: list = field(default_factory=list)  # (kind, mb, start, end)
    p2p: list = field(default_factory=list)  # (start, end, [(direction, peer, mb, kind)])


def simulate(p: int, m: int, F: int, B: int, transfer: int) -> list[Stage]:
    """Dataflow simulation of one 1F1B step; returns each stage's ops and P2P kernels."""
    if p < 1 or m < 1 or F <= 0 or B <= 0 or transfer < 0:
        raise ValueError("need p >= 1, m >= 1, F > 0, B > 0, transfer >= 0")
    orders = [order_1f1b(p, m, s) for s in range(p)]
    end: dict[tuple[str, int, int], int] = {}  # (kind, stage, mb) -> end time
    stages = [Stage() for _ in range(p)]
    pos = [0] * p
    free = [0] * p  # when each stage's compute stream is free (after its last op / P2P kernel)

    def needs(kind: str, s: int, i: int):
        if kind == "F":
            return ("F", s - 1, i) if s > 0 else None
        return ("B", s + 1, i) if s < p - 1 else None

    def sends(kind: str, s: int, i: int):
        if kind == "F" and s < p - 1:
            return [("send", s + 1, i, "F")]
        if kind == "B" and s > 0:
            return [("send", s - 1, i, "B")]
        return []

    pending_sends: list[list] = [[] for _ in range(p)]
    while any(pos[s] < len(orders[s]) for s in range(p)):
        progressed = False
        for s in range(p):
            if pos[s] >= len(orders[s]):
                continue
            kind, i = orders[s][pos[s]]
            dep = needs(kind, s, i)
            if dep is not None and dep not in end:
                continue
            msgs = list(pending_sends[s])
            t0 = free[s]
            t1 = t0 + transfer if msgs else t0
            if dep is not None:
                msgs.append(("recv", dep[1], i, kind))
                t1 = max(t1, end[dep] + transfer, t0 + transfer)
            if t1 > t0:
                stages[s].p2p.append((t0, t1, msgs))
            start = t1
            stop = start + (F if kind == "F" else B)
            stages[s].ops.append((kind, i, start, stop))
            end[(kind, s, i)] = stop
            free[s] = stop
            pending_sends[s] = sends(kind, s, i)
            pos[s] += 1
            progressed = True
        if not progressed:  # pragma: no cover - 1F1B never deadlocks in this model
            raise RuntimeError("schedule deadlocked")
    for s in range(p):  # the last op's outputs still have to leave
        if pending_sends[s] and transfer > 0:
            stages[s].p2p.append((free[s], free[s] + transfer, pending_sends[s]))
    return stages


def _rank_trace(
    stage: Stage,
    p: int,
    s: int,
    d: int,
    rank: int,
    world: int,
    n_steps: int,
    step_len: int,
    kernels_per_op: int,
    peer_titles: bool,
) -> dict:
    """The Kineto document of one rank."""
    pid, tid, dev = 1000 + rank, 1000 + rank, rank % 8
    events: list[dict] = [
        {"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": "python3"}},
        {"ph": "M", "name": "process_name", "pid": dev, "tid": 0, "args": {"name": f"GPU {dev}"}},
    ]
    # Device tasks of one step, relative to its start: (stream, name, start, end, p2p messages).
    tasks = []
    for kind, _i, a, b in stage.ops:
        names = FWD_KERNELS if kind == "F" else BWD_KERNELS
        n = kernels_per_op
        cuts = [a + (b - a) * k // n for k in range(n + 1)]
        tasks += [(COMPUTE_STREAM, names[k % len(names)], cuts[k], cuts[k + 1], None) for k in range(n)]
    tasks += [(P2P_STREAM, P2P_KERNEL, a, b, msgs) for a, b, msgs in stage.p2p]
    tasks.sort(key=lambda t: (t[2], t[0]))
    n_launch = len(tasks)
    lead = n_launch * LAUNCH_SPACING_NS + 20_000
    corr = 1
    for step in range(1, n_steps + 1):
        t_step = BASE_NS + (step - 1) * (step_len + STEP_GAP_NS + lead) + lead + d * REPLICA_SKEW_NS
        host_start = t_step - lead
        host_end = t_step + step_len + 50_000
        events.append(
            complete_event(
                "user_annotation",
                f"ProfilerStep#{step}",
                pid,
                tid,
                host_start,
                host_end - host_start,
                {"External id": corr},
            )
        )
        spans: dict[int, list[int]] = {}
        for k, (stream, name, a, b, msgs) in enumerate(tasks):
            launch = host_start + 10_000 + k * LAUNCH_SPACING_NS
            args = {"External id": corr, "correlation": corr, "device": dev, "stream": stream}
            if msgs is not None:
                coll = "coalesced" if len(msgs) > 1 else msgs[0][0]
                args |= {"Collective name": coll, "Process Group Name": str(1 + d), "Group size": p}
                if peer_titles:
                    for j, (direction, peer, _mb, _k) in enumerate(msgs):
                        title = f"nccl:send {s}->{peer}" if direction == "send" else f"nccl:recv {s}<-{peer}"
                        events.append(
                            complete_event(
                                "user_annotation", title, pid, tid, launch - 40 + j * 10, 5, {"External id": corr}
                            )
                        )
                else:
                    events.append(
                        complete_event(
                            "user_annotation", "nccl:coalesced", pid, tid, launch - 10, 60, {"External id": corr}
                        )
                    )
            events.append(
                complete_event(
                    "cuda_runtime", "cudaLaunchKernel", pid, tid, launch, 40, {"External id": corr, "correlation": corr}
                )
            )
            events.append(complete_event("kernel", name, dev, stream, t_step + a, b - a, args))
            spans.setdefault(stream, [t_step + a, t_step + b])
            spans[stream][0] = min(spans[stream][0], t_step + a)
            spans[stream][1] = max(spans[stream][1], t_step + b)
            corr += 1
        for stream, (a, b) in sorted(spans.items()):
            events.append(
                complete_event(
                    "gpu_user_annotation", f"ProfilerStep#{step}", dev, stream, a, b - a, {"External id": corr}
                )
            )
    return {
        "schemaVersion": 1,
        "deviceProperties": [{"id": dev, "name": "NVIDIA H100 80GB HBM3", "totalGlobalMem": 85_000_000_000}],
        "distributedInfo": {"backend": "nccl", "rank": rank, "world_size": world},
        "traceEvents": events,
        "traceName": f"rank{rank}.pt.trace.json",
    }


def write_1f1b(
    folder: Path,
    p: int,
    m: int,
    F: int = 1_200_000,
    B: int | None = None,
    transfer: int = 0,
    n_steps: int = 2,
    kernels_per_op: int = 2,
    replicas: int = 1,
    peer_titles: bool = False,
) -> dict:
    """Write a p-stage x `replicas` 1F1B profile into `folder`; return its known values.

    Returns {"p", "m", "F_ns", "B_ns", "transfer_ns", "world", "stage_of_rank" {rank: stage},
    "step_ns" (stage 0's compute span = the pipeline step), "compute_ns" (m(F+B), every stage),
    "bubble_ns" {stage: step_ns - compute_ns}, "ideal_fraction" (p-1)/(m+p-1)}.
    """
    B = 2 * F if B is None else B
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    stages = simulate(p, m, F, B, transfer)
    step_len = max(max(b for *_x, b in st.ops) for st in stages)
    step_len = max(step_len, max((b for _a, b, _m in (x for st in stages for x in st.p2p)), default=0))
    world = p * replicas
    stage_of_rank = {}
    for s in range(p):
        for d in range(replicas):
            rank = s * replicas + d
            stage_of_rank[rank] = s
            doc = _rank_trace(stages[s], p, s, d, rank, world, n_steps, step_len, kernels_per_op, peer_titles)
            (folder / f"rank{rank}.pt.trace.json").write_text(json.dumps(doc, separators=(",", ":")))
    spans = [st.ops[-1][3] - st.ops[0][2] for st in stages]
    step_ns = max(spans)
    compute = m * (F + B)
    return {
        "p": p,
        "m": m,
        "F_ns": F,
        "B_ns": B,
        "transfer_ns": transfer,
        "world": world,
        "stage_of_rank": stage_of_rank,
        "step_ns": step_ns,
        "compute_ns": compute,
        "bubble_ns": dict.fromkeys(range(p), step_ns - compute),
        "ideal_fraction": (p - 1) / (m + p - 1),
    }


def hand_tasks(rows):
    """Hand-made device tasks: (rank, step, kind, name, start, end, process_group)."""
    return pl.DataFrame(
        rows, schema=["rank", "step", "kind", "name", "start_ns", "end_ns", "process_group"], orient="row"
    ).with_columns(
        pl.when(pl.col("kind") == "communication")
        .then(pl.when(pl.col("name").str.contains("SendRecv")).then(pl.lit("sendrecv")).otherwise(pl.lit("allreduce")))
        .alias("collective"),
        pl.lit(None, pl.Int64).alias("group_size"),
    )


def hand_steps(ranks, step=1):
    return pl.DataFrame({"rank": ranks, "step": [step] * len(ranks), "device_start_ns": [0] * len(ranks)})
