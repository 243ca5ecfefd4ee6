"""Selecting ranks and steps: SPECs such as `0-7,12,16-19` (`Selection`) and `select_steps`, a
Trace holding only some steps. `traceview.loader.load(..., ranks=, steps=)` uses both (its
docstring says how ranks are selected before parsing)."""

from __future__ import annotations

import re
from collections.abc import Iterable

import polars as pl

from traceview.errors import TraceError
from traceview.trace import Trace

_SPEC_ITEM = re.compile(r"\s*(\d+)\s*(?:-\s*(\d+)\s*)?")
_INT64_MAX = 2**63 - 1


class Selection:
    """A set of non-negative integers (ranks or steps) held as sorted, merged inclusive ranges, so
    that `0-1000000` costs two numbers. Build it with `parse("0-7,12,16-19")` or `of(value)`."""

    def __init__(self, ranges: Iterable[tuple[int, int]]):
        merged: list[list[int]] = []
        for lo, hi in sorted(ranges):
            if merged and lo <= merged[-1][1] + 1:
                merged[-1][1] = max(merged[-1][1], hi)
            else:
                merged.append([lo, hi])
        self.ranges: list[tuple[int, int]] = [(lo, hi) for lo, hi in merged]

    @classmethod
    def parse(cls, spec: str, what: str = "numbers") -> Selection:
        """A SPEC: numbers and inclusive ranges N-M (N <= M) separated by commas, e.g.
        "0-7,12,16-19"; spaces around items are allowed. ValueError (one line) otherwise."""
        if not isinstance(spec, str) or not spec.strip():
            raise ValueError(f"no {what} given: write them like 0-7,12,16-19")
        ranges = []
        for item in spec.split(","):
            m = _SPEC_ITEM.fullmatch(item)
            if m is None:
                raise ValueError(f"{item.strip()!r} in {spec!r} is not a number or a range N-M: "
                                 f"write {what} like 0-7,12,16-19")
            lo = int(m.group(1))
            hi = int(m.group(2)) if m.group(2) is not None else lo
            if hi < lo:
                raise ValueError(f"the range {lo}-{hi} in {spec!r} runs backwards: write {hi}-{lo}")
            if hi > _INT64_MAX:
                raise ValueError(f"{hi} in {spec!r} is too large")
            ranges.append((lo, hi))
        return cls(ranges)

    @classmethod
    def of(cls, value, what: str = "numbers") -> Selection | None:
        """None -> None; a Selection as it is; a SPEC string -> `parse`; an int or an iterable of
        ints (>= 0) -> those. ValueError for anything else, or for an empty iterable."""
        if value is None or isinstance(value, Selection):
            return value
        if isinstance(value, str):
            return cls.parse(value, what)
        values = [value] if isinstance(value, int) else list(value)
        for v in values:
            if isinstance(v, bool) or not isinstance(v, int) or v < 0 or v > _INT64_MAX:
                raise ValueError(f"{what} must be integers >= 0, got {v!r}")
        if not values:
            raise ValueError(f"no {what} given")
        return cls((v, v) for v in values)

    def __contains__(self, n) -> bool:
        return isinstance(n, int) and any(lo <= n <= hi for lo, hi in self.ranges)

    def __eq__(self, other) -> bool:
        return isinstance(other, Selection) and self.ranges == other.ranges

    def __iter__(self):
        """Every selected number (can be many: use `ranges` for large selections)."""
        for lo, hi in self.ranges:
            yield from range(lo, hi + 1)

    def expr(self, column: str) -> pl.Expr:
        """Polars expression: `column` is selected (false for null)."""
        if self.size() <= 100_000:
            return pl.col(column).is_in(list(self)).fill_null(False)
        return pl.any_horizontal([pl.col(column).is_between(lo, hi) for lo, hi in self.ranges]).fill_null(False)

    def missing(self, present: Iterable[int]) -> Selection | None:
        """The selected numbers not in `present`, or None when there are none."""
        points = sorted({p for p in present if p is not None})
        out = []
        for lo, hi in self.ranges:
            cur = lo
            for p in points:
                if p < cur:
                    continue
                if p > hi:
                    break
                if p > cur:
                    out.append((cur, p - 1))
                cur = p + 1
            if cur <= hi:
                out.append((cur, hi))
        return Selection(out) if out else None

    def size(self) -> int:
        return sum(hi - lo + 1 for lo, hi in self.ranges)

    def describe(self, noun: str) -> str:
        """"rank 9" / "ranks 8-9,12" (noun singular)."""
        return f"{noun}{'' if self.size() == 1 else 's'} {self}"

    def __str__(self) -> str:
        return ",".join(str(lo) if lo == hi else f"{lo}-{hi}" for lo, hi in self.ranges)

    def __repr__(self) -> str:
        return f"Selection({str(self)!r})"


def format_spec(numbers: Iterable[int]) -> str:
    """Integers as a SPEC: [0, 1, 2, 3, 7] -> "0-3,7"."""
    return str(Selection((n, n) for n in numbers if n is not None))


def listing(noun: str, present: Iterable[int]) -> str:
    """'steps 1-3, 7', 'step 7' or 'no steps'."""
    present = {p for p in present if p is not None}
    if not present:
        return f"no {noun}s"
    return f"{noun}{'s' if len(present) > 1 else ''} {format_spec(present)}"


def require_step(trace: Trace, step: int) -> None:
    """TraceError, worded as `select_steps` words it, unless `step` is a step of `trace`
    (`summary --step N` and `--steps N` fail alike for a step that does not exist)."""
    present = set(trace.steps["step"].drop_nulls().to_list())
    if step not in present:
        raise TraceError(None, f"no step {step} in this profile", f"{trace.source} has {listing('step', present)}")


def select_steps(trace: Trace, steps) -> Trace:
    """A new Trace holding only the steps `steps` (a SPEC, integers, or a Selection): see
    `Trace.select_steps` for what is kept. TraceError when none of them is in the trace (naming the
    steps it has); a warning when some are missing."""
    sel = Selection.of(steps, "steps")
    present = set(trace.steps["step"].drop_nulls().to_list())
    chosen = trace.steps.filter(sel.expr("step"))
    if chosen.is_empty():
        raise TraceError(None, f"no {sel.describe('step')} in this profile", f"{trace.source} has {listing('step', present)}")
    warnings = list(trace.warnings)
    missing = sel.missing(present)
    if missing is not None:
        warnings.append(f"{trace.source}: no {missing.describe('step')} in this profile "
                        f"(it has {listing('step', present)}); loaded the others")

    device_windows = chosen.select(
        "rank", pl.col("device_start_ns").alias("_ws"), pl.col("device_end_ns").alias("_we")
    ).drop_nulls()
    host_windows = chosen.select(
        "rank",
        pl.coalesce("host_start_ns", "device_start_ns").alias("_ws"),
        pl.coalesce("host_end_ns", "device_end_ns").alias("_we"),
    ).drop_nulls()

    tasks = trace.device_tasks
    task_hit = _in_windows(tasks, device_windows, overlap=True)
    tasks = tasks.filter(sel.expr("step") | task_hit)

    host = trace.host_events
    launched = (  # the launch calls of the kept device tasks, wherever they started
        host.select("rank", "correlation").with_row_index("_i")
        .join(tasks.select("rank", "correlation").drop_nulls().unique(), on=["rank", "correlation"], how="semi")
    )
    launches = pl.int_range(pl.len(), dtype=pl.UInt32).is_in(launched["_i"].implode())
    host = host.filter(_in_windows(host, host_windows, overlap=False) | launches)

    annotations = trace.device_annotations
    annotations = annotations.filter(_in_windows(annotations, device_windows, overlap=False))

    frames = dict(trace._frames)
    frames.update(
        device_tasks=tasks,
        host_events=host,
        device_annotations=annotations,
        steps=chosen,
        ascend_step_trace=trace.ascend_step_trace.filter(sel.expr("step")),
        ascend_communication=trace.ascend_communication.filter(sel.expr("step")),
    )
    return Trace(trace.source, trace.ranks, frames, warnings, list(trace.failures))


def _in_windows(frame: pl.DataFrame, windows: pl.DataFrame, overlap: bool) -> pl.Series:
    """Per row of `frame` (rank, start_ns, end_ns): does it start inside one of its rank's windows
    [_ws, _we) (or, with `overlap`, overlap one: start < _we and end > _ws)? Windows of one rank
    must not overlap each other. Vectorised: one backward as-of join (and a forward one)."""
    if frame.is_empty() or windows.is_empty():
        return pl.Series("hit", [False] * frame.height, dtype=pl.Boolean)
    probe = (
        frame.select("rank", "start_ns", "end_ns")
        .with_row_index("_i")
        .drop_nulls(["rank", "start_ns"])
        .sort("rank", "start_ns")
    )
    win = windows.select("rank", "_ws", "_we").sort("rank", "_ws")
    back = probe.join_asof(win, left_on="start_ns", right_on="_ws", by="rank", strategy="backward",
                           check_sortedness=False)
    hits = back.filter(pl.col("start_ns") < pl.col("_we")).select("_i")
    if overlap:
        ahead = probe.join_asof(win, left_on="start_ns", right_on="_ws", by="rank", strategy="forward",
                                check_sortedness=False)
        hits = pl.concat([hits, ahead.filter(pl.col("end_ns") > pl.col("_ws")).select("_i")])
    return (
        frame.select(pl.int_range(pl.len(), dtype=pl.UInt32).alias("_i"))
        .select(pl.col("_i").is_in(hits["_i"].implode()))
        .to_series()
        .alias("hit")
    )
