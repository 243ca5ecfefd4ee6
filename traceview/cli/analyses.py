"""`traceview analyses`: the declared analyses (`traceview.registry`), as a list, a graph or data.
The command registers itself on `traceview.cli.main.main` when the `traceview.cli` package is
imported."""

from __future__ import annotations

import click

from traceview import registry
from traceview.cli.main import echo, handle_errors, main
from traceview.cli.outputs import ANALYSES, as_json


def analyses_text(graph: bool) -> str:
    """The analyses: one line each (name, scope, definition), or with `graph` each one's parameters
    and inputs (`registry.graph_text`)."""
    if graph:
        return registry.graph_text()
    return "\n".join(
        f"{a.name:22} {a.scope:8} {_first_sentence(a.declaration.summary)}" for a in registry.REGISTRY.values()
    )


def analyses_dot(graph: bool) -> str:
    """The graph in Graphviz dot."""
    return registry.graph_dot()


def analyses_json(graph: bool) -> str:
    """The graph as data (`registry.graph_json`)."""
    return as_json(registry.graph_json())


def _first_sentence(text: str, width: int = 90) -> str:
    """The first sentence of `text`, cut to `width` characters."""
    first = text.split(". ")[0].rstrip(".")
    return first if len(first) <= width else first[: width - 3].rstrip() + "..."


def write_methods_file() -> str:
    """Regenerate `traceview/trace_methods.py` from the declarations; the line saying so."""
    registry.METHODS_FILE.write_text(registry.methods_source())
    return f"wrote {registry.METHODS_FILE}"


@main.command("analyses")
@click.option("--graph", is_flag=True, help="Each analysis with its parameters and inputs.")
@ANALYSES.option()
@click.option("--write-methods", is_flag=True, hidden=True, help="Regenerate traceview/trace_methods.py (developers).")
@handle_errors
def analyses_command(graph: bool, fmt: str, write_methods: bool) -> None:
    """The analyses a profile gets: name, scope (rank-local or profile) and definition; --graph adds
    each one's parameters and inputs, --format dot draws the graph (docs/ARCHITECTURE.md)."""
    echo(write_methods_file() if write_methods else ANALYSES.render(fmt, graph))
