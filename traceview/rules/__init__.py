"""The rule tables, read one way: what each kind of task is (`task_kinds.toml`), its compute class
(`compute_classes.toml`), the findings (`findings.toml`), the devices' peaks
(`device_peaks.toml`) and what the host is doing (`phases.toml`: data loading), TOML files in this
folder.

Every table lists its rules as `[[rule]]` entries (task kinds group theirs by format). A user
extends them with a rules file of either form:

- one file for all tables (`traceview.load(..., rules=FILE)`, `--rules FILE`): a section per
  table it extends, `[[task_kinds.kineto.communication]]`, `[[compute_classes.rule]]`,
  `[[findings.rule]]`, `[[device_peaks.rule]]`, `[[phases.data_loading]]` (docs/rules.md);
- a file of one table (`--classes`, `--findings-rules`, `--device-rules`): that table's `[[rule]]`
  entries at the top.

`traceview.ruleset` reads a load's files once and builds every table (the code that builds a table
puts the user's entries first or merges them by id; `section_of` gives each its part of a
document); this module only reads files, checks regexes and numbers, and says, in one line naming
the file (and the entry), what is wrong with one (`RulesError`).
"""

from __future__ import annotations

import copy
import functools
from pathlib import Path

try:  # Python >= 3.11
    import tomllib
except ModuleNotFoundError:  # pragma: no cover - Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

RULES_DIR = Path(__file__).resolve().parent
TABLES = ("task_kinds", "compute_classes", "findings", "device_peaks", "phases", "op_flops", "device_op_flops")
#: The tables a user's rules file extends (`traceview.ruleset`); the operator FLOP tables are shipped only.
USER_TABLES = TABLES[:5]
#: The tables analyses read as inputs (`"rules.<table>"` in a declaration; `traceview.ruleset.RuleSet`).
ANALYSIS_TABLES = ("compute_classes", "findings", "device_peaks", "phases", "op_flops", "device_op_flops")


class RulesError(ValueError):
    """A rules file cannot be used: one line naming the file, the entry and the problem."""


def read(path: str | Path) -> dict:
    """The TOML document of a rules file (RulesError if it cannot be read or is not TOML).

    A file is opened once per process while it stays the same file with the same size and
    modification time (`_parsed`): every RuleSet built from it in a process shares one read (a
    copy each, so no reader sees another's changes). An edited file is read again."""
    path = Path(path)
    try:
        st = path.stat()
    except FileNotFoundError:
        raise RulesError(f"cannot read rules file {path}: no such file") from None
    except OSError as exc:
        raise RulesError(f"cannot read rules file {path}: {exc}") from None
    identity = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
    return copy.deepcopy(_parsed(str(path), identity))


@functools.lru_cache(maxsize=32)
def _parsed(path: str, identity: tuple[int, int, int, int]) -> dict:
    """The document of `path` as it was when its (device, inode, size, mtime) was `identity`."""
    try:
        text = Path(path).read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise RulesError(f"cannot read rules file {path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise RulesError(f"cannot read rules file {path}: {exc}") from None
    try:
        return tomllib.loads(text)
    except ValueError as exc:  # TOMLDecodeError, or Python's refusal of an integer of over 4,300 digits
        raise RulesError(f"cannot read rules file {path}: invalid TOML: {exc}") from None


@functools.cache
def shipped(table: str) -> dict:
    """The document of a shipped table (read once per process; its regexes compiled at once:
    `prevalidate`)."""
    if table not in TABLES:
        raise KeyError(f"no rule table {table!r}: one of {', '.join(TABLES)}")
    doc = read(shipped_path(table))
    prevalidate(doc)
    return doc


@functools.cache
def op_flops_names() -> tuple[str, ...]:
    """The operators `op_flops.toml` lists (whose input types and concrete inputs the Kineto
    reader keeps for the roofline)."""
    return tuple(r["name"] for r in shipped("op_flops").get("rule", []) if isinstance(r.get("name"), str))


def shipped_path(table: str) -> Path:
    return RULES_DIR / f"{table}.toml"


#: The keys whose values are regexes, in every table (`prevalidate` checks their values at once).
REGEX_KEYS = frozenset({"pattern", "name", "launch_op", "op_type", "core_type", "match", "exclude", "host", "task"})

#: Regexes (prefix included) polars has compiled in this process (`prevalidate`, `check_regex`).
_VALID: set[str] = set()


def prevalidate(doc: object) -> None:
    """Compile every string under a regex key of `doc` (a rules document, walked whole), plain and
    case-insensitive, in one polars call, and remember those that compile: `check_regex` then
    costs no polars call for them (one call per pattern was 0.2 s per process for the shipped
    tables). Nothing is refused here: a pattern that does not compile is left to `check_regex`,
    which names it."""
    import polars as pl

    found: list[str] = []

    def walk(value: object, key: str | None) -> None:
        if isinstance(value, dict):
            for k, v in value.items():
                walk(v, k)
        elif isinstance(value, list):
            for v in value:
                walk(v, key)
        elif isinstance(value, str) and value and key in REGEX_KEYS:
            found.extend(p for p in (value, "(?i)" + value) if p not in _VALID)

    walk(doc, None)
    found = list(dict.fromkeys(found))
    if not found:
        return
    text = pl.DataFrame({"x": [""]}, schema={"x": pl.String})
    try:
        text.select([pl.col("x").str.contains(p).alias(str(i)) for i, p in enumerate(found)])
    except Exception:  # noqa: BLE001 - one bad pattern: each is checked alone where it is used
        return
    _VALID.update(found)


def check_regex(pattern: object, where: str, key: str = "pattern", prefix: str = "", hint: str = "") -> str:
    """`pattern` if polars can use it as a regex (`prefix` + pattern), else RulesError naming
    `where`, the key and the problem (polars uses Rust regex syntax: linear time in the text it
    searches, so no look-around or back-references); `hint` ends the message."""
    import polars as pl

    if not isinstance(pattern, str) or not pattern:
        raise RulesError(f"{where}: '{key}' must be a non-empty regex string, got {shown(pattern)}")
    if prefix + pattern in _VALID:
        return pattern
    try:
        pl.Series("x", [""], dtype=pl.String).str.contains(prefix + pattern)
    except Exception as exc:  # noqa: BLE001 - polars raises ComputeError on a bad pattern
        lines = str(exc).strip().splitlines()
        detail = " ".join(line.strip() for line in lines if line.strip())[:300]
        raise RulesError(
            f"{where}: invalid regex for '{key}': {shown(pattern, 120)} ({detail}; "
            f"patterns use Rust regex syntax: no look-around or back-references{hint})"
        ) from None
    _VALID.add(prefix + pattern)
    return pattern


def shown(value: object, width: int = 60) -> str:
    """`repr(value)` cut to about `width` characters (an error line quotes what it refuses, and a
    refused value may be megabytes long)."""
    if isinstance(value, int) and value.bit_length() > 128:  # repr of a huge int may be refused by Python
        return f"an integer of {value.bit_length()} bits"
    text = repr(value)
    return text if len(text) <= width else f"{text[: width - 5]}...{text[-2:]}"


def _bound(x: float) -> str:
    return str(x) if isinstance(x, int) else f"{x:g}"


def check_number(value: object, where: str, key: str, low: float, high: float, integer: bool = False) -> float | int:
    """`value` if it is a number (an integer with `integer`; never a Boolean) from `low` to `high`
    inclusive (so finite: nan and inf are refused), else RulesError naming `where` and the key."""
    kind = "an integer" if integer else "a number"
    ok = isinstance(value, int) if integer else isinstance(value, (int, float))
    if isinstance(value, bool) or not ok or not low <= value <= high:  # type: ignore[operator]
        raise RulesError(f"{where}: '{key}' must be {kind} from {_bound(low)} to {_bound(high)}, got {shown(value)}")
    return value  # type: ignore[return-value]


def is_combined(doc: dict) -> bool:
    """Whether a document is a file for all tables (its top-level keys name tables)."""
    return bool(set(doc) & set(TABLES))


def check_combined(doc: dict, label: str) -> dict:
    """`doc`, a file for all tables (`--rules`) named `label`; RulesError naming any top-level key
    that is no table a user extends (the operator FLOP tables are shipped only), or a file with
    none."""
    unknown = sorted(set(doc) - set(USER_TABLES))
    if unknown or not doc:
        what = f"unknown top-level key(s) {', '.join(unknown)}" if unknown else "no section"
        raise RulesError(f"{label}: {what} (a rules file holds sections named {', '.join(USER_TABLES)})")
    for table in doc:
        if not isinstance(doc[table], dict):
            raise RulesError(f"{label}: [{table}] must be a table")
    return doc


def section_of(doc: dict, label: str, table: str) -> dict | None:
    """The part of a user's rules document `doc` (a file named `label`) for `table`: its `[table]`
    section in a file for all tables (None when it has none), else the whole document (a file of
    one table)."""
    if not is_combined(doc):
        return doc
    return check_combined(doc, label).get(table)


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
