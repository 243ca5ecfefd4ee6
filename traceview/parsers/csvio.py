"""The header of a CSV file, read without the rest: the readers of CSV profiles (torch_npu's
kernel_details.csv and memory files, rocprofv3's traces) read only the columns they use, so a file
with 100,000 columns besides costs what its useful ones do (a 12.7 MB kernel_details.csv with
100,000 extra columns took 2.4 GB when every column was read)."""

from __future__ import annotations

import csv
from pathlib import Path

import polars as pl

from traceview.errors import TraceError

#: The longest header line read (characters): a header is a few hundred; a file whose first line
#: runs past this is no torch_npu CSV.
MAX_HEADER_CHARS = 16 << 20


def csv_header(path: Path) -> list[str]:
    """The header cells of a CSV (its first line, quotes as a CSV reader reads them), without
    reading the rest. TraceError if it cannot be read, is empty, or its first line is longer than
    MAX_HEADER_CHARS."""
    try:
        with open(path, encoding="utf-8", errors="replace", newline="") as fh:
            line = fh.readline(MAX_HEADER_CHARS + 1)
    except OSError as exc:
        raise TraceError(path, f"not a readable CSV ({exc.strerror or exc})", "re-export the profile") from None
    if not line.strip():
        raise TraceError(path, "the file is empty (not even a header row)", "re-export the profile")
    if len(line) > MAX_HEADER_CHARS:
        raise TraceError(
            path,
            f"not a readable CSV (its first line is longer than {MAX_HEADER_CHARS:,} characters)",
            "re-export the profile",
        )
    return next(csv.reader([line.rstrip("\r\n")]), [])


#: A header with more columns than this is read by a streaming reader that keeps only the wanted
#: cells of each row: polars' reader takes memory for every column of the header even when it
#: reads three (117 MB for a 6.7 MB file of 100,000 columns). Real profiles' CSVs have a few dozen.
WIDE_COLUMNS = 512


def read_text_columns(path: Path, header: list[str], indices: list[int]) -> pl.DataFrame:
    """The columns `indices` (sorted, distinct) of the CSV at `path` whose header is `header`
    (`csv_header`), every one as String: an empty cell and a missing trailing cell are null, a row
    with extra cells keeps the wanted ones, bytes that are not UTF-8 become U+FFFD. polars reads a
    file of up to WIDE_COLUMNS columns; a wider one is streamed row by row, keeping only those
    cells. TraceError (`not a readable CSV (...)`) when it cannot be read."""
    if len(header) <= WIDE_COLUMNS:
        try:
            return pl.read_csv(
                path, columns=indices, infer_schema=False, truncate_ragged_lines=True, encoding="utf8-lossy"
            )
        except (pl.exceptions.PolarsError, OSError) as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise TraceError(path, f"not a readable CSV ({first})", "re-export the profile") from None
    values: list[list] = [[] for _ in indices]
    limit = csv.field_size_limit()
    csv.field_size_limit(1 << 30)  # as polars: no cell is refused for its length (default 128 KiB)
    try:
        with open(path, encoding="utf-8", errors="replace", newline="") as fh:
            rows = csv.reader(fh)
            next(rows, None)  # the header
            for row in rows:  # a blank line is a row of nulls, as polars reads it
                n = len(row)
                for column, i in zip(values, indices):
                    column.append((row[i] or None) if i < n else None)
    except (OSError, csv.Error) as exc:
        raise TraceError(path, f"not a readable CSV ({exc})", "re-export the profile") from None
    finally:
        csv.field_size_limit(limit)
    names = _unique([header[i] for i in indices])
    return pl.DataFrame({name: pl.Series(name, column, dtype=pl.String) for name, column in zip(names, values)})


def _unique(names: list[str]) -> list[str]:
    """`names` with a repeated one suffixed as polars does (`x`, `x_duplicated_0`, ...)."""
    seen: dict[str, int] = {}
    out = []
    for name in names:
        if name in seen:
            out.append(f"{name}_duplicated_{seen[name]}")
            seen[name] += 1
        else:
            seen[name] = 0
            out.append(name)
    return out
