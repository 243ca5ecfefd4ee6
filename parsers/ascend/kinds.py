"""Which kind a device task is: an ordered rule table (data, not `if` chains; DESIGN.md §2).

Used by every reader of device tasks (kernel_details.csv, trace_view.json, the DB export) so the
three give the same kinds. A rule is (field, regex, kind); the first rule whose regex matches the
field's value gives the kind, else "kernel". A user can pass an extended table to `task_kind`.
"""

from __future__ import annotations

import polars as pl

#: Ordered task-kind rules (first match wins; no match -> "kernel"): (field, regex, kind). Fields:
#: name (`Name`), op_type (`Type`), core_type (`Accelerator Core` / the DB taskType). So:
#: communication when the core is HCCL/COMMUNICATION or the name starts with `hcom_`; memset when
#: `Type` is MemSet (or the name ends in MemSet); memcpy for memcpy / DMA-copy types; else kernel.
TASK_KIND_RULES: tuple[tuple[str, str, str], ...] = (
    ("core_type", r"(?i)^(hccl|communication)$", "communication"),
    ("name", r"(?i)^hcom_", "communication"),
    ("op_type", r"(?i)^memset$", "memset"),
    ("name", r"(?i)memset$", "memset"),
    ("op_type", r"(?i)^(memcpy\w*|dma\w*copy\w*)$", "memcpy"),
    ("name", r"(?i)^memcpy", "memcpy"),
    ("core_type", r"(?i)^(pcie_dma_sqe|sdma_sqe)$", "memcpy"),
)


def rule_kind(fields: dict[str, pl.Expr], rules: tuple[tuple[str, str, str], ...], default: str = "kernel") -> pl.Expr:
    """Kind from ordered (field, regex, kind) `rules` over the String expressions in `fields`
    (first match wins; a null value matches nothing; no match -> `default`)."""
    expr = None
    for field, pattern, kind in rules:
        cond = fields[field].str.contains(pattern).fill_null(False)
        expr = pl.when(cond).then(pl.lit(kind)) if expr is None else expr.when(cond).then(pl.lit(kind))
    return pl.lit(default) if expr is None else expr.otherwise(pl.lit(default))


def task_kind(
    name: pl.Expr, op_type: pl.Expr, core_type: pl.Expr, rules: tuple[tuple[str, str, str], ...] = TASK_KIND_RULES
) -> pl.Expr:
    """Kind of an Ascend device task from the ordered `rules` (first match wins, else kernel)."""
    return rule_kind({"name": name, "op_type": op_type, "core_type": core_type}, rules)
