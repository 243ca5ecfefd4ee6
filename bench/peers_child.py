"""One measured run for bench/bench_peers.py, in a fresh process: `python peers_child.py TOOL FOLDER RESULT [CACHE]`.

TOOL is one of:
- orjson: read every `*.json` file of FOLDER + orjson.loads, one after the other (default GC);
- msgspec: the same with msgspec decoding each file into the Structs traceview's typed decode uses
  (only the fields a Kineto event needs), the GC paused: the floor of a typed decode;
- traceview: `tv.load(FOLDER, cache_dir=CACHE, analyse=True)` + `build_summary(trace)`, as `traceview
  summary` runs them (the repository root is put first on sys.path, so the working tree is measured
  even if another traceview is installed);
- hta: `TraceAnalysis(trace_dir=FOLDER)` + `get_comm_comp_overlap` + `get_temporal_breakdown`.

Writes a JSON object to RESULT: `import_s`, `load_s`, `analysis_s` (seconds inside this process) and a few
counts to check that the run did what it should (files, events, ranks, tasks). Only the standard library is
imported at module level: the HTA run uses HTA's own interpreter, which has neither orjson nor traceview.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run_orjson(folder: Path, cache: str | None) -> dict:
    t0 = time.perf_counter()
    import orjson

    return decode_all(folder, t0, lambda data: orjson.loads(data)["traceEvents"])


def run_msgspec(folder: Path, cache: str | None) -> dict:
    """The typed floor: each file decoded into msgspec Structs declaring only the fields a Kineto
    event needs (traceview's own decode types), the GC paused as traceview's parser pauses it."""
    sys.path.insert(0, str(ROOT))
    t0 = time.perf_counter()
    import gc

    import msgspec

    from traceview.parsers.kineto_decode import Event

    decoder = msgspec.json.Decoder(msgspec.defstruct("Doc", [("traceEvents", list[Event], [])], gc=False))
    gc.disable()
    return decode_all(folder, t0, lambda data: decoder.decode(data).traceEvents)


def decode_all(folder: Path, t0: float, events_of) -> dict:
    """Read and decode every rank file of `folder` one after the other (`events_of(bytes)` -> the
    events list); the timings and counts of a decode-only run."""
    t1 = time.perf_counter()
    files = rank_files(folder)
    events = 0
    for path in files:
        events += len(events_of(read_bytes(path)))
    return {
        "import_s": t1 - t0,
        "load_s": time.perf_counter() - t1,
        "analysis_s": 0.0,
        "files": len(files),
        "events": events,
    }


def run_traceview(folder: Path, cache: str | None) -> dict:
    sys.path.insert(0, str(ROOT))
    t0 = time.perf_counter()
    import traceview as tv
    from traceview.summary import build_summary

    t1 = time.perf_counter()
    trace = tv.load(folder, cache_dir=cache, analyse=True)  # as `traceview summary` loads
    t2 = time.perf_counter()
    build_summary(trace)
    t3 = time.perf_counter()
    return {
        "import_s": t1 - t0,
        "load_s": t2 - t1,
        "analysis_s": t3 - t2,
        "module": tv.__file__,
        "ranks": trace.ranks.height,
        "tasks": trace.device_tasks.height,
        "failures": len(trace.failures),
    }


def run_hta(folder: Path, cache: str | None) -> dict:
    t0 = time.perf_counter()
    from hta.trace_analysis import TraceAnalysis

    t1 = time.perf_counter()
    analysis = TraceAnalysis(trace_dir=str(folder))
    t2 = time.perf_counter()
    overlap = analysis.get_comm_comp_overlap(visualize=False)
    breakdown = analysis.get_temporal_breakdown(visualize=False)
    t3 = time.perf_counter()
    traces = analysis.t.traces
    return {
        "import_s": t1 - t0,
        "load_s": t2 - t1,
        "analysis_s": t3 - t2,
        "ranks": len(traces),
        "rows": sum(len(df) for df in traces.values()),
        "comm_comp_overlap_pctg": overlap.to_dict("list"),
        "temporal_breakdown": breakdown.to_dict("list"),
    }


def rank_files(folder: Path) -> list[Path]:
    return sorted([*folder.glob("*.json"), *folder.glob("*.json.gz")])


def read_bytes(path: Path) -> bytes:
    import gzip

    raw = path.read_bytes()
    return gzip.decompress(raw) if path.suffix == ".gz" else raw


TOOLS = {"orjson": run_orjson, "msgspec": run_msgspec, "traceview": run_traceview, "hta": run_hta}


def main() -> None:
    tool, folder, result = sys.argv[1:4]
    cache = sys.argv[4] if len(sys.argv) > 4 else None
    out = TOOLS[tool](Path(folder), cache)
    Path(result).write_text(json.dumps(out, default=str))


if __name__ == "__main__":
    main()
