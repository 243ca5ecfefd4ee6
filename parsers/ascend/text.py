"""torch_npu values as exact text.

Times in torch_npu files are decimal microseconds (`1736408883704643.212`) that float64 cannot
hold, so they are kept as text until `timeconv.us_text_to_ns` converts them to Int64 ns. This
module gets that text: CSV files read with every cell as a string (stripped of the tabs torch_npu
appends, `N/A` -> null), headers found whatever their spelling, and JSON / SQLite numbers turned
into decimal text without an exponent.
"""

from __future__ import annotations

import re
from decimal import Decimal
from pathlib import Path

import polars as pl

from traceview.errors import TraceError


def read_text_csv(path: Path) -> pl.DataFrame:
    """A torch_npu CSV with every column as String: values stripped of whitespace/tabs, `N/A` and
    empty cells null. Rows with missing trailing cells get nulls. Raises TraceError if unreadable."""
    try:
        df = pl.read_csv(
            path,
            infer_schema=False,
            truncate_ragged_lines=True,
            encoding="utf8-lossy",
            raise_if_empty=True,
        )
    except pl.exceptions.NoDataError:
        raise TraceError(path, "the file is empty (not even a header row)", "re-export the profile") from None
    except (pl.exceptions.PolarsError, OSError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise TraceError(path, f"not a readable CSV ({first})", "re-export the profile") from None
    clean = pl.col(pl.String).str.strip_chars()
    return df.with_columns(pl.when(~clean.is_in(["", "N/A"])).then(clean))


def normalise_header(name: str) -> str:
    """Header -> lookup key: BOM and spaces removed, lower case ("Start Time (us)" -> "starttime(us)")."""
    return re.sub(r"\s+", "", name.replace("\ufeff", "")).lower()


def find_columns(df: pl.DataFrame, spec: dict[str, tuple[str, ...]]) -> dict[str, str]:
    """Canonical field -> actual header of `df`, for the fields whose header is present.

    `spec` maps each field to its accepted headers, normalised (see `normalise_header`); the first
    accepted header found wins."""
    by_key: dict[str, str] = {}
    for col in df.columns:
        by_key.setdefault(normalise_header(col), col)
    found = {}
    for field, keys in spec.items():
        for key in keys:
            if key in by_key:
                found[field] = by_key[key]
                break
    return found


def column(cols: dict[str, str], field: str) -> pl.Expr:
    """The String column found for `field` (see `find_columns`), or a null String literal."""
    return pl.col(cols[field]) if field in cols else pl.lit(None, dtype=pl.String)


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
