"""Property tests over random, well-formed traces (hypothesis): the loader never crashes, the
step-time identity of docs/metrics.md holds on every rank and step, the numbers equal a slow reference
written here from the definitions, and nothing that should not matter (event order, repeated
metadata events, a constant clock offset, choosing one step) changes any result.

Kineto: `ranks` / `profiles` draw each rank in integer nanoseconds (the truth); `kineto_doc` writes
it as torch.profiler does: `ts`/`dur` in µs with 3 decimals (or whole µs, as 2021 traces), host
`ProfilerStep#N` user_annotation ranges, cpu_ops and cuda_runtime launches with correlation ids,
kernels / NCCL kernels / memcpy / memset on 1-3 streams with `args.stream` and `args.correlation`
(overlapping across streams, some of zero length, some launched outside every step, some with no
launch), GPU-side `gpu_user_annotation` ProfilerStep ranges for none, some or all steps, `ph: "M"`
metadata, `distributedInfo` in the header. `broken_docs` then sets random fields to JSON values of
the wrong type or size. Ascend: `ascend_ranks` / `write_ascend` write a kernel_details.csv-only rank
folder (Step Id rule, `hcom_receive` bubble) at a real epoch. The reference (`reference_terms`)
recomputes every term from the integers with plain lists.

Examples per test: `TRACEVIEW_PROPERTY_EXAMPLES` (default 30: the file takes ~40 s on 2 cores);
`TRACEVIEW_PROPERTY_SHRINK=0` skips shrinking. Large runs and their results: docs/fuzzing.md.
"""

from __future__ import annotations

import copy
import gzip
import json
import math
import os
import random
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

import polars as pl
from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st

import traceview as tv
from tests.support import intervals as ref
from traceview.errors import TraceError
from traceview.parsers import jsonio
from traceview.parsers.kineto import NO_DEVICE_TASKS
from traceview.parsers.kineto_events import ARG_KEYS_READ, EVENT_KEYS_READ

EXAMPLES = int(os.environ.get("TRACEVIEW_PROPERTY_EXAMPLES", "30"))
SETTINGS = settings(
    max_examples=EXAMPLES,
    deadline=None,
    # shrinking a failing trace can take minutes: TRACEVIEW_PROPERTY_SHRINK=0 reports it unshrunk
    phases=[p for p in Phase if p != Phase.shrink or os.environ.get("TRACEVIEW_PROPERTY_SHRINK", "1") != "0"],
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example],
)

STREAMS = (7, 13, 21)
HOST_PID, DEVICE = 4242, 0
#: kind -> (canonical set, names, Kineto category, runtime call)
KINDS = {
    "kernel": (
        "comp",
        [
            "void gemm_kernel<128, 64>(float*)",
            "vectorized_elementwise_kernel",
            "layer_norm_fwd",
            "softmax_warp_forward",
        ],
        "kernel",
        "cudaLaunchKernel",
    ),
    "communication": (
        "comm",
        [
            "ncclDevKernel_AllReduce_Sum_f32_RING_LL",
            "ncclDevKernel_AllGather_RING_LL",
            "ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL",
        ],
        "kernel",
        "cudaLaunchKernelExC",
    ),
    "memcpy": (
        "mem",
        ["Memcpy HtoD (Pageable -> Device)", "Memcpy DtoH (Device -> Pinned)"],
        "gpu_memcpy",
        "cudaMemcpyAsync",
    ),
    "memset": ("comp", ["Memset (Device)"], "gpu_memset", "cudaMemsetAsync"),
}


# ---------------------------------------------------------------------------------------------
# The generator: the truth in integer ns, then the Kineto document.


class _Interval:
    """A generated task's end and canonical set (the first field of its kind in the class's `kinds`)."""

    kinds: ClassVar[dict[str, tuple]]
    kind: str
    start: int
    dur: int

    @property
    def end(self) -> int:
        return self.start + self.dur

    @property
    def set(self) -> str:
        return self.kinds[self.kind][0]


@dataclass
class Task(_Interval):
    kinds: ClassVar = KINDS
    kind: str
    name: str
    stream: int
    start: int  # ns
    dur: int  # ns
    corr: int | None  # launch correlation (None: no launch in the trace)
    launch: int | None  # ns, start of the runtime call


@dataclass
class Rank:
    rank: int
    world: int
    steps: list[tuple[int, int, int]]  # (N, host start ns, host end ns)
    tasks: list[Task]
    gpu_steps: list[tuple[int, int, int]] = field(default_factory=list)  # (N, start ns, end ns)


def _us(ns: int, integer_us: bool) -> float | int:
    """ns -> the µs number torch.profiler writes (3 decimals; integer µs in 2021 traces)."""
    if integer_us:
        assert ns % 1000 == 0
        return ns // 1000
    sign = "-" if ns < 0 else ""
    return float(f"{sign}{abs(ns) // 1000}.{abs(ns) % 1000:03d}")


@st.composite
def ranks(draw, rank: int = 0, world: int = 1, integer_us: bool | None = None, gpu_mode: str | None = None) -> Rank:
    """One rank's tasks and steps, in integer ns (whole µs when `integer_us`)."""
    tick = 1000 if integer_us else 1

    def ns(lo: int, hi: int):  # a time in [lo, hi] ns, a multiple of the tick
        return st.integers(-(-lo // tick), hi // tick).map(lambda k: k * tick)

    n_streams = draw(st.integers(1, len(STREAMS)))
    n_steps = draw(st.integers(1, 3))
    first_step = draw(st.integers(0, 20))
    t = draw(ns(0, 50_000))
    steps, tasks = [], []
    corr = 100 + rank * 10_000
    durations = st.one_of(st.just(0), ns(1, 5_000), ns(1, 120_000))

    def launch_tasks(lo: int, hi: int, count: int):
        nonlocal corr
        for _ in range(count):
            kind = draw(st.sampled_from(list(KINDS)))
            launch = draw(ns(lo, hi - 1))
            corr += 1
            tasks.append(
                Task(
                    kind,
                    draw(st.sampled_from(KINDS[kind][1])),
                    draw(st.sampled_from(STREAMS[:n_streams])),
                    launch + draw(ns(0, 150_000)),
                    draw(durations),
                    corr,
                    launch,
                )
            )

    # Launches before the first step (null step), then the steps with launches inside, and a few
    # tasks with no launch in the trace at all (as a memcpy whose runtime call was not recorded).
    launch_tasks(t, t + 10_000, draw(st.integers(0, 2)))
    t += 20_000
    for i in range(n_steps):
        length = draw(ns(1_000, 300_000))
        steps.append((first_step + i, t, t + length))
        launch_tasks(t, t + length, draw(st.integers(0, 8)))
        t += length + draw(ns(0, 40_000))
    for _ in range(draw(st.integers(0, 2))):
        kind = draw(st.sampled_from(list(KINDS)))
        tasks.append(
            Task(
                kind,
                KINDS[kind][1][0],
                draw(st.sampled_from(STREAMS[:n_streams])),
                draw(ns(0, t)),
                draw(durations),
                None,
                None,
            )
        )

    # traceview drops exact duplicates (same name, stream, start and end: written twice) with a
    # warning; a well-formed trace has none.
    unique = {}
    for x in tasks:
        unique.setdefault((x.name, x.stream, x.start, x.end), x)
    tasks = list(unique.values())

    # GPU-side ProfilerStep ranges: none, every step, or some steps; never overlapping.
    mode = gpu_mode or draw(st.sampled_from(["none", "all", "some"]))
    gpu = []
    if mode != "none":
        prev_end = 0
        for n, _, _ in steps:
            if mode == "some" and not draw(st.booleans()):
                continue
            mine = [x for x in tasks if _host_step(steps, x.launch) == n]
            lo = min((x.start for x in mine), default=prev_end + tick)
            hi = max((x.end for x in mine), default=lo + tick)
            s = max(prev_end, lo - draw(ns(0, 20_000)))
            e = max(s + tick, hi + draw(ns(0, 20_000)))
            gpu.append((n, s, e))
            prev_end = e
    return Rank(rank, world, steps, tasks, gpu)


def _host_step(steps, t: int | None) -> int | None:
    if t is None:
        return None
    return next((n for n, s, e in steps if s <= t < e), None)


def _meta(name: str, pid, tid, value: dict) -> dict:
    return {"ph": "M", "name": name, "pid": pid, "tid": tid, "ts": 0, "args": value}


def metadata_events(r: Rank) -> list[dict]:
    out = [
        _meta("process_name", HOST_PID, 0, {"name": "python3"}),
        _meta("process_labels", HOST_PID, 0, {"labels": "CPU"}),
        _meta("process_sort_index", HOST_PID, 0, {"sort_index": HOST_PID}),
        _meta("thread_name", HOST_PID, HOST_PID, {"name": "thread 1 (python3)"}),
        _meta("process_name", DEVICE, 0, {"name": "python3"}),
        _meta("process_labels", DEVICE, 0, {"labels": f"GPU {DEVICE}"}),
        _meta("process_sort_index", DEVICE, 0, {"sort_index": 5000000}),
    ]
    for s in STREAMS:
        out.append(_meta("thread_name", DEVICE, s, {"name": f"stream {s}"}))
        out.append(_meta("thread_sort_index", DEVICE, s, {"sort_index": s}))
    return out


def kineto_doc(r: Rank, integer_us: bool = False, offset_ns: int = 0) -> dict:
    """The torch.profiler document of a rank (`offset_ns` added to every timestamp)."""
    us = lambda ns: _us(ns + offset_ns, integer_us)  # noqa: E731
    dur = lambda ns: _us(ns, integer_us)  # noqa: E731
    events = metadata_events(r)
    ext = 1
    for n, s, e in r.steps:
        events.append(
            {
                "ph": "X",
                "cat": "user_annotation",
                "name": f"ProfilerStep#{n}",
                "pid": HOST_PID,
                "tid": HOST_PID,
                "ts": us(s),
                "dur": dur(e - s),
                "args": {"External id": ext},
            }
        )
        ext += 1
    for n, s, e in r.gpu_steps:
        events.append(
            {
                "ph": "X",
                "cat": "gpu_user_annotation",
                "name": f"ProfilerStep#{n}",
                "pid": DEVICE,
                "tid": STREAMS[0],
                "ts": us(s),
                "dur": dur(e - s),
                "args": {"External id": n + 1},
            }
        )
    for task in r.tasks:
        _, _, cat, runtime = KINDS[task.kind]
        args = {"device": DEVICE, "context": 1, "stream": task.stream}
        if task.corr is not None:
            ext += 1
            args.update({"correlation": task.corr, "External id": ext})
            op = "aten::mm" if "gemm" in task.name else "aten::add"
            events.append(
                {
                    "ph": "X",
                    "cat": "cpu_op",
                    "name": op,
                    "pid": HOST_PID,
                    "tid": HOST_PID,
                    "ts": us(task.launch),
                    "dur": dur(2 * (1000 if integer_us else 1)),
                    "args": {"External id": ext},
                }
            )
            events.append(
                {
                    "ph": "X",
                    "cat": "cuda_runtime",
                    "name": runtime,
                    "pid": HOST_PID,
                    "tid": HOST_PID,
                    "ts": us(task.launch),
                    "dur": dur(1000 if integer_us else 1),
                    "args": {"External id": ext, "correlation": task.corr},
                }
            )
            events.append(
                {
                    "ph": "s",
                    "id": task.corr,
                    "pid": HOST_PID,
                    "tid": HOST_PID,
                    "ts": us(task.launch),
                    "cat": "ac2g",
                    "name": "ac2g",
                }
            )
        if cat == "kernel":
            args.update({"grid": [132, 1, 1], "block": [256, 1, 1]})
        else:
            args["bytes"] = 4096
        events.append(
            {
                "ph": "X",
                "cat": cat,
                "name": task.name,
                "pid": DEVICE,
                "tid": task.stream,
                "ts": us(task.start),
                "dur": dur(task.dur),
                "args": args,
            }
        )
    return {
        "schemaVersion": 1,
        "deviceProperties": [{"id": DEVICE, "name": "NVIDIA H100 80GB HBM3", "totalGlobalMem": 85017755648}],
        "distributedInfo": {"backend": "nccl", "rank": r.rank, "world_size": r.world},
        "traceEvents": events,
        "traceName": f"rank{r.rank}.pt.trace.json",
        "displayTimeUnit": "ms",
    }


@st.composite
def profiles(draw, integer_us: bool | None = None, gpu_mode: str | None = None) -> list[Rank]:
    """1 or 2 ranks of one job (all with integer µs or all with 3-decimal µs)."""
    world = draw(st.integers(1, 2))
    if integer_us is None:
        integer_us = draw(st.booleans())
    return [draw(ranks(rank=r, world=world, integer_us=integer_us, gpu_mode=gpu_mode)) for r in range(world)]


def _integer_us(profile: list[Rank]) -> bool:
    return all(t.start % 1000 == 0 and t.dur % 1000 == 0 for r in profile for t in r.tasks) and all(
        s % 1000 == 0 and e % 1000 == 0 for r in profile for _, s, e in r.steps + r.gpu_steps
    )


def write_profile(folder: Path, docs: list[dict], layout: str = "compact", gz: bool = False) -> Path:
    """One `rank<i>.pt.trace.json[.gz]` per document. layout: compact (json.dumps), indented, or
    lines (torch.profiler's own: the header, then one event per line)."""
    folder.mkdir(parents=True, exist_ok=True)
    for i, doc in enumerate(docs):
        if layout == "indented":
            text = json.dumps(doc, indent=1)
        elif layout == "lines":
            head = json.dumps({k: v for k, v in doc.items() if k != "traceEvents"})[:-1]
            events = ",\n".join(json.dumps(e) for e in doc["traceEvents"])
            text = f'{head}, "traceEvents": [\n{events}\n]}}'
        else:
            text = json.dumps(doc)
        data = gzip.compress(text.encode()) if gz else text.encode()
        (folder / f"rank{i}.pt.trace.json{'.gz' if gz else ''}").write_bytes(data)
    return folder


def load_docs(docs: list[dict], layout: str = "compact", gz: bool = False, chunk_bytes: int | None = None):
    """Load the documents written by `write_profile`; `chunk_bytes`: the streaming reader's chunk."""
    saved = jsonio.CHUNK_BYTES
    try:
        jsonio.CHUNK_BYTES = chunk_bytes or saved
        with tempfile.TemporaryDirectory(prefix="tv-prop-") as tmp:
            return tv.load(write_profile(Path(tmp) / "profile", docs, layout, gz), use_cache=False, jobs=1)
    finally:
        jsonio.CHUNK_BYTES = saved


# ---------------------------------------------------------------------------------------------
# The slow reference: docs/metrics.md with plain lists.


def reference_trace(r: Rank) -> dict | None:
    """Whole-trace window of a rank: first task start to last task end."""
    if not r.tasks:
        return None
    lo, hi = min(t.start for t in r.tasks), max(t.end for t in r.tasks)
    return ref.window_terms([(t.set, t.start, t.end) for t in r.tasks], lo, hi)


def reference_steps(r: Rank) -> dict[int, dict]:
    """Per step (docs/metrics.md step windows), each by its own rule: a GPU annotation clips every task
    of the rank to it; a step without one (all steps, or some when others have one) has the tasks
    launched inside its host step, from the first start to the last end."""
    out = {}
    host_start = {n: s for n, s, _ in r.steps}
    for n, s, e in r.gpu_steps:
        terms = ref.window_terms([(t.set, t.start, t.end) for t in r.tasks], s, e)
        if terms is not None:
            out[n] = dict(terms, window=(s, e), rule="gpu_annotation")
    annotated = {n for n, _, _ in r.gpu_steps}
    for n, _, _ in r.steps:
        mine = [t for t in r.tasks if _host_step(r.steps, t.launch) == n]
        if n in annotated or not mine:
            continue
        lo, hi = min(t.start for t in mine), max(t.end for t in mine)
        terms = ref.window_terms([(t.set, t.start, t.end) for t in mine], lo, hi)
        if terms is not None:
            out[n] = dict(terms, window=(lo, hi), rule="correlation")
    for n, terms in out.items():
        terms["preparing"] = terms["first_busy"] - host_start[n] if n in host_start else None
    return out


# ---------------------------------------------------------------------------------------------
# Checks shared by the properties.

TERMS = list(ref.WINDOW_TERMS)


def _ns(us: float | None) -> int | None:
    """A `_us` value back to integer ns (every term is an integer ns count / 1000)."""
    return None if us is None else round(us * 1000)


def check_identity(row: dict) -> None:
    """docs/metrics.md's identity and the term relations on one breakdown row, in exact ns."""
    where = f"rank {row['rank']} step {row.get('step')}"
    if row["first_busy_ns"] is None:  # a GPU annotation window with no device task in it
        check_empty_window(row, where)
        return
    ns = {t: _ns(row[f"{t}_us"]) for t in TERMS}
    for t, v in ns.items():
        assert v is not None and v >= 0, f"{where}: {t} = {v}"
        assert abs(row[f"{t}_us"] * 1000 - v) < 1e-3, f"{where}: {t}_us = {row[f'{t}_us']} is not whole ns"
    span = row["last_busy_ns"] - row["first_busy_ns"]
    assert ns["computing"] + ns["communication_not_overlapped"] + ns["exposed_memcpy"] + ns["free"] == span, where
    assert ns["communication"] == ns["overlapped"] + ns["communication_not_overlapped"], where
    assert ns["overlapped"] <= min(ns["computing"], ns["communication"]), where
    assert ns["busy"] + ns["free"] == span, where
    assert ns["idle"] == _ns(row["duration_us"]) - ns["busy"], where
    assert 0 <= span <= _ns(row["duration_us"]), where


def check_empty_window(row: dict, where: str) -> None:
    """A step window holding no busy time: every measured term 0, all of it idle; the terms that
    need a busy span (free, stage, preparing) are null."""
    assert row["last_busy_ns"] is None, where
    for t in ref.TERMS:
        assert row[f"{t}_us"] == 0, f"{where}: {t}"
    assert row["idle_us"] == row["duration_us"] >= 0, where
    assert row["free_us"] is None and row["stage_us"] is None and row["preparing_us"] is None, where


def check_against_reference(t, profile: list[Rank]) -> None:
    trace = {r["rank"]: r for r in t.trace_breakdown().to_dicts()}
    steps = {(r["rank"], r["step"]): r for r in t.step_breakdown().to_dicts()}
    for r in profile:
        want = reference_trace(r)
        got = trace.get(r.rank)
        if want is None:
            assert got is None, f"rank {r.rank}: no busy time, yet a trace_breakdown row {got}"
        else:
            assert got is not None, f"rank {r.rank}: busy time {want['busy']} ns but no trace_breakdown row"
            check_identity(got)
            for term in TERMS + ["duration"]:
                assert _ns(got[f"{term}_us"]) == want[term], f"rank {r.rank} whole trace: {term}"
            assert (got["first_busy_ns"], got["last_busy_ns"]) == (want["first_busy"], want["last_busy"])
            assert got["bubble_us"] == 0 and _ns(got["stage_us"]) == want["last_busy"] - want["first_busy"]
        for (rank, n), row in steps.items():
            if rank == r.rank:
                check_identity(row)
        want_steps = reference_steps(r)
        got_steps = {n: row for (rank, n), row in steps.items() if rank == r.rank}
        empty = {n for n, row in got_steps.items() if row["first_busy_ns"] is None}
        every_step = {n for n, _, _ in r.gpu_steps} | {n for n, _, _ in r.steps}
        # every step is listed: those without busy time as all-idle rows (check_empty_window)
        assert set(got_steps) == every_step, f"rank {r.rank}: steps {sorted(got_steps)} != {sorted(every_step)}"
        assert empty == every_step - set(want_steps), f"rank {r.rank}: empty steps {empty}"
        got_steps = {n: row for n, row in got_steps.items() if n not in empty}
        assert set(got_steps) == set(want_steps), f"rank {r.rank}: steps {sorted(got_steps)} != {sorted(want_steps)}"
        for n, want in want_steps.items():
            got = got_steps[n]
            where = f"rank {r.rank} step {n}"
            assert got["window_rule"] == want["rule"], where
            for term in TERMS + ["duration", "preparing"]:
                assert _ns(got[f"{term}_us"]) == want[term], f"{where}: {term}"
            # start_us is an absolute time in float µs: exact to its float64 ulp (0.25 µs at 1.7e15 µs)
            assert abs(got["start_us"] - want["window"][0] / 1000) <= math.ulp(want["window"][0] / 1000), where
            assert (got["first_busy_ns"], got["last_busy_ns"]) == (want["first_busy"], want["last_busy"]), where
            assert got["bubble_rule"] == "none" and got["bubble_us"] == 0, where


def results(t) -> dict[str, pl.DataFrame]:
    """Every result frame compared across equivalent traces, in a canonical row order."""
    tasks = t.device_tasks
    return {
        "device_tasks": tasks.sort(tasks.columns, nulls_last=True),
        "host_events": t.host_events.sort(t.host_events.columns, nulls_last=True),
        "steps": t.steps.sort(t.steps.columns, nulls_last=True),
        "step_breakdown": t.step_breakdown(),
        "trace_breakdown": t.trace_breakdown(),
        "compute_classes": t.compute_classes().sort("rank", "class"),
        "info": t.info().drop("source"),
    }


def assert_same_results(a, b) -> None:
    ra, rb = results(a), results(b)
    for name in ra:
        assert ra[name].equals(rb[name]), f"{name} differs:\n{ra[name]}\n{rb[name]}"


def assert_same_durations(a, b) -> None:
    """Every duration and term equal; absolute times differ by the shift."""
    for frame in ("trace_breakdown", "step_breakdown"):
        fa, fb = getattr(a, frame)(), getattr(b, frame)()
        cols = [c for c in fa.columns if c.endswith("_us") and c not in ("start_us",)]
        assert fa.select(cols).equals(fb.select(cols)), f"{frame} differs:\n{fa}\n{fb}"
    da = a.device_tasks.sort("rank", "correlation", "start_ns", "name")
    db = b.device_tasks.sort("rank", "correlation", "start_ns", "name")
    assert da["dur_ns"].equals(db["dur_ns"])


# ---------------------------------------------------------------------------------------------
# Properties.


# Regressions found by this test (fixed in traceview.parsers.steps.kineto_steps and
# traceview.analysis.breakdown.step_breakdown): steps of one rank partly GPU-annotated were all
# clipped, over a correlation window overlapping an annotated one (time lost or given to the wrong
# step); a GPU window holding no busy time had a row with free/stage null.
MIXED_RULES_SAME_WINDOW = [
    Rank(
        0,
        1,
        [(0, 20000, 21000), (1, 21000, 22000)],
        [Task("kernel", "k", 7, 21000, 0, 101, 20000), Task("kernel", "k", 7, 21000, 1000, 102, 21000)],
        [(0, 21000, 22000)],
    )
]
MIXED_RULES_EMPTY_CORRELATION_WINDOW = [
    Rank(
        0,
        1,
        [(0, 21000, 67000), (1, 67000, 192000)],
        [
            Task("kernel", "k", 7, 187000, 0, 101, 66000),
            Task("kernel", "k", 7, 188000, 0, 102, 188000),
            Task("kernel", "k", 7, 178000, 10000, None, None),
        ],
        [(1, 183000, 188000)],
    )
]
EMPTY_GPU_WINDOW = [
    Rank(
        0,
        1,
        [(0, 20000, 21000)],
        [Task("kernel", "k", 7, 0, 10, None, None), Task("kernel", "k", 7, 100, 10, None, None)],
        [(0, 30, 40)],
    )
]


@SETTINGS
@given(profiles())
@example(MIXED_RULES_SAME_WINDOW)
@example(MIXED_RULES_EMPTY_CORRELATION_WINDOW)
@example(EMPTY_GPU_WINDOW)
@example([Rank(0, 1, [(0, 20000, 21000)], [], [(0, 1, 2)])])
def test_generated_traces_load_and_match_the_reference(profile):
    """No error or warning on a well-formed trace (but the one saying a rank without device tasks
    is analysed on its host side only); every term equals the slow reference; the identity holds
    on every rank and step."""
    t = load_docs([kineto_doc(r, integer_us=_integer_us(profile)) for r in profile])
    idle = sum(1 for r in profile if not r.tasks)
    assert t.failures == [] and len(t.warnings) == idle, (t.failures, t.warnings)
    assert all(NO_DEVICE_TASKS in w for w in t.warnings)
    assert t.ranks["rank"].to_list() == [r.rank for r in profile]
    assert t.device_tasks.height == sum(len(r.tasks) for r in profile)
    check_against_reference(t, profile)
    check_select_steps(t)
    # the other analyses run on it too
    t.compute_classes(), t.stream_idle(), t.iteration_gaps(), t.launch_delays(), t.collectives()


def check_select_steps(t) -> None:
    """`Trace.select_steps`' promise: a chosen step's breakdown equals the whole trace's."""
    whole = _in_ns(t.step_breakdown())
    for n in sorted(set(whole["step"].to_list())):
        one = _in_ns(t.select_steps([n]).step_breakdown())
        assert one.equals(whole.filter(pl.col("step") == n)), f"step {n}:\n{one}\n{whole}"


def _in_ns(frame: pl.DataFrame) -> pl.DataFrame:
    """`_us` columns as integer ns: polars' ns / 1000.0 may differ in the last bit between frames of
    different heights (57541 ns -> 57.541 or 57.541000000000004 µs); `_frac` columns (ratios of
    those µs) to 12 decimals for the same reason."""
    return frame.with_columns(
        *[(pl.col(c) * 1000).round().cast(pl.Int64) for c in frame.columns if c.endswith("_us")],
        *[pl.col(c).round(12) for c in frame.columns if c.endswith("_frac")],
    )


@SETTINGS
@given(profiles(), st.randoms(use_true_random=False))
def test_event_order_does_not_change_results(profile, rnd):
    integer_us = _integer_us(profile)
    docs = [kineto_doc(r, integer_us=integer_us) for r in profile]
    shuffled = copy.deepcopy(docs)
    for doc in shuffled:
        rnd.shuffle(doc["traceEvents"])
    assert_same_results(load_docs(docs), load_docs(shuffled))


@SETTINGS
@given(profiles(), st.sampled_from(["compact", "indented", "lines"]), st.booleans(), st.integers(64, 4096))
def test_layout_compression_and_chunks_do_not_change_results(profile, layout, gz, chunk_bytes):
    """The same trace indented or one event per line, gzipped, and streamed in small chunks (cut
    between events by `jsonio.ChromeEvents`) loads to the same frames."""
    integer_us = _integer_us(profile)
    docs = [kineto_doc(r, integer_us=integer_us) for r in profile]
    assert_same_results(load_docs(docs), load_docs(docs, layout, gz, chunk_bytes))


@SETTINGS
@given(profiles(), st.randoms(use_true_random=False), st.booleans())
def test_duplicated_metadata_does_not_change_results(profile, rnd, other_values):
    """Metadata ('M') events repeated (same values, or other names/sort indexes) change nothing."""
    integer_us = _integer_us(profile)
    docs = [kineto_doc(r, integer_us=integer_us) for r in profile]
    dup = copy.deepcopy(docs)
    for doc in dup:
        meta = [e for e in doc["traceEvents"] if e["ph"] == "M"]
        extra = [copy.deepcopy(rnd.choice(meta)) for _ in range(rnd.randint(1, 2 * len(meta)))]
        if other_values:
            for e in extra:
                key = next(iter(e["args"]))
                e["args"][key] = rnd.choice([f"renamed {rnd.random()}", rnd.randint(-5, 10**6)])
        for e in extra:
            doc["traceEvents"].insert(rnd.randint(0, len(doc["traceEvents"])), e)
    assert_same_results(load_docs(docs), load_docs(dup))


@SETTINGS
@given(profiles(integer_us=False), st.integers(0, 8_700_000_000_000_000))
def test_clock_offset_does_not_change_durations_3_decimals(profile, offset_ns):
    """3-decimal µs timestamps stay exact up to ~8.7e12 µs (the float64 holds them to < 0.5 ns;
    Kineto's clocks are ~1e12 µs): every duration and term is unchanged by a shift."""
    base = load_docs([kineto_doc(r) for r in profile])
    shifted = load_docs([kineto_doc(r, offset_ns=offset_ns) for r in profile])
    assert_same_durations(base, shifted)
    check_against_reference(shifted, [_shift(r, offset_ns) for r in profile])


@SETTINGS
@given(profiles(integer_us=True), st.sampled_from([1_700_000_000_000_000, 1_623_142_623_460_130, 2**53 // 1000]))
def test_epoch_offset_does_not_change_durations_integer_us(profile, offset_us):
    """Integer µs at an epoch offset (2021 traces: 1.6e15 µs, 1.6e18 ns) are exact."""
    base = load_docs([kineto_doc(r, integer_us=True) for r in profile])
    shifted = load_docs([kineto_doc(r, integer_us=True, offset_ns=offset_us * 1000) for r in profile])
    assert_same_durations(base, shifted)
    check_against_reference(shifted, [_shift(r, offset_us * 1000) for r in profile])


def _shift(r: Rank, by: int) -> Rank:
    r = copy.deepcopy(r)
    r.steps = [(n, s + by, e + by) for n, s, e in r.steps]
    r.gpu_steps = [(n, s + by, e + by) for n, s, e in r.gpu_steps]
    for t in r.tasks:
        t.start += by
        t.launch = None if t.launch is None else t.launch + by
    return r


# ---------------------------------------------------------------------------------------------
# Broken traces: a TraceError or a Trace whose analyses run, never another exception.

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.sampled_from([1e308, -1e308, 1.7e15, 9.3e12, -0.0, 2**63, -(2**63)])
    | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=6,
)
FIELDS = list(EVENT_KEYS_READ)
ARG_KEYS = list(ARG_KEYS_READ)


@st.composite
def broken_docs(draw):
    """A well-formed rank document with 1-6 fields (event fields, args, header keys) set to random
    JSON values of the wrong type or size."""
    r = draw(ranks())
    doc = kineto_doc(r, integer_us=_integer_us([r]))
    events = doc["traceEvents"]
    events += [  # allocator records (profile_memory=True): their args are fuzzed too
        {
            "ph": "i",
            "s": "t",
            "name": "[memory]",
            "pid": 1,
            "tid": 1,
            "ts": 10.0 + k,
            "args": {
                "Device Type": 1,
                "Device Id": 0,
                "Addr": 4096,
                "Bytes": 512 * (1 - 2 * k),
                "Total Allocated": 512 * (1 - k),
                "Total Reserved": 2048,
            },
        }
        for k in range(2)
    ]
    for _ in range(draw(st.integers(1, 6))):
        where = draw(st.sampled_from(["event", "event", "event", "args", "header", "drop"]))
        if where == "header":
            doc[draw(st.sampled_from(["distributedInfo", "deviceProperties", "schemaVersion"]))] = draw(json_values)
        elif not events:
            continue
        elif where == "drop":
            events[draw(st.integers(0, len(events) - 1))].pop(draw(st.sampled_from(FIELDS)), None)
        else:
            e = events[draw(st.integers(0, len(events) - 1))]
            if where == "args" and isinstance(e.get("args"), dict):
                e["args"][draw(st.sampled_from(ARG_KEYS))] = draw(json_values)
            else:
                e[draw(st.sampled_from(FIELDS))] = draw(json_values)
    return doc


@SETTINGS
@given(broken_docs())
def test_broken_fields_give_a_trace_error_or_a_trace(doc):
    try:
        t = load_docs([doc])
    except TraceError as exc:
        assert "\n" not in str(exc)
        return
    for row in t.trace_breakdown().to_dicts() + t.step_breakdown().to_dicts():
        if row["first_busy_ns"] is not None:
            check_identity(row)
    t.compute_classes(), t.stream_idle(), t.iteration_gaps(), t.launch_delays(), t.collectives(), t.info()
    t.memory_peaks(), t.memory_at_peak()


# ---------------------------------------------------------------------------------------------
# Regression examples (found by these properties or by bench/fuzz_parsers.py).


# ---------------------------------------------------------------------------------------------
# Ascend: a kernel_details.csv-only rank folder (window rule step_id, receive-op bubble).

ASCEND_HEADER = (
    "Step Id,Model ID,Task ID,Stream ID,Name,Type,OP State,Accelerator Core,Start Time(us),"
    "Duration(us),Wait Time(us),Block Dim"
)
#: kind -> (canonical set, Name, Type, Accelerator Core)
ASCEND_KINDS = {
    "matmul": ("comp", "aclnnMm_MatMulCommon_MatMulV2", "MatMulV2", "AI_CORE"),
    "relu": ("comp", "aclnnInplaceRelu_Relu_Relu", "Relu", "AI_VECTOR_CORE"),
    "memset": ("comp", "aclnnMm_MatMulCommon_MemSet", "MemSet", "AI_VECTOR_CORE"),
    "allreduce": ("comm", "hcom_allReduce__712_{i}_1", "hcom_allReduce_", "HCCL"),
    "receive": ("comm", "hcom_receive__712_{i}_1", "hcom_receive_", "HCCL"),
    "memcpy": ("mem", "MemcpyAsync", "MEMCPY_ASYNC", "AI_CPU"),
}


@dataclass
class AscendTask(_Interval):
    kinds: ClassVar = ASCEND_KINDS
    kind: str
    name: str
    step: int | None
    stream: int
    start: int  # ns after the epoch offset
    dur: int


@st.composite
def ascend_ranks(draw) -> list[AscendTask]:
    """One rank's kernel_details rows: steps of tasks on 1-3 streams, some rows with no Step Id."""
    tasks: list[AscendTask] = []
    t = draw(st.integers(0, 10**6))
    first = draw(st.integers(0, 20))
    for n in range(first, first + draw(st.integers(1, 3))):
        for i in range(draw(st.integers(0, 10))):
            kind = draw(st.sampled_from(list(ASCEND_KINDS)))
            step = n if draw(st.integers(0, 9)) else None
            task = AscendTask(
                kind,
                ASCEND_KINDS[kind][1].format(i=i),
                step,
                draw(st.sampled_from([2, 3, 9])),
                t + draw(st.integers(0, 200_000)),
                draw(st.one_of(st.just(0), st.integers(1, 150_000))),
            )
            if all((x.name, x.stream, x.start, x.end) != (task.name, task.stream, task.start, task.end) for x in tasks):
                tasks.append(task)  # an exact copy would be dropped (and counted) as a duplicate
        t += draw(st.integers(0, 300_000))
    return tasks


def _us_text(ns: int) -> str:
    return f"{ns // 1000}.{ns % 1000:03d}"


def write_ascend(folder: Path, rank: int, tasks: list[AscendTask], epoch_ns: int, rnd: random.Random | None) -> None:
    out = folder / f"rank{rank}_ascend_pt" / "ASCEND_PROFILER_OUTPUT"
    out.mkdir(parents=True)
    (out.parent / f"profiler_info_{rank}.json").write_text(json.dumps({"rank_id": rank}))
    rows = []
    for k, x in enumerate(tasks):
        _, _, op_type, core = ASCEND_KINDS[x.kind]
        comm = x.set == "comm"
        rows.append(
            ",".join(
                [
                    "N/A" if x.step is None else str(x.step),
                    "4294967295",
                    "N/A" if comm else str(1000 + k),
                    "N/A" if comm else str(x.stream),
                    x.name,
                    op_type,
                    "N/A" if comm else "dynamic",
                    core,
                    _us_text(epoch_ns + x.start) + "\t",
                    _us_text(x.dur),
                    "0.000",
                    "24",
                ]
            )
        )
    if rnd is not None:
        rnd.shuffle(rows)
    (out / "kernel_details.csv").write_text("\n".join([ASCEND_HEADER, *rows]) + "\n")


def load_ascend(profile: list[list[AscendTask]], epoch_ns: int, rnd: random.Random | None = None):
    with tempfile.TemporaryDirectory(prefix="tv-prop-") as tmp:
        root = Path(tmp) / "profile"
        for rank, tasks in enumerate(profile):
            write_ascend(root, rank, tasks, epoch_ns, rnd)
        return tv.load(root, use_cache=False, jobs=1)


def check_ascend_reference(t, profile: list[list[AscendTask]], epoch_ns: int) -> None:
    trace = {r["rank"]: r for r in t.trace_breakdown().to_dicts()}
    steps = {(r["rank"], r["step"]): r for r in t.step_breakdown().to_dicts()}
    for rank, tasks in enumerate(profile):
        receive = any(x.kind == "receive" for x in tasks)
        windows = {"trace": tasks}
        for x in tasks:
            if x.step is not None:
                windows.setdefault(x.step, []).append(x)
        for key, members in windows.items():
            got = trace.get(rank) if key == "trace" else steps.get((rank, key))
            where = f"rank {rank} {'whole trace' if key == 'trace' else f'step {key}'}"
            want = None
            if members:
                lo, hi = min(x.start for x in members), max(x.end for x in members)
                want = ref.window_terms([(x.set, x.start, x.end) for x in members], lo, hi)
            if want is None and key == "trace":
                assert got is None, f"{where}: no busy time, yet a row {got}"
                continue
            if want is None:  # a step whose tasks take no time: listed, all idle
                assert got is not None, f"{where}: no row"
                check_empty_window(got, where)
                continue
            assert got is not None, f"{where}: no row"
            check_identity(got)
            for term in TERMS + ["duration"]:
                assert _ns(got[f"{term}_us"]) == want[term], f"{where}: {term}"
            # exact at the epoch: Ascend's decimal µs text is converted without float64
            assert (got["first_busy_ns"], got["last_busy_ns"]) == (
                epoch_ns + want["first_busy"],
                epoch_ns + want["last_busy"],
            ), where
            bubble = sum(x.dur for x in members if x.kind == "receive")
            assert _ns(got["bubble_us"]) == bubble, f"{where}: bubble"
            assert _ns(got["stage_us"]) == want["last_busy"] - want["first_busy"] - bubble, f"{where}: stage"
            assert _ns(got["communication_not_overlapped_exclude_receive_us"]) == (
                want["communication_not_overlapped"] - bubble
            ), where
            if key != "trace":
                assert got["window_rule"] == "step_id", where
                assert got["bubble_rule"] == ("receive" if receive else "none"), where
        got_steps = {n for (r, n) in steps if r == rank}
        want_steps = {n for n in windows if n != "trace"}
        assert got_steps == want_steps, f"rank {rank}: steps {sorted(got_steps)} != {sorted(want_steps)}"


@SETTINGS
@given(
    st.lists(ascend_ranks(), min_size=1, max_size=2),
    st.integers(1_600_000_000_000_000_000, 1_800_000_000_000_000_000),
    st.randoms(use_true_random=False),
)
def test_ascend_kernel_details_match_the_reference(profile, epoch_ns, rnd):
    """kernel_details.csv-only ranks at a real epoch (1.6e18-1.8e18 ns): no warning, every term
    (receive bubble included) equals the reference exactly, and the row order changes nothing."""
    t = load_ascend(profile, epoch_ns)
    assert t.failures == [] and t.warnings == [], (t.failures, t.warnings)
    assert t.device_tasks.height == sum(len(p) for p in profile)
    check_ascend_reference(t, profile, epoch_ns)
    assert_same_results(t, load_ascend(profile, epoch_ns, rnd))
