"""Benchmark: the whole analysis (everything `traceview summary` computes) after parsing.

    python bench/bench_analysis.py [--repeat 3]

Times `build_summary(trace)` on a freshly loaded (cached) trace, so parse time is excluded and no
memoised result is reused: the 8-rank DLRM set from ../shared/traces/param and the shipped samples.
Numbers go to docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
SHARED = ROOT.parent / "shared" / "traces"

import traceview as tv  # noqa: E402
from traceview.summary import build_summary  # noqa: E402

INPUTS = {
    "dlrm_8rank": SHARED / "param/et_replay/tests/inputs/dlrm_kineto.tar.gz.extracted/dlrm_kineto",
    "dp4_nccl": ROOT / "sample_traces/dp4_nccl",
    "pp4_1f1b": ROOT / "sample_traces/pp4_1f1b",
    "ascend_2rank": ROOT / "sample_traces/ascend_2rank",
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    print(f"{'input':<14} {'ranks':>5} {'tasks':>8} {'summary s':>10}")
    for name, path in INPUTS.items():
        if not path.exists():
            print(f"{name:<14} (missing: {path})")
            continue
        tv.load(path)  # warm the Parquet cache
        runs = []
        for _ in range(args.repeat):
            trace = tv.load(path)
            t0 = time.perf_counter()
            build_summary(trace)
            runs.append(time.perf_counter() - t0)
        print(f"{name:<14} {trace.ranks.height:>5} {trace.device_tasks.height:>8,} {statistics.median(runs):>10.3f}")


if __name__ == "__main__":
    main()
