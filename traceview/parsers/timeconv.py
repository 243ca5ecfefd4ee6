"""Exact conversions of profiler timestamps to Int64 nanoseconds.

Ascend writes microseconds as decimal text (`1736408883704643.212`); going through float64 would
lose the last digits (float64 holds ~16 significant digits), so the text is split at the decimal
point and converted with integer arithmetic. Digits past the nanosecond are rounded half up.
Numbers that JSON or SQLite hand over as int/float become that decimal text first (`texts`).
"""

from __future__ import annotations

from decimal import Decimal

import polars as pl

#: Times must fit Int64 nanoseconds: |µs| below this (about the year 2262 as epoch µs). A value at
#: or beyond it converts to null (the parsers count it as non-numeric) instead of wrapping around.
MAX_WHOLE_US = (2**63 - 1) // 1000 - 1


def us_text_to_ns(expr: pl.Expr) -> pl.Expr:
    """Polars expression: decimal microsecond text -> Int64 ns, exactly; null if not a number.

    Accepts surrounding whitespace/tabs, a sign, an optional fraction of any length, and plain
    integers. `"1736408883704643.212\\t"` -> 1736408883704643212.
    """
    s = expr.cast(pl.String).str.strip_chars()
    m = s.str.extract_groups(r"^([+-]?)(\d*)(?:\.(\d*))?$")
    sign = m.struct.field("1")
    int_part = m.struct.field("2")
    frac = m.struct.field("3").fill_null("")
    # nanoseconds: the first 3 fraction digits; the 4th decides rounding (half up).
    frac4 = (frac + pl.lit("0000")).str.slice(0, 4)
    ns_frac = frac4.str.slice(0, 3).cast(pl.Int64)
    round_up = (frac4.str.slice(3, 1).cast(pl.Int64) >= 5).cast(pl.Int64)
    whole = int_part.replace("", "0").cast(pl.Int64, strict=False)
    valid = s.str.contains(r"^[+-]?(\d+\.?\d*|\.\d+)$") & (whole < MAX_WHOLE_US)
    magnitude = whole * 1000 + ns_frac + round_up
    value = pl.when(sign == "-").then(-magnitude).otherwise(magnitude)
    return pl.when(valid).then(value).otherwise(None)


def us_float_to_ns(expr: pl.Expr) -> pl.Expr:
    """Polars expression: microseconds as a number (Int64 or Float64) -> Int64 ns.

    The whole microseconds and the fraction are converted separately (`floor(ts) * 1000 +
    round(frac * 1000)`), so integer µs are exact at any magnitude (a plain `ts * 1000.0` in float64
    is not above 2**53 ns) and 3-decimal µs are exact while the float itself holds them (below
    ~9e12 µs, which covers Kineto's relative clocks).
    """
    value = expr.cast(pl.Float64)
    whole = value.floor()
    frac_ns = ((value - whole) * 1000.0).round(0).cast(pl.Int64, strict=False)
    in_range = value.abs() < float(MAX_WHOLE_US)
    return pl.when(in_range).then(whole.cast(pl.Int64, strict=False) * 1000 + frac_ns)


def number_text(value: object) -> str:
    """A JSON/SQLite scalar as decimal text: a float by its shortest round-trip repr, written
    without an exponent (2e-05 -> '0.00002') so the exact text-to-ns conversion accepts it."""
    text = str(value)
    if isinstance(value, float) and ("e" in text or "E" in text):
        text = format(Decimal(text), "f")
    return text


def texts(values: list) -> list:
    """Values -> their text (see `number_text`); strings unchanged, None stays None."""
    return [None if v is None else v if isinstance(v, str) else number_text(v) for v in values]
