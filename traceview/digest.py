"""Digests of traceview's own code, so that a cache entry is used only by the code that wrote it:
the keys follow the code, no version number is bumped by hand.

- `ingestion_digest()`: what a parsed rank depends on besides its files: the source of
  traceview.parsers (every format, discovery, steps), the task-kind rules and their loader, the
  canonical schema, and the polars major version (Parquet files and dtypes). Part of every
  parse entry's key (`traceview.cache.key`) and compared between a Ray worker and its driver.
- `analysis_digest()`: what the rank-local analyses cached with a rank depend on: the files of
  ANALYSIS_FOLDERS (the model, the analyses, the rule tables, the parsers; not the views or the
  CLI) and the exact polars version (`traceview.cache.pack`).

Both read the source files of the explicit folders below the package (the same in a checkout and
an install) once per process (a few ms).
"""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path

import polars as pl

SUFFIXES = (".py", ".toml")


#: The folders of the package (relative to it) whose files the rank-local analyses depend on, and
#: whether their subfolders count: "." is the model's own modules (not cli/ or dashboards/).
ANALYSIS_FOLDERS = ((".", False), ("analysis", True), ("rules", True), ("parsers", True))

PACKAGE = Path(__file__).resolve().parent


def _hash_tree(h, name: str, roots, recursive: bool = True) -> None:
    for root in map(Path, roots):
        for path in sorted(root.rglob("*") if recursive else root.glob("*")):
            if path.suffix in SUFFIXES and "__pycache__" not in path.parts and path.is_file():
                h.update(f"|{name}/{path.relative_to(root).as_posix()}|".encode())
                h.update(path.read_bytes())


@functools.cache
def ingestion_digest() -> str:
    """Hex digest of the ingestion code, the task-kind rules, the schema and the polars major version."""
    import traceview.parsers
    import traceview.rules
    from traceview import schema

    h = hashlib.sha256(f"polars {pl.__version__.split('.')[0]}".encode())
    _hash_tree(h, "traceview.parsers", traceview.parsers.__path__)
    h.update(traceview.rules.shipped_path("task_kinds").read_bytes())
    h.update(Path(traceview.rules.__file__).read_bytes())
    h.update(Path(schema.__file__).read_bytes())
    return h.hexdigest()[:16]


@functools.cache
def analysis_digest() -> str:
    """Hex digest of the files of ANALYSIS_FOLDERS and the exact polars version."""
    h = hashlib.sha256(pl.__version__.encode())
    for folder, recursive in ANALYSIS_FOLDERS:
        _hash_tree(h, f"traceview/{folder}", [PACKAGE / folder], recursive)
    return h.hexdigest()[:16]
