"""Benchmark: traceview against HolisticTraceAnalysis (HTA) and orjson.loads, on large multi-rank inputs.

    python bench/bench_peers.py [--only NAME ...] [--skip-hta] [--repeat 1] [--out bench/out/peers]
                                [--hta-python PATH] [--hta-timeout 1200] [--hta-max-rss 20]

Inputs (built once into --out, reused while their files exist) all come from one real trace,
../shared/traces/hta/tests/data/nccl_parser_config/nccl_data.json.gz (A100 + NCCL, rank 0 of 2, 40k
events, 3 profiler steps). A rank file repeats the trace's events (cut to whole profiler steps when a
rank is smaller than one copy) shifted in time; each copy offsets correlation ids, "External id"s and
flow ids (ph s/f "id") by 1,000,000 and renumbers ProfilerStep#N, so copies never alias, and the
metadata events (process/thread names, the profiler span, instants) are written once. Rank r of N gets
distributedInfo.rank = r, world_size = N (and a process group of N ranks on its collectives), is shifted
by r x 25 us and stretches a quarter of its compute kernels by (r mod 4) x 1.5 % (never past the next
kernel on the stream), so the ranks differ. Files keep torch.profiler's layout: header keys
(schemaVersion, deviceProperties, distributedInfo, ...), "traceEvents" with one event per line, then
the trailing keys; written streaming, copy by copy, as `<input>/rank{r}.pt.trace.json`.
- a100_8x40mb: 8 ranks x 40 MB;    a100_1gb: 1 rank of 1.0 GB (a folder holding that one file);
- ranks_64: 64 ranks x 5 MB (2 of the 3 profiler steps); ranks_8/16/32: its first 8/16/32 ranks
  (symlinks), for the scaling table. `--only scaling` selects these four.
Two inputs are copies of real rank files instead, each copy given distributedInfo.rank = r,
world_size = N, its events unchanged: dlrm_1024 (1,024 ranks: rank r is the real DLRM rank r mod 8
of ../shared/traces/param, 0.74 MB each) and small_2000 (2,000 ranks: HTA's 220-event
mi250_minitoy trace, gzip-compressed, 6.4 KB each on disk, 65 KB of JSON). `--only many` selects both.

Each measurement runs in a fresh process (bench/peers_child.py), so imports, caches and memory are
isolated, and the inputs are read from the page cache (the build or an earlier run left them there):
- orjson: read each rank file + orjson.loads, one after the other, default GC (the floor for any
  Python parser; frees each file's objects before the next);
- msgspec: the same with msgspec decoding into the Structs of traceview's typed decode (only the
  fields a Kineto event needs), the GC paused: the floor of a typed decode;
- tv cold: `tv.load(folder, cache_dir=<fresh dir>, analyse=True)` + `build_summary(trace)`, as
  `traceview summary` runs them (parse and rank-local analyses in traceview's spawn
  pool of workers, write the Parquet cache, everything `traceview summary` computes);
- tv cached: the same in a new process with the same cache dir (the second open);
- HTA: `TraceAnalysis(trace_dir=folder)` (parse, HTA's default settings: stdlib json, a fork pool) +
  `get_comm_comp_overlap(visualize=False)` + `get_temporal_breakdown(visualize=False)`, in HTA's own
  interpreter (--hta-python; default bench/out/hta-venv, created with `pip install HolisticTraceAnalysis`).
Wall s is the whole process, start to exit (interpreter start and imports included; the JSON has the
in-process import/load/analysis split). CPU s is user + sys of the child and of every worker it
waited for (wait4's rusage), the measure a loaded machine distorts least; MB/CPU-s is the input's
bytes on disk over it. MB is the peak RSS of the process tree: the parent polls /proc
every 20 ms, finds the child's descendants (/proc/<pid>/task/*/children, else the ppid in /proc/*/stat)
and sums their VmRSS (pages shared between forked processes count once per process, so a fork pool reads
a little high; a peak shorter than 20 ms can be missed). results.json also has the child's ru_maxrss
from wait4 (the largest single process among the child and its waited workers, kernel-exact). Every run
is held to --hta-timeout seconds and --hta-max-rss GB of tree RSS (killed beyond; HTA is the one expected
to reach them) and then shows "timeout" or "OOM" (out of memory: > the cap) instead of a number.
--repeat N takes the median of N runs.

Reading the table: under each input, HTA/tv cold is HTA's CPU, wall and peak tree RSS over
traceview's cold run (how many times more HTA needs), and tv cold/msgspec is traceview's cold CPU
over the typed-decode floor of the same bytes. In the scaling table, per-rank seconds roughly
constant means linear scaling in the number of ranks.
results.json accumulates: each (input, tool) keeps its latest measurement, so runs with --only add up.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

import orjson
from peers_inputs import (
    CHILD,
    DEFAULT_HTA_VENV,
    DEFAULT_OUT,
    INPUTS,
    MANY,
    ORDER,
    PAGE,
    POLL_S,
    ROOT,
    SCALING,
    SHARED,
    SOURCE,
    TOOLS,
    build_input,
    folder_bytes,
    progress,
)


def process_tree(root: int) -> list[int]:
    """`root` and all its descendants: from /proc/<pid>/task/*/children where the kernel has it, else
    from one scan of the parent pids in /proc/*/stat."""
    if Path(f"/proc/{root}/task/{root}/children").exists():

        def kids(pid: int) -> list[int]:
            return [int(c) for f in Path(f"/proc/{pid}/task").glob("*/children") for c in _read(f).split()]
    else:
        by_parent: dict[int, list[int]] = {}
        for stat in Path("/proc").glob("[0-9]*/stat"):
            text = _read(stat)  # "pid (comm) state ppid ...", comm may hold spaces and parentheses
            if text:
                by_parent.setdefault(int(text[text.rfind(")") + 2 :].split()[1]), []).append(int(stat.parent.name))
        kids = by_parent.get  # type: ignore[assignment]
    tree, todo = [], [root]
    while todo:
        pid = todo.pop()
        tree.append(pid)
        todo.extend(kids(pid) or [])
    return tree


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:  # the process ended meanwhile
        return ""


def tree_rss(root: int) -> int:
    """Sum of the resident set sizes (bytes, /proc/<pid>/statm) of `root` and all its descendants."""
    total = 0
    for pid in process_tree(root):
        statm = _read(Path(f"/proc/{pid}/statm")).split()
        total += int(statm[1]) * PAGE if len(statm) > 1 else 0
    return total


def run_child(cmd: list[str], log: Path, timeout: float, max_rss: float) -> dict:
    """Run `cmd` in a new session, polling its tree RSS; kill the session past `timeout` s or `max_rss` bytes."""
    with open(log, "wb") as out:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, cwd=ROOT, start_new_session=True)
        peak, killed = 0, None
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            peak = max(peak, tree_rss(proc.pid))
            if killed is None and (peak > max_rss or time.perf_counter() - t0 > timeout):
                killed = "OOM" if peak > max_rss else "timeout"
                os.killpg(proc.pid, signal.SIGKILL)
            time.sleep(POLL_S)
        wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # workers left behind by a killed or crashed child
    except ProcessLookupError:
        pass
    status_text = killed or ("ok" if proc.returncode == 0 else f"error (exit {proc.returncode})")
    return {
        "status": status_text,
        "wall_s": round(wall, 3),
        # user + sys of the child and every worker it waited for (wait4's rusage): what a loaded
        # machine distorts far less than wall time
        "cpu_s": round(usage.ru_utime + usage.ru_stime, 3),
        "peak_tree_rss_mb": round(peak / 1e6, 1),
        "ru_maxrss_mb": round(usage.ru_maxrss * 1024 / 1e6, 1),
        "log": str(log),
    }


def measure(tool: str, folder: Path, name: str, rep: int, cache: Path, args) -> dict:
    kind = {"orjson": "orjson", "msgspec": "msgspec", "tv cold": "traceview", "tv cached": "traceview", "HTA": "hta"}[
        tool
    ]
    python = args.hta_python if kind == "hta" else sys.executable
    logs = args.out / "logs"
    logs.mkdir(exist_ok=True)
    stem = f"{name}.{tool.replace(' ', '_')}.{rep}"
    result_file = logs / f"{stem}.json"
    result_file.unlink(missing_ok=True)
    cmd = [str(python), str(CHILD), kind, str(folder), str(result_file)] + ([str(cache)] if kind == "traceview" else [])
    run = run_child(cmd, logs / f"{stem}.log", args.hta_timeout, args.hta_max_rss * 1e9)
    if run["status"] == "ok":
        run["child"] = json.loads(result_file.read_text())
    else:
        run["log_tail"] = (logs / f"{stem}.log").read_text(errors="replace")[-2000:]
    cell = f"{run['wall_s']:.2f} s, {run['peak_tree_rss_mb']:,.0f} MB" if run["status"] == "ok" else run["status"]
    progress(f"{name} {tool} run {rep + 1}/{args.repeat}: {cell}")
    return run


def summarise(runs: list[dict], cap_gb: float) -> dict:
    """Median wall and memory over the runs; a failure anywhere gives its status instead of numbers."""
    failed = [r for r in runs if r["status"] != "ok"]
    out = {"measured": date.today().isoformat(), "runs": runs}
    if failed:
        first = failed[0]
        status = {"OOM": f"out of memory (> {cap_gb:g} GB)"}.get(first["status"], first["status"])
        return dict(
            out,
            status=status,
            note=f"{first['status']} after {first['wall_s']:.0f} s, peak {first['peak_tree_rss_mb']:,.0f} MB; log {first['log']}",
        )
    return dict(
        out,
        status="ok",
        **{
            k: statistics.median(r[k] for r in runs if k in r)
            for k in ("wall_s", "cpu_s", "peak_tree_rss_mb", "ru_maxrss_mb")
        },
    )


def measure_input(name: str, folder: Path, args) -> dict:
    tools = [t for t in TOOLS if not (t == "HTA" and args.skip_hta)]
    runs: dict[str, list] = {t: [] for t in tools}
    for rep in range(args.repeat):
        runs["orjson"].append(measure("orjson", folder, name, rep, args.out, args))
        runs["msgspec"].append(measure("msgspec", folder, name, rep, args.out, args))
        cache = Path(tempfile.mkdtemp(prefix="tv-cache-", dir=args.out))
        try:
            for tool in ("tv cold", "tv cached"):
                runs[tool].append(measure(tool, folder, name, rep, cache, args))
        finally:
            shutil.rmtree(cache, ignore_errors=True)
        if "HTA" in runs:
            runs["HTA"].append(measure("HTA", folder, name, rep, args.out, args))
    return {tool: summarise(r, args.hta_max_rss) for tool, r in runs.items()}


# ----------------------------------------------------------------------------------------------- report


def cell(t: dict | None, key: str, fmt: str) -> str:
    if not t:
        return "-"
    if t["status"] != "ok":
        return {"timeout": "timeout"}.get(t["status"], "OOM" if t["status"].startswith("out of memory") else "error")
    return format(t[key], fmt) if key in t else "-"


def ratio(a: dict | None, b: dict | None, key: str) -> str:
    """a[key] / b[key] when both runs succeeded."""
    if not a or not b or a["status"] != "ok" or b["status"] != "ok" or not a.get(key) or not b.get(key):
        return "-"
    return f"{a[key] / b[key]:.2f}x"


def inputs_table(results: dict) -> list[str]:
    """One row per input and tool: wall, CPU seconds of the process tree, MB per CPU-second, peak
    tree RSS; then per input the ratios that matter (HTA over traceview's cold run, traceview's
    cold run over the msgspec floor)."""
    head = (
        f"{'input':<12} {'MB':>6} {'ranks':>5} {'events':>10} | {'tool':<9} {'wall s':>7} {'CPU s':>7} "
        f"{'MB/CPU-s':>8} {'peak MB':>7}"
    )
    lines = [head]
    for name in ORDER:
        if name not in results:
            continue
        r = results[name]
        t = r["tools"]
        for i, tool in enumerate(TOOLS):
            x = t.get(tool)
            if x is None:
                continue
            label = f"{name:<12} {r['mb']:>6,.0f} {r['ranks']:>5} {r.get('events') or 0:>10,}" if i == 0 else " " * 36
            rate = f"{r['mb'] / x['cpu_s']:.0f}" if x["status"] == "ok" and x.get("cpu_s") else "-"
            lines.append(
                f"{label} | {tool:<9} {cell(x, 'wall_s', '.2f'):>7} {cell(x, 'cpu_s', '.2f'):>7} {rate:>8} "
                f"{cell(x, 'peak_tree_rss_mb', ',.0f'):>7}"
            )
        c, h, m = t.get("tv cold"), t.get("HTA"), t.get("msgspec")
        lines.append(
            " " * 36 + f" | HTA/tv cold: CPU {ratio(h, c, 'cpu_s')}, wall {ratio(h, c, 'wall_s')}, "
            f"peak RSS {ratio(h, c, 'peak_tree_rss_mb')}; tv cold/msgspec CPU {ratio(c, m, 'cpu_s')}"
        )
    return lines


def scaling_table(results: dict) -> list[str]:
    rows = [n for n in SCALING if n in results]
    if not rows:
        return []
    lines = [
        f"{'ranks':>5} {'MB':>6} | {'cold s':>7} {'cached s':>8} | {'cold s/rank':>11} {'cached s/rank':>13} | {'HTA s':>7} {'HTA s/rank':>10}"
    ]
    for name in rows:
        r = results[name]
        n = r["ranks"]
        c, k, h = (r["tools"].get(x) for x in ("tv cold", "tv cached", "HTA"))

        def per_rank(t: dict | None, digits: int) -> str:
            return f"{t['wall_s'] / n:.{digits}f}" if t and t["status"] == "ok" else cell(t, "wall_s", "")

        lines.append(
            f"{n:>5} {r['mb']:>6,.0f} | {cell(c, 'wall_s', '.2f'):>7} {cell(k, 'wall_s', '.2f'):>8} | "
            f"{per_rank(c, 3):>11} {per_rank(k, 4):>13} | {cell(h, 'wall_s', '.1f'):>7} {per_rank(h, 2):>10}"
        )
    return lines


def notes(results: dict) -> list[str]:
    """A line per failed run, and per run that loaded another number of ranks than the input has."""
    out = []
    for name in ORDER:
        entry = results.get(name, {})
        for tool, t in entry.get("tools", {}).items():
            if t["status"] != "ok":
                out.append(f"{name} {tool}: {t['status']}: {t['note']}")
                continue
            seen = {r["child"].get("ranks") for r in t["runs"]} - {None}
            if seen and seen != {entry["ranks"]}:
                out.append(f"{name} {tool}: loaded {', '.join(map(str, sorted(seen)))} of {entry['ranks']} ranks")
    return out


# --------------------------------------------------------------------------------------------- driver


def hta_interpreter(args) -> Path:
    """--hta-python, else bench/out/hta-venv (created with `pip install HolisticTraceAnalysis` if missing)."""
    if args.hta_python:
        return Path(args.hta_python)
    python = DEFAULT_HTA_VENV / "bin" / "python"
    if not python.exists():
        progress(f"creating {DEFAULT_HTA_VENV} and installing HolisticTraceAnalysis (once)")
        subprocess.run(["python3", "-m", "venv", str(DEFAULT_HTA_VENV)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", "HolisticTraceAnalysis"], check=True)
    return python


def versions(args) -> dict:
    import polars

    git = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()
    info = {
        "date": date.today().isoformat(),
        "python": platform.python_version(),
        "orjson": orjson.__version__,
        "polars": polars.__version__,
        "traceview_commit": git,
        "cpus": os.cpu_count(),
        "memory_gb": round(os.sysconf("SC_PHYS_PAGES") * PAGE / 1e9, 1),
    }
    if not args.skip_hta:
        probe = "import importlib.metadata as m, platform; print(m.version('HolisticTraceAnalysis'), m.version('pandas'), platform.python_version())"
        hta, pandas, py = subprocess.run(
            [str(args.hta_python), "-c", probe], capture_output=True, text=True, check=True
        ).stdout.split()
        info.update(hta=hta, hta_pandas=pandas, hta_python=py)
    return info


def selected(only: list[str] | None) -> list[str]:
    names = set()
    for n in only or ORDER:
        if n == "scaling":
            names.update(SCALING)
        elif n == "many":
            names.update(MANY)
        elif n in INPUTS:
            names.add(n)
        else:
            sys.exit(f"bench_peers: unknown input {n!r} (choose from {', '.join(ORDER)}, scaling, many)")
    return [n for n in ORDER if n in names]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--only",
        action="append",
        metavar="NAME",
        help=f"an input ({', '.join(ORDER)}), 'scaling' or 'many'; repeatable",
    )
    ap.add_argument("--skip-hta", action="store_true", help="do not run HTA")
    ap.add_argument("--repeat", type=int, default=1, help="runs per tool and input; the median is reported")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help="inputs, logs and results.json")
    ap.add_argument(
        "--hta-python", help=f"the interpreter with HTA installed (default: {DEFAULT_HTA_VENV}, created if missing)"
    )
    ap.add_argument("--hta-timeout", type=float, default=1200, help="seconds before a run is killed (every run)")
    ap.add_argument("--hta-max-rss", type=float, default=20, help="GB of tree RSS before a run is killed (every run)")
    args = ap.parse_args()
    if not SOURCE.is_file():
        sys.exit(f"bench_peers: the real-trace corpus is not at {SHARED}")
    names = selected(args.only)
    args.out = args.out.resolve()
    args.out.mkdir(parents=True, exist_ok=True)
    if not args.skip_hta:
        args.hta_python = hta_interpreter(args)
    results_path = args.out / "results.json"
    results = json.loads(results_path.read_text()) if results_path.exists() else {}
    results["method"] = __doc__.split("Each measurement", 1)[1].split("Reading the table", 1)[0].strip()
    results["machine"] = dict(results.get("machine", {}), **versions(args))
    inputs = results.setdefault("inputs", {})
    folders = {name: build_input(name, args.out) for name in names}
    for name in names:
        folder = folders[name]
        progress(f"measuring {name} ({folder_bytes(folder) / 1e6:,.0f} MB, {INPUTS[name].ranks} ranks)")
        entry = inputs.setdefault(name, {"tools": {}})
        entry.update(mb=folder_bytes(folder) / 1e6, ranks=INPUTS[name].ranks)
        entry["tools"].update(measure_input(name, folder, args))
        orjson_child = entry["tools"]["orjson"]["runs"][-1].get("child", {})
        entry["events"] = orjson_child.get("events", entry.get("events"))
        results_path.write_text(json.dumps(results, indent=1))
    m = results["machine"]
    print(
        f"traceview vs HTA vs orjson; {m['cpus']} CPUs, {m['memory_gb']} GB, Python {m['python']}, polars {m['polars']}, "
        f"orjson {m['orjson']}"
        + (f", HTA {m['hta']} (pandas {m['hta_pandas']})" if "hta" in m else "")
        + f"; median of {args.repeat}"
    )
    print(
        "wall s: whole fresh process incl. imports; MB: peak RSS summed over the process tree (child + workers), /proc polled every 20 ms"
    )
    print("\n".join(inputs_table(inputs)))
    scaling = scaling_table(inputs)
    if scaling:
        print("\nscaling (ranks_N: the first N ranks of ranks_64, 5 MB each)")
        print("\n".join(scaling))
    for line in notes(inputs):
        print(line)
    print(f"measured now: {', '.join(names)}; results: {results_path}")


if __name__ == "__main__":
    main()
