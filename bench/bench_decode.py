"""Benchmark: the Kineto decode, typed (msgspec Structs -> columns) against the dict decode it
replaced (orjson dicts -> columns), on the 40 MB A100 ranks of bench/bench_peers.py.

    python bench/bench_decode.py [--repeat 3] [--before REV] [--alternatives] [--out bench/out/peers]

Input: `a100_8x40mb` of bench/peers_inputs.py (built once into bench/out/peers/: 8 ranks x 40 MB
grown from HTA's nccl_data.json.gz). Each measurement runs in a fresh process and reports the CPU
seconds of that process (user + sys, `resource.getrusage`: the fair measure on a shared machine),
the wall seconds of the work (imports excluded), MB of JSON per CPU-second and the peak RSS of the
process (imports included); the median of --repeat runs is printed, per 40 MB rank (rank 0) and for
8 x 40 MB (the 8 ranks one after the other in one process, `jobs=1`). Rows:
- `orjson.loads`: read + orjson.loads of each file, GC paused (the floor of the dict decode);
- `msgspec Structs`: read + msgspec decode of each file into `parsers.kineto_decode.Event` Structs
  (the floor of the typed decode);
- `before (REV)`: `parse_kineto` of the code at REV (default: where this branch left main), exported
  with `git archive` into bench/out/before-REV/: orjson dicts, `pl.DataFrame` of the dicts, many
  small polars collects per chunk;
- `dict decode (now)`: this code with every chunk decoded to dicts (`kineto.TYPED_DECODE = False`):
  the chunk stage as this code has it (two collects per chunk), the decode as before;
- `typed (after)`: `parse_kineto` as shipped (typed decode, two collects per chunk).
With --alternatives, also (on one rank) the candidates that lost, for the record in docs/benchmarks.md:
- `msgspec X-only`: msgspec with `ph` as a tag, only complete events built (other phases skipped);
- `polars read_json`: polars' own JSON reader of the events array with a fixed schema (args as a
  struct of the keys read; skips grid/block, collective args, Input Dims: a lower bound).
"""

from __future__ import annotations

import argparse
import gc
import io
import json
import re
import resource
import statistics
import subprocess
import sys
import tarfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_OUT = ROOT / "bench" / "out" / "peers"
INPUT = "a100_8x40mb"
FLOORS = ["orjson.loads", "msgspec Structs"]
OURS = ["dict decode (now)", "typed (after)"]
ALTERNATIVES = ["msgspec X-only", "polars read_json"]


# ------------------------------------------------------------------------------------ the child


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _events_slice(data: bytes) -> bytes:
    """The bytes of the `traceEvents` array of a Kineto document."""
    import msgspec

    start = re.search(rb'"traceEvents"\s*:\s*', data).end()
    try:
        msgspec.json.decode(data[start:], type=msgspec.Raw)
        return data[start:]
    except msgspec.DecodeError as exc:
        end = int(re.search(r"byte (\d+)", str(exc)).group(1)) - 1
        return data[start : start + end]


def _worker(what: str):
    """The function measured for `what`: path -> anything (its result is dropped)."""
    import msgspec
    import orjson

    if what == "orjson.loads":
        return lambda p: orjson.loads(p.read_bytes())
    if what == "msgspec Structs":
        from traceview.parsers.kineto_decode import Event

        decoder = msgspec.json.Decoder(msgspec.defstruct("Doc", [("traceEvents", list[Event], [])], gc=False))
        return lambda p: decoder.decode(p.read_bytes())
    if what.startswith("before") or what in OURS:
        from traceview.parsers import kineto

        kineto.TYPED_DECODE = what == "typed (after)"
        return kineto.parse_kineto
    if what == "msgspec X-only":
        return _x_only_decoder()
    if what == "polars read_json":
        import polars as pl

        from traceview.parsers.kineto_events import ARG_FIELDS, EVENT_FIELDS

        schema = pl.Schema({**EVENT_FIELDS, "args": pl.Struct(ARG_FIELDS)})
        return lambda p: pl.read_json(io.BytesIO(_events_slice(p.read_bytes())), schema=schema)
    raise SystemExit(f"unknown measurement {what!r}")


def _x_only_decoder():
    """msgspec with `ph` as the tag of a union: complete events as Structs, every other phase as an
    empty Struct (its keys skipped). Not shippable as is: the other phases' fields would no longer
    be type-checked, so their odd values would no longer be counted as the dict decode counts them."""
    import msgspec

    from traceview.parsers.kineto_decode import Args
    from traceview.parsers.kineto_events import CHROME_PHASES

    fields = [("cat", str | None, None), ("name", str | None, None), ("pid", int | str | None, None)]
    fields += [("tid", int | str | None, None), ("ts", float | None, None), ("dur", float | None, None)]
    union = msgspec.defstruct("Complete", [*fields, ("args", Args, Args())], gc=False, tag_field="ph", tag="X")
    for i, phase in enumerate(CHROME_PHASES[1:]):
        union = union | msgspec.defstruct(f"Phase{i}", [], gc=False, tag_field="ph", tag=phase)
    decoder = msgspec.json.Decoder(msgspec.defstruct("Doc", [("traceEvents", list[union], [])], gc=False))
    return lambda p: decoder.decode(p.read_bytes())


def child(what: str, root: str, paths: list[str]) -> None:
    """Run one measurement in this fresh process with traceview from `root`; print it as JSON."""
    sys.path.insert(0, root)
    fn = _worker(what)
    files = [Path(p) for p in paths]
    gc.disable()  # as the parser does (jsonio.gc_paused); the floors get the same
    cpu0, wall0 = _cpu(), time.perf_counter()
    for path in files:
        result = fn(path)
        del result
    cpu, wall = _cpu() - cpu0, time.perf_counter() - wall0
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(json.dumps({"cpu_s": cpu, "wall_s": wall, "rss_bytes": rss}))


# ----------------------------------------------------------------------------------- the parent


def export(rev: str, out: Path) -> tuple[str, Path]:
    """(short hash, folder) of the code at `rev`, exported once with `git archive`."""
    sha = subprocess.run(["git", "rev-parse", "--short", rev], cwd=ROOT, check=True, capture_output=True, text=True)
    short = sha.stdout.strip()
    folder = out / f"before-{short}"
    if not (folder / "traceview").is_dir():
        tar = subprocess.run(["git", "archive", short], cwd=ROOT, check=True, capture_output=True).stdout
        with tarfile.open(fileobj=io.BytesIO(tar)) as archive:
            archive.extractall(folder, filter="data")
    return short, folder


def run(what: str, root: Path, files: list[Path], repeat: int) -> dict:
    runs = []
    for _ in range(repeat):
        out = subprocess.run(
            [sys.executable, __file__, "--child", what, str(root), *map(str, files)],
            check=True,
            capture_output=True,
            text=True,
        )
        runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
    return {key: statistics.median(r[key] for r in runs) for key in runs[0]}


def table(sets: dict[str, tuple[list[Path], list[tuple[str, Path]]]], repeat: int) -> list[str]:
    """The table of every (row, input set); `sets`: name -> (files, [(row, traceview root)])."""
    head = f"{'decode':<22} {'input':<9} {'MB':>4} | {'CPU s':>6} {'wall s':>6} {'MB/CPU-s':>8} {'peak RSS MB':>11}"
    lines = [head, "-" * len(head)]
    results = {}
    for name, (files, rows) in sets.items():
        mb = sum(f.stat().st_size for f in files) / 1e6
        for what, root in rows:
            r = results[what, name] = run(what, root, files, repeat)
            lines.append(
                f"{what:<22} {name:<9} {mb:>4.0f} | {r['cpu_s']:>6.2f} {r['wall_s']:>6.2f} "
                f"{mb / r['cpu_s']:>8.0f} {r['rss_bytes'] / 1e6:>11,.0f}"
            )
        before = next(r for (w, n), r in results.items() if n == name and w.startswith("before"))
        after = results["typed (after)", name]
        lines.append(
            f"{'':<22} {name:<9}      | after/before: CPU {after['cpu_s'] / before['cpu_s']:.2f}x "
            f"({before['cpu_s'] / after['cpu_s']:.2f}x less), wall {after['wall_s'] / before['wall_s']:.2f}x, "
            f"peak RSS {after['rss_bytes'] / before['rss_bytes']:.2f}x"
        )
        lines.append("")
    return lines


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(sys.argv[2], sys.argv[3], sys.argv[4:])
        return
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3, help="runs per row; the median is printed")
    ap.add_argument("--before", default=None, help="the revision measured as before (default: merge-base with main)")
    ap.add_argument("--alternatives", action="store_true", help="also measure the candidates that lost (one rank)")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help="where the peers inputs are (built if missing)")
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT / "bench"))
    from peers_inputs import build_input

    rev = (
        args.before
        or subprocess.run(
            ["git", "merge-base", "HEAD", "main"], cwd=ROOT, check=True, capture_output=True, text=True
        ).stdout.strip()
    )
    short, old = export(rev, args.out.parent)
    folder = build_input(INPUT, args.out)
    files = sorted(folder.glob("rank*.pt.trace.json"), key=lambda p: int(re.search(r"\d+", p.name).group()))
    rows = [(w, ROOT) for w in FLOORS] + [(f"before ({short})", old)] + [(w, ROOT) for w in OURS]
    extra = [(w, ROOT) for w in ALTERNATIVES] if args.alternatives else []
    for line in table({"1 x 40MB": (files[:1], rows + extra), "8 x 40MB": (files, rows)}, args.repeat):
        print(line)
    sys.path.insert(0, str(ROOT))
    import msgspec
    import orjson
    import polars as pl

    print(
        f"median of {args.repeat} fresh processes; python {sys.version.split()[0]}, polars {pl.__version__}, "
        f"orjson {orjson.__version__}, msgspec {msgspec.__version__}"
    )


if __name__ == "__main__":
    main()
