"""Iteration gaps, stream idle time (HTA's rules), launch delays and long steps
(traceview/analysis/gaps.py). The integration tests; the topic's description and its other tests:
tests/unit/test_gaps.py, tests/corpus/test_gaps.py.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support import intervals as ref
from tests.support.gaps_shared import _by, _host, _steps, _tasks  # noqa: F401
from traceview.analysis import gaps


def _reference(rows, launches, threshold_ns):
    """Slow reference, one stream at a time: (idle, host_wait, kernel_wait, other, busy, span)."""
    out = {}
    for stream in {r[0] for r in rows}:
        mine = sorted((s, e, c) for st_, s, e, c in rows if st_ == stream)
        cats = {"host_wait": 0, "kernel_wait": 0, "other": 0}
        prev_end = None
        for s, e, c in mine:
            if prev_end is not None and s > prev_end:
                gap = s - prev_end
                launch = launches.get(c)
                if launch is not None and launch > prev_end:
                    cats["host_wait"] += gap
                elif gap < threshold_ns:
                    cats["kernel_wait"] += gap
                else:
                    cats["other"] += gap
            prev_end = e if prev_end is None else max(prev_end, e)
        busy = sum(e - s for s, e in ref.merged((s, e) for s, e, _ in mine))
        span = max(e for _, e, _ in mine) - min(s for s, _, _ in mine)
        out[stream] = {"idle": sum(cats.values()), **cats, "busy": busy, "span": span}
    return out


task_st = st.tuples(
    st.sampled_from([1, 2]),  # stream
    st.integers(0, 400),  # start (ns)
    st.integers(0, 60),  # duration (ns)
    st.one_of(st.none(), st.integers(0, 400)),  # launch start (None: no launch call)
)


@settings(max_examples=200, deadline=None)
@given(st.lists(task_st, min_size=1, max_size=30), st.sampled_from([0.0, 0.005, 0.02, 1.0]))
def test_stream_idle_matches_reference(rows, threshold_us):
    tasks = [{"stream": s, "start": a, "end": a + d, "corr": i} for i, (s, a, d, _) in enumerate(rows)]
    host = [{"start": ls, "end": ls + 1, "corr": i} for i, (_, _, _, ls) in enumerate(rows) if ls is not None]
    out = _by(gaps.stream_idle(_tasks(tasks), _host(host), kernel_wait_threshold_us=threshold_us), "stream")
    ref = _reference(
        [(s, a, a + d, i) for i, (s, a, d, _) in enumerate(rows)],
        {i: ls for i, (_, _, _, ls) in enumerate(rows) if ls is not None},
        round(threshold_us * 1000),
    )
    assert {k[0] for k in out} == set(ref)
    for stream, want in ref.items():
        got = out[(stream,)]
        ns = {k: round(got[f"{k}_us"] * 1000) for k in ("idle", "host_wait", "kernel_wait", "other", "busy", "span")}
        assert ns == want
        assert ns["host_wait"] + ns["kernel_wait"] + ns["other"] == ns["idle"]
        assert ns["idle"] + ns["busy"] == ns["span"]


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 300), st.integers(0, 40)), max_size=20),
    st.lists(st.integers(0, 340), min_size=2, max_size=10, unique=True),
)
def test_step_times_idle_before_matches_reference(tasks, bounds):
    """Windows from sorted random points, [b0, b1), [b2, b3), ...; idle in each gap between
    windows = gap − time covered by some task, counted ns by ns."""
    b = sorted(bounds)
    wins = [(b[i], b[i + 1]) for i in range(0, len(b) - 1, 2)]
    steps = _steps(
        [
            {"rank": 0, "step": i, "device_start_ns": s, "device_end_ns": e, "window_rule": "correlation"}
            for i, (s, e) in enumerate(wins)
        ]
    )
    out = gaps.step_times(steps, _tasks([{"start": a, "end": a + d, "stream": a % 3} for a, d in tasks]))
    covered = {t for a, d in tasks for t in range(a, a + d)}
    for i, row in enumerate(out.to_dicts()):
        if i == 0:
            assert row["gap_before_us"] is None and row["idle_before_us"] is None
            continue
        lo, hi = wins[i - 1][1], wins[i][0]
        assert round(row["gap_before_us"] * 1000) == hi - lo
        assert round(row["idle_before_us"] * 1000) == sum(1 for t in range(lo, hi) if t not in covered)
