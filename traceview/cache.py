"""Parquet cache of parsed ranks, so a second open of an unchanged profile is near instant.

Layout: `<root>/<key>/<table>.parquet` for each canonical table plus `meta.json` (the rank's
metadata and warnings), and the rank-local analyses when they were computed where the rank was
parsed (`analysis.<name>.parquet` + `analysis.json`, used only by the same code:
`traceview.analysis.per_rank`). `key` hashes the parser version, the schema, the source's format and path,
and the path, size and mtime (ns) of every file the parser reads, so any change to the profile or
to traceview's parsers misses the cache. Entries are written to a temporary folder and renamed into
place, so a crash never leaves a half entry. Only Parquet and JSON are written: never pickle.

Root: `$TRACEVIEW_CACHE_DIR`, else `$XDG_CACHE_HOME/traceview`, else `~/.cache/traceview`.
"""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import uuid
from pathlib import Path

import orjson
import polars as pl

from parsers.base import PARSER_VERSION, ParsedRank
from parsers.detect import ASCEND_OUTPUT_DIR, Source
from traceview import schema
from traceview.analysis import per_rank

#: Changes whenever a canonical table gains, loses or retypes a column, so entries written with
#: another schema are never read back (even if someone forgot to bump PARSER_VERSION).
SCHEMA_DIGEST = hashlib.sha256(
    repr([(t, [(c, str(d)) for c, (d, _) in cols.items()]) for t, cols in schema.TABLES.items()]).encode()
).hexdigest()[:12]

META_FILE = "meta.json"


def default_root() -> Path:
    """Where the cache lives unless told otherwise (see module docstring)."""
    env = os.environ.get("TRACEVIEW_CACHE_DIR")
    if env:
        return Path(env)
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg else Path.home() / ".cache"
    return base / "traceview"


def input_files(source: Source) -> list[Path]:
    """The files whose change must invalidate the cache entry of `source`."""
    if source.path.is_file():
        return [source.path]
    files = [p for p in source.path.iterdir() if p.is_file()]
    out_dir = source.path / ASCEND_OUTPUT_DIR
    if out_dir.is_dir():
        files += [p for p in out_dir.iterdir() if p.is_file()]
    return sorted(files)


def key(source: Source) -> str:
    """Cache key of a source (hex digest); changes when any file the parser reads changes."""
    h = hashlib.sha256()
    h.update(f"v{PARSER_VERSION}|{SCHEMA_DIGEST}|{source.format}|{source.path.resolve()}".encode())
    for p in input_files(source):
        st = p.stat()
        h.update(f"|{p.name}|{st.st_size}|{st.st_mtime_ns}".encode())
    return h.hexdigest()[:32]


def pack(parsed: ParsedRank) -> dict[str, bytes]:
    """One parsed rank as the files of a cache entry, in memory: `{name: bytes}`, Parquet + meta.json.

    The form in which a rank travels between processes or machines (the Ray executor): never pickle.
    """
    files = {}
    for table, df in parsed.frames.items():
        buf = io.BytesIO()
        df.write_parquet(buf, compression="lz4", statistics=False)
        files[f"{table}.parquet"] = buf.getvalue()
    files[META_FILE] = orjson.dumps({"meta": parsed.meta, "warnings": parsed.warnings})
    if parsed.analyses:
        files.update(per_rank.to_files(parsed.analyses))
    return files


def unpack(files: dict[str, bytes]) -> ParsedRank:
    """The inverse of `pack` (raises OSError, orjson.JSONDecodeError or PolarsError on bad bytes)."""
    blob = orjson.loads(files[META_FILE])
    _check_meta(blob)
    frames = {name.removesuffix(".parquet"): pl.read_parquet(io.BytesIO(data))
              for name, data in files.items() if name.endswith(".parquet") and not name.startswith(per_rank.PREFIX)}
    for table, df in frames.items():  # a Parquet file swapped or edited by hand: not ours
        if table not in schema.TABLES or df.schema != schema.polars_schema(table):
            raise KeyError(f"{table}.parquet does not have the schema of a cache entry")
    return ParsedRank(frames=frames, meta=blob["meta"], warnings=blob["warnings"], analyses=per_rank.from_files(files))


def _check_meta(blob) -> None:
    """KeyError unless `blob` has the shape `pack` writes (an entry edited or damaged by hand)."""
    meta, warnings = (blob.get("meta"), blob.get("warnings")) if isinstance(blob, dict) else (None, None)
    rank = meta.get("rank") if isinstance(meta, dict) else None
    if (not isinstance(meta, dict) or not isinstance(warnings, list) or not all(isinstance(w, str) for w in warnings)
            or not (rank is None or (isinstance(rank, int) and not isinstance(rank, bool)))):
        raise KeyError("meta.json does not have the shape of a cache entry")


def write_entry(parsed: ParsedRank, folder: Path) -> Path:
    """Write one parsed rank as Parquet + meta.json into `folder` (atomically). Returns `folder`."""
    return write_files(pack(parsed), folder)


def write_files(files: dict[str, bytes], folder: Path) -> Path:
    """Write the files of an entry (`pack`'s output) into `folder` atomically. Returns `folder`."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = folder.parent / f".{folder.name}.{uuid.uuid4().hex}.tmp"
    tmp.mkdir()
    try:
        for name, data in files.items():
            (tmp / name).write_bytes(data)
        try:
            os.rename(tmp, folder)
        except OSError:
            if not folder.exists():  # lost a race with another writer: theirs is as good as ours
                raise
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return folder


def read_entry(folder: Path) -> ParsedRank | None:
    """A parsed rank from a cache folder, or None if the entry is missing or unreadable."""
    if not (folder / META_FILE).is_file():
        return None
    try:
        return unpack({p.name: p.read_bytes() for p in folder.iterdir() if p.suffix in (".parquet", ".json")})
    except (OSError, KeyError, orjson.JSONDecodeError, pl.exceptions.PolarsError):
        return None
