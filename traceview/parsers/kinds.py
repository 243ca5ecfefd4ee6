"""What each device task is, from the rule table `traceview/rules/task_kinds.toml` (data, not code):
Kineto event categories -> kinds, the kernel names that are communication, and the ordered
(field, regex, kind) rules of the Ascend and MindSpore readers. The finer compute classes (gemm,
attention, ...) live with the compute-class analysis.

A user's rules file (`traceview.load(..., rules=FILE)`, `--rules FILE`) extends the table with a
`[task_kinds]` section of the same shape: `[[task_kinds.kineto.communication]]` patterns (more
kernel names that are communication) and `[[task_kinds.ascend.rule]]` /
`[[task_kinds.mindspore.rule]]` rules, tried before the shipped ones. The parsers read the table
in force (`using`) when they run; the section travels with each rank's `Source` (as canonical
JSON, `user_section`) into its cache key and to the worker that parses it.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import json

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
#: The shipped patterns: a GPU kernel whose name matches any (case-insensitive) is communication.
COMMUNICATION_KERNEL_PATTERNS: tuple[str, ...] = tuple(r["pattern"] for r in _KINETO["communication"])

#: Host runtime calls that begin a CUDA/HIP stream capture, and that replay a captured graph.
GRAPH_CAPTURE_PATTERN: str = _TABLE["graphs"]["capture"]
GRAPH_LAUNCH_PATTERN: str = _TABLE["graphs"]["launch"]

#: The kinds a rule may give, and the fields each format's rules may test.
KINDS = ("communication", "memcpy", "memset", "kernel")
RULE_FIELDS = {"ascend": ("name", "op_type", "core_type"), "mindspore": ("name", "op_type")}

#: The user's `[task_kinds]` section in force, as canonical JSON ("" = none).
_USER: contextvars.ContextVar[str] = contextvars.ContextVar("traceview_user_task_kinds", default="")


def user_section(section: object, path) -> str:
    """The canonical JSON of a user's `[task_kinds]` section after checking it (RulesError naming
    the file and the entry: an unknown key, format, field or kind, a bad regex)."""
    if section is None:
        return ""
    if not isinstance(section, dict):
        raise rules.RulesError(f"{path}: [task_kinds] must be a table")
    unknown = sorted(set(section) - {"kineto", *RULE_FIELDS})
    if unknown:
        raise rules.RulesError(
            f"{path}: task_kinds: unknown format(s) {', '.join(unknown)} (kineto, ascend, mindspore)"
        )
    out: dict = {}
    kineto = section.get("kineto")
    if kineto is not None:
        where = f"{path}: task_kinds.kineto"
        if not isinstance(kineto, dict) or set(kineto) - {"communication"}:
            raise rules.RulesError(f"{where}: holds [[task_kinds.kineto.communication]] entries only")
        entries = rules.entries(kineto, where, key="communication")
        out["kineto"] = [
            rules.check_regex(
                _only(e, {"pattern"}, f"{where}.communication {i}")["pattern"], f"{where}.communication {i}"
            )
            for i, e in enumerate(entries, start=1)
        ]
    for fmt, fields in RULE_FIELDS.items():
        if fmt not in section:
            continue
        where = f"{path}: task_kinds.{fmt}"
        table = section[fmt]
        if not isinstance(table, dict) or set(table) - {"rule"}:
            raise rules.RulesError(f"{where}: holds [[task_kinds.{fmt}.rule]] entries only")
        checked = []
        for i, e in enumerate(rules.entries(table, where), start=1):
            here = f"{where}.rule {i}"
            _only(e, {"field", "pattern", "kind"}, here)
            if e.get("field") not in fields:
                raise rules.RulesError(f"{here}: 'field' must be one of {', '.join(fields)}, got {e.get('field')!r}")
            if e.get("kind") not in KINDS:
                raise rules.RulesError(f"{here}: 'kind' must be one of {', '.join(KINDS)}, got {e.get('kind')!r}")
            checked.append([e["field"], rules.check_regex(e.get("pattern"), here), e["kind"]])
        out[fmt] = checked
    return json.dumps(out, sort_keys=True, separators=(",", ":")) if out else ""


def _only(entry: dict, keys: set[str], where: str) -> dict:
    unknown = sorted(set(entry) - keys)
    missing = sorted(keys - set(entry))
    if unknown or missing:
        what = f"unknown key(s) {', '.join(unknown)}" if unknown else f"missing {', '.join(missing)}"
        raise rules.RulesError(f"{where}: {what} (an entry has {', '.join(sorted(keys))})")
    return entry


@contextlib.contextmanager
def using(section_json: str):
    """Parse with the user's `[task_kinds]` section (`user_section`'s JSON; "" = the shipped table)."""
    token = _USER.set(section_json or "")
    try:
        yield
    finally:
        _USER.reset(token)


def current() -> str:
    """The user's section in force (canonical JSON, "" = none): what a worker process is handed."""
    return _USER.get()


@functools.lru_cache(maxsize=8)
def _user(section_json: str) -> dict:
    return json.loads(section_json) if section_json else {}


def communication_patterns() -> tuple[str, ...]:
    """The user's communication patterns, then the shipped ones."""
    return (*_user(current()).get("kineto", ()), *COMMUNICATION_KERNEL_PATTERNS)


def format_rules(fmt: str) -> tuple[tuple[str, str, str], ...]:
    """The ordered (field, regex, kind) task-kind rules of a format (`ascend`, `mindspore`): the
    user's first, then the shipped ones."""
    user = tuple(tuple(r) for r in _user(current()).get(fmt, ()))
    return user + tuple((r["field"], r["pattern"], r["kind"]) for r in _TABLE[fmt]["rule"])


def communication_regex() -> str:
    """One case-insensitive regex matching any communication kernel name."""
    return "(?i)" + "|".join(f"(?:{p})" for p in communication_patterns())


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
