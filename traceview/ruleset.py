"""The rules of a load as one value: `RuleSet`, every rule table parsed and checked once.

A RuleSet holds the shipped tables (`traceview/rules/*.toml`) extended by a user's rules files:
- a file for all tables (`traceview.load(path, rules=FILE)`, `--rules FILE`): a section per table
  it extends, `[task_kinds]`, `[compute_classes]`, `[findings]`, `[device_peaks]`, `[phases]`
  (docs/rules.md);
- a file of one table (`--classes`, `--findings-rules`, `--device-rules`: shorthands of `--rules`
  for one table): its `[[rule]]` entries at the top (a file for all tables given there gives only
  that table's section). Their entries come before those of the `--rules` file.

`build` reads each file once (`traceview.rules.read`), before anything is parsed, and checks every
section with the code that uses it, so a bad file is one line (TraceError) before a long load,
never a wrong number after it. The user's documents are kept as canonical JSON (`documents`):
what a worker process or a Ray task is handed to build the same RuleSet (`from_documents`)
without opening the file, and, hashed (`digest`), what the rank-local analyses cached with a rank
were computed with (`traceview.cache`).

The task kinds apply while parsing (`task_kinds` travels with every rank's `Source` and enters its
cache key); the other tables are analyses' inputs (`"rules.<table>"` in a declaration, resolved by
`Trace.run` from `Trace.rules`), the operator FLOP tables (shipped only: a user's file cannot
extend them) among them. No analysis reads a file.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import os
from collections.abc import Mapping
from pathlib import Path

import polars as pl

from traceview import rules as rule_tables
from traceview.analysis import classes, device_peaks, findings, flop_formulas, phases
from traceview.errors import TraceError
from traceview.parsers import kinds

#: The shorthand flags of `--rules` for one table, by table.
TABLE_FLAGS = {"compute_classes": "--classes", "findings": "--findings-rules", "device_peaks": "--device-rules"}

_FIX = "fix the rules file (docs/rules.md shows each section)"


@dataclasses.dataclass(frozen=True, eq=False)
class RuleSet:
    """The parsed, checked rule tables of a load (see the module docstring)."""

    #: the compute-class rules, a user's first (`classes.Rules`)
    compute_classes: classes.Rules
    #: the findings rules, shipped ones changed and extended by a user's (`findings.Rule`s)
    findings: tuple[findings.Rule, ...]
    #: the device peak table, a user's entries first (`device_peaks.peak_entries`)
    device_peaks: tuple[dict, ...]
    #: what the host spans mean, a user's patterns first (`phases.HostRules`)
    phases: phases.HostRules
    #: the operators the roofline covers and their FLOP formulas (shipped only: `flop_formulas.op_table`)
    op_flops: pl.DataFrame
    #: the Ascend device operators it covers (shipped only: `flop_formulas.device_op_table`)
    device_op_flops: pl.DataFrame
    #: the user's `[task_kinds]` section as canonical JSON ("" = none): what each Source carries
    task_kinds: str = ""
    #: the user's files, in the order their entries come (absolute paths)
    files: tuple[str, ...] = ()
    #: the tables the user's files extend
    tables: frozenset[str] = frozenset()
    #: the user's documents as canonical JSON ("" = none): what `from_documents` builds from
    documents: str = ""
    #: a hash of `documents` ("" = the shipped tables only)
    digest: str = ""

    @property
    def shipped_only(self) -> bool:
        """Whether no user's file extends the shipped tables."""
        return not self.documents

    def table(self, name: str) -> object:
        """Rule table `name` (one of `traceview.rules.ANALYSIS_TABLES`), as analyses read it."""
        if name not in rule_tables.ANALYSIS_TABLES:
            raise KeyError(f"no rule table {name!r}: one of {', '.join(rule_tables.ANALYSIS_TABLES)}")
        return getattr(self, name)

    def __repr__(self) -> str:
        extended = f"{', '.join(self.files)} extending {', '.join(sorted(self.tables))}" if self.files else "shipped"
        return f"<RuleSet {extended}>"


def build(rules: str | os.PathLike | RuleSet | None = None, **tables: str | os.PathLike | None) -> RuleSet:
    """The RuleSet of the shipped tables extended by the user's files: `rules`, a file for all
    tables (a RuleSet is returned as it is); `tables`: table name -> a file of that one table
    (`compute_classes=`, `findings=`, `device_peaks=`: the `--classes`, `--findings-rules` and
    `--device-rules` shorthands), whose entries come before those of `rules`. Each file is read
    once. TraceError naming the file, the section and the entry when any part cannot be used."""
    if isinstance(rules, RuleSet):
        if any(tables.values()):
            raise ValueError("give table files with a rules file, not with a RuleSet")
        return rules
    unknown = sorted(set(tables) - set(TABLE_FLAGS))
    if unknown:
        raise TypeError(f"build() got unexpected table(s) {', '.join(unknown)} (one of {', '.join(TABLE_FLAGS)})")
    given: list[tuple[Path, str | None]] = [(Path(p), t) for t, p in tables.items() if p is not None]
    if rules is not None:
        given.append((Path(rules), None))
    if not given:
        return shipped()
    parts = []
    try:
        for path, table in given:
            label = os.fspath(path.resolve())
            doc = rule_tables.read(label)
            if table is None:
                rule_tables.check_combined(doc, label)
            parts.append({"file": label, "table": table, "doc": doc})
        return from_documents(_canonical(parts))
    except (ValueError, OSError) as exc:
        raise TraceError(None, str(exc), _FIX) from None


def _canonical(parts: list[dict]) -> str:
    """The user's documents as one canonical JSON text (keys sorted; a TOML date as its text;
    integers of any size and nan kept, so the checks see what the file holds)."""
    return json.dumps(parts, sort_keys=True, separators=(",", ":"), default=str)


@functools.cache
def shipped() -> RuleSet:
    """The RuleSet of the shipped tables alone (built once per process)."""
    return _built([], "")


@functools.lru_cache(maxsize=8)
def from_documents(documents: str) -> RuleSet:
    """The RuleSet of the user's documents `documents` (`RuleSet.documents`; "" = none), as `build`
    makes it: how a worker process gets its load's rules without reading a file. ValueError naming
    the file and the entry when a part cannot be used."""
    if not documents:
        return shipped()
    parts = json.loads(documents)
    if not isinstance(parts, list) or not all(
        isinstance(p, Mapping) and {"file", "table", "doc"} <= set(p) for p in parts
    ):
        raise ValueError("damaged rules documents")
    return _built(parts, documents)


def _built(parts: list, documents: str) -> RuleSet:
    def sections(table: str) -> list[tuple[str, dict]]:
        found = []
        for part in parts:
            if part["table"] not in (None, table):
                continue
            doc = rule_tables.section_of(part["doc"], part["file"], table)
            if doc is not None:
                found.append((part["file"], doc))
        return found

    for part in parts:
        rule_tables.prevalidate(part["doc"])  # the user's regexes compiled in one polars call
    task_kinds = [kinds.user_section(doc, file) for file, doc in sections("task_kinds") if doc]
    extended = {t for t in rule_tables.USER_TABLES if sections(t)}
    return RuleSet(
        compute_classes=classes.class_rules(sections("compute_classes")),
        findings=findings.finding_rules(sections("findings")),
        device_peaks=device_peaks.peak_entries(sections("device_peaks")),
        phases=phases.host_rules(sections("phases")),
        op_flops=flop_formulas.op_table(),
        device_op_flops=flop_formulas.device_op_table(),
        task_kinds=next((t for t in task_kinds if t), ""),
        files=tuple(dict.fromkeys(p["file"] for p in parts)),
        tables=frozenset(extended),
        documents=documents,
        digest=hashlib.sha256(documents.encode()).hexdigest()[:16] if documents else "",
    )
