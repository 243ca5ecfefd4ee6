"""The id -> text tables of the DB export (STRING_IDS(id, value), ENUM_<X>(id, name)), each read
once by a plain scan and looked up in polars (`Names`).

The readers join nothing in SQL: the cost of a scan does not depend on the planner's statistics,
which the file itself holds (a `sqlite_stat1` saying a 100k-row table has one row made SQLite
skip its automatic index and run an N x M nested loop, minutes on a large file). An id column
is looked up with `replace_strict` on the table's (id, text) Series, faster than a left join:
six id columns of 1M tasks into 1M strings take 3.1 s CPU against 3.6 s for six left joins, into
50k strings 0.66 s against 1.79 s; of 200k tasks into 5k strings 41 ms against 206 ms.

Bad rows, counted (the warnings `sqlite_columns` gives, plus one for repeated ids):
- an id that is not an integer: its row is ignored (no integer key matches it);
- a value that is not text: read as missing, counted once per lookup that meets it (as the SQL
  joins did: `N values of STRING_IDS.value that are not text read as missing`);
- an id written in more than one row (the tables declare it the primary key): the first row
  (in the table's order) is used, the others counted (a SQL join multiplied the rows).
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from traceview.errors import Warnings
from traceview.parsers.sqlite_columns import KEY, TEXT, Column, is_bad, query, settle, warning
from traceview.parsers.sqlite_ro import Database


@dataclass(frozen=True)
class Names:
    """One id -> text table: `ids` (Int64, unique) and their `texts` (String; null where the
    stored value is not text), `bad` the ids whose value is not text, `value` the text column
    (for its warning)."""

    value: Column
    ids: pl.Series
    texts: pl.Series
    bad: pl.Series

    @classmethod
    def read(cls, db: Database, table: str, warnings: Warnings) -> Names:
        """The (id, text) rows of `table` (`name` of an ENUM_ table, else `value`); rows without
        an integer id dropped (counted when the id is some other value), repeated ids counted."""
        value = Column("text", "name" if table.startswith("ENUM_") else "value", TEXT, table)
        columns = [Column("id", "id", KEY, table), value]
        frame = settle(query(db, columns, f'FROM "{table}"'), columns, warnings, only={"id"})
        frame = frame.drop_nulls("id")
        first = frame["id"].is_first_distinct()
        warnings.add(
            f"rows of {table} that repeat an earlier row's id ignored (the first is used)", frame.height - first.sum()
        )
        frame = frame.filter(first)
        bad = frame.filter(is_bad(columns, "text"))["id"]
        return cls(value, frame["id"], frame["text"], bad)

    def of(self, key: str) -> pl.Expr:
        """The text of each id in column `key` (null: no such id, or its text is missing)."""
        return pl.col(key).replace_strict(self.ids, self.texts, default=None, return_dtype=pl.String)

    def look_up(self, frame: pl.DataFrame, keys: dict[str, str], warnings: Warnings) -> pl.DataFrame:
        """`frame` with the text of each id column (`keys`: id column -> text column, added);
        ids whose value is not text counted, once per lookup."""
        if self.bad.len():
            met = frame.select(pl.sum_horizontal(pl.col(k).is_in(self.bad.implode()).sum() for k in keys)).item()
            warnings.add(warning(self.value), met)
        return frame.with_columns(self.of(key).alias(out) for key, out in keys.items())
