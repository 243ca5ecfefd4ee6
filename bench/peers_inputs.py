"""The synthetic multi-rank Kineto inputs of bench/bench_peers.py: grown from one real HTA NCCL trace by copying its steps, one file per rank, written once under bench/out/peers."""

from __future__ import annotations

import copy
import functools
import gzip
import json
import os
import re
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "traces"
SOURCE = SHARED / "hta/tests/data/nccl_parser_config/nccl_data.json.gz"
CHILD = Path(__file__).resolve().with_name("peers_child.py")
DEFAULT_OUT = ROOT / "bench" / "out" / "peers"
DEFAULT_HTA_VENV = ROOT / "bench" / "out" / "hta-venv"


@dataclass(frozen=True)
class Spec:
    ranks: int
    rank_bytes: float = 0.0
    of: str | None = None  # the first `ranks` ranks of this input, as symlinks
    copies_of: tuple[str, ...] = ()  # real rank files under SHARED, copied round-robin (rank r <- file r mod n)
    gz: bool = False  # copies written gzip-compressed, as `.pt.trace.json.gz`


DLRM = "param/et_replay/tests/inputs/dlrm_kineto.tar.gz.extracted/dlrm_kineto"
DLRM_RANKS = tuple(
    f"{DLRM}/{name}"
    for name in (
        "worker0_step_12.1694128201545.pt.trace.json",
        "worker1_step_12.1694128201556.pt.trace.json",
        "worker2_step_12.1694128201554.pt.trace.json",
        "worker3_step_12.1694128201557.pt.trace.json",
        "worker4_step_12.1694128201547.pt.trace.json",
        "worker5_step_12.1694128201549.pt.trace.json",
        "worker6_step_12.1694128201553.pt.trace.json",
        "worker7_step_12.1694128201553.pt.trace.json",
    )
)
SMALL_RANK = "hta/tests/data/amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz"


INPUTS = {
    "a100_8x40mb": Spec(8, 40e6),
    "a100_1gb": Spec(1, 1.0e9),
    "ranks_64": Spec(64, 5e6),
    "ranks_8": Spec(8, 5e6, of="ranks_64"),
    "ranks_16": Spec(16, 5e6, of="ranks_64"),
    "ranks_32": Spec(32, 5e6, of="ranks_64"),
    "dlrm_1024": Spec(1024, copies_of=DLRM_RANKS),
    # bench/budget.py: the fixed cost per rank, in CI
    "dlrm_256": Spec(256, copies_of=DLRM_RANKS),
    "small_2000": Spec(2000, copies_of=(SMALL_RANK,), gz=True),
    # bench/bench_ranks_memory.py: the driver's memory as the rank count grows
    "small_10000": Spec(10000, copies_of=(SMALL_RANK,), gz=True),
    **{f"small_{n}": Spec(n, of="small_10000") for n in (1000, 2500, 5000)},
}
SCALING = ["ranks_8", "ranks_16", "ranks_32", "ranks_64"]
MANY = ["dlrm_1024", "small_2000"]
ORDER = ["a100_8x40mb", "a100_1gb", *SCALING, *MANY]
TOOLS = ["orjson", "msgspec", "tv cold", "tv cached", "HTA"]

DEVICE_CATS = {"kernel", "gpu_memcpy", "gpu_memset"}
ID_ARGS = ("correlation", "External id", "external id")
ID_STRIDE = 1_000_000
GAP_US = 1000.0
RANK_SHIFT_US = 25.0
STRETCH_PER_RANK = 0.015
STEP_NAME = re.compile(r"ProfilerStep#(\d+)")
POLL_S = 0.02
PAGE = os.sysconf("SC_PAGE_SIZE")


def progress(msg: str) -> None:
    print(f"[bench_peers {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------------------- inputs


@dataclass
class Unit:
    """What every copy of a rank file repeats: the source trace's events, cut to whole profiler steps."""

    header: dict  # the keys before "traceEvents"
    trailer: dict  # the keys after it
    body: list[dict]  # repeated, shifted, ids offset
    tail: list[dict]  # written once, after the copies: metadata, the profiler span, instants
    steps: int  # profiler steps per copy
    period: float  # us between copies
    step_of: dict[int, int] = field(default_factory=dict)  # body index -> ProfilerStep number
    room: dict[int, float] = field(default_factory=dict)  # body index of a compute kernel -> free us after it
    pick: dict[int, int] = field(default_factory=dict)  # body index of a compute kernel -> its ordinal mod 4


@functools.cache
def source_doc() -> dict:
    return orjson.loads(gzip.decompress(SOURCE.read_bytes()))


def is_once(e: dict) -> bool:
    return e.get("ph") in ("M", "i") or e.get("cat") == "Trace"


def first_steps(body: list[dict], steps: int) -> list[dict]:
    """The events of the first `steps` profiler steps (and before): GPU work and flows go with their launch."""
    starts = sorted(e["ts"] for e in body if e.get("cat") == "user_annotation" and STEP_NAME.fullmatch(e["name"]))
    if steps >= len(starts):
        return body
    cut = starts[steps]
    launch = {
        e["args"]["correlation"]: e["ts"]
        for e in body
        if e.get("cat") == "cuda_runtime" and "correlation" in e.get("args", {})
    }

    def anchor(e: dict) -> float:
        corr = (
            e["id"]
            if e.get("cat") == "ac2g"
            else e.get("args", {}).get("correlation")
            if e.get("cat") in DEVICE_CATS
            else None
        )
        return launch.get(corr, e["ts"])

    keep = [e.get("cat") != "gpu_user_annotation" and anchor(e) < cut for e in body]
    device_end = max(e["ts"] + e["dur"] for e, k in zip(body, keep) if k and e.get("cat") in DEVICE_CATS)
    # GPU-side annotations have no launch to follow: keep those that start while the kept GPU work runs.
    return [e for e, k in zip(body, keep) if k or e.get("cat") == "gpu_user_annotation" and e["ts"] < device_end]


def stretch_room(body: list[dict]) -> dict[int, float]:
    """For each compute kernel (not NCCL): the idle time after it on its stream, up to the next device op."""
    by_stream: dict[tuple, list[int]] = {}
    for i, e in enumerate(body):
        if e.get("cat") in DEVICE_CATS:
            by_stream.setdefault((e["pid"], e["tid"]), []).append(i)
    room = {}
    for idx in by_stream.values():
        idx.sort(key=lambda i: body[i]["ts"])
        for i, j in zip(idx, idx[1:] + [None]):
            e = body[i]
            if e["cat"] == "kernel" and not e["name"].startswith("nccl"):
                nxt = body[j]["ts"] if j is not None else e["ts"] + e["dur"] + GAP_US / 2
                room[i] = max(0.0, nxt - e["ts"] - e["dur"])
    return room


def make_unit(steps: int | None = None) -> Unit:
    doc = source_doc()
    keys = list(doc)
    split = keys.index("traceEvents")
    events = doc["traceEvents"]
    body = [e for e in events if not is_once(e)]
    all_steps = sum(1 for e in body if e.get("cat") == "user_annotation" and STEP_NAME.fullmatch(e.get("name", "")))
    steps = min(steps or all_steps, all_steps)
    body = first_steps(body, steps)
    span = max(e["ts"] + e.get("dur", 0.0) for e in body) - min(e["ts"] for e in body)
    room = stretch_room(body)
    step_of = {
        i: int(m.group(1))
        for i, e in enumerate(body)
        if e.get("cat") == "user_annotation" and (m := STEP_NAME.fullmatch(e["name"]))
    }
    return Unit(
        header={k: doc[k] for k in keys[:split]},
        trailer={k: doc[k] for k in keys[split + 1 :]},
        body=body,
        tail=[e for e in events if is_once(e)],
        steps=steps,
        period=span + GAP_US,
        step_of=step_of,
        room=room,
        pick={i: n % 4 for n, i in enumerate(sorted(room))},
    )


def copy_events(unit: Unit, k: int, rank: int, world: int):
    """Copy `k` of the unit's events for rank `rank` of `world` (fresh dicts; the unit is not modified)."""
    dt = k * unit.period + rank * RANK_SHIFT_US
    ids = k * ID_STRIDE
    stretch = STRETCH_PER_RANK * (rank % 4)
    group = str(list(range(world)))
    for i, src in enumerate(unit.body):
        e = dict(src)
        e["ts"] = round(e["ts"] + dt, 3)
        if "id" in e:
            e["id"] += ids
        if "args" in e:
            args = e["args"] = dict(e["args"])
            for key in ID_ARGS:
                if key in args:
                    args[key] += ids
            if args.get("Process Group Ranks") == "[0, 1]":
                args["Process Group Ranks"], args["Group size"] = group, world
        if stretch and i in unit.room and (unit.pick[i] + rank) % 4 == 0:
            e["dur"] = round(e["dur"] + min(e["dur"] * stretch, unit.room[i]), 3)
        if i in unit.step_of:
            e["name"] = f"ProfilerStep#{unit.step_of[i] + k * unit.steps}"
        yield e


def tail_events(unit: Unit, copies: int, rank: int):
    """The once-only events, the profiler span and the window end stretched over all copies."""
    extra = (copies - 1) * unit.period
    for src in unit.tail:
        e = dict(src, ts=round(src["ts"] + rank * RANK_SHIFT_US, 3))
        if e.get("cat") == "Trace":
            e["dur"] = round(e["dur"] + extra, 3)
        if e.get("name") == "Record Window End":
            e["ts"] = round(e["ts"] + extra, 3)
        yield e


def header_bytes(unit: Unit, rank: int, world: int) -> bytes:
    """Kineto's header, one key a line, `"key": value` with json.dumps spacing (HTA greps `"rank":\\s+N`)."""
    header = copy.deepcopy(unit.header)
    info = header.setdefault("distributedInfo", {})
    info.update(rank=rank, world_size=world)
    for pg in info.get("pg_config", []):
        pg.update(pg_size=world, ranks=list(range(world)))
    lines = [f"  {json.dumps(k)}: {json.dumps(v)},\n" for k, v in header.items()]
    return ("{\n" + "".join(lines) + '  "traceEvents": [\n').encode()


def trailer_bytes(unit: Unit) -> bytes:
    lines = [f"  {json.dumps(k)}: {json.dumps(v)}" for k, v in unit.trailer.items()]
    return ("\n  ]" + "".join(",\n" + line for line in lines) + "\n}\n").encode()


def events_bytes(events) -> bytes:
    return b",\n".join(orjson.dumps(e) for e in events)


def write_rank(path: Path, unit: Unit, rank: int, world: int, copies: int) -> None:
    """Write one rank file streaming (one copy in memory at a time); rename into place when complete."""
    part = path.with_name(path.name + ".part")
    with open(part, "wb") as f:
        f.write(header_bytes(unit, rank, world))
        for k in range(copies):
            f.write(events_bytes(copy_events(unit, k, rank, world)) + b",\n")
        f.write(events_bytes(tail_events(unit, copies, rank)))
        f.write(trailer_bytes(unit))
    part.rename(path)


def plan(rank_bytes: float) -> tuple[Unit, int]:
    """The unit (whole profiler steps) and number of copies that make a rank file of about `rank_bytes`."""
    units = [make_unit(s) for s in range(1, make_unit().steps + 1)]
    sizes = [len(events_bytes(copy_events(u, 0, 0, 1))) for u in units]
    if rank_bytes < sizes[-1]:
        best = min(range(len(units)), key=lambda i: abs(sizes[i] - rank_bytes))
        return units[best], 1
    unit = units[-1]
    guess = max(1, round(rank_bytes / sizes[-1]))
    # Ids grow by a few digits over the copies: size a copy from the middle of the file.
    mid = len(events_bytes(copy_events(unit, guess // 2, 0, 1))) + 2
    return unit, max(1, round(rank_bytes / mid))


def rank_file(r: int, gz: bool = False) -> str:
    return f"rank{r}.pt.trace.json" + (".gz" if gz else "")


def write_copy(path: Path, source: Path, rank: int, world: int) -> None:
    """A real rank file as rank `rank` of `world`: its events unchanged, distributedInfo rewritten."""
    raw = source.read_bytes()
    doc = orjson.loads(gzip.decompress(raw) if source.suffix == ".gz" else raw)
    info = doc.get("distributedInfo") or {"backend": "nccl"}
    doc["distributedInfo"] = dict(info, rank=rank, world_size=world)
    events = doc.pop("traceEvents")
    header = {k: v for k, v in doc.items()}
    lines = [f"  {json.dumps(k)}: {json.dumps(v)},\n" for k, v in header.items()]
    body = ("{\n" + "".join(lines) + '  "traceEvents": [\n').encode() + events_bytes(events) + b"\n  ]\n}\n"
    part = path.with_name(path.name + ".part")
    part.write_bytes(gzip.compress(body, 6, mtime=0) if path.suffix == ".gz" else body)
    part.rename(path)


def build_input(name: str, out: Path) -> Path:
    spec = INPUTS[name]
    folder = out / name
    folder.mkdir(parents=True, exist_ok=True)
    if spec.of:
        base = build_input(spec.of, out)
        gz = INPUTS[spec.of].gz
        for r in range(spec.ranks):
            link = folder / rank_file(r, gz)
            if not link.is_symlink():
                link.symlink_to(os.path.relpath(base / rank_file(r, gz), folder))
        return folder
    if spec.copies_of:
        todo = [r for r in range(spec.ranks) if not (folder / rank_file(r, spec.gz)).exists()]
        if todo:
            progress(f"building {name}: {len(todo)} copies of {len(spec.copies_of)} real rank file(s)")
            for r in todo:
                source = SHARED / spec.copies_of[r % len(spec.copies_of)]
                write_copy(folder / rank_file(r, spec.gz), source, r, spec.ranks)
            progress(f"built {name}: {folder_bytes(folder) / 1e6:,.0f} MB")
        return folder
    todo = [r for r in range(spec.ranks) if not (folder / rank_file(r)).exists()]
    if todo:
        unit, copies = plan(spec.rank_bytes)
        progress(f"building {name}: {len(todo)} rank file(s), {copies} copies of {unit.steps} step(s) each")
        for r in todo:
            write_rank(folder / rank_file(r), unit, r, spec.ranks, copies)
        progress(f"built {name}: {folder_bytes(folder) / 1e6:,.0f} MB")
    return folder


def rank_files(folder: Path) -> list[Path]:
    """The rank files of an input folder (`.json`, or `.json.gz` for the compressed copies)."""
    return sorted([*folder.glob("*.json"), *folder.glob("*.json.gz")])


def folder_bytes(folder: Path) -> int:
    """Bytes on disk of an input's rank files (compressed bytes for `.json.gz`)."""
    return sum(p.stat().st_size for p in rank_files(folder))


# ---------------------------------------------------------------------------------------- measurement
