"""Which kind an Ascend device task is: the `ascend` rules of `traceview/rules/task_kinds.toml`.

Used by every reader of device tasks (kernel_details.csv, trace_view.json, the DB export) so the
three give the same kinds: the first rule whose regex matches the field's value gives the kind,
else "kernel". A caller can pass another table to `task_kind`.
"""

from __future__ import annotations

import polars as pl

from traceview.parsers.kinds import format_rules, rule_kind

#: Ordered task-kind rules (first match wins; no match -> "kernel"): (field, regex, kind). Fields:
#: name (`Name`), op_type (`Type`), core_type (`Accelerator Core` / the DB taskType).
TASK_KIND_RULES: tuple[tuple[str, str, str], ...] = format_rules("ascend")


def task_kind(
    name: pl.Expr, op_type: pl.Expr, core_type: pl.Expr, rules: tuple[tuple[str, str, str], ...] | None = None
) -> pl.Expr:
    """Kind of an Ascend device task from the ordered `rules` (first match wins, else kernel;
    default: the rules in force, `kinds.format_rules("ascend")`)."""
    fields = {"name": name, "op_type": op_type, "core_type": core_type}
    return rule_kind(fields, format_rules("ascend") if rules is None else rules)
