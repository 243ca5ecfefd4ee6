"""Findings: rules that turn the measured numbers into advice, each citing the numbers behind it.

Two pure functions and a rule loader:

1. `facts(...)` condenses the analysis frames a `Trace` already memoises (step and whole-trace
   breakdown, classified tasks, idle per stream, launch calls, pipeline stages, stragglers,
   throughput) into one row per rank, plus one profile-wide row (rank null) when throughput was
   given. Every column is defined in `FACTS` (name -> dtype, definition); docs/findings.md has the
   same table.
2. `evaluate(facts, rules)` applies the rules and returns one row per finding: rule, title,
   severity, rank (null for profile-wide findings), metric, value, threshold, message (the rule's
   template filled with the facts of that rank), advice.
3. `finding_rules(user)` builds the rule table: the shipped rules (`traceview/rules/findings.toml`)
   and, optionally, a user's `[[rule]]` tables that add rules or change shipped ones by id (read
   once per load into the trace's `traceview.ruleset.RuleSet`).

Conventions. "Per step" values are totals over the rank's measured steps divided by their number;
a rank without steps is measured over its whole trace, which then counts as one step (`window` says
which). Times are ms (`_ms`), µs (`_us`) where the quantity is small, fractions are 0-1 (`_frac`).
A fact that cannot be computed is null, and a rule never fires on a null.

Rule semantics. A rule reads one fact, its `metric`, and fires on a row when the metric is
strictly `above` (or `below`) its threshold and its optional `when` condition holds; `critical`
(same direction) raises the severity to critical. `when` is a small expression language, parsed by
`traceview.analysis.conditions` into polars expressions (no `eval`): comparisons (`<`, `<=`, `>`, `>=`, `==`, `!=`) between
fact names, numbers, quoted strings and `true`/`false`, a bare Boolean fact, `and`, `or`, `not` and
parentheses. Comparisons with a null are false. `message` is a `str.format` template whose fields
are fact names (`{exposed_comm_frac:.1%}`), nulls printing as "n/a"; each template of `extra` is
appended only when none of its facts is null.
"""

from __future__ import annotations

import dataclasses
import math
import re
import string
from collections.abc import Sequence
from pathlib import Path

import polars as pl

from traceview import rules as rule_tables
from traceview.analysis import breakdown, iteration
from traceview.analysis.conditions import parse_condition
from traceview.analysis.declare import analysis, use
from traceview.analysis.facts import FACTS

#: The shipped rules.
RULES_FILE = rule_tables.shipped_path("findings")

#: Severities, least to most severe.
SEVERITIES: tuple[str, ...] = ("info", "warning", "critical")

FINDINGS_SCHEMA = pl.Schema(
    {
        "rule": pl.String,
        "title": pl.String,
        "severity": pl.String,
        "rank": pl.Int64,
        "metric": pl.String,
        "term": pl.String,
        "value": pl.Float64,
        "threshold": pl.Float64,
        "message": pl.String,
        "advice": pl.String,
    }
)


# --- rules -------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Rule:
    """One finding rule (see the module docstring for the semantics)."""

    id: str
    title: str
    severity: str
    metric: str
    message: str
    advice: str
    above: float | None = None
    below: float | None = None
    critical: float | None = None
    when: str | None = None
    extra: tuple[str, ...] = ()
    anchor: str | None = None
    #: the step or iteration term the finding explains (a `TERMS_EXPLAINED` name), if any
    term: str | None = None
    #: (condition, text): sentences added to the advice where the condition holds on the row
    advice_when: tuple[tuple[str, str], ...] = ()

    @property
    def threshold(self) -> float:
        return self.above if self.above is not None else self.below  # type: ignore[return-value]

    def crosses(self, value: pl.Expr, bound: float) -> pl.Expr:
        return value > bound if self.above is not None else value < bound


_RULE_KEYS = {f.name for f in dataclasses.fields(Rule)} | {"enabled"}
_REQUIRED = ("id", "title", "severity", "metric", "message", "advice")
#: What a rule's `term` may name: the iteration and its terms, and the step terms.
TERMS_EXPLAINED = ("iteration", *iteration.TERMS, *breakdown.TERMS)
_ID = re.compile(r"^[a-z][a-z0-9_]*$")


def _template_fields(template: str, where: str) -> list[str]:
    """The fact names a template uses; ValueError for unknown facts, conversions or bad format specs."""
    try:
        parts = list(string.Formatter().parse(template))
    except ValueError as exc:
        raise ValueError(f"{where}: invalid template {template!r} ({exc})") from None
    names = []
    for _, field, spec, conversion in parts:
        if field is None:
            continue
        if field not in FACTS or field == "":
            raise ValueError(f"{where}: unknown fact {{{field}}} in {template!r} (facts: see docs/findings.md)")
        if conversion is not None:
            raise ValueError(f"{where}: conversions (!{conversion}) are not allowed in {template!r}")
        sample = {pl.Float64: 1.0, pl.Int64: 1, pl.Boolean: True}.get(FACTS[field][0], "x")
        try:
            format(sample, spec)
        except ValueError:
            raise ValueError(f"{where}: format spec {spec!r} does not fit fact {field} in {template!r}") from None
        names.append(field)
    return names


def _render(template: str, row: dict) -> str:
    out = []
    for literal, field, spec, _ in string.Formatter().parse(template):
        out.append(literal)
        if field is not None:
            value = row.get(field)
            out.append("n/a" if value is None else format(value, spec))
    return "".join(out)


def _number(raw: dict, key: str, where: str) -> float | None:
    value = raw.get(key)
    if value is None:
        return None
    finite = isinstance(value, float) and math.isfinite(value) or isinstance(value, int) and abs(value) < 2**1023
    if isinstance(value, bool) or not finite:
        raise ValueError(f"{where}: '{key}' must be a finite number, got {rule_tables.shown(value)}")
    return float(value)


def _make_rule(raw: dict, where: str) -> Rule:
    unknown = sorted(set(raw) - _RULE_KEYS)
    if unknown:
        raise ValueError(f"{where}: unknown key(s) {', '.join(unknown)} (allowed: {', '.join(sorted(_RULE_KEYS))})")
    missing = [k for k in _REQUIRED if k not in raw]
    if missing:
        raise ValueError(f"{where}: missing key(s) {', '.join(missing)}")
    for key in ("id", "title", "metric", "message", "advice", "when", "anchor"):
        if key in raw and (not isinstance(raw[key], str) or not raw[key].strip()):
            raise ValueError(f"{where}: '{key}' must be a non-empty string, got {raw[key]!r}")
    if not _ID.match(raw["id"]):
        raise ValueError(f"{where}: id {raw['id']!r} must be lower_snake_case")
    if raw["severity"] not in SEVERITIES:
        raise ValueError(f"{where}: severity {raw['severity']!r} must be one of {', '.join(SEVERITIES)}")
    metric = raw["metric"]
    if metric not in FACTS or FACTS[metric][0] not in (pl.Float64, pl.Int64):
        raise ValueError(f"{where}: metric {metric!r} is not a numeric fact (facts: see docs/findings.md)")
    above, below, critical = (_number(raw, k, where) for k in ("above", "below", "critical"))
    if (above is None) == (below is None):
        raise ValueError(f"{where}: give exactly one threshold, 'above' or 'below'")
    bound = above if above is not None else below
    if critical is not None and ((above is not None and critical < bound) or (below is not None and critical > bound)):
        raise ValueError(
            f"{where}: 'critical' ({critical:g}) must be beyond the threshold ({bound:g}) in its direction"
        )
    extra = raw.get("extra", [])
    if not isinstance(extra, list) or not all(isinstance(e, str) for e in extra):
        raise ValueError(f"{where}: 'extra' must be a list of template strings")
    for template in (raw["message"], *extra):
        _template_fields(template, where)
    if raw.get("when") is not None:
        condition(raw["when"], where)  # checked at load time
    advice_when = []
    for i, item in enumerate(raw.get("advice_when", []), start=1):
        if not isinstance(item, dict) or set(item) != {"when", "text"}:
            raise ValueError(f"{where}: advice_when {i} must be a table with 'when' and 'text'")
        if not all(isinstance(item[k], str) and item[k].strip() for k in ("when", "text")):
            raise ValueError(f"{where}: advice_when {i}: 'when' and 'text' must be non-empty strings")
        condition(item["when"], f"{where}: advice_when {i}")
        advice_when.append((item["when"], " ".join(item["text"].split())))
    if raw.get("term") is not None and raw["term"] not in TERMS_EXPLAINED:
        raise ValueError(f"{where}: term {raw['term']!r} is not a term ({', '.join(TERMS_EXPLAINED)})")
    return Rule(
        id=raw["id"],
        title=raw["title"],
        severity=raw["severity"],
        metric=metric,
        message=raw["message"],
        advice=raw["advice"].strip(),
        above=above,
        below=below,
        critical=critical,
        when=raw.get("when"),
        extra=tuple(extra),
        anchor=raw.get("anchor"),
        term=raw.get("term"),
        advice_when=tuple(advice_when),
    )


def _rule_tables(doc: dict, path: str | Path) -> list[dict]:
    tables = rule_tables.entries(doc, path)
    for i, raw in enumerate(tables, start=1):
        if not isinstance(raw.get("id"), str):
            raise ValueError(f"{path}: rule {i}: missing 'id'")
    return tables


def finding_rules(user: Sequence[tuple[str, dict]] = ()) -> tuple[Rule, ...]:
    """The shipped rules, changed and extended by a user's (`user`: (file, its findings part)
    pairs, applied in order, from `traceview.ruleset`).

    A user's `[[rule]]` table whose id names a shipped rule changes only the keys it gives (e.g.
    `above`; giving `above` or `below` replaces the shipped direction), and `enabled = false` turns
    that rule off; any other id adds a new rule, which needs every required key (id, title, severity,
    metric, message, advice, and above or below). Raises ValueError with one line naming the file
    and the rule for an unknown key, severity or fact, a missing or double threshold, a bad
    template or an invalid `when` condition.
    """
    shipped = _rule_tables(rule_tables.shipped("findings"), RULES_FILE)
    merged: dict[str, dict] = {}
    for raw in shipped:
        merged[raw["id"]] = dict(raw)
    for path, doc in user:
        for raw in _rule_tables(doc, path):
            base = merged.get(raw["id"])
            if base is None and raw.get("enabled", True) is False:
                known = ", ".join(sorted(merged))
                raise ValueError(f"{path}: rule {raw['id']!r}: no such rule to turn off (the rules: {known})")
            if base is not None and ("above" in raw or "below" in raw):
                base = {k: v for k, v in base.items() if k not in ("above", "below", "critical")}
            merged[raw["id"]] = {**(base or {}), **raw, "_source": str(path)}
    rules = []
    for rid, raw in merged.items():
        source = raw.pop("_source", str(RULES_FILE))
        if raw.get("enabled", True) is False:
            continue
        if not isinstance(raw.get("enabled", True), bool):
            raise ValueError(f"{source}: rule {rid!r}: 'enabled' must be true or false")
        rules.append(_make_rule(raw, f"{source}: rule {rid!r}"))
    return tuple(rules)


# --- evaluation ----------------------------------------------------------------------------------


def condition(text: str, where: str = "condition") -> pl.Expr:
    """A rule's `when` over the facts (`traceview.analysis.conditions` has the grammar)."""
    return parse_condition(text, FACTS, where)


def evaluate(facts_frame: pl.DataFrame, rules: tuple[Rule, ...] | list[Rule]) -> pl.DataFrame:
    """The findings: one row per (rule, facts row) where the rule fires (module docstring).

    Columns (`FINDINGS_SCHEMA`): rule (id), title, severity (the rule's, or "critical" when the
    value is beyond its `critical` bound), rank (null for the profile-wide row), metric (the fact
    read), value (its value), threshold (the rule's above/below bound), message (the template
    filled in, plus the `extra` sentences whose facts are all known), advice. Sorted by severity
    (critical first), then rule order, then rank.
    """
    rows = []
    for order, rule in enumerate(rules):
        value = pl.col(rule.metric).cast(pl.Float64)
        fires = rule.crosses(value, rule.threshold)
        if rule.when:
            fires = fires & condition(rule.when, rule.id)
        hits = facts_frame.filter(fires.fill_null(False)).with_columns(
            condition(when, rule.id).fill_null(False).alias(f"_advice_{i}")
            for i, (when, _) in enumerate(rule.advice_when)
        )
        extras = [(t, _template_fields(t, rule.id)) for t in rule.extra]
        for row in hits.to_dicts():
            v = float(row[rule.metric])
            critical = rule.critical is not None and (
                v > rule.critical if rule.above is not None else v < rule.critical
            )
            text = " ".join(
                [_render(rule.message, row)]
                + [_render(t, row) for t, names in extras if all(row.get(n) is not None for n in names)]
            )
            rows.append(
                {
                    "rule": rule.id,
                    "title": rule.title,
                    "severity": "critical" if critical else rule.severity,
                    "rank": row["rank"],
                    "metric": rule.metric,
                    "term": rule.term,
                    "value": v,
                    "threshold": rule.threshold,
                    "message": text,
                    "advice": " ".join(
                        [rule.advice] + [text for i, (_, text) in enumerate(rule.advice_when) if row[f"_advice_{i}"]]
                    ).strip(),
                    "_order": order,
                }
            )
    if not rows:
        return pl.DataFrame(schema=FINDINGS_SCHEMA)
    out = pl.DataFrame(rows, schema={**FINDINGS_SCHEMA, "_order": pl.Int64})
    level = pl.col("severity").replace_strict({s: -i for i, s in enumerate(SEVERITIES)}, return_dtype=pl.Int64)
    return out.sort(level, "_order", "rank", nulls_last=False).drop("_order")


def by_rule(found: pl.DataFrame) -> pl.DataFrame:
    """The findings grouped by rule, one row each: the rule's most severe, farthest-from-threshold
    row (its severity, rank, value, message) with `ranks`, every rank it fired on (sorted; the
    profile-wide row has none), in the order of `evaluate` (severity, then rule order)."""
    if found.height == 0:
        return found.with_columns(pl.lit(None, pl.List(pl.Int64)).alias("ranks"))
    level = pl.col("severity").replace_strict({s: -i for i, s in enumerate(SEVERITIES)}, return_dtype=pl.Int64)
    distance = -(pl.col("value") - pl.col("threshold")).abs()
    ordered = found.with_row_index("_i").with_columns(level.alias("_level"), distance.alias("_distance"))
    worst = ordered.sort("_level", "_distance", "_i").group_by("rule", maintain_order=True).first()
    ranks = ordered.group_by("rule").agg(pl.col("rank").drop_nulls().unique().sort().alias("ranks"))
    first_seen = ordered.group_by("rule").agg(pl.col("_i").min().alias("_first"))
    return (
        worst.join(ranks, on="rule")
        .join(first_seen, on="rule")
        .sort("_level", "_first")
        .select(*FINDINGS_SCHEMA.names(), "ranks")
    )


# ---- declared analyses (`traceview.registry`) ------------------------------------------------------


@analysis(
    "findings",
    inputs={
        "facts_frame": use("facts", throughput="throughput", details="details", micro_batches="micro_batches"),
        "rules": "rules.findings",
    },
    keys=("rule", "rank"),
)
def findings_of(facts_frame: pl.DataFrame, rules: tuple[Rule, ...]) -> pl.DataFrame:
    """Advice from the numbers: one row per rule that fires on a rank (or profile-wide), with
    severity, the value and threshold, a message citing the numbers, and the advice, by the
    trace's findings rules (a user's changes and additions included: `traceview.ruleset`,
    docs/findings.md); `throughput`, `details` and `micro_batches` are the facts' (`fact_frame`).
    See `evaluate`."""
    return evaluate(facts_frame, rules)
