"""torch_npu values as exact text.

Times in torch_npu files are decimal microseconds (`1736408883704643.212`) that float64 cannot
hold, so they are kept as text until `timeconv.us_text_to_ns` converts them to Int64 ns. This
module gets that text: CSV files read with every cell as a string (stripped of the tabs torch_npu
appends, `N/A` -> null), headers found whatever their spelling, and JSON / SQLite numbers turned
into decimal text without an exponent (`timeconv.texts`).
"""

from __future__ import annotations

import re
from pathlib import Path

import polars as pl

from traceview.parsers.csvio import csv_header, read_text_columns


def read_text_csv(path: Path, spec: dict[str, tuple[str, ...]]) -> pl.DataFrame:
    """The columns of a torch_npu CSV that `spec` names (field -> accepted headers, normalised:
    `find_columns`), every one as String: values stripped of whitespace/tabs, `N/A` and empty cells
    null; rows with missing trailing cells get nulls. Only those columns are read (the header
    first, `csv_header`), so a file with 100,000 other columns costs what its useful ones do.
    Raises TraceError if unreadable."""
    header = csv_header(path)
    wanted = sorted(set(_indices(header, spec).values()))
    if not wanted:  # none of its columns is used (callers name what is missing, from `csv_header`)
        return pl.DataFrame()
    df = read_text_columns(path, header, wanted)
    clean = pl.col(pl.String).str.strip_chars()
    return df.with_columns(pl.when(~clean.is_in(["", "N/A"])).then(clean))


def _indices(header: list[str], spec: dict[str, tuple[str, ...]]) -> dict[str, int]:
    """Field -> index of its column in `header` (the first accepted header found, as `find_columns`)."""
    by_key: dict[str, int] = {}
    for i, name in enumerate(header):
        by_key.setdefault(normalise_header(name), i)
    found = {}
    for field, keys in spec.items():
        for key in keys:
            if key in by_key:
                found[field] = by_key[key]
                break
    return found


def normalise_header(name: str) -> str:
    """Header -> lookup key: BOM and spaces removed, lower case ("Start Time (us)" -> "starttime(us)")."""
    return re.sub(r"\s+", "", name.replace("\ufeff", "")).lower()


def find_columns(df: pl.DataFrame, spec: dict[str, tuple[str, ...]]) -> dict[str, str]:
    """Canonical field -> actual header of `df`, for the fields whose header is present.

    `spec` maps each field to its accepted headers, normalised (see `normalise_header`); the first
    accepted header found wins."""
    return {field: df.columns[i] for field, i in _indices(df.columns, spec).items()}


def column(cols: dict[str, str], field: str) -> pl.Expr:
    """The String column found for `field` (see `find_columns`), or a null String literal."""
    return pl.col(cols[field]) if field in cols else pl.lit(None, dtype=pl.String)
