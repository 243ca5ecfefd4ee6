"""Benchmark: the driver's memory and time as the number of ranks grows, up to 10,000 ranks.

    python bench/bench_ranks_memory.py [--counts 1000 2500 5000 10000]

Input: `small_10000` of bench/peers_inputs.py (10,000 copies of HTA's real 220-event mi250_minitoy
trace, each its own rank: distributedInfo.rank = r, world_size = 10,000; built once into
bench/out/peers/small_10000; small_1000/2500/5000 hold its first N rank files as symlinks). Each run is a fresh process (`traceview summary`'s load, analyse=True,
then `build_summary`): cold (empty cache) then cached (the same cache). Reported per run: wall s,
CPU s of the process tree (user + sys, wait4), the driver's own peak RSS (ru_maxrss of the child
process itself, without its workers: what the driver holds for N ranks) and its growth per rank
between counts. The issue's question: does the driver's memory grow by a bounded amount per rank?
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from peers_inputs import DEFAULT_OUT, ROOT, build_input, progress

CHILD = r"""
import json, resource, sys, time
sys.path.insert(0, sys.argv[4])
t0 = time.perf_counter()
import traceview as tv
from traceview.summary import build_summary
if __name__ == "__main__":
    t = tv.load(sys.argv[1], cache_dir=sys.argv[3], analyse=True)
    build_summary(t)
    print(json.dumps({"ranks": t.ranks.height, "driver_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                      "in_process_s": time.perf_counter() - t0}))
"""


def run(folder: Path, count: int, cache: Path) -> dict:
    script = Path(tempfile.gettempdir()) / "tv_bench_ranks_child.py"
    script.write_text(CHILD)
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, str(script), str(folder), str(count), str(cache), str(ROOT)], stdout=subprocess.PIPE, text=True
    )
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"bench_ranks_memory: the {count}-rank run failed")
    child = json.loads(out.strip().splitlines()[-1])
    return {"wall_s": wall, "cpu_s": usage.ru_utime + usage.ru_stime, **child}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--counts", type=int, nargs="+", default=[1000, 2500, 5000, 10000], choices=[1000, 2500, 5000, 10000]
    )
    args = ap.parse_args()
    rows = []
    for n in args.counts:
        folder = build_input(f"small_{n}", DEFAULT_OUT)
        cache = Path(tempfile.mkdtemp(prefix="tv-ranks-"))
        try:
            cold = run(folder, n, cache)
            cached = run(folder, n, cache)
        finally:
            shutil.rmtree(cache, ignore_errors=True)
        assert cold["ranks"] == cached["ranks"] == n, (cold, cached)
        rows.append((n, cold, cached))
        progress(f"{n} ranks: cold {cold['wall_s']:.1f} s, cached {cached['wall_s']:.2f} s")
    print("ranks | cold wall s  CPU s  driver MB | cached wall s  CPU s  driver MB | driver MB/rank (cold, cached)")
    prev = None
    for n, cold, cached in rows:
        per = "-"
        if prev is not None:
            dn = n - prev[0]
            per = (
                f"{(cold['driver_rss_mb'] - prev[1]['driver_rss_mb']) / dn * 1000:.1f} KB, "
                f"{(cached['driver_rss_mb'] - prev[2]['driver_rss_mb']) / dn * 1000:.1f} KB"
            )
        print(
            f"{n:>5} | {cold['wall_s']:>12.1f} {cold['cpu_s']:>6.1f} {cold['driver_rss_mb']:>10,.0f} | "
            f"{cached['wall_s']:>13.2f} {cached['cpu_s']:>6.2f} {cached['driver_rss_mb']:>10,.0f} | {per}"
        )
        prev = (n, cold, cached)


if __name__ == "__main__":
    main()
