"""The speed budget: CPU seconds of a few fixed workloads against the budgets in bench/budgets.json.

    python bench/budget.py                 # measure, print the table; exit 1 when a workload is over
                                           # SLACK x its budget (what .ci/run runs)
    python bench/budget.py --record NOTE   # write the values measured as the new budgets; a budget
                                           # that goes up needs NOTE to say why (it is kept in the file)

Workloads (inputs built once under bench/out/peers by bench/peers_inputs.py from ../shared):
- `dlrm_256 cold` / `dlrm_256 cached`: `traceview summary DIR --format json` on 256 copies of the real
  8-rank DLRM set (param's dlrm_kineto, ~0.9 MB a rank), with an empty cache, then with that cache:
  the fixed cost per rank of the load, the rank-local analyses and the summary.
- `a100_8x40mb cold` / `cached`: the same command on 8 synthetic ranks of 40 MB (grown from HTA's real
  NCCL trace): decode and the rank-local analyses of large ranks.
- `timeline first window`: the dashboard's canvas timeline on a100_8x40mb (cached): its model and
  the first window of every lane, as the browser asks for them (`/api/timeline/meta` then
  `/api/timeline/window`), measured inside the process around the two requests only.
- `orjson floor`: orjson.loads of every a100_8x40mb file: the fastest decoder on PyPI, measured in
  the same run. It is the yardstick: each workload's `ratio` is its CPU seconds over the floor's, so
  a slower or faster machine moves both and the ratio stays (the budgets are checked on it).

The measure is CPU seconds (user + system) of the process tree (`os.wait4`: the child and every
worker it waited for): what a loaded machine distorts least. Each workload is the minimum over
`--repeat` runs (cold runs start from an empty cache each time). Children run with 2 polars threads
and `--jobs 2`, so a machine with more cores measures the same work. Wall seconds and the child's
peak RSS are printed beside, not checked.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from peers_inputs import DEFAULT_OUT, ROOT, SHARED, build_input

BUDGETS = Path(__file__).resolve().with_name("budgets.json")

#: A workload fails the budget when its ratio is over SLACK x the budget's ratio.
SLACK = 1.5

#: The children's environment: a fixed number of threads, whatever the machine.
CHILD_ENV = {"POLARS_MAX_THREADS": "2", "MALLOC_ARENA_MAX": "2", "PYTHONHASHSEED": "0"}

FLOOR = "orjson floor"

#: orjson.loads of every rank file of a folder (the yardstick).
FLOOR_CHILD = """
import sys, pathlib, orjson
for p in sorted(pathlib.Path(sys.argv[1]).glob("*.json")):
    orjson.loads(p.read_bytes())
"""

#: The canvas timeline's first screen on a cached load: CPU seconds of the two requests only.
TIMELINE_CHILD = """
import json, resource, sys
import traceview as tv
from traceview.dashboards.app import create_app
from traceview.summary import build_summary

trace = tv.load(sys.argv[1], cache_dir=sys.argv[2], jobs=2)
client = create_app(trace, build_summary(trace, details=False)).server.test_client()

def cpu():
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime

before = cpu()
meta = client.get("/api/timeline/meta").get_json()
window = client.get(f"/api/timeline/window?start=0&end={meta['end']}&px=1600").get_json()
assert window, "no window"
print(json.dumps({"cpu_s": cpu() - before}))
"""


def run_child(cmd: list[str]) -> dict:
    """Run `cmd` from the repository root; its CPU seconds (process tree), wall seconds, peak RSS
    and stdout. RuntimeError with its output when it fails."""
    t0 = time.perf_counter()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(cmd, cwd=ROOT, stdout=out, stderr=err, env={**os.environ, **CHILD_ENV})
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        out.seek(0)
        err.seek(0)
        text, errors = (f.read().decode("utf-8", "replace") for f in (out, err))
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{(text + errors)[-3000:]}")
    return {
        "cpu_s": usage.ru_utime + usage.ru_stime,
        "wall_s": wall,
        "rss_mb": usage.ru_maxrss / 1024,
        "stdout": text,
    }


def summary_cmd(folder: Path, cache: Path) -> list[str]:
    return [sys.executable, "-m", "traceview", "summary", str(folder), "--format", "json", "-q"] + [
        "--jobs",
        "2",
        "--cache-dir",
        str(cache),
    ]


def measure(name: str, runs: list[dict]) -> dict:
    best = min(runs, key=lambda r: r["cpu_s"])
    print(
        f"  {name:<24} {best['cpu_s']:7.2f} CPU-s  {best['wall_s']:6.2f} s wall  {best['rss_mb']:7.0f} MB"
        f"  (min of {len(runs)})",
        file=sys.stderr,
        flush=True,
    )
    return {"cpu_s": round(best["cpu_s"], 3), "wall_s": round(best["wall_s"], 3), "rss_mb": round(best["rss_mb"])}


def workloads(out: Path, repeat: int) -> dict[str, dict]:
    """Every workload measured (name -> cpu_s, wall_s, rss_mb)."""
    dlrm, big = build_input("dlrm_256", out), build_input("a100_8x40mb", out)
    results = {FLOOR: measure(FLOOR, [run_child([sys.executable, "-c", FLOOR_CHILD, str(big)]) for _ in range(repeat)])}
    with tempfile.TemporaryDirectory(prefix="traceview-budget-") as tmp:
        for label, folder in (("dlrm_256", dlrm), ("a100_8x40mb", big)):
            cache = Path(tmp) / label
            cold = []
            for _ in range(repeat):
                shutil.rmtree(cache, ignore_errors=True)
                cold.append(run_child(summary_cmd(folder, cache)))
            results[f"{label} cold"] = measure(f"{label} cold", cold)
            cached = [run_child(summary_cmd(folder, cache)) for _ in range(repeat)]
            results[f"{label} cached"] = measure(f"{label} cached", cached)
        cache = Path(tmp) / "a100_8x40mb"
        runs = []
        for _ in range(repeat):
            run = run_child([sys.executable, "-c", TIMELINE_CHILD, str(big), str(cache)])
            run["cpu_s"] = json.loads(run["stdout"].strip().splitlines()[-1])["cpu_s"]
            runs.append(run)
        results["timeline first window"] = measure("timeline first window", runs)
    floor = results[FLOOR]["cpu_s"]
    for r in results.values():
        r["ratio"] = round(r["cpu_s"] / floor, 3)
    return results


def check(results: dict[str, dict], budgets: dict) -> list[str]:
    """Print the table; the lines of the workloads over SLACK x their budget."""
    over = []
    print(f"{'workload':<24} {'CPU-s':>8} {'ratio':>7} {'budget':>7} {'limit':>7}  verdict")
    for name, r in results.items():
        budget = budgets.get("workloads", {}).get(name)
        if budget is None or name == FLOOR:
            print(
                f"{name:<24} {r['cpu_s']:8.2f} {r['ratio']:7.2f} {'':>7} {'':>7}  {'yardstick' if name == FLOOR else 'no budget'}"
            )
            continue
        limit = SLACK * budget["ratio"]
        verdict = "ok" if r["ratio"] <= limit else "OVER"
        print(f"{name:<24} {r['cpu_s']:8.2f} {r['ratio']:7.2f} {budget['ratio']:7.2f} {limit:7.2f}  {verdict}")
        if verdict == "OVER":
            over.append(
                f"{name}: {r['cpu_s']:.2f} CPU-s, {r['ratio']:.2f}x the orjson floor, over {SLACK}x its budget of "
                f"{budget['ratio']:.2f}x ({budget['cpu_s']:.2f} CPU-s when recorded)"
            )
    return over


def record(results: dict[str, dict], budgets: dict, note: str | None) -> dict:
    """The new budgets: a workload's budget moves to what was measured; one that goes up needs `note`."""
    old = budgets.get("workloads", {})
    raised = [n for n, r in results.items() if n in old and n != FLOOR and r["ratio"] > old[n]["ratio"]]
    if raised and not note:
        sys.exit(f"budget.py: {', '.join(raised)} would go up: say why with --record NOTE")
    history = budgets.get("history", [])
    history.append(
        {
            "date": datetime.date.today().isoformat(),
            "note": note or "measured",
            "ratios": {n: r["ratio"] for n, r in results.items()},
        }
    )
    return {
        "slack": SLACK,
        "machine": f"{os.cpu_count()} CPUs, Python {sys.version.split()[0]}",
        "workloads": {n: {k: r[k] for k in ("cpu_s", "ratio", "wall_s")} for n, r in results.items()},
        "history": history,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--record", nargs="?", const="", metavar="NOTE", help="write the measured values as budgets")
    parser.add_argument("--repeat", type=int, default=3, help="runs per workload (the minimum counts)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="where the inputs are built")
    parser.add_argument("--json", type=Path, help="also write the measured values here")
    args = parser.parse_args()
    if not SHARED.is_dir():  # a user's clone: skipped with the reason, as the corpus tests are
        print(f"budget.py: skipped: {SHARED} is absent (the workloads are built from its real profiles)")
        return
    budgets = json.loads(BUDGETS.read_text()) if BUDGETS.exists() else {}
    results = workloads(args.out, args.repeat)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")
    if args.record is not None:
        budgets = record(results, budgets, args.record or None)
        BUDGETS.write_text(json.dumps(budgets, indent=2) + "\n")
        print(f"budgets written to {BUDGETS}")
    over = check(results, budgets)
    if over:
        print("\n".join(["", "over budget:", *over]))
        sys.exit(1)


if __name__ == "__main__":
    main()
