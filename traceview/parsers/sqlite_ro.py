"""SQLite files opened read-only and read under guards: the one way every parser and detector opens
a database (`Database`).

A profile database is the user's file: it is opened with the URI `mode=ro&immutable=1` (RO_URI):
SQLite refuses any write and, for a database in WAL mode (msprof's), creates no `-wal` / `-shm`
file beside it, which `mode=ro` alone does. `immutable` also means a WAL file left beside an
export still being written is not read (a finished export has none): the readers warn when one
is there (`pending_wal`).

A database is also a program: a view runs a query when it is read (a recursive one never ends),
a VIRTUAL generated column runs an expression per row read, and a join over a table whose ids
repeat multiplies rows. So:

- Only stored tables are read: `Database.tables(wanted)` gives the names among `wanted` that are
  ordinary tables (sqlite_master type 'table' with a b-tree page, no VIRTUAL generated column); a
  view, virtual table or computed table named like one is ignored and named in one warning
  (IGNORED_OBJECTS). The readers query only names it gave.
- Every connection has a progress handler, called every PROGRESS_OPS virtual-machine steps. While
  a query runs, SIGINT and SIGTERM (when Python handles them, in the main thread) are recorded
  instead of raised, and the handler ends the query at once; the recorded signal is then raised
  through the handler it replaced (`traceview: terminated` exit 143, Ctrl-C exit 130), so a signal
  ends a read inside SQLite within milliseconds. The handler also ends a query when the
  connection has run more than `STEPS_FLOOR + STEPS_PER_BYTE x database_bytes` steps in all (a
  full read takes a few steps per byte), or when the process' peak memory has grown
  since the connection opened by more than the memory available then (`host_ram.available()`, the
  memory guard's own figure, at least MEMORY_FLOOR; no limit when that is off or unknown).
- Rows are fetched in batches of BATCH_ROWS; a query stops after returning more than
  `ROWS_FLOOR + database_bytes / MIN_ROW_BYTES` rows (no table row takes fewer bytes, so only
  rows multiplied by a join on repeated ids get there), or when memory grew as above.

Each budget ends the read with one line (a TraceError naming the file). `database_bytes` is also
what the memory guard counts for a database: the pages the header says the database uses, not
the file's size (a sparse file, or one padded after the database, holds no more rows).
"""

from __future__ import annotations

import os
import signal
import sqlite3
import threading
from collections.abc import Iterable
from pathlib import Path

from traceview.errors import TraceError, Warnings
from traceview.parsers import host_ram
from traceview.parsers.host_ram import gb_text

#: The first bytes of every SQLite 3 database file.
SQLITE_MAGIC = b"SQLite format 3\x00"

#: The URI query every database is opened with (module docstring).
RO_URI = "?mode=ro&immutable=1"

#: Virtual-machine steps between two calls of the progress handler (about 0.1 ms of work).
PROGRESS_OPS = 10_000
#: Step budget of one connection: STEPS_FLOOR + STEPS_PER_BYTE x database_bytes. Reading the real
#: exports takes 0.02 to 1.3 steps per byte of database (every reader scans one table per query:
#: nothing is joined in SQL, whose plan the file's own statistics would choose); at the 35 million
#: steps a second of a slow machine the floor is about 0.6 s.
STEPS_PER_BYTE = 64
STEPS_FLOOR = 20_000_000
#: The fewest bytes a stored table row takes: a 2-byte cell pointer, the payload size, the record
#: header's size and one serial type (a WITHOUT ROWID table's one-column row of 0 or 1).
MIN_ROW_BYTES = 5
#: Rows any query may return beyond database_bytes / MIN_ROW_BYTES.
ROWS_FLOOR = 10_000
#: The least memory growth the memory check allows (a read never stops for the memory a few
#: batches take, however little is free: the loader's memory guard judged the load first).
MEMORY_FLOOR = 256 << 20
#: Rows fetched at a time.
BATCH_ROWS = 10_000

#: The warning naming the objects named like tables a reader reads that are not stored tables.
IGNORED_OBJECTS = (
    "views or computed tables named like tables traceview reads ignored (only stored tables are read: "
    "a view runs a query, which can run forever)"
)

#: What to do about a database that exceeds a budget.
HOSTILE_FIX = "the database is damaged or built to run forever; re-export the profile"


def _uri(path: Path) -> str:
    return Path(path).resolve().as_uri() + RO_URI


def database_bytes(path: Path) -> int:
    """The bytes a SQLite database uses: page size x page count from its header (bytes 16-17 and
    28-31, when the header says that count is current: bytes 24-27 equal 92-95, as SQLite itself
    requires), at most the file's size and, for a sparse file, its allocated blocks (holes read as
    zeros hold no rows). The file's size for a file that is not a database. OSError if it cannot
    be stat'ed."""
    st = os.stat(path)
    size = st.st_size
    try:
        with open(path, "rb") as f:
            head = f.read(100)
    except OSError:
        head = b""
    if len(head) == 100 and head.startswith(SQLITE_MAGIC):
        page = int.from_bytes(head[16:18], "big")
        page = 65536 if page == 1 else page
        pages = int.from_bytes(head[28:32], "big")
        if 512 <= page <= 65536 and not page & (page - 1) and pages and head[24:28] == head[92:96]:
            size = min(size, page * pages)
    allocated = getattr(st, "st_blocks", 0) * 512
    return min(size, allocated) if allocated else size


class Database:
    """A SQLite file open read-only under the guards of the module docstring. sqlite3.Error when
    the file cannot be opened or a query fails; TraceError when a budget ends a query; a signal's
    own exception (KeyboardInterrupt, the CLI's Terminated) when a signal does. Use as a context
    manager, or call `close`."""

    def __init__(self, path: Path, fix: str = "re-export the profile", warnings: Warnings | None = None):
        self.path, self.fix, self.warnings = Path(path), fix, warnings
        try:
            self.bytes = database_bytes(self.path)
        except OSError:  # sqlite3 says why when it opens the file
            self.bytes = 0
        self.step_budget = STEPS_FLOOR + STEPS_PER_BYTE * self.bytes
        self.row_budget = ROWS_FLOOR + self.bytes // MIN_ROW_BYTES
        available = host_ram.available()
        self.memory_budget = None if available is None else max(available, MEMORY_FLOOR)
        self.steps = 0
        self.ignored: set[str] = set()
        self._over: str | None = None
        self._caught: int | None = None
        self._querying = False
        self._previous: dict[int, object] = {}
        self._peak0 = host_ram.peak_rss()
        self.con = sqlite3.connect(_uri(self.path), uri=True)
        self.con.text_factory = _lenient_text
        self.con.set_progress_handler(self._progress, PROGRESS_OPS)
        self._take_signals()
        try:
            self.rows("SELECT name FROM sqlite_master LIMIT 1")
        except BaseException:
            self.close()
            raise

    def __enter__(self) -> Database:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        """Close the connection and give the signal handlers back."""
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)
        self._previous = {}
        self.con.close()

    # signals ---------------------------------------------------------------------------------
    def _take_signals(self) -> None:
        """Record SIGINT / SIGTERM during queries (module docstring), where Python handles them."""
        if threading.current_thread() is not threading.main_thread():
            return
        for signum in (signal.SIGINT, signal.SIGTERM):
            handler = signal.getsignal(signum)
            if callable(handler):
                self._previous[signum] = handler
                signal.signal(signum, self._on_signal)

    def _on_signal(self, signum: int, frame) -> None:
        if not self._querying:
            self._previous[signum](signum, frame)  # type: ignore[operator]
        elif self._caught is None:
            self._caught = signum

    def _progress(self) -> int:
        """SQLite's progress handler: nonzero ends the query (never raises: an exception here
        would only be printed or dropped by sqlite3)."""
        self.steps += PROGRESS_OPS
        if self._caught is not None or self._over is not None:
            return 1
        if self.steps > self.step_budget:
            self._over = (
                f"a query ran more than {self.step_budget:,} SQLite steps, more than reading a database of "
                f"{gb_text(self.bytes)} takes"
            )
            return 1
        return 1 if self._memory_exceeded() else 0

    def _memory_exceeded(self) -> bool:
        if self.memory_budget is None:
            return False
        grown = host_ram.peak_rss() - self._peak0
        if grown <= self.memory_budget:
            return False
        self._over = (
            f"reading it took more than the {gb_text(self.memory_budget)} of memory available "
            f"(a database of {gb_text(self.bytes)})"
        )
        return True

    def _stop(self) -> None:
        """Raise what ended the last query: a recorded signal through its own handler, or a budget."""
        if self._caught is not None:
            signum, self._caught = self._caught, None
            self._previous[signum](signum, None)  # type: ignore[operator]
            raise TraceError(self.path, "interrupted by a signal while reading the database")
        if self._over is not None:
            raise TraceError(self.path, self._over, HOSTILE_FIX)

    # queries ---------------------------------------------------------------------------------
    def rows(self, sql: str, params: tuple = ()) -> list[tuple]:
        """Every row of `sql`, fetched in batches under the budgets (module docstring)."""
        out: list[tuple] = []
        self._querying = True
        try:
            cursor = self.con.execute(sql, params)
            while self._caught is None and (batch := cursor.fetchmany(BATCH_ROWS)):
                out += batch
                if len(out) > self.row_budget:
                    self._over = (
                        f"a query returned more than {self.row_budget:,} rows, more than a database of "
                        f"{gb_text(self.bytes)} can hold (rows multiplied by repeated ids in a joined table)"
                    )
                if self._over is not None or self._memory_exceeded():
                    break
            cursor.close()
        except sqlite3.Error:
            if self._caught is None and self._over is None:
                raise
        except UnicodeDecodeError as exc:  # SQLite's message quoting a damaged schema's bytes
            raise sqlite3.DatabaseError(f"the database is malformed (text that is not UTF-8: {exc.reason})") from None
        finally:
            self._querying = False
        self._stop()
        return out

    def names(self) -> set[str]:
        """The names of the tables and views (what the file says it holds; detection only)."""
        return {row[0] for row in self.rows("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")}

    def tables(self, wanted: Iterable[str]) -> set[str]:
        """The names among `wanted` that are stored tables; the others present (views, virtual
        tables, tables with a VIRTUAL generated column) are added to `ignored` and warned about."""
        wanted = set(wanted)
        found = self.rows("SELECT name, type, rootpage FROM sqlite_master WHERE type IN ('table', 'view')")
        stored, ignored = set(), set()
        for name, kind, rootpage in found:
            if name not in wanted:
                continue
            computed = kind != "table" or not isinstance(rootpage, int) or rootpage <= 0
            if not computed:
                computed = any(row[6] == 2 for row in self.rows(f'PRAGMA table_xinfo("{name}")'))
            (ignored if computed else stored).add(name)
        new = ignored - self.ignored
        self.ignored |= ignored
        if new and self.warnings is not None:
            self.warnings.add(f"{IGNORED_OBJECTS}: {', '.join(sorted(new))}", len(new))
        return stored

    def not_read(self) -> str:
        """`; X, Y is a view or computed table, which traceview does not read` for the objects
        `tables` ignored (to end an error saying what is missing), else ''."""
        if not self.ignored:
            return ""
        return f"; {', '.join(sorted(self.ignored))} is a view or computed table, which traceview does not read"

    def columns(self, table: str) -> set[str]:
        """The column names of `table` (one `tables` gave)."""
        return {row[1] for row in self.rows(f'PRAGMA table_info("{table}")')}


def open_database(path: Path, fix: str = "re-export the profile", warnings: Warnings | None = None) -> Database:
    """Open an SQLite file read-only (`Database`); TraceError (with `fix`) if it is not a readable database."""
    try:
        return Database(path, fix, warnings)
    except sqlite3.DatabaseError as exc:
        raise TraceError(path, f"not a readable SQLite database ({exc})", fix) from None


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


def file_tables(path: Path) -> set[str]:
    """The table and view names of a SQLite file; sqlite3.Error when it cannot be read."""
    with Database(path) as db:
        return db.names()
