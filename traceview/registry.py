"""The analysis registry: every declared analysis (`traceview.analysis.declare`), checked and in
the order they depend on each other.

Each analysis is one function in `traceview.analysis` with its declaration beside it: its inputs
by name (canonical frames, the rule tables of the trace's `RuleSet`, other analyses), its
parameters (from the function's signature, plus those it forwards to its inputs), scope and keys.
This module imports every module of `traceview.analysis` (`MODULES`: a new one needs no list),
checks the declarations against each other (`_resolve`) and orders them so an analysis comes after
its inputs (`REGISTRY`).

- scope "rank": a rank's rows depend on that rank's frames only, so the analysis run on each rank
  alone and concatenated equals the analysis on all ranks (`tests/integration/test_executors.py` checks it on
  real multi-rank profiles). These are computed where a rank is parsed, with their default
  parameters, and cached with the rank (`traceview.per_rank`).
- scope "profile": needs several ranks at once (the pipeline bubble's step is the longest compute
  span over a pipeline group; collective matching; whatever reads those).

`Trace.run(name, **params)` computes an analysis once per distinct parameters: the memo key is
`memo_key(name, params)`, the parameters bound to the defaults and frozen (lists and tuples alike,
dicts by sorted items), so `by=["rank"]` and `by=("rank",)` are one entry and unhashable values
work.

`traceview analyses --graph` prints the graph (`--format dot|json` for tools); docs/ARCHITECTURE.md
shows it and walks through adding an analysis. `traceview analyses --write-methods` regenerates the
`Trace` methods (`methods_source`).
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from traceview import analysis, schema
from traceview.analysis.declare import DECLARED, REQUIRED, RULES_PREFIX, Declaration, Use
from traceview.rules import ANALYSIS_TABLES


def _import_declaring_modules() -> tuple[str, ...]:
    """Import every module of `traceview.analysis` (importing one declares its analyses), so a new
    module's analyses are found with no list to update; the modules' names, sorted."""
    names = sorted(m.name for m in pkgutil.iter_modules(analysis.__path__))
    for name in names:
        importlib.import_module(f"{analysis.__name__}.{name}")
    return tuple(names)


#: The modules of `traceview.analysis`, imported for their declarations.
MODULES = _import_declaring_modules()

#: The canonical frames an analysis may take as an input.
FRAMES = ("ranks", *schema.TABLES)

#: The rule tables an analysis may take as an input (`Trace.rules`, a `traceview.ruleset.RuleSet`).
RULE_INPUTS = tuple(RULES_PREFIX + t for t in ANALYSIS_TABLES)


@dataclass(frozen=True)
class Analysis:
    """A declaration with what the registry derives for it: every parameter with its default."""

    declaration: Declaration
    #: parameter -> default: the function's own, then those only forwarded to inputs
    params: Mapping[str, object]
    #: the parameters the function takes itself (the rest are forwarded only)
    own: frozenset[str]

    name = property(lambda self: self.declaration.name)
    scope = property(lambda self: self.declaration.scope)
    keys = property(lambda self: self.declaration.keys)
    module = property(lambda self: self.declaration.module)
    stored_columns = property(lambda self: self.declaration.stored_columns)
    notes = property(lambda self: self.declaration.notes)
    inputs = property(lambda self: self.declaration.inputs)
    any_keywords = property(lambda self: self.declaration.any_keywords)

    def bind(self, params: Mapping[str, object]) -> dict[str, object]:
        """`params` over the defaults; TypeError naming an unknown parameter."""
        unknown = sorted(set(params) - set(self.params))
        if unknown and not self.any_keywords:
            raise TypeError(f"{self.name}() got an unexpected keyword argument {unknown[0]!r}")
        missing = [p for p, default in self.params.items() if default is REQUIRED and p not in params]
        if missing:
            raise TypeError(f"{self.name}() missing required argument {missing[0]!r}")
        return {**self.params, **params}


def freeze(value):
    """A hashable form of a parameter value: lists and tuples as tuples, dicts and sets sorted."""
    if isinstance(value, (list, tuple)):
        return tuple(freeze(v) for v in value)
    if isinstance(value, Mapping):
        return ("__dict__", tuple(sorted((str(k), freeze(v)) for k, v in value.items())))
    if isinstance(value, (set, frozenset)):
        return ("__set__", tuple(sorted(map(freeze, value), key=repr)))
    return value


def memo_key(name: str, params: Mapping[str, object]) -> tuple:
    """The memo key of analysis `name` with `params` (bound to the defaults, then frozen)."""
    bound = REGISTRY[name].bind(params)
    return (name, freeze(bound))


def _ordered(declared: Mapping[str, Declaration]) -> list[str]:
    """The names of `declared`, each after the analyses it reads (ValueError on a circle or an
    input that is neither a frame nor a declared analysis)."""
    order: list[str] = []
    state: dict[str, str] = {}

    def visit(name: str, path: tuple[str, ...]) -> None:
        if state.get(name) == "done":
            return
        if state.get(name) == "open":
            raise ValueError(f"analysis inputs go round in a circle: {' -> '.join((*path, name))}")
        state[name] = "open"
        for source in declared[name].inputs.values():
            if isinstance(source, Use):
                if source.analysis not in declared:
                    raise ValueError(f"analysis {name} reads {source.analysis!r}, which no module declares")
                visit(source.analysis, (*path, name))
            elif source not in FRAMES and source not in RULE_INPUTS:
                raise ValueError(
                    f"analysis {name} reads {source!r}: neither a frame ({', '.join(FRAMES)}), a rule table "
                    f"({', '.join(RULE_INPUTS)}) nor a Use"
                )
        state[name] = "done"
        order.append(name)

    for name in declared:
        visit(name, ())
    return order


def _resolve(declared: Mapping[str, Declaration]) -> dict[str, Analysis]:
    """Each declaration with its parameters: its own, then those it binds for its inputs but does
    not take itself (under the input's name, with the input's default). ValueError where a bound
    parameter is not one of the input's, is renamed without being the function's own (a typo
    would otherwise make a new parameter), or two inputs give one forwarded parameter different
    defaults."""
    out: dict[str, Analysis] = {}
    for name in _ordered(declared):
        d = declared[name]
        params: dict[str, object] = dict(d.own_params)
        own = frozenset(params)
        forwarded: dict[str, tuple[str, object]] = {}
        for source in d.inputs.values():
            if not isinstance(source, Use):
                continue
            reader = out[source.analysis]
            for theirs, mine in source.bind.items():
                if theirs not in reader.params and not reader.any_keywords:
                    raise ValueError(f"analysis {name} binds {theirs!r}, not a parameter of {source.analysis}")
                if mine in own:
                    continue
                if mine != theirs:  # a renamed binding of a parameter the function lacks: a typo
                    raise ValueError(
                        f"analysis {name} binds {theirs!r} of {source.analysis} to {mine!r}, which is not a "
                        f"parameter of its function (a parameter only passed on keeps the input's name)"
                    )
                default = reader.params.get(theirs)
                if mine in forwarded and forwarded[mine][1] != default:
                    raise ValueError(
                        f"analysis {name} forwards {mine!r} to {forwarded[mine][0]} and {source.analysis} "
                        "with different defaults"
                    )
                forwarded[mine] = (source.analysis, default)
        params.update({k: v for k, (_, v) in forwarded.items()})
        out[name] = Analysis(d, params, own)
    return out


def _by_module(declared: Mapping[str, Declaration]) -> dict[str, Declaration]:
    """`declared` in module name order, each module's in the order it declares them: the order
    does not depend on which module something imported first."""
    return dict(sorted(declared.items(), key=lambda item: item[1].module))


#: name -> Analysis, each after the analyses it reads.
REGISTRY: dict[str, Analysis] = _resolve(_by_module(DECLARED))

#: The rank-local analyses, computed and cached with each rank (with their default parameters).
RANK_LOCAL: tuple[str, ...] = tuple(a.name for a in REGISTRY.values() if a.scope == "rank")

#: The analyses offered as `Trace` methods.
PUBLIC: tuple[str, ...] = tuple(a.name for a in REGISTRY.values() if a.declaration.public)


# ---- the graph, for people and tools -------------------------------------------------------------


def edges() -> list[tuple[str, str, str]]:
    """(input, analysis, how) for every input of every analysis: how is "frame", "rules" (a rule
    table), "analysis" or "analysis (lazy)"."""
    out = []
    for a in REGISTRY.values():
        for source in a.inputs.values():
            if isinstance(source, Use):
                out.append((source.analysis, a.name, "analysis (lazy)" if source.lazy else "analysis"))
            else:
                out.append((source, a.name, "rules" if source in RULE_INPUTS else "frame"))
    return out


def graph_text() -> str:
    """One block per analysis: its name and parameters, scope, function, the frames and rule tables
    it reads and each analysis it reads (with the parameters it passes on)."""
    lines = []
    for a in REGISTRY.values():
        params = ", ".join(f"{k}={v!r}" for k, v in a.params.items())
        if a.any_keywords:
            params = ", ".join(filter(None, (params, "**kwargs")))
        flags = a.scope + ("" if a.declaration.public else ", internal")
        lines.append(f"{a.name}({params})  [{flags}]  {a.module}.{a.declaration.function.__qualname__}")
        frames = [s if p == s else f"{p}={s}" for p, s in a.inputs.items() if s in FRAMES]
        if frames:
            lines.append(f"    frames: {', '.join(frames)}")
        tables = [f"{p}={s}" for p, s in a.inputs.items() if s in RULE_INPUTS]
        if tables:
            lines.append(f"    rules: {', '.join(tables)}")
        for param, source in a.inputs.items():
            if isinstance(source, Use):
                lines.append(f"    {param} <- {source}")
    return "\n".join(lines)


def graph_dot() -> str:
    """The graph in Graphviz dot: frames as boxes, analyses as ellipses (rank-local filled)."""
    lines = ["digraph analyses {", "  rankdir=LR;", "  node [fontname=Helvetica, fontsize=10];"]
    for frame in sorted({src for src, _, how in edges() if how == "frame"}):
        lines.append(f'  "{frame}" [shape=box];')
    for table in sorted({src for src, _, how in edges() if how == "rules"}):
        lines.append(f'  "{table}" [shape=note];')
    for a in REGISTRY.values():
        style = "filled" if a.scope == "rank" else "solid"
        style += "" if a.declaration.public else ",dashed"
        lines.append(f'  "{a.name}" [style="{style}", fillcolor="#dde8f5"];')
    for src, dst, how in edges():
        lines.append(f'  "{src}" -> "{dst}"' + (" [style=dashed];" if "lazy" in how else ";"))
    lines.append("}")
    return "\n".join(lines)


def graph_json() -> dict:
    """The graph as plain data: analyses (name, module, scope, public, keys, params, the rule
    tables it reads) and edges."""
    return {
        "analyses": [
            {
                "name": a.name,
                "module": a.module,
                "scope": a.scope,
                "public": a.declaration.public,
                "keys": list(a.keys),
                "params": {k: repr(v) for k, v in a.params.items()},
                "any_keywords": a.any_keywords,
                "rules": list(a.declaration.rule_tables),
                "summary": a.declaration.summary,
            }
            for a in REGISTRY.values()
        ],
        "edges": [{"from": s, "to": d, "how": h} for s, d, h in edges()],
    }


# ---- the Trace methods, generated ------------------------------------------------------------------

#: Where the generated methods live (`methods_source`).
METHODS_FILE = Path(__file__).with_name("trace_methods.py")

#: The names an annotation may use in the generated module (others are left out: `Any`).
_ANNOTATION_NAMES = frozenset({"pl", "Sequence", "Path", "Any", "str", "int", "float", "bool", "None", "dict"})


def _annotation(analysis: Analysis, param: str) -> str:
    """The annotation of `param` where it is declared: the analysis' own function, else the input
    it is forwarded to (its annotation there); "Any" when it names something the generated
    module does not import."""
    import re

    if param in analysis.own:
        found = analysis.declaration.signature.parameters[param].annotation
        text = "" if found is analysis.declaration.signature.empty else str(found)
    else:
        text = ""
        for source in analysis.inputs.values():
            if isinstance(source, Use):
                theirs = next((t for t, m in source.bind.items() if m == param), None)
                if theirs is not None:
                    text = _annotation(REGISTRY[source.analysis], theirs)
                    break
    names = set(re.findall(r"[A-Za-z_][A-Za-z_0-9]*", text.replace("pl.DataFrame", "pl")))
    return text if text and names <= _ANNOTATION_NAMES else "Any"


def methods_source() -> str:
    """The text of `traceview/trace_methods.py`: one method per public analysis calling
    `Trace.run`, with the declaration's parameters and defaults: keyword-only but the first (not
    when it is a flag: `_positional`)."""
    out = [
        '"""The `Trace` methods of the declared analyses, generated from their declarations by',
        "`traceview analyses --write-methods` (tests/unit/test_registry.py checks that it is current): do not",
        "edit by hand. Each method calls `Trace.run`; its parameters and defaults are the",
        'declaration\'s (the analysis function\'s signature), written in one place."""',
        "",
        "from __future__ import annotations",
        "",
        "@IMPORTS@",
        "from typing import Any",
        "",
        "import polars as pl",
        "",
        "",
        "class AnalysisMethods:",
        '    """The analyses a `Trace` offers (`traceview.registry.PUBLIC`), each through `run`."""',
        "",
        "    def run(self, name: str, **params: Any) -> Any:",
        '        """Analysis `name` with `params` (`Trace.run`)."""',
        "        raise NotImplementedError",
    ]
    for name in PUBLIC:
        a = REGISTRY[name]
        if "name" in a.params:
            raise ValueError(f"analysis {name}: a parameter named 'name' would clash with Trace.run(name, ...)")
        own = [p for p in a.params if p in a.own]
        forwarded = [p for p in a.params if p not in a.own]
        positional = own[:1] if own and _positional(a, own[0]) else []
        args = ["self"] + [_arg(a, p) for p in positional]
        if len(a.params) > len(positional):
            args += ["*"] + [_arg(a, p) for p in own[len(positional) :] + forwarded]
        if a.any_keywords:
            args = [arg for arg in args if arg != "*"] + ["**kwargs: Any"]
        ret = "pl.DataFrame"
        call = ", ".join(
            [repr(name)] + [f"{p}={p}" for p in (*own, *forwarded)] + (["**kwargs"] if a.any_keywords else [])
        )
        function = f"{a.module}.{a.declaration.function.__qualname__}"
        doc = _wrapped(a.declaration.summary.replace(3 * '"', 3 * "'"), 8) + [
            "",
            f"        Declared by `{function}`.",
            '        """',
        ]
        head = f"    def {name}({', '.join(args)}) -> {ret}:"
        if len(head) > 120:
            head = "\n".join([f"    def {name}(", *(f"        {arg}," for arg in args), f"    ) -> {ret}:"])
        out += ["", head, *doc, f"        return self.run({call})"]
    text = "\n".join(out) + "\n"
    imports = [
        line
        for line, name in (("from collections.abc import Sequence", "Sequence"), ("from pathlib import Path", "Path"))
        if f"{name}[" in text or f": {name}" in text or f"| {name}" in text
    ]
    return text.replace("@IMPORTS@\n", "".join(f"{line}\n" for line in imports))


def _positional(analysis: Analysis, param: str) -> bool:
    """Whether a method may take `param` by position: its first own parameter, unless it is a flag
    (a Boolean default), where a value meant for another order would be read silently as
    something else."""
    return not isinstance(analysis.params[param], bool)


def _arg(analysis: Analysis, param: str) -> str:
    """`param: annotation = default` (no default for a required one); ValueError for a default
    that is not a Python literal (it could not be written back)."""
    import ast

    default = analysis.params[param]
    head = f"{param}: {_annotation(analysis, param)}"
    if default is REQUIRED:
        return head
    try:
        same = ast.literal_eval(repr(default)) == default
    except (ValueError, SyntaxError):
        same = False
    if not same:
        raise ValueError(f"analysis {analysis.name}: the default of {param!r} is not a literal: {default!r}")
    return f"{head} = {default!r}"


def _wrapped(text: str, indent: int, width: int = 100) -> list[str]:
    """`text` as docstring lines of at most `width` characters, the first opening the docstring."""
    import textwrap

    pad = " " * indent
    lines = textwrap.wrap('"""' + text.replace("\\", "\\\\"), width - indent)
    return [pad + line for line in lines]
