"""Benchmark: Kineto parse speed against orjson.loads of the same bytes, and the cached reload.

    python bench/bench_parse.py [--repeat 3] [--out bench/out]

Inputs are real traces from ../shared/traces (written uncompressed to the output folder so both
sides read the same bytes):
- v100_54mb: hta df_index_resolver.json.gz (V100, 216k events) as is;
- a100_40mb: hta nccl_parser_config/nccl_data.json.gz (A100 + NCCL) with its events repeated,
  shifted in time, until the file is ~40 MB.
For each it times (median of --repeat runs, same process, warm imports):
- orjson: read the file + orjson.loads (the floor for any Python JSON parser);
- orjson nogc: the same with Python's cyclic GC paused, as traceview's parser does (stricter floor);
- traceview cold: traceview.load(path, use_cache=False) (parse + canonical frames + steps);
- traceview cached: traceview.load(path) with a warm Parquet cache;
- ndjson (a candidate next step, not what traceview does): polars' native `read_ndjson` of the same
  events written one per line (prepared untimed), with an explicit schema of the event fields the
  parser keeps (`parsers.kineto_events.EVENT_FIELDS`, and `args` as a struct of `ARG_FIELDS`): how fast a
  columnar decode without Python dicts reads the flat fields. It leaves out what needs the args as
  dicts (grid/block, collective args, `Input Dims`), so it is a ceiling, not a parser.
and prints a table with the ratios. Numbers are recorded in docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import gc
import gzip
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import orjson
import polars as pl

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
SHARED = ROOT.parent / "shared" / "traces"

import traceview as tv  # noqa: E402
from traceview.parsers.kineto_events import ARG_FIELDS, EVENT_FIELDS  # noqa: E402

NDJSON_SCHEMA = pl.Schema({**EVENT_FIELDS, "args": pl.Struct(ARG_FIELDS)})


def build_inputs(out: Path) -> dict[str, Path]:
    out.mkdir(parents=True, exist_ok=True)
    inputs = {}
    v100 = out / "v100_54mb.json"
    if not v100.exists():
        v100.write_bytes(
            gzip.decompress((SHARED / "hta/tests/data/df_index_resolver/df_index_resolver.json.gz").read_bytes())
        )
    inputs["v100_54mb"] = v100
    a100 = out / "a100_40mb.json"
    if not a100.exists():
        doc = orjson.loads(
            gzip.decompress((SHARED / "hta/tests/data/nccl_parser_config/nccl_data.json.gz").read_bytes())
        )
        events = doc["traceEvents"]
        span = max(e.get("ts", 0) + e.get("dur", 0) for e in events) - min(e["ts"] for e in events if "ts" in e)
        one = len(orjson.dumps(events))
        copies = max(1, round(40e6 / one))
        big = []
        for k in range(copies):
            for e in events:
                e2 = dict(e)
                if "ts" in e2:
                    e2["ts"] = round(e2["ts"] + k * (span + 1000.0), 3)
                if "args" in e2 and isinstance(e2["args"], dict) and "correlation" in e2["args"]:
                    e2["args"] = dict(e2["args"], correlation=e2["args"]["correlation"] + k * 10_000_000)
                big.append(e2)
        doc["traceEvents"] = big
        a100.write_bytes(orjson.dumps(doc))
    inputs["a100_40mb"] = a100
    return inputs


def timed(fn, repeat: int) -> float:
    runs = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        runs.append(time.perf_counter() - t0)
    return statistics.median(runs)


def orjson_nogc(path: Path) -> None:
    gc.disable()
    try:
        orjson.loads(path.read_bytes())
    finally:
        gc.enable()


def ndjson_bytes(path: Path) -> bytes:
    """The file's events, one JSON object per line (the input of `read_ndjson`)."""
    return b"\n".join(orjson.dumps(e) for e in orjson.loads(path.read_bytes())["traceEvents"])


def ndjson_columns(lines: bytes) -> pl.DataFrame:
    return pl.read_ndjson(lines, schema=NDJSON_SCHEMA)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "out")
    args = ap.parse_args()
    if not SHARED.is_dir():
        sys.exit(f"bench: the real-trace corpus is not at {SHARED}")
    inputs = build_inputs(args.out)
    print(
        f"{'input':<12} {'MB':>6} {'events':>9} {'tasks':>8} {'orjson s':>9} {'nogc s':>7} {'cold s':>8} {'cold/orjson':>12} {'cold/nogc':>10} {'cached s':>9} {'cold/cached':>12} {'ndjson s':>9}"
    )
    for name, path in inputs.items():
        size_mb = path.stat().st_size / 1e6
        n_events = len(orjson.loads(path.read_bytes())["traceEvents"])
        t_orjson = timed(lambda: orjson.loads(path.read_bytes()), args.repeat)
        t_nogc = timed(lambda: orjson_nogc(path), args.repeat)
        t_cold = timed(lambda: tv.load(path, use_cache=False), args.repeat)
        with tempfile.TemporaryDirectory() as cache_dir:
            trace = tv.load(path, cache_dir=cache_dir)
            t_cached = timed(lambda: tv.load(path, cache_dir=cache_dir), args.repeat)
        lines = ndjson_bytes(path)
        if ndjson_columns(lines).height != n_events:
            sys.exit(f"bench: read_ndjson read a different number of events from {name}")
        t_ndjson = timed(lambda: ndjson_columns(lines), args.repeat)  # noqa: F821 (read before the del below)
        del lines
        print(
            f"{name:<12} {size_mb:>6.1f} {n_events:>9,} {trace.device_tasks.height:>8,} {t_orjson:>9.3f} {t_nogc:>7.3f} "
            f"{t_cold:>8.3f} {t_cold / t_orjson:>11.2f}x {t_cold / t_nogc:>9.2f}x {t_cached:>9.3f} {t_cold / t_cached:>11.1f}x {t_ndjson:>9.3f}"
        )
    print(f"python {sys.version.split()[0]}, orjson {orjson.__version__}, {os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()
