"""The second adversarial round's cases for bench/fuzz_parsers.py (issue 30): what an attacker tries
on the newer readers, beside the random damage of fuzz_mutators.py.

- SQLite (the real Nsight export and msprof database): a table traceview reads replaced by a view
  (a copy of its rows, or a recursive one that never ends), a VIRTUAL generated column that runs an
  expression on every row read, values of the wrong storage class (text, real, blob) in time, id
  and name columns, rows that end before they start or at ±2**63, string ids repeated so that
  joins multiply rows, planner statistics that say every table holds one row, the file made
  sparse and 10 GB large;
- memory snapshots (the shipped pickle): memo slots far beyond the file (LONG_BINPUT / BINPUT),
  lengths past its end (BINBYTES8, BINUNICODE8, FRAME), a set, and the records shared by
  reference (one history for every device, one segment many times);
- wide CSVs: kernel_details.csv of an Ascend rank and the rocprofv3 kernel trace with hundreds to
  thousands of extra columns, and bad rows (end before start, times near ±2**63, text in numbers);
- bad rows in Kineto JSON: NaN and Infinity literals, values nested 1,100 to 5,000 deep, a key
  given twice, in random events; a device name of 16 KB.

Each writes its case under `dest` and returns (path to load, description).
"""

from __future__ import annotations

import gzip
import json
import os
import pickle
import random
import shutil
import sqlite3
import struct
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NSYS = ROOT / "tests/data/nsys/saxpy-mpi-cuda_nsys_perlmutter0.sqlite.gz"
MSPROF = ROOT / "tests/data/msprof/msprof_0.db"
SNAPSHOT = ROOT / "tests/data/snapshot/memory_snapshot.pickle"
ASCEND = ROOT / "sample_traces/ascend_2rank/rank0_ascend_pt"
ROCPROF = ROOT / "tests/data/rocprof/omp_output"
KINETO = sorted(ROOT.glob("sample_traces/dp4_nccl/rank0.*.pt.trace.json.gz"))[0]

#: Tables each SQLite reader reads, and the columns of each that hold times, ids and names.
SQLITE_TABLES = {
    "nsys": {
        "CUPTI_ACTIVITY_KIND_KERNEL": ("start", "end", "demangledName", "correlationId", "streamId"),
        "CUPTI_ACTIVITY_KIND_RUNTIME": ("start", "end", "nameId", "correlationId"),
        "CUPTI_ACTIVITY_KIND_MEMCPY": ("start", "end", "bytes", "copyKind"),
        "StringIds": ("id", "value"),
        "NVTX_EVENTS": ("start", "end", "text"),
    },
    "msprof": {
        "TASK": ("startNs", "endNs", "globalTaskId", "streamId", "connectionId"),
        "COMPUTE_TASK_INFO": ("name", "globalTaskId", "opType"),
        "STRING_IDS": ("id", "value"),
        "CANN_API": ("startNs", "endNs", "connectionId", "name"),
    },
}
ENDLESS = "WITH RECURSIVE r(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM r)"
ODD_SQL_VALUES = ("'abc'", "'612'", "1.5e3", "x'00ff'", "NULL", str(2**63 - 1), str(-(2**63)), "-1", "''")


def _sqlite_copy(rnd: random.Random, dest: Path) -> tuple[Path, str]:
    if rnd.random() < 0.5:
        path = dest / "saxpy.sqlite"
        path.write_bytes(gzip.decompress(NSYS.read_bytes()))
        kind = "nsys"
    else:
        path = dest / "msprof_0.db"
        shutil.copy(MSPROF, path)
        kind = "msprof"
    with sqlite3.connect(path) as db:
        db.execute("PRAGMA journal_mode=DELETE")
    return path, kind


def _columns(db: sqlite3.Connection, table: str) -> list[tuple[str, str]]:
    return [(row[1], row[2]) for row in db.execute(f'PRAGMA table_info("{table}")')]


def _untyped(db: sqlite3.Connection, table: str) -> None:
    """Re-declare every column of `table` without a type (a value keeps the class it is written with)."""
    cols = [name for name, _ in _columns(db, table)]
    quoted = ", ".join(f'"{c}"' for c in cols)
    db.execute(f'ALTER TABLE "{table}" RENAME TO "{table}_old"')
    db.execute(f'CREATE TABLE "{table}" ({quoted})')
    db.execute(f'INSERT INTO "{table}" SELECT {quoted} FROM "{table}_old"')
    db.execute(f'DROP TABLE "{table}_old"')


def sqlite_case(rnd: random.Random, dest: Path) -> tuple[Path, str]:
    path, kind = _sqlite_copy(rnd, dest)
    tables = SQLITE_TABLES[kind]
    try:
        table, how = _sqlite_mutate(rnd, path, tables)
    except sqlite3.Error as exc:  # a mutation the file's constraints refuse: the copy as it is
        table, how = "-", f"not applied ({exc})"
    if how == "sparse":
        os.truncate(path, 10 * 2**30)
    return path, f"sqlite:{kind}:{table}:{how}"


def _sqlite_mutate(rnd: random.Random, path: Path, tables: dict) -> tuple[str, str]:
    """Apply one mutation to a table of `path` (module docstring); (table, mutation)."""
    with sqlite3.connect(path) as db:
        present = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        table = rnd.choice([t for t in tables if t in present])
        cols = [c for c in tables[table] if c in {n for n, _ in _columns(db, table)}]
        how = rnd.choice(["view", "endless_view", "generated", "types", "bad_rows", "repeat_ids", "sparse", "stats"])
        if how in ("view", "endless_view"):
            names = [n for n, _ in _columns(db, table)]
            if how == "endless_view":
                db.execute(f'DROP TABLE "{table}"')
                body = f"{ENDLESS} SELECT " + ", ".join(f'x AS "{n}"' for n in names) + " FROM r"
            else:
                db.execute(f'ALTER TABLE "{table}" RENAME TO "{table}_stored"')
                body = f'SELECT * FROM "{table}_stored"'
            db.execute(f'CREATE VIEW "{table}" AS {body}')
        elif how == "generated":
            expr = rnd.choice(
                ["length(printf('%.*c', 200000, 'x'))", "length(hex(zeroblob(65536)))", f'"{cols[0]}" * 7 % 5']
            )
            db.execute(f'ALTER TABLE "{table}" ADD COLUMN fuzz_generated GENERATED ALWAYS AS ({expr}) VIRTUAL')
        elif how == "types":
            _untyped(db, table)
            for _ in range(rnd.randint(1, 6)):
                col = rnd.choice(cols)
                db.execute(
                    f'UPDATE "{table}" SET "{col}" = {rnd.choice(ODD_SQL_VALUES)} WHERE rowid IN '
                    f'(SELECT rowid FROM "{table}" ORDER BY random() LIMIT {rnd.randint(1, 5)})'
                )
        elif how == "bad_rows" and cols[:2] in (["start", "end"], ["startNs", "endNs"]):
            start, end = cols[0], cols[1]
            value = rnd.choice([f'"{start}" - 1000', str(2**63 - 1), str(-(2**63)), f'"{start}" - 1000000000'])
            db.execute(
                f'UPDATE "{table}" SET "{end}" = {value} WHERE rowid IN '
                f'(SELECT rowid FROM "{table}" ORDER BY random() LIMIT {rnd.randint(1, 5)})'
            )
        elif how == "stats":  # planner statistics that say every table holds one row
            db.execute("ANALYZE")
            db.execute("UPDATE sqlite_stat1 SET stat = '1 1' WHERE stat LIKE '% %'")
            db.execute("UPDATE sqlite_stat1 SET stat = '1' WHERE stat NOT LIKE '% %'")
        elif how == "repeat_ids" and table in ("StringIds", "STRING_IDS"):
            _untyped(db, table)
            for _ in range(rnd.choice([2, 10, 50])):
                db.execute(f'INSERT INTO "{table}" SELECT * FROM "{table}" LIMIT 2000')
    return table, how


def _snapshot_ops() -> bytes:
    return SNAPSHOT.read_bytes()


def snapshot_case(rnd: random.Random, dest: Path) -> tuple[Path, str]:
    """A memory snapshot pickle: re-pickled with its records shared by reference, or its bytes
    given a memo slot, a length or a set an attacker chooses."""
    data = _snapshot_ops()
    how = rnd.choice(["share_history", "share_segment", "memo_slot", "long_length", "frame_length", "set"])
    if how.startswith("share"):
        doc = pickle.loads(data)  # the shipped test snapshot: plain data, written by tests/data/snapshot
        if how == "share_history" and doc.get("device_traces"):
            history = doc["device_traces"][0]
            doc["device_traces"] = [history] * rnd.choice([2, 50, 2000])
        elif doc.get("segments"):
            doc["segments"] = doc["segments"] * 1 + [doc["segments"][0]] * rnd.choice([2, 500])
        data = pickle.dumps(doc, protocol=rnd.choice([2, 4, 5]))
    elif how == "memo_slot":
        slot = rnd.choice([2**27, 2**31 - 1, 2**32 - 1, rnd.randrange(2**32)])
        at = rnd.randrange(2, len(data))
        data = data[:at] + b"r" + struct.pack("<I", slot) + data[at:]
    elif how == "long_length":
        opcode = rnd.choice([b"\x8e", b"\x8d", b"\x96"])  # BINBYTES8, BINUNICODE8, BYTEARRAY8
        at = rnd.randrange(2, len(data))
        data = data[:at] + opcode + struct.pack("<Q", rnd.choice([2**40, 2**62, 2**64 - 1])) + b"xx" + data[at:]
    elif how == "frame_length" and data[2:3] == b"\x95":
        data = data[:3] + struct.pack("<Q", rnd.choice([len(data), 2**40, 2**63])) + data[11:]
    else:
        at = rnd.randrange(2, len(data))
        data = data[:at] + rnd.choice([b"\x8f", b"\x8f\x91"]) + data[at:]  # EMPTY_SET, FROZENSET
    path = dest / "memory_snapshot.pickle"
    path.write_bytes(data)
    return path, f"snapshot:{how}"


def _widen_csv(rnd: random.Random, path: Path, extra: int) -> None:
    lines = path.read_text(encoding="utf-8").splitlines()
    names = "".join(f",{rnd.choice(['x', 'Name', 'Start Time(us)', ''])}{i}" for i in range(extra))
    body = [line + "," * extra for line in lines[1:]]
    path.write_text("\n".join([lines[0] + names, *body]) + "\n", encoding="utf-8")


def _bad_csv_rows(rnd: random.Random, path: Path, time_columns: tuple[str, ...]) -> None:
    """Set time cells of a few rows to values no number can use."""
    import csv

    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    header = rows[0]
    cols = [i for i, h in enumerate(header) if h.strip() in time_columns]
    for _ in range(rnd.randint(1, 5)):
        if len(rows) < 2 or not cols:
            break
        row = rows[rnd.randrange(1, len(rows))]
        i = rnd.choice(cols)
        if i < len(row):
            row[i] = rnd.choice(["9223372036854775807", "-9223372036854775808", "-5", "1e400", "NaN", "12:00", "0"])
    with open(path, "w", newline="", encoding="utf-8") as f:
        csv.writer(f).writerows(rows)


def csv_case(rnd: random.Random, dest: Path) -> tuple[Path, str]:
    extra = rnd.choice([600, 2000, 5000])
    if rnd.random() < 0.5:
        rank = dest / "rank0_ascend_pt"
        shutil.copytree(ASCEND, rank)
        path = rank / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv"
        times = ("Start Time(us)", "Duration(us)")
        target, what = rank, "ascend"
    else:
        for f in ROCPROF.iterdir():
            shutil.copy(f, dest / f.name)
        path = dest / "omp_kernel_trace.csv"
        times = ("Start_Timestamp", "End_Timestamp")
        target, what = path, "rocprof"
    desc = []
    if rnd.random() < 0.6:
        _bad_csv_rows(rnd, path, times)
        desc.append("bad_rows")
    if rnd.random() < 0.7:
        _widen_csv(rnd, path, extra)
        desc.append(f"wide{extra}")
    if what == "rocprof" and rnd.random() < 0.2:
        shutil.copy(path, dest / "omp_agent_info.csv")
        desc.append("agent_info_is_a_kernel_trace")
    return target, f"csv:{what}:" + "+".join(desc or ["copy"])


def kineto_case(rnd: random.Random, dest: Path) -> tuple[Path, str]:
    """The shipped dp4_nccl rank 0 with bad values spliced into random events' args, a key given
    twice, or a 16 KB device name."""
    doc = json.loads(gzip.decompress(KINETO.read_bytes()))
    events = doc["traceEvents"]
    how = rnd.choice(["bad_values", "duplicate_key", "long_device_name"])
    spliced = {}
    if how == "long_device_name":
        doc["deviceProperties"][0]["name"] = rnd.choice(["A10080GB", "V100", "H100PCIe", "MI300X"]) * rnd.choice(
            [2000, 20000]
        )
    else:
        for _ in range(rnd.randint(1, 40)):
            i = rnd.randrange(len(events))
            if how == "bad_values":
                depth = rnd.choice([1100, 5000])
                spliced[i] = rnd.choice([b"NaN", b"Infinity", b"-Infinity", b"[" * depth + b"]" * depth])
            else:
                spliced[i] = None
    parts = []
    for i, event in enumerate(events):
        raw = json.dumps(event, separators=(",", ":")).encode()
        if i in spliced and raw.endswith(b"}"):
            key = b'"ts":1,' if spliced[i] is None else b""
            value = b"" if spliced[i] is None else b',"fuzz":' + spliced[i]
            raw = b"{" + key + raw[1:-1] + value + b"}"
        parts.append(raw)
    head = json.dumps({k: v for k, v in doc.items() if k != "traceEvents"}, separators=(",", ":")).encode()
    path = dest / "rank0.pt.trace.json"
    path.write_bytes(head[:-1] + b',"traceEvents":[' + b",".join(parts) + b"]}")
    return path, f"kineto:{how}"


CASES = (sqlite_case, snapshot_case, csv_case, kineto_case)


def adversarial_case(rnd: random.Random, dest: Path) -> tuple[Path, str]:
    return rnd.choice(CASES)(rnd, dest)
