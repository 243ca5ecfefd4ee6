"""Property tests of the iteration and its phases (hypothesis): random host + device schedules of
one rank (steps whose device work spills into the next, data loading, optimizer spans, backward on
the main or an autograd thread, kernels launched from any of them, some without a launch), written
as Kineto traces and loaded; the iteration window, its phases and the identities against a plain,
slow reference walked cell by cell (tests/support/intervals.py)."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import traceview as tv
from tests.support import intervals as ref
from tests.support.iteration import check_identity_and_tiling
from tests.support.kineto import complete_event, write_trace

HOST_NAMES = {
    "optimizer": "Optimizer.step#AdamW.step",
    "backward": "autograd::engine::evaluate_function: MmBackward0",
    "data": "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__",
    "op": "aten::mm",
}
PRIORITY = ("optimizer", "backward", "forward")


@st.composite
def schedules(draw):
    """(steps, spans, tasks): steps (N, start, end) in ns; host spans (what, tid, start, end);
    tasks (start, dur, launch or None, launch tid)."""
    t, steps, spans, tasks = 0, [], [], []
    for n in range(1, draw(st.integers(1, 3)) + 1):
        length = draw(st.integers(2_000, 60_000))
        steps.append((n, t, t + length))
        for _ in range(draw(st.integers(0, 5))):
            what = draw(st.sampled_from(sorted(HOST_NAMES)))
            s = t + draw(st.integers(0, length - 1))
            tid = 2 if what == "backward" and draw(st.booleans()) else 1
            spans.append((what, tid, s, s + draw(st.integers(1, 10_000))))
        for _ in range(draw(st.integers(0, 6))):
            launch = t + draw(st.integers(0, length - 1)) if draw(st.integers(0, 5)) else None
            start = (launch if launch is not None else t) + draw(st.integers(0, 30_000))
            tasks.append((start, draw(st.integers(0, 8_000)), launch, draw(st.sampled_from([1, 2]))))
        t += length + draw(st.integers(0, 5_000))
    return steps, spans, tasks


def _events(steps, spans, tasks) -> list[dict]:
    ev = [complete_event("user_annotation", f"ProfilerStep#{n}", 0, 1, s, e - s) for n, s, e in steps]
    ev += [complete_event("cpu_op", HOST_NAMES[w], 0, tid, s, e - s) for w, tid, s, e in spans]
    for i, (start, dur, launch, tid) in enumerate(tasks, start=1):
        args = {"stream": 7}
        if launch is not None:
            args["correlation"] = i
            ev.append(complete_event("cuda_runtime", "cudaLaunchKernel", 0, tid, launch, 1, {"correlation": i}))
        ev.append(complete_event("kernel", f"k{i}", 1, 7, start, dur, args))
    return ev


def _reference(steps, spans, tasks) -> dict[int, dict]:
    """The iteration windows and phases by the definitions (docs/metrics.md), walked cell by cell."""
    autograd = any(w == "backward" and tid == 2 for w, tid, _, _ in spans)
    host: dict[str, list] = {p: [] for p in PRIORITY}
    for w, tid, s, e in spans:
        if w in ("optimizer", "backward"):
            host[w].append((s, e))
        elif tid == 2 and autograd:
            host["backward"].append((s, e))
    runtime_on_2 = [(launch, launch + 1) for _, _, launch, tid in tasks if launch is not None and tid == 2]
    if autograd:
        host["backward"] += runtime_on_2
    for _, s, e in steps:
        ends = [be for bs, be in host["backward"] if s <= bs < e]
        host["forward"].append((s, min(max(ends), e) if ends else e))
    data = [(s, e) for w, _, s, e in spans if w == "data"]

    def phase_at(t):  # the host phase at time t (a launch)
        return next((p for p in PRIORITY if any(s <= t < e for s, e in host[p])), "other")

    phased = [(phase_at(launch) if launch is not None else "other", s, s + d) for s, d, launch, _ in tasks]
    out, prev_end = {}, None
    for n, hs, he in steps:
        launched = [s + d for s, d, launch, _ in tasks if launch is not None and hs <= launch < he]
        start = hs if prev_end is None else max(hs, prev_end)
        end = max([he, start, *launched]) if prev_end is None else max([he, start, prev_end, *launched])
        device = dict.fromkeys(PRIORITY + ("other",), 0)
        wall = dict.fromkeys(PRIORITY + ("other",), 0)
        marks = [(f"dev:{p}", s, e) for p, s, e in phased] + [("data", s, e) for s, e in data]
        marks += [(f"host:{p}", s, e) for p in PRIORITY for s, e in host[p]]
        for a, b, on in ref.cells(marks, start, end):
            busy = [x for x in PRIORITY + ("other",) if f"dev:{x}" in on]
            if busy:
                device[busy[0]] += b - a
                wall[busy[0]] += b - a
            elif "data" in on:
                wall["other"] += b - a
            else:
                wall[next((x for x in PRIORITY if f"host:{x}" in on), "other")] += b - a
        out[n] = {"start": start, "end": end, "device": device, "wall": wall}
        prev_end = end
    return out


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(schedules())
def test_iteration_and_phases_match_the_reference(schedule):
    steps, spans, tasks = schedule
    with tempfile.TemporaryDirectory() as tmp:
        path = write_trace(Path(tmp) / "r.pt.trace.json", _events(steps, spans, tasks))
        frame = tv.load(path, use_cache=False, jobs=1).iteration_breakdown()
    check_identity_and_tiling(frame, "generated")
    want = _reference(steps, spans, tasks)
    for row in frame.to_dicts():
        w = want[row["step"]]
        assert (row["iteration_start_ns"], row["iteration_end_ns"]) == (w["start"], w["end"])
        for p in PRIORITY + ("other",):
            assert row[f"device_{p}_us"] == pytest.approx(w["device"][p] / 1000, abs=1e-6), (p, row, w)
            assert row[f"wall_{p}_us"] == pytest.approx(w["wall"][p] / 1000, abs=1e-6), (p, row, w)
