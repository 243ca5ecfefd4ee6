"""How an analysis is declared: one decorator beside its function, recording metadata only.

    @analysis("compute_classes", inputs={"classified": use("classified_tasks")},
              scope="rank", keys=("rank", "class"))
    def class_summary(classified, by=("rank",)): ...

- `inputs` maps each of the function's parameters that `Trace.run` fills to what fills it: a
  canonical frame by name (`"device_tasks"`, `"ranks"`; `traceview.schema.TABLES`), a rule table
  of the trace's rules (`"rules.phases"`: `RULES_PREFIX` + one of `traceview.rules.ANALYSIS_TABLES`,
  parsed and checked once per load: `traceview.ruleset.RuleSet`), or another analysis
  (`use(name, ...)`). A tuple of names is short for `{name: name}`. No analysis reads a file.
- Every other parameter of the function is a parameter of the analysis, with the default the
  function's signature gives (the one place it is written). A function taking `**kwargs` takes
  free keyword arguments (checked by itself).
- `use(name, lazy=False, **bind)`: the input is analysis `name`, given the reader's parameter
  values as `bind` says (`by="by"`: the input's `by` is the reader's `by`).
  A bound parameter the function does not take itself is still a parameter of the analysis,
  forwarded only, under the input's name and with the input's default (a renamed one must be the
  function's own: a typo is an error, not a new parameter). `lazy=True` passes a function instead of the frame:
  calling it (with more parameters if need be) computes the input, so an input read only on some
  paths is computed only on those.
- `scope`: "rank" when a rank's rows depend on its own frames only (computed and cached with each
  rank, `traceview.per_rank`), else "profile".
- `keys`: the output columns that say what a row is for. `stored_columns`: what a rank's cache
  keeps (None: all).
- `notes(output) -> lines`: warning lines the analysis derives (`Trace.warnings`).
- `public`: offered as a `Trace` method (generated into `traceview.trace_methods`), else read only
  by other analyses.

A parameter without a default is required (`expected(config)`).

Declaring records the declaration in `DECLARED` and returns the function unchanged: it stays a
plain function of frames for tests and notebooks. `traceview.registry` checks the declarations
against each other and orders them; docs/ARCHITECTURE.md walks through adding one.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

#: The default of a required parameter (one the function's signature gives no default).
REQUIRED = inspect.Parameter.empty

#: What starts an input naming a rule table (`"rules.phases"`).
RULES_PREFIX = "rules."

#: name -> Declaration, in the order the modules declared them (`traceview.registry` orders them).
DECLARED: dict[str, Declaration] = {}


@dataclass(frozen=True)
class Use:
    """An input that is another analysis (see the module docstring)."""

    analysis: str
    #: the input's parameter -> the reader's parameter whose value it takes
    bind: Mapping[str, str] = field(default_factory=dict)
    lazy: bool = False

    def __str__(self) -> str:
        args = ", ".join(k if k == v else f"{k}={v}" for k, v in self.bind.items())
        return f"{self.analysis}({args})" + (" (lazy)" if self.lazy else "")


def use(name: str, lazy: bool = False, **bind: str) -> Use:
    """The input `name` (an analysis), with the reader's parameters `bind` passed on."""
    return Use(name, dict(bind), lazy)


@dataclass(frozen=True)
class Declaration:
    """One declared analysis (see the module docstring)."""

    name: str
    function: Callable[..., Any]
    #: function parameter -> canonical frame name, rule table ("rules.<table>") or `Use`
    inputs: Mapping[str, str | Use]
    scope: str = "profile"
    keys: tuple[str, ...] = ("rank",)
    stored_columns: tuple[str, ...] | None = None
    notes: Callable[[Any], list[str]] | None = None
    public: bool = True

    @property
    def module(self) -> str:
        return self.function.__module__

    @functools.cached_property
    def signature(self) -> inspect.Signature:
        return inspect.signature(self.function)

    @functools.cached_property
    def own_params(self) -> dict[str, object]:
        """The function's own parameters that are not inputs -> their defaults."""
        return {
            n: p.default
            for n, p in self.signature.parameters.items()
            if n not in self.inputs and p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)
        }

    @functools.cached_property
    def any_keywords(self) -> bool:
        """Whether the function takes free keyword arguments (`**kwargs`)."""
        return any(p.kind is p.VAR_KEYWORD for p in self.signature.parameters.values())

    @property
    def rule_tables(self) -> tuple[str, ...]:
        """The rule tables the function reads itself (its `"rules.<table>"` inputs)."""
        return tuple(
            s.removeprefix(RULES_PREFIX)
            for s in self.inputs.values()
            if isinstance(s, str) and s.startswith(RULES_PREFIX)
        )

    @property
    def doc(self) -> str:
        return inspect.getdoc(self.function) or ""

    @property
    def summary(self) -> str:
        """The docstring's first paragraph on one line."""
        return " ".join(self.doc.split("\n\n")[0].split())


def analysis(
    name: str,
    *,
    inputs: Mapping[str, str | Use] | tuple[str, ...] = (),
    scope: str = "profile",
    keys: tuple[str, ...] = ("rank",),
    stored_columns: tuple[str, ...] | None = None,
    notes: Callable[[Any], list[str]] | None = None,
    public: bool = True,
):
    """Declare the decorated function as analysis `name` (see the module docstring)."""
    given = {n: n for n in inputs} if isinstance(inputs, tuple) else dict(inputs)
    if scope not in ("rank", "profile"):
        raise ValueError(f"analysis {name}: scope must be 'rank' or 'profile', not {scope!r}")

    def declare(function):
        params = inspect.signature(function).parameters
        missing = sorted(set(given) - set(params))
        if missing:
            raise TypeError(f"analysis {name}: inputs {missing} are not parameters of {function.__qualname__}")
        for n, p in params.items():
            if n not in given and p.kind in (p.VAR_POSITIONAL, p.POSITIONAL_ONLY):
                raise TypeError(f"analysis {name}: parameter {n!r} must be passable by name")
        known = DECLARED.get(name)
        if known is not None and (known.module, known.function.__qualname__) != (
            function.__module__,
            function.__qualname__,
        ):
            raise ValueError(f"analysis {name} is declared twice")
        DECLARED[name] = Declaration(name, function, given, scope, tuple(keys), stored_columns, notes, public)
        return function

    return declare
