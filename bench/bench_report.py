"""Benchmark: `traceview report` (issue: an 8-rank profile in under 10 s after parsing; the HTML
under 15 MB for a 1M-task profile).

    python bench/bench_report.py [--tasks 1000000] [--ranks 4] [--profile PATH ...]

Times, after a cached load: the summary and the HTML page of the real 8-rank DLRM set from
../shared/traces (skipped when absent), and of the synthetic 1M-task profile of
bench/bench_serve.py (written to bench/out/serve_1000k/ when missing), and of each --profile
(e.g. bench/out/peers/ranks_64, built by bench/bench_peers.py: the 64-rank scaling); prints each
page's size.
Numbers go to docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import traceview as tv  # noqa: E402
from bench.bench_serve import write_profile  # noqa: E402
from traceview.dashboards.report import report_html  # noqa: E402
from traceview.summary import build_summary  # noqa: E402

DLRM = ROOT.parent / "shared/traces/param/et_replay/tests/inputs/dlrm_kineto.tar.gz.extracted/dlrm_kineto"


def measure(label: str, path: Path) -> None:
    tv.load(path)  # fill the cache
    t0 = time.perf_counter()
    trace = tv.load(path)
    t1 = time.perf_counter()
    doc = build_summary(trace, top=20)
    t2 = time.perf_counter()
    page = report_html(trace, doc)
    t3 = time.perf_counter()
    tasks = trace.device_tasks.height
    print(
        f"{label:<18} {trace.ranks.height:>5} {tasks:>10,} {t1 - t0:>9.2f} {t2 - t1:>9.2f} {t3 - t2:>8.2f} "
        f"{t3 - t1:>14.2f} {len(page.encode()) / 1e6:>8.2f}"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", type=int, default=1_000_000)
    ap.add_argument("--ranks", type=int, default=4)
    ap.add_argument("--profile", type=Path, action="append", default=[], help="also measure this profile")
    args = ap.parse_args()
    print(
        f"{'profile':<18} {'ranks':>5} {'tasks':>10} {'cached s':>9} {'summary s':>9} {'html s':>8} "
        f"{'after parse s':>14} {'HTML MB':>8}"
    )
    if DLRM.exists():
        measure("dlrm 8 ranks", DLRM)
    else:
        print("dlrm 8 ranks: ../shared/traces absent, skipped")
    folder = ROOT / "bench" / "out" / f"serve_{args.tasks // 1000}k"
    write_profile(folder, args.tasks, args.ranks)
    measure(f"synthetic {args.tasks // 1000}k", folder)
    for path in args.profile:
        measure(path.name[:18], path)


if __name__ == "__main__":
    main()
