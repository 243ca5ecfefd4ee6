"""sample_traces/README.md, written from the samples' known values."""

from __future__ import annotations

from .dp4 import DP, DP_BUCKETS
from .intervals import OVERLAP_TERMS_NS
from .kernels import NCCL_ALLREDUCE, NCCL_SENDRECV
from .pp4 import PP


# README
def fmt_ns(ns):
    return f"{ns:,}"


def md_table(header, rows):
    """A Markdown table's lines: the header, the rule, then a line a row (a cell as str() writes it)."""
    return [
        "| " + " | ".join(header) + " |",
        "|" + "---|" * len(header),
        *("| " + " | ".join(map(str, row)) + " |" for row in rows),
    ]


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
    L.extend(
        md_table(("sample", "what", "files", "bytes"), ((f"`{k}/`", v[0], v[1], f"{v[2]:,}") for k, v in sizes.items()))
    )
    a("")
    a("Definitions follow `docs/metrics.md` (U = union of intervals over all streams of one device, |X| =")
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
    L.extend(
        md_table(
            (
                "rank",
                "step",
                "window",
                "computing",
                "communication",
                "overlapped",
                "comm not overlapped",
                "exposed memcpy",
                "free (= idle)",
            ),
            (
                (r, sname, *(fmt_ns(st[key]) for key in ("window_ns", *OVERLAP_TERMS_NS)))
                for r, info in dp_exp["ranks"].items()
                for sname, st in info["steps"].items()
            ),
        )
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
    L.extend(
        md_table(
            ("step", "bucket", "nelems", "transfer ns", "wait ns rank 0,1,2,3", "busbw GB/s"),
            (
                (
                    c["step"],
                    c["bucket"],
                    f"{c['nelems']:,}",
                    fmt_ns(c["transfer_ns"]),
                    ", ".join(fmt_ns(w) for w in c["wait_ns"]),
                    c["bus_bandwidth_GBps"],
                )
                for c in dp_exp["collectives"]
            ),
        )
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
    L.extend(
        md_table(
            (
                "step",
                "rank",
                "pipeline window",
                "compute busy",
                "bubble",
                "bubble fraction",
                "bubble − excess",
                "local window",
                "local exposed P2P",
                "P2P kernels",
            ),
            (
                (
                    sname,
                    r,
                    fmt_ns(st["step_duration_ns"]),
                    fmt_ns(e["compute_busy_ns"]),
                    fmt_ns(e["bubble_ns"]),
                    f"{e['bubble_fraction']:.6f}",
                    fmt_ns(e["bubble_minus_transfer_excess_ns"]),
                    fmt_ns(e["local_window_ns"]),
                    fmt_ns(e["local_exposed_p2p_ns"]),
                    e["n_p2p_kernels"],
                )
                for sname, st in pp_exp["steps"].items()
                for r, e in st["ranks"].items()
            ),
        )
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
    asc_terms = ("Computing", "Communication(Not Overlapped)", "Overlapped", "Communication", "Free", "Stage")
    L.extend(
        md_table(
            (
                "rank",
                "step",
                "Computing",
                "Comm (Not Overlapped)",
                "Overlapped",
                "Communication",
                "Free",
                "Stage",
                "Bubble",
                "Preparing",
            ),
            (
                (r, step, *(fmt_ns(v[f"{term}_ns"]) for term in asc_terms), "0", fmt_ns(v["Preparing_ns"]))
                for r, info in asc_exp["ranks"].items()
                for step, v in info["steps"].items()
            ),
        )
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
    L.extend(md_table(("file", "bytes"), ((f"`{rel}`", f"{n:,}") for rel, n in file_list)))
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
