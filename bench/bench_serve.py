"""Benchmark: the dashboard on a 1M-task profile (issue: first page within 3 s after a cached
parse; a zoom answers within 300 ms server-side; never more than ~20k raw tasks sent).

    python bench/bench_serve.py [--tasks 1000000] [--ranks 4]

Writes a synthetic Kineto profile (ranks x tasks/ranks kernels on a compute and an NCCL stream,
each launched by a cudaLaunchKernel, 100 GPU-annotated steps) to bench/out/serve_1m/, parses it
once (cold, filling the cache), then times with a new Trace from the cache: the cached load, the
first page (summary + app + overview callback), the timeline page's first open, a zoom to one
step, a zoom to 1 ms, and the full-window (binned) timeline. Numbers go to
docs/benchmarks.md.
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
from traceview.dashboards.timeline_view import update_timeline  # noqa: E402
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
    args = ap.parse_args()
    folder = ROOT / "bench" / "out" / f"serve_{args.tasks // 1000}k"
    write_profile(folder, args.tasks, args.ranks)
    t0 = time.perf_counter()
    tv.load(folder, use_cache=True)  # cold parse fills the cache (or it is warm from a previous run)
    print(f"parse (cold or cached): {time.perf_counter() - t0:.2f} s")

    t0 = time.perf_counter()
    trace = tv.load(folder)
    t_load = time.perf_counter() - t0
    t0 = time.perf_counter()
    summary = build_summary(trace, details=False)  # what `traceview serve` builds
    state = DashboardState(trace, summary)
    app_for(state)
    update_overview(state, "")
    t_first = time.perf_counter() - t0
    t0 = time.perf_counter()
    fig, note = update_timeline(state, "/timeline", "", None, None, 0, trigger="url")
    t_timeline = time.perf_counter() - t0
    print(f"tasks: {trace.device_tasks.height:,} on {trace.ranks.height} ranks")
    print(
        f"cached load: {t_load:.2f} s; first page (summary, app, overview callback): {t_first:.2f} s "
        f"-> ready {t_load + t_first:.2f} s after the cached parse"
    )
    print(f"timeline page, first open (sorts the tasks once): {t_timeline:.2f} s; {note}")

    step = trace.steps.sort("step").row(50, named=True)
    data = state.timeline_data()
    origin = data.t0_ns

    def zoom(start_ns, end_ns):
        relayout = {"xaxis.range[0]": (start_ns - origin) / 1e6, "xaxis.range[1]": (end_ns - origin) / 1e6}
        return update_timeline(state, "/timeline", "", relayout, None, 0, trigger="tl-graph")

    t_step, (f_step, n_step) = timed(lambda: zoom(step["device_start_ns"], step["device_end_ns"]))
    t_ms, (f_ms, n_ms) = timed(lambda: zoom(step["device_start_ns"], step["device_start_ns"] + 1_000_000))
    t_full, (f_full, n_full) = timed(lambda: update_timeline(state, "/timeline", "", None, None, 1, trigger="tl-reset"))

    def raw_points(fig):
        return sum(len(t.x) for t in fig.data if getattr(t, "type", "") == "scattergl" and t.x is not None) // 3

    print(f"zoom to one step: {t_step * 1000:.0f} ms ({n_step}; {raw_points(f_step):,} raw tasks sent)")
    print(f"zoom to 1 ms: {t_ms * 1000:.0f} ms ({n_ms}; {raw_points(f_ms):,} raw tasks sent)")
    print(f"full window: {t_full * 1000:.0f} ms ({n_full})")


if __name__ == "__main__":
    main()
