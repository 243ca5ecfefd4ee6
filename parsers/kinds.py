"""What each device task is, from the rule table `traceview/rules/task_kinds.toml` (data, not code):
Kineto event categories -> kinds, the kernel names that are communication, and the ordered
(field, regex, kind) rules of the Ascend and MindSpore readers. The finer compute classes (gemm,
attention, ...) live with the compute-class analysis.
"""

from __future__ import annotations

import polars as pl

from traceview import rules

_TABLE = rules.shipped("task_kinds")
_KINETO = _TABLE["kineto"]

#: Kineto X-event category (lower-cased) -> device task kind.
DEVICE_CATEGORIES: dict[str, str] = dict(_KINETO["device_categories"])
#: Kineto X-event category (lower-cased) of GPU-side user annotations (ProfilerStep#N on the GPU).
DEVICE_ANNOTATION_CATEGORIES: tuple[str, ...] = tuple(_KINETO["annotation_categories"])
#: Host X-event category (lower-cased) -> host event kind; anything else is "other".
HOST_CATEGORIES: dict[str, str] = dict(_KINETO["host_categories"])
#: Host categories that are the profiler's own bookkeeping, not program activity (not loaded).
IGNORED_CATEGORIES: tuple[str, ...] = tuple(_KINETO["ignored_categories"])
#: A GPU kernel whose name matches any of these (case-insensitive) is communication.
COMMUNICATION_KERNEL_PATTERNS: tuple[str, ...] = tuple(r["pattern"] for r in _KINETO["communication"])


def format_rules(fmt: str) -> tuple[tuple[str, str, str], ...]:
    """The ordered (field, regex, kind) task-kind rules of a format (`ascend`, `mindspore`)."""
    return tuple((r["field"], r["pattern"], r["kind"]) for r in _TABLE[fmt]["rule"])


def communication_regex() -> str:
    """One case-insensitive regex matching any communication kernel name."""
    return "(?i)" + "|".join(f"(?:{p})" for p in COMMUNICATION_KERNEL_PATTERNS)


def device_kind(raw_kind: pl.Expr, name: pl.Expr) -> pl.Expr:
    """Kind of a device task: a kernel whose name is a collective becomes 'communication'."""
    return (
        pl.when((raw_kind == "kernel") & name.str.contains(communication_regex()))
        .then(pl.lit("communication"))
        .otherwise(raw_kind)
    )


def rule_kind(fields: dict[str, pl.Expr], rules_: tuple[tuple[str, str, str], ...], default: str = "kernel") -> pl.Expr:
    """Kind from ordered (field, regex, kind) rules over the String expressions in `fields`
    (first match wins; a null value matches nothing; no match -> `default`)."""
    expr = None
    for field, pattern, kind in rules_:
        cond = fields[field].str.contains(pattern).fill_null(False)
        expr = pl.when(cond).then(pl.lit(kind)) if expr is None else expr.when(cond).then(pl.lit(kind))
    return pl.lit(default) if expr is None else expr.otherwise(pl.lit(default))
