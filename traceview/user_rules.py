"""A user's rules file for all tables (`traceview.load(path, rules=FILE)`, `--rules FILE`), read and
checked before anything is parsed.

The file holds a section per rule table it extends (see `traceview.rules` and docs/rules.md):
`[task_kinds]` (applied while parsing: it travels with every rank's `Source` and enters its cache
key), `[compute_classes]`, `[findings]`, `[device_peaks]` and `[phases]` (added by `Trace.run`
to the analyses that read those tables). Every section is checked by the code that will use it, so a bad
file is one line (TraceError) before a long load, never a wrong number after it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from traceview import rules as rule_tables
from traceview.errors import TraceError
from traceview.parsers import kinds


@dataclass(frozen=True)
class UserRules:
    """What a load takes from a user's rules file (all empty without one)."""

    #: the file as given (None: no file)
    file: str | None = None
    #: the tables the file extends
    tables: frozenset[str] = frozenset()
    #: its `[task_kinds]` section as canonical JSON ("" = none): what each Source carries
    task_kinds: str = ""


def user_rules(path: str | os.PathLike | None) -> UserRules:
    """The checked rules file `path` (None: no file); TraceError naming the file, the section and
    the entry when any part of it cannot be used."""
    if path is None:
        return UserRules()
    from traceview.analysis import classes, findings, phases, throughput

    file = os.fspath(Path(path).resolve())  # analyses read it again later, whatever the working folder
    fix = "fix the rules file (docs/rules.md shows each section)"
    try:
        doc = rule_tables.check_combined(file)
        task_kinds = kinds.user_section(doc.get("task_kinds"), file)
        if "compute_classes" in doc:
            classes.load_rules(file)
        if "findings" in doc:
            findings.load_rules(file)
        if "device_peaks" in doc:
            throughput.load_device_peaks(file)
        if "phases" in doc:
            phases.load_host_rules(file)
    except (ValueError, OSError) as exc:
        raise TraceError(None, str(exc), fix) from None
    return UserRules(file, frozenset(doc), task_kinds)
