"""The rule tables, read one way: what each kind of task is (`task_kinds.toml`), its compute class
(`compute_classes.toml`), the findings (`findings.toml`) and the devices' peaks
(`device_peaks.toml`), TOML files in this folder.

Every table lists its rules as `[[rule]]` entries (task kinds group theirs by format). A user's
file (`--classes`, `--findings-rules`) holds `[[rule]]` entries of the same shape, which the
analysis that reads the table puts first or merges by id; this module only reads files and says,
in one line naming the file (and the entry), what is wrong with one (`RulesError`).
"""

from __future__ import annotations

import functools
from pathlib import Path

try:  # Python >= 3.11
    import tomllib
except ModuleNotFoundError:  # pragma: no cover - Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

RULES_DIR = Path(__file__).resolve().parent
TABLES = ("task_kinds", "compute_classes", "findings", "device_peaks")


class RulesError(ValueError):
    """A rules file cannot be used: one line naming the file, the entry and the problem."""


def read(path: str | Path) -> dict:
    """The TOML document of a rules file (RulesError if it cannot be read or is not TOML)."""
    path = Path(path)
    try:
        text = path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise RulesError(f"cannot read rules file {path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise RulesError(f"cannot read rules file {path}: {exc}") from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise RulesError(f"cannot read rules file {path}: invalid TOML: {exc}") from None


@functools.cache
def shipped(table: str) -> dict:
    """The document of a shipped table (read once per process)."""
    if table not in TABLES:
        raise KeyError(f"no rule table {table!r}: one of {', '.join(TABLES)}")
    return read(shipped_path(table))


def shipped_path(table: str) -> Path:
    return RULES_DIR / f"{table}.toml"


def entries(doc: dict, path: str | Path, key: str = "rule", allowed: tuple[str, ...] = ()) -> list[dict]:
    """The `[[rule]]` entries of a document, each a table; RulesError for any other top-level key
    (but those in `allowed`), no entries, or an entry that is not a table."""
    unknown = sorted(set(doc) - {key, *allowed})
    if unknown:
        raise RulesError(f"{path}: unknown top-level key(s) {', '.join(unknown)} (a rules file holds [[{key}]] tables)")
    found = doc.get(key)
    if not isinstance(found, list) or not found:
        raise RulesError(f"{path}: no [[{key}]] tables found")
    for i, entry in enumerate(found, start=1):
        if not isinstance(entry, dict):
            raise RulesError(f"{path}: {key} {i}: each {key} must be a table")
    return found
