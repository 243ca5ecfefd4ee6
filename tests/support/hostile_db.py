"""Hostile SQLite databases made from copies of the real test databases (issue 30): a table
replaced by a view (a recursive one never ends), columns re-declared without a type so that a
value keeps the storage class it is written with, repeated string ids that multiply joined rows."""

from __future__ import annotations

import gzip
import shutil
import sqlite3
from pathlib import Path

from tests.conftest import DATA

NSYS = DATA / "nsys"
MSPROF = DATA / "msprof" / "msprof_0.db"
#: A recursive CTE that never ends (no LIMIT): `x` counts up for ever.
ENDLESS = "WITH RECURSIVE r(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM r)"


def nsys_copy(folder: Path, name: str = "saxpy-mpi-cuda_nsys_perlmutter0.sqlite.gz") -> Path:
    """An unpacked copy of a real Nsight Systems export in `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    out = folder / name.removesuffix(".gz")
    with gzip.open(NSYS / name) as src, open(out, "wb") as dst:
        shutil.copyfileobj(src, dst)
    return out


def msprof_copy(folder: Path, name: str = "msprof_0.db") -> Path:
    """A copy of the real msprof database in `folder`, in rollback-journal mode (so that edits
    leave no -wal file beside it)."""
    out = folder / name
    shutil.copy(MSPROF, out)
    with sqlite3.connect(out) as db:
        db.execute("PRAGMA journal_mode=DELETE")
    return out


def columns(db: sqlite3.Connection, table: str) -> list[str]:
    return [row[1] for row in db.execute(f'PRAGMA table_info("{table}")')]


def as_view(path: Path, table: str, endless: bool = False) -> None:
    """Replace `table` by a view of the same name and columns: its rows (a view over a renamed
    copy), or, `endless`, rows counting up for ever (a recursive CTE)."""
    with sqlite3.connect(path) as db:
        names = columns(db, table)
        if endless:
            db.execute(f'DROP TABLE "{table}"')
            select = ", ".join(f'x AS "{n}"' for n in names)
            body = f"{ENDLESS} SELECT {select} FROM r"
        else:
            db.execute(f'ALTER TABLE "{table}" RENAME TO "{table}_stored"')
            body = f'SELECT * FROM "{table}_stored"'
        db.execute(f'CREATE VIEW "{table}" AS {body}')


def untyped(path: Path, table: str, names: set[str]) -> None:
    """Re-declare the columns `names` of `table` without a type (the others keep theirs), rows
    kept: a value written there keeps its storage class, as in a file whose writer bypassed the
    declared affinity."""
    with sqlite3.connect(path) as db:
        decl = [r for r in db.execute(f'PRAGMA table_info("{table}")')]
        spec = ", ".join(f'"{r[1]}"' if r[1] in names else f'"{r[1]}" {r[2]}' for r in decl)
        db.execute(f'ALTER TABLE "{table}" RENAME TO "{table}_old"')
        db.execute(f'CREATE TABLE "{table}" ({spec})')
        db.execute(f'INSERT INTO "{table}" SELECT * FROM "{table}_old"')
        db.execute(f'DROP TABLE "{table}_old"')


def repeated_string_ids(path: Path, copies: int, extra_id: int | None = None, extra_rows: int = 0) -> None:
    """STRING_IDS rebuilt without its primary key, each row written `copies` times (every lookup
    of an id then matches `copies` rows), plus `extra_rows` rows of id `extra_id` (value 'pad')."""
    with sqlite3.connect(path) as db:
        db.execute("ALTER TABLE STRING_IDS RENAME TO STRING_IDS_old")
        db.execute("CREATE TABLE STRING_IDS (id INTEGER, value TEXT)")
        for _ in range(copies):
            db.execute("INSERT INTO STRING_IDS SELECT id, value FROM STRING_IDS_old")
        db.execute("DROP TABLE STRING_IDS_old")
        if extra_rows:
            db.execute(
                f"INSERT INTO STRING_IDS WITH RECURSIVE r(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM r "
                f"LIMIT {extra_rows}) SELECT ?, 'pad' FROM r",
                (extra_id,),
            )
