"""Benchmark: the dashboard on a 1M-task profile (issue: first page within 3 s after a cached
parse; a timeline request answers within 300 ms server-side).

    python bench/bench_serve.py [--tasks 1000000] [--ranks 4]

Writes a synthetic Kineto profile (ranks x tasks/ranks kernels on a compute and an NCCL stream,
each launched by a cudaLaunchKernel, 100 GPU-annotated steps) to bench/out/serve_<N>k/, parses it
once as `traceview serve` does (cold, with the rank-local analyses, filling the bench's own cache
bench/out/serve_<N>k_cache), then times with a new Trace from the cache: the cached load, the
first page (summary + app + overview callback); then the Timeline page's canvas timeline, its JSON
API (`timeline.api`, answer serialised as sent): meta, the whole-trace view, a step zoom, a pan
inside the prefetched window (no request: checked with the client's rule), a round trip that
leaves it, a search, a range selection and the overlays (`TimelineApi.overlays`: collectives,
bubbles, findings). Numbers go to docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import gzip
import statistics
import sys
import time
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import traceview as tv  # noqa: E402
from traceview.dashboards.app import app_for  # noqa: E402
from traceview.dashboards.overview import update_overview  # noqa: E402
from traceview.dashboards.state import DashboardState  # noqa: E402
from traceview.dashboards.timeline.api import TimelineApi  # noqa: E402
from traceview.summary import build_summary  # noqa: E402

NAMES = [
    "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1",
    "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16> >",
    "void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4> >",
    "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::BFloat16, float>",
]


def write_profile(folder: Path, tasks: int, ranks: int, steps: int = 100) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    per_rank = tasks // ranks
    for r in range(ranks):
        out = folder / f"rank{r}.pt.trace.json.gz"
        if out.exists():
            continue
        ev = []
        t = 1_000_000.0
        per_step = per_rank // steps
        for s in range(steps):
            step_start = t
            for k in range(per_step):
                corr = s * per_step + k + 1
                dur = 3.0 + (k % 7)
                nccl = k % 50 == 49
                ev.append(
                    {
                        "ph": "X",
                        "cat": "cuda_runtime",
                        "name": "cudaLaunchKernel",
                        "pid": 1,
                        "tid": 1,
                        "ts": round(t - 2.0, 3),
                        "dur": 1.0,
                        "args": {"correlation": corr},
                    }
                )
                ev.append(
                    {
                        "ph": "X",
                        "cat": "kernel",
                        "name": "ncclDevKernel_AllReduce_Sum_bf16_RING_LL" if nccl else NAMES[k % len(NAMES)],
                        "pid": 0,
                        "tid": 20 if nccl else 7,
                        "ts": round(t, 3),
                        "dur": dur * (4 if nccl else 1),
                        "args": {"stream": 20 if nccl else 7, "device": 0, "correlation": corr},
                    }
                )
                t += dur + 0.5
            ev.append(
                {
                    "ph": "X",
                    "cat": "user_annotation",
                    "name": f"ProfilerStep#{s}",
                    "pid": 1,
                    "tid": 1,
                    "ts": round(step_start - 5.0, 3),
                    "dur": round(t - step_start + 10.0, 3),
                }
            )
            ev.append(
                {
                    "ph": "X",
                    "cat": "gpu_user_annotation",
                    "name": f"ProfilerStep#{s}",
                    "pid": 0,
                    "tid": 7,
                    "ts": round(step_start, 3),
                    "dur": round(t - step_start + 1.0, 3),
                }
            )
            t += 50.0
        doc = {
            "schemaVersion": 1,
            "deviceProperties": [{"id": 0, "name": "NVIDIA H100 80GB HBM3"}],
            "distributedInfo": {"backend": "nccl", "rank": r, "world_size": ranks},
            "traceEvents": ev,
        }
        out.write_bytes(gzip.compress(orjson.dumps(doc), compresslevel=1))


def timed(fn, repeat=3):
    runs, result = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = fn()
        runs.append(time.perf_counter() - t0)
    return statistics.median(runs), result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", type=int, default=1_000_000)
    ap.add_argument("--ranks", type=int, default=4)
    ap.add_argument("--canvas-only", action="store_true", help="time only the canvas timeline's API")
    args = ap.parse_args()
    folder = ROOT / "bench" / "out" / f"serve_{args.tasks // 1000}k"
    write_profile(folder, args.tasks, args.ranks)
    t0 = time.perf_counter()
    # cold parse fills the cache (or it is warm from a previous run); analyse=True as `traceview
    # serve` loads: the rank-local analyses go to the cache with each rank and are read back
    cache = folder.parent / f"{folder.name}_cache"  # the bench's own: entries written with the analyses
    tv.load(folder, use_cache=True, analyse=True, cache_dir=cache)
    print(f"parse (cold or cached): {time.perf_counter() - t0:.2f} s")

    t0 = time.perf_counter()
    trace = tv.load(folder, analyse=True, cache_dir=cache)
    t_load = time.perf_counter() - t0
    if args.canvas_only:
        print(f"tasks: {trace.device_tasks.height:,} on {trace.ranks.height} ranks; cached load {t_load:.2f} s")
        canvas_api(trace, trace.steps.sort("step").row(50, named=True))
        return
    t0 = time.perf_counter()
    summary = build_summary(trace, details=False)  # what `traceview serve` builds
    state = DashboardState(trace, summary)
    app_for(state)
    update_overview(state, "")
    t_first = time.perf_counter() - t0
    print(f"tasks: {trace.device_tasks.height:,} on {trace.ranks.height} ranks")
    print(
        f"cached load: {t_load:.2f} s; first page (summary, app, overview callback): {t_first:.2f} s "
        f"-> ready {t_load + t_first:.2f} s after the cached parse"
    )
    canvas_api(trace, trace.steps.sort("step").row(50, named=True))


def canvas_api(trace, step, px: int = 1200) -> None:
    """The canvas timeline's requests, server-side, answers serialised (what the route sends)."""
    api = TimelineApi(trace)
    t0 = time.perf_counter()
    trace.iteration_breakdown(), trace.iteration_segments(), trace.classified_tasks()  # the Trace's, memoised
    t_analyses = time.perf_counter() - t0
    t0 = time.perf_counter()
    meta = api.meta({})
    t_model = time.perf_counter() - t0
    print(f"canvas: the Trace's analyses it reads (iteration segments, classes; memoised): {t_analyses:.2f} s")
    origin, end = int(meta["origin_ns"]), meta["end"]

    def window(a, b, host=""):
        span = b - a  # the client asks for 3x the view, 3 bins per pixel of the view
        args = {"start": str(a - span), "end": str(b + span), "px": str(3 * px), "host": host}
        body = orjson.dumps(api.window(args), option=orjson.OPT_SERIALIZE_NUMPY)
        return body

    def report(label, fn, repeat=3):
        t, body = timed(fn, repeat)
        print(f"canvas {label}: {t * 1000:.0f} ms ({len(body) / 1e6:.2f} MB)")
        return t

    print(f"canvas model (first request: lanes, items, depths, flows): {t_model:.2f} s")
    report("meta", lambda: orjson.dumps(api.meta({})))
    report("whole-trace view", lambda: window(0, end // 3 + 1))  # [-1/3, 4/3] of the view: whole trace
    s0, s1 = step["device_start_ns"] - origin, step["device_end_ns"] - origin
    report("step zoom", lambda: window(s0, s1))
    report("step zoom, host threads on", lambda: window(s0, s1, "1"))
    # a pan by half a view inside the prefetched [s0 - span, s1 + span]: the client's rule
    # (tvTimeline.covered) draws it from what it holds, no request
    span = s1 - s0
    inside = s0 - span <= s0 + span // 2 and s1 + span // 2 <= s1 + span
    print(f"canvas pan by half a view inside the prefetched window: {'0 requests' if inside else 'a request'}")
    report("round trip (pan by 2 views: leaves the prefetch)", lambda: window(s0 + 2 * span, s1 + 2 * span))
    report(
        "search 'nccl' (all matches counted, first 5000 sent)",
        lambda: orjson.dumps(api.search({"q": "nccl"}), option=orjson.OPT_SERIALIZE_NUMPY),
    )
    report(
        "first range selection (merges the unions once)", lambda: orjson.dumps(api.range({"start": "0", "end": "1"})), 1
    )
    report("range selection of one step", lambda: orjson.dumps(api.range({"start": str(s0), "end": str(s1)})))
    report("range selection of the whole trace", lambda: orjson.dumps(api.range({"start": "0", "end": str(end)})))

    def overlays(a, b):
        span = b - a  # the window request's window: 3x the view
        args = {"start": str(a - span), "end": str(b + span)}
        return orjson.dumps(api.overlays(args), option=orjson.OPT_SERIALIZE_NUMPY)

    t0 = time.perf_counter()
    first = overlays(s0, s1)
    print(
        f"canvas overlays, first request (builds them: collectives, bubbles, findings): {time.perf_counter() - t0:.2f} s"
    )
    body = orjson.loads(first)
    print(f"canvas overlays of a step zoom: {len(body['collectives']['id'])} collective parts sent")
    report("overlays, whole-trace view", lambda: overlays(0, end // 3 + 1))
    report("overlays, step zoom", lambda: overlays(s0, s1))


if __name__ == "__main__":
    main()
