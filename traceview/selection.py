"""Ranks and steps given as SPECs such as `0-7,12,16-19` (`Selection`), and the one-line errors
for ranks or steps that are not in a profile. `traceview.step_selection.select_steps` builds a
Trace of some steps; `traceview.loader.load(..., ranks=, steps=)` selects ranks (its docstring
says how)."""

from __future__ import annotations

import re
from collections.abc import Iterable

import polars as pl

from traceview.errors import TraceError

_SPEC_ITEM = re.compile(
    r"\s*([0-9]+)\s*(?:-\s*([0-9]+)\s*)?", re.ASCII
)  # ASCII digits only (`\d` takes full-width ones)
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
                raise ValueError(
                    f"{item.strip()!r} in {spec!r} is not a number or a range N-M: write {what} like 0-7,12,16-19"
                )
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
        """ "rank 9" / "ranks 8-9,12" (noun singular)."""
        return f"{noun}{'' if self.size() == 1 else 's'} {self}"

    def __str__(self) -> str:
        return ",".join(str(lo) if lo == hi else f"{lo}-{hi}" for lo, hi in self.ranges)

    def __repr__(self) -> str:
        return f"Selection({str(self)!r})"


def format_spec(numbers: Iterable[int]) -> str:
    """Integers as a SPEC: [0, 1, 2, 3, 7] -> "0-3,7"."""
    return str(Selection((n, n) for n in numbers if n is not None))


def int_ranges(numbers: Iterable[int]) -> str:
    """Integers as compact ranges for text: [0, 1, 2, 3, 7] -> "0-3, 7" ("" for none)."""
    return format_spec(numbers).replace(",", ", ")


def listing(noun: str, present: Iterable[int]) -> str:
    """'steps 1-3, 7', 'step 7' or 'no steps'."""
    present = {p for p in present if p is not None}
    if not present:
        return f"no {noun}s"
    return f"{noun}{'s' if len(present) > 1 else ''} {format_spec(present)}"


def require_step(steps: pl.DataFrame, step: int, source: str) -> None:
    """TraceError, worded as `select_steps` words it, unless `step` is in the `steps` frame of the
    profile `source` (`summary --step N` and `--steps N` fail alike for a step that does not exist)."""
    present = set(steps["step"].drop_nulls().to_list())
    if step not in present:
        raise TraceError(None, f"no step {step} in this profile", f"{source} has {listing('step', present)}")
