"""Typed columns of a SQLite query: a value is read only when it has the storage class its column
should hold; any other is read as missing and counted, never cast to something else.

SQLite keeps any value in any column: a column declared INTEGER holds a TEXT, REAL or BLOB when
the writer bypassed its affinity (SQLite itself would store '612' there as 612) or the file was
edited. Building a frame from such a mix used to fail the rank (`internal error: ComputeError`) or
null every integer of the column. The kinds (`Column.kind`):

    INT     an INTEGER; a TEXT that is exactly a decimal integer (it reads back as the same text:
            '612', '-5'; not ' 612', '0612', '6e2' or one beyond Int64) is that integer, as torch_npu
            writes PYTORCH_API times (those columns are declared TEXT). Other text, REAL and BLOB
            are missing.
    TEXT    a TEXT; an INTEGER, REAL or BLOB (in a string table's value column) is missing.
    KEY     an INTEGER only: an id a join matches (`ON s.id = c.name`, as SQLite compares it:
            a text '5' there matches no integer id, so it is counted, and what it names is missing).
    NUMBER  an INTEGER or REAL as its exact decimal text (`timeconv.texts`: µs values float64
            cannot hold), a TEXT as it is; a BLOB is missing.

Each value read as missing is counted per table and column. A time column's row is dropped
(`N rows of TASK whose startNs is not an integer dropped (text, real or blob)`: an event without a
time cannot be placed); any other value is left null (`N values of TASK.streamId that are not
integers read as missing (text, real or blob)`). The check runs in SQL (`typeof`), one bit per
column in a mask column, so nothing is looked at row by row in Python. `select` reads, counts and
drops at once; a reader that joins tables in polars reads each with `query` and counts with
`settle` after the join, so that the counts cover the rows joined (as a SQL join's did).
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from traceview.errors import Warnings
from traceview.parsers.sqlite_ro import Database
from traceview.parsers.timeconv import texts

INT, KEY, TEXT, NUMBER = "int", "key", "text", "number"
_DTYPES = {INT: pl.Int64, KEY: pl.Int64, TEXT: pl.String, NUMBER: pl.String}
_MASK = "__bad__"


@dataclass(frozen=True)
class Column:
    """One column of a query: `out` its name in the frame (None: only checked, e.g. a join key),
    `expr` the stored column as the query names it (`t.startNs`,
    `"end"`; `NULL` for one the table lacks), `kind` (module docstring), `table` the table it is
    read from (named in warnings), `time` whether a row whose value is bad is dropped."""

    out: str | None
    expr: str
    kind: str
    table: str
    time: bool = False

    @property
    def name(self) -> str:
        """The column's own name, for warnings."""
        return self.expr.rsplit(".", 1)[-1].strip('"')


def _int_sql(expr: str) -> str:
    """SQL: `expr` as an INTEGER when it is one or a text holding exactly one, else NULL."""
    return (
        f"CASE typeof({expr}) WHEN 'integer' THEN {expr} WHEN 'text' THEN "
        f"CASE WHEN CAST(CAST({expr} AS INTEGER) AS TEXT) = {expr} THEN CAST({expr} AS INTEGER) END END"
    )


def _value_sql(col: Column) -> str:
    if col.kind == INT:
        return _int_sql(col.expr)
    if col.kind == KEY:
        return f"CASE WHEN typeof({col.expr}) = 'integer' THEN {col.expr} END"
    if col.kind == TEXT:
        return f"CASE WHEN typeof({col.expr}) = 'text' THEN {col.expr} END"
    return f"CASE WHEN typeof({col.expr}) != 'blob' THEN {col.expr} END"


def _mask_sql(col: Column) -> str:
    """SQL, 1 or 0: for a column read, whether it holds a value (one read as missing is then a bad
    one: cheaper than testing it twice); for a key only checked, whether it is not an integer."""
    if col.out is None:
        return f"(typeof({col.expr}) NOT IN ('integer', 'null'))"
    return f"({col.expr} IS NOT NULL)"


def warning(col: Column) -> str:
    """The warning counting the bad values of `col` (module docstring)."""
    if col.time:
        return f"rows of {col.table} whose {col.name} is not an integer dropped (text, real or blob)"
    if col.kind in (INT, KEY):
        return f"values of {col.table}.{col.name} that are not integers read as missing (text, real or blob)"
    if col.kind == TEXT:
        return f"values of {col.table}.{col.name} that are not text read as missing (integer, real or blob)"
    return f"values of {col.table}.{col.name} that are blobs read as missing"


def _checked(columns: list[Column]) -> list[Column]:
    """The columns a query checks (all but the `NULL` ones), in bit order."""
    return [c for c in columns if c.expr.upper() != "NULL"]


def query(db: Database, columns: list[Column], source: str, mask: str = _MASK) -> pl.DataFrame:
    """`SELECT <columns> <source>` (`source`: the FROM clause and anything after it) as a frame of
    the `out` columns in order, typed by kind (module docstring; a bad value is null), plus the
    Int64 column `mask` that `settle` (or `is_bad`) reads: nothing is counted or dropped yet. Use
    `select` unless rows are joined or filtered between reading and counting."""
    checked = _checked(columns)
    if len(checked) > 62:
        raise ValueError("at most 62 checked columns per query")
    bits = " | ".join(f"({_mask_sql(c)} << {i})" for i, c in enumerate(checked)) or "0"
    outs = [c for c in columns if c.out is not None]
    values = [_value_sql(c) if c in checked else "NULL" for c in outs]
    rows = db.rows(f"SELECT {', '.join([*values, bits])} {source}")
    data = list(zip(*rows)) if rows else [()] * (len(outs) + 1)
    del rows
    return pl.DataFrame(
        [
            pl.Series(c.out, texts(list(v)) if c.kind == NUMBER else list(v), dtype=_DTYPES[c.kind])
            for c, v in zip(outs, data)
        ]
        + [pl.Series(mask, list(data[-1]), dtype=pl.Int64)]
    )


def is_bad(columns: list[Column], out: str, mask: str = _MASK) -> pl.Expr:
    """Whether a row's value of the column named `out` (one of the `columns` a `query` read) was
    bad: present in the database and read as missing."""
    (i, col) = next((i, c) for i, c in enumerate(_checked(columns)) if c.out == out)
    return _bad(i, col, mask)


def _bad(i: int, col: Column, mask: str) -> pl.Expr:
    present = (pl.col(mask) & (1 << i)) != 0
    return present & (pl.col(col.out).is_null() if col.out is not None else pl.lit(True))


def settle(
    frame: pl.DataFrame, columns: list[Column], warnings: Warnings, mask: str = _MASK, only: set[str] | None = None
) -> pl.DataFrame:
    """Count in `warnings` the bad values of a `query`'s `columns` flagged in `mask`, drop the
    rows with a bad time, then drop `mask`. `only` (`out` names): settle those columns now and
    keep `mask` for a later `settle` of the others (the settled ones are not counted again)."""
    checked = [(i, c) for i, c in enumerate(_checked(columns)) if only is None or c.out in only]
    bad = [_bad(i, c, mask) for i, c in checked]
    if frame.height and bad:
        counts = frame.select(b.sum().alias(str(i)) for i, b in enumerate(bad)).row(0)
        for (_, col), n in zip(checked, counts):
            warnings.add(warning(col), n)
        times = [b for b, (_, c) in zip(bad, checked) if c.time]
        if times and any(n for n, (_, c) in zip(counts, checked) if c.time):
            frame = frame.filter(~pl.any_horizontal(times).fill_null(False))
    if only is None:
        return frame.drop(mask)
    settled = sum(1 << i for i, _ in checked)
    return frame.with_columns(pl.col(mask) & ~settled)


def select(db: Database, columns: list[Column], source: str, warnings: Warnings) -> pl.DataFrame:
    """`query` and `settle` at once: the `out` columns typed by kind, bad values counted in
    `warnings`, rows with a bad time dropped."""
    return settle(query(db, columns, source), columns, warnings)
