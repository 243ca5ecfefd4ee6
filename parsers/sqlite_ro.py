"""SQLite files opened read-only: the one way every parser and detector opens a database.

A profile database is the user's file: it is opened with the URI `mode=ro&immutable=1` (RO_URI):
SQLite refuses any write and, for a database in WAL mode (msprof's), creates no `-wal` / `-shm`
file beside it, which `mode=ro` alone does. `immutable` also means a WAL file left beside an
export still being written is not read (a finished export has none): the readers warn when one
is there (`pending_wal`).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from traceview.errors import TraceError

#: The first bytes of every SQLite 3 database file.
SQLITE_MAGIC = b"SQLite format 3\x00"


#: The URI query every database is opened with (module docstring).
RO_URI = "?mode=ro&immutable=1"


def _uri(path: Path) -> str:
    return Path(path).resolve().as_uri() + RO_URI


def connect_ro(path: Path, fix: str = "re-export the profile") -> sqlite3.Connection:
    """Open an SQLite file read-only; TraceError (with `fix`) if it is not a readable database."""
    try:
        con = sqlite3.connect(_uri(path), uri=True)
        con.text_factory = _lenient_text
        con.execute("SELECT name FROM sqlite_master LIMIT 1").fetchall()
    except sqlite3.DatabaseError as exc:
        raise TraceError(path, f"not a readable SQLite database ({exc})", fix) from None
    return con


def _lenient_text(raw: bytes) -> str:
    """A TEXT value as str; bytes that are not UTF-8 (a damaged or foreign string) become U+FFFD
    instead of failing the whole query."""
    return raw.decode("utf-8", errors="replace")


#: The warning for a database whose `-wal` file holds changes immutable opening does not read.
PENDING_WAL = (
    "database(s) with a non-empty -wal file beside them: changes written after the last checkpoint are "
    "not read (the export did not finish cleanly; open it once with sqlite3 to fold them in, on a copy)"
)


def pending_wal(path: Path) -> bool:
    """Whether a non-empty `<path>-wal` file lies beside the database (module docstring)."""
    try:
        return Path(f"{path}-wal").stat().st_size > 0
    except OSError:
        return False


def table_names(con: sqlite3.Connection) -> set[str]:
    """The names of the tables and views of an open database."""
    return {row[0] for row in con.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")}


def file_tables(path: Path) -> set[str]:
    """The table and view names of a SQLite file; sqlite3.Error when it cannot be read."""
    con = sqlite3.connect(_uri(path), uri=True)
    try:
        return table_names(con)
    finally:
        con.close()
