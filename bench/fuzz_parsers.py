"""Fuzz the parsers: mutate real inputs, load each mutant, sort the outcome into ok / clean error / BUG.

    python bench/fuzz_parsers.py --seconds 300 --seed 1 --out /tmp/fuzz-crashes
    python bench/fuzz_parsers.py --cases 2000 --seed 7

Seeds: the shipped Kineto samples (sample_traces/*/*.json.gz), the hand-written traces tests/data/*.json
and one Ascend rank folder (sample_traces/ascend_2rank/rank0_ascend_pt). Each case picks a seed and
one or more mutations (see `MUTATORS` and docs/fuzzing.md): byte-level (bit flips, byte insert/delete,
truncation, splices of two files, gzip or truncated gzip) or JSON-level (wrong types for ts, dur,
name, args, pid, tid, ph, huge numbers, NaN/Infinity tokens, deep nesting, dropped keys, deleted
header); for Ascend, kernel_details.csv (cells, columns, rows, bytes) or trace_view.json inside a copy
of the rank folder.

Each case runs `traceview.load(path, use_cache=False, jobs=1)` then `step_breakdown()` and
`trace_breakdown()` in a worker process with a per-case time limit (`--timeout`). Outcomes:
- ok: it loaded (possibly with warnings or failed ranks) and the breakdowns ran;
- clean: a `traceview.errors.TraceError` with a one-line message;
- BUG: any other exception, a message with a newline, a worker that died or hung past the limit.
Crashing inputs are kept under `--out` (with the traceback). Exit status 1 on any bug.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import random
import shutil
import sys
import tempfile
import time
import traceback
from pathlib import Path

from fuzz_mutators import kineto_seeds, make_case

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


# ---------------------------------------------------------------------------------------------
# The worker: load one path, report the outcome.


def _worker(conn) -> None:
    import warnings

    warnings.simplefilter("ignore")
    import traceview as tv
    from traceview.errors import TraceError

    while True:
        path = conn.recv()
        if path is None:
            return
        try:
            t = tv.load(path, use_cache=False, jobs=1)
            t.step_breakdown()
            t.trace_breakdown()
            conn.send(("ok", ""))
        except TraceError as exc:
            msg = str(exc)
            if "\n" in msg or not msg.strip():
                conn.send(("bug", f"TraceError message not one line: {msg!r}"))
            else:
                conn.send(("clean", msg))
        except BaseException:  # noqa: BLE001 - every other exception is the bug we look for
            conn.send(("bug", traceback.format_exc()))


class Runner:
    """One worker process; restarted after a hang or a death."""

    def __init__(self, timeout: float):
        self.timeout = timeout
        self.ctx = mp.get_context("spawn")
        self.proc = None
        self._start()

    def _start(self) -> None:
        self.conn, child = self.ctx.Pipe()
        self.proc = self.ctx.Process(target=_worker, args=(child,), daemon=True)
        self.proc.start()
        # the first import takes seconds: wait for it outside the per-case limit
        self.conn.send(str(ROOT / "tests/data/kineto_minimal.json"))
        if not self.conn.poll(120):
            raise SystemExit("fuzz worker did not start")
        self.conn.recv()

    def _kill(self) -> None:
        self.proc.kill()
        self.proc.join()

    def run(self, path: Path) -> tuple[str, str]:
        try:
            self.conn.send(str(path))
            if self.conn.poll(self.timeout):
                return self.conn.recv()
            self._kill()
            self._start()
            return "bug", f"hang: no result after {self.timeout:g} s"
        except (EOFError, BrokenPipeError, ConnectionResetError):
            code = self.proc.exitcode
            self._kill()
            self._start()
            return "bug", f"worker died (exit code {code})"

    def close(self) -> None:
        try:
            self.conn.send(None)
            self.proc.join(5)
        finally:
            if self.proc.is_alive():
                self._kill()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seconds", type=float, default=None, help="stop after this many seconds")
    ap.add_argument("--cases", type=int, default=None, help="stop after this many cases")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--timeout", type=float, default=30.0, help="per-case limit (s); past it: a hang, a bug")
    ap.add_argument("--out", type=Path, default=None, help="keep each crashing input here")
    ap.add_argument("-q", "--quiet", action="store_true")
    args = ap.parse_args(argv)
    if args.seconds is None and args.cases is None:
        args.cases = 500
    rnd = random.Random(args.seed)
    seeds = kineto_seeds()
    parsed: dict = {}
    counts = {"ok": 0, "clean": 0, "bug": 0}
    bugs: list[tuple[int, str, str]] = []
    runner = Runner(args.timeout)
    t0 = time.perf_counter()
    n = 0
    try:
        while True:
            if args.cases is not None and n >= args.cases:
                break
            if args.seconds is not None and time.perf_counter() - t0 >= args.seconds:
                break
            with tempfile.TemporaryDirectory(prefix="tv-fuzz-") as tmp:
                case_dir = Path(tmp) / f"case{n}"
                case_dir.mkdir()
                path, desc = make_case(rnd, seeds, parsed, case_dir)
                outcome, detail = runner.run(path)
                counts[outcome] += 1
                if outcome == "bug":
                    first = detail.strip().splitlines()[-1] if detail.strip() else detail
                    bugs.append((n, desc, first))
                    print(f"BUG case {n} ({desc}): {first}", flush=True)
                    if args.out:
                        keep = args.out / f"case{n:06d}"
                        shutil.copytree(case_dir, keep, dirs_exist_ok=True)
                        (keep / "TRACEBACK.txt").write_text(f"{desc}\n{detail}\n", encoding="utf-8")
            n += 1
            if not args.quiet and n % 200 == 0:
                el = time.perf_counter() - t0
                print(f"  {n} cases, {el:.0f} s: {counts}", file=sys.stderr, flush=True)
    finally:
        runner.close()
    elapsed = time.perf_counter() - t0
    print()
    print("| seed | cases | ok | clean errors | bugs | seconds | cases/s |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    print(
        f"| {args.seed} | {n} | {counts['ok']} | {counts['clean']} | {counts['bug']} | {elapsed:.0f} | "
        f"{n / elapsed if elapsed else 0:.1f} |"
    )
    if bugs:
        print(f"\n{len(bugs)} bug(s):")
        for i, desc, first in bugs:
            print(f"  case {i} ({desc}): {first}")
    return 1 if bugs else 0


if __name__ == "__main__":
    sys.exit(main())
