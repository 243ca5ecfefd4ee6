"""Parquet cache of parsed ranks, so a second open of an unchanged profile is near instant.

Layout: `<root>/<key>/<table>.parquet` for each canonical table plus `meta.json` (the rank's
metadata and warnings, and the entry's manifest), and the rank-local analyses when they were
computed where the rank was parsed (`analysis.<name>.parquet` + `analysis.json`, used only by the
same code: `traceview.per_rank`). Only Parquet and JSON are written: never pickle. Small ranks
parsed together (`traceview.rank_groups`) share one entry, keyed by their members' keys
(`group_key`): its tables hold all members' rows (`rank` = the member's index) and meta.json each
member's metadata and warnings; only a group all of whose members parsed is cached.

Key (`key`): a hash of the ingestion code (`traceview.digest.ingestion_digest`: the parsers, the
schema, the rule tables, the polars major version), the source's format and path, and for every
file the parser reads its name, size, mtime, ctime, inode and device: a rewrite changes the ctime
(and a copy the inode) even when the size and mtime are restored, so any change to the profile or
to traceview's ingestion code misses the cache; nothing is bumped by hand.

Trust: an entry is used only when its manifest (in meta.json, written last) lists every file with
its size, SHA-256 digest and, for tables, row count, every canonical table is among them, and the
entry's own key is the folder's name. Anything else (a file missing, truncated, edited, or swapped
with another rank's) makes `read_entry` return None: the rank is parsed again and the entry
replaced, once, atomically (`write_files`: a new folder renamed into place).

Size: the cache is kept under `$TRACEVIEW_CACHE_MAX` (bytes, K/M/G/T suffix; `off` for no limit;
default 10G) by `evict`, least recently used first (a read marks an entry used).

Root: `$TRACEVIEW_CACHE_DIR`, else `$XDG_CACHE_HOME/traceview`, else `~/.cache/traceview`.
"""

from __future__ import annotations

import hashlib
import io
import os
import re
import shutil
import time
import uuid
from pathlib import Path

import orjson
import polars as pl

from traceview import digest, per_rank, schema
from traceview.parsers.base import ParsedRank, RankGroup
from traceview.parsers.detect import Source, input_files
from traceview.sizes import parse_size

META_FILE = "meta.json"
#: The canonical tables every entry holds (the `ranks` table is rebuilt from meta.json).
TABLE_FILES = tuple(f"{t}.parquet" for t in schema.TABLES if t != "ranks")
#: An entry folder's name (`key`'s output), and a writer's temporary folder (`write_files`).
ENTRY_NAME = re.compile(r"^[0-9a-f]{32}$")
TMP_NAME = re.compile(r"^\.[0-9a-f]{32}\.[0-9a-f]{32}(\.old)?\.tmp$")

MAX_ENV = "TRACEVIEW_CACHE_MAX"
DEFAULT_MAX_BYTES = 10 * 2**30
#: A writer's temporary folder older than this is left from a process that died: removed by `evict`.
STALE_TMP_S = 3600


def default_root() -> Path:
    """Where the cache lives unless told otherwise (see module docstring)."""
    env = os.environ.get("TRACEVIEW_CACHE_DIR")
    if env:
        return Path(env)
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg else Path.home() / ".cache"
    return base / "traceview"


def key(source: Source) -> str:
    """Cache key of a source (hex digest); changes when any file the parser reads changes, or is
    rewritten or replaced (see the module docstring). Paths are hashed as bytes (any file name)."""
    h = hashlib.sha256(f"{digest.ingestion_digest()}|{source.format}|{source.task_kinds}|".encode())
    h.update(os.fsencode(source.path.resolve()))
    for p in input_files(source):
        st = p.stat()
        h.update(b"|" + os.fsencode(p.name))
        h.update(f"|{st.st_size}|{st.st_mtime_ns}|{st.st_ctime_ns}|{st.st_ino}|{st.st_dev}".encode())
    return h.hexdigest()[:32]


def group_key(sources: list[Source]) -> str:
    """Cache key of a group of small ranks (`traceview.rank_groups`): a hash of its members' keys,
    in order (so it changes when any member's does, or the group's membership)."""
    h = hashlib.sha256(b"group")
    for source in sources:
        h.update(b"|" + key(source).encode())
    return h.hexdigest()[:32]


#: The file that stamps an entry's analyses with the code that computed them; their files' prefix.
STAMP_FILE = "analysis.json"
PREFIX = "analysis."


def analysis_files(analyses: dict[str, bytes], rules: str = "") -> dict[str, bytes]:
    """Rank-local analyses (`per_rank.compute`) as files of an entry: `analysis.<name>.parquet`
    each, and the stamp: the code that computed them (`digest.analysis_digest`) and the digest of
    the rules they were computed with (`rules`: `RuleSet.digest`, "" = the shipped ones)."""
    files = {f"{PREFIX}{name}.parquet": data for name, data in analyses.items()}
    stamp = {"code_digest": digest.analysis_digest(), "rules": rules, "analyses": sorted(analyses)}
    files[STAMP_FILE] = orjson.dumps(stamp)
    return files


def analyses_of(files: dict[str, bytes]) -> tuple[dict[str, bytes] | None, str]:
    """The analyses stored in an entry's files (`analysis_files`), or None when there are none, the
    stamp is not this code's, or one is missing; and the digest of the rules they were computed
    with. (A load with other rules computes its own: `traceview.loader`.)"""
    try:
        stamp = orjson.loads(files[STAMP_FILE])
    except (KeyError, orjson.JSONDecodeError):
        return None, ""
    if not isinstance(stamp, dict) or stamp.get("code_digest") != digest.analysis_digest():
        return None, ""
    rules = stamp.get("rules", "")
    analyses = {name: files.get(f"{PREFIX}{name}.parquet") for name in per_rank.ANALYSES}
    complete = all(v is not None for v in analyses.values()) and isinstance(rules, str)
    return (analyses, rules) if complete else (None, "")


def pack(parsed: ParsedRank) -> dict[str, bytes]:
    """One parsed rank as the files of a cache entry, in memory: `{name: bytes}`, Parquet + meta.json
    (with the manifest: each other file's size, digest and rows). The form in which a rank travels
    between processes or machines (local workers, Ray tasks): never pickle."""
    head = {"meta": parsed.meta, "warnings": parsed.warnings}
    return _pack(parsed.frames, parsed.analyses, parsed.analyses_rules, head)


def with_analyses(files: dict[str, bytes], analyses: dict[str, bytes], rules: str = "") -> dict[str, bytes]:
    """An entry's files (`pack`'s output, or what `unpack` read) with its rank-local analyses
    replaced by `analyses` (`per_rank` Parquet bytes by name, computed with the rules whose digest
    is `rules`) and its manifest updated; the other files are kept as they are (not encoded
    again)."""
    blob = orjson.loads(files[META_FILE])
    kept = {n: d for n, d in files.items() if n != META_FILE and n != STAMP_FILE and not n.startswith(PREFIX)}
    added = analysis_files(analyses, rules)
    manifest = {n: i for n, i in blob["files"].items() if n in kept}
    manifest.update({n: _listed(d) for n, d in added.items()})
    blob["files"] = manifest
    blob.pop("key", None)
    return {**kept, **added, META_FILE: orjson.dumps(blob)}


def pack_group(group: RankGroup) -> dict[str, bytes]:
    """A group of small ranks (`RankGroup`) as the files of one cache entry: its concatenated
    frames as the tables, and in meta.json each member's metadata and warnings and each source's
    error line (None: it parsed)."""
    members = [{"meta": m, "warnings": w} for m, w in zip(group.metas, group.warnings)]
    head = {"meta": {}, "warnings": [], "members": members, "errors": group.errors}
    return _pack(group.frames, group.analyses, group.analyses_rules, head)


def _pack(frames: dict, analyses: dict[str, bytes] | None, rules: str, head: dict) -> dict[str, bytes]:
    files, rows = {}, {}
    for table, df in frames.items():
        buf = io.BytesIO()
        df.write_parquet(buf, compression="lz4", statistics=False)
        files[f"{table}.parquet"] = buf.getvalue()
        rows[f"{table}.parquet"] = df.height
    if analyses:
        files.update(analysis_files(analyses, rules))
    manifest = {name: _listed(data, rows.get(name)) for name, data in files.items()}
    files[META_FILE] = orjson.dumps({**head, "files": manifest})
    return files


def _listed(data: bytes, rows: int | None = None) -> dict:
    """A file's manifest line: its size, SHA-256 and, for a table, its rows."""
    return {"bytes": len(data), "sha256": _digest(data), "rows": rows}


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def unpack(files: dict[str, bytes], entry_key: str | None = None) -> ParsedRank | RankGroup:
    """The inverse of `pack` (a ParsedRank) or `pack_group` (a RankGroup), verified: KeyError (or
    OSError, orjson.JSONDecodeError, PolarsError on bad bytes) unless every file the manifest lists
    is present with its size and digest, every canonical table is listed with the schema and row
    count recorded, and, when `entry_key` is given, the entry was written under that key. Files the
    manifest does not list are ignored."""
    blob = orjson.loads(files[META_FILE])
    manifest = _check_meta(blob)
    if entry_key is not None and blob.get("key") != entry_key:
        raise KeyError("meta.json belongs to another cache entry")
    missing = [t for t in TABLE_FILES if t not in manifest]
    if missing:
        raise KeyError(f"the manifest lists no {missing[0]}")
    for name, info in manifest.items():
        data = files.get(name)
        if data is None or len(data) != info["bytes"] or _digest(data) != info["sha256"]:
            raise KeyError(f"{name} is missing or differs from the manifest")
    frames = {}
    for name in TABLE_FILES:
        table = name.removesuffix(".parquet")
        df = pl.read_parquet(io.BytesIO(files[name]))
        if df.schema != schema.polars_schema(table) or df.height != manifest[name]["rows"]:
            raise KeyError(f"{name} does not have the schema or rows of a cache entry")
        frames[table] = df
    analyses, rules = analyses_of({n: files[n] for n in manifest if n.startswith(PREFIX)})
    if "members" in blob:
        members, errors = _check_group(blob)
        if any((frames[t]["rank"].max() or 0) >= len(members) for t in frames if frames[t].height):
            raise KeyError("a group entry's rows name a member it does not have")
        metas = [m["meta"] for m in members]
        warnings = [m["warnings"] for m in members]
        return RankGroup(frames, metas, warnings, errors, analyses=analyses, analyses_rules=rules, packed=files)
    return ParsedRank(
        frames=frames,
        meta=blob["meta"],
        warnings=blob["warnings"],
        analyses=analyses,
        analyses_rules=rules,
        packed=files,
    )


def member_metas(folder: Path, count: int) -> list[dict] | None:
    """The members' metadata of the complete group entry at `folder` holding `count` ranks, read
    from its meta.json alone (no table is read or verified: enough to know which ranks it holds),
    or None when there is no such entry."""
    try:
        blob = orjson.loads((folder / META_FILE).read_bytes())
        members, errors = _check_group(blob) if isinstance(blob, dict) else (None, None)
    except (OSError, KeyError, orjson.JSONDecodeError):
        return None
    if members is None or len(errors) != count or len(members) != count:
        return None
    return [m["meta"] for m in members]


def _check_group(blob: dict) -> tuple[list[dict], list[str | None]]:
    """The members and errors of a group's meta.json; KeyError unless they have `pack_group`'s shape."""
    members, errors = blob.get("members"), blob.get("errors")
    if (
        not isinstance(members, list)
        or not isinstance(errors, list)
        or not all(e is None or isinstance(e, str) for e in errors)
        or sum(e is None for e in errors) != len(members)
        or not all(
            isinstance(m, dict)
            and isinstance(m.get("meta"), dict)
            and isinstance(m.get("warnings"), list)
            and all(isinstance(w, str) for w in m["warnings"])
            for m in members
        )
    ):
        raise KeyError("meta.json does not have the shape of a group entry")
    return members, errors


def _check_meta(blob) -> dict:
    """The manifest of a meta.json; KeyError unless `blob` has the shape `pack` writes."""
    meta, warnings, manifest = (
        (blob.get("meta"), blob.get("warnings"), blob.get("files")) if isinstance(blob, dict) else (None, None, None)
    )
    rank = meta.get("rank") if isinstance(meta, dict) else None
    if (
        not isinstance(meta, dict)
        or not isinstance(warnings, list)
        or not all(isinstance(w, str) for w in warnings)
        or not (rank is None or (isinstance(rank, int) and not isinstance(rank, bool)))
    ):
        raise KeyError("meta.json does not have the shape of a cache entry")
    if not isinstance(manifest, dict) or not all(
        isinstance(n, str)
        and "/" not in n
        and isinstance(i, dict)
        and isinstance(i.get("bytes"), int)
        and isinstance(i.get("sha256"), str)
        and (i.get("rows") is None or isinstance(i.get("rows"), int))
        for n, i in manifest.items()
    ):
        raise KeyError("meta.json has no manifest of the entry's files")
    return manifest


def write_files(files: dict[str, bytes], folder: Path) -> Path:
    """Write the files of an entry (`pack`'s output) as the entry `folder`, stamped with its key
    (the folder's name), atomically: into a new folder renamed into place, meta.json last. An
    existing entry there (damaged, or stale) is replaced. Returns `folder`; raises OSError."""
    blob = orjson.loads(files[META_FILE])
    blob["key"] = folder.name
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = folder.parent / f".{folder.name}.{uuid.uuid4().hex}.tmp"
    tmp.mkdir()
    try:
        for name, data in files.items():
            if name != META_FILE:
                (tmp / name).write_bytes(data)
        (tmp / META_FILE).write_bytes(orjson.dumps(blob))
        try:
            os.rename(tmp, folder)
        except OSError:
            if not folder.exists():
                raise
            old = folder.parent / f".{folder.name}.{uuid.uuid4().hex}.old.tmp"
            try:
                os.rename(folder, old)  # the entry there was not usable (else it was not re-parsed)
            except FileNotFoundError:
                pass  # another writer moved it meanwhile
            try:
                os.rename(tmp, folder)
            except OSError:
                if not folder.exists():
                    raise  # else: lost a race with another writer; theirs is as good as ours
            shutil.rmtree(old, ignore_errors=True)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return folder


def read_entry(folder: Path) -> ParsedRank | RankGroup | None:
    """A parsed rank (or a group of small ranks) from a cache folder, or None if the entry is missing, incomplete, damaged or
    not this folder's (see the module docstring). A good entry is marked as used (for `evict`)."""
    try:
        names = {p.name for p in folder.iterdir()}
    except OSError:
        return None
    if META_FILE not in names:
        return None
    try:
        files = {name: (folder / name).read_bytes() for name in names if name.endswith((".parquet", ".json"))}
        entry = unpack(files, folder.name)
    except (OSError, KeyError, orjson.JSONDecodeError, pl.exceptions.PolarsError):
        return None
    try:
        os.utime(folder)
    except OSError:
        pass
    return entry


def max_bytes() -> int | None:
    """The cache's size limit in bytes (`$TRACEVIEW_CACHE_MAX`, default 10G), None for no limit."""
    text = os.environ.get(MAX_ENV, "").strip()
    if not text:
        return DEFAULT_MAX_BYTES
    return parse_size(text, MAX_ENV)


def evict(root: Path, keep: set[str] = frozenset(), limit: int | None = None) -> list[str]:
    """Remove least-recently-used entries of the cache at `root` until it holds at most `limit`
    bytes (default `max_bytes()`), never those named in `keep` (the entries of the load in
    progress); also removes writers' temporary folders left for over an hour. Returns the removed
    entries' names. Errors (an entry removed meanwhile) are ignored."""
    limit = max_bytes() if limit is None else limit
    entries = []
    now = time.time()
    try:
        children = list(os.scandir(root))
    except OSError:
        return []
    for child in children:
        try:
            if not child.is_dir(follow_symlinks=False):
                continue
            if TMP_NAME.match(child.name):
                if now - child.stat(follow_symlinks=False).st_mtime > STALE_TMP_S:
                    shutil.rmtree(child.path, ignore_errors=True)
                continue
            if ENTRY_NAME.match(child.name) and os.path.isfile(os.path.join(child.path, META_FILE)):
                size = sum(f.stat(follow_symlinks=False).st_size for f in os.scandir(child.path))
                entries.append((child.stat(follow_symlinks=False).st_mtime, child.name, size))
        except OSError:
            continue
    if limit is None:
        return []
    total = sum(size for _, _, size in entries)
    removed = []
    for _, name, size in sorted(entries):
        if total <= limit:
            break
        if name in keep:
            continue
        shutil.rmtree(root / name, ignore_errors=True)
        total -= size
        removed.append(name)
    return removed
