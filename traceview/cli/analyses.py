"""`traceview analyses`: the declared analyses (`traceview.registry`), as a list, a graph or data.
The command registers itself on `traceview.cli.main.main` when the `traceview.cli` package is
imported."""

from __future__ import annotations

import click
import orjson

from traceview import registry
from traceview.cli.main import echo, handle_errors, main


def render(fmt: str, graph: bool) -> str:
    """The analyses: one line each (`text`), with their parameters and inputs (`graph`), as
    Graphviz dot (`dot`) or as data (`json`)."""
    if fmt == "dot":
        return registry.graph_dot()
    if fmt == "json":
        return orjson.dumps(registry.graph_json(), option=orjson.OPT_INDENT_2).decode()
    if graph:
        return registry.graph_text()
    return "\n".join(
        f"{a.name:22} {a.scope:8} {_first_sentence(a.declaration.summary)}" for a in registry.REGISTRY.values()
    )


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
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "dot", "json"]),
    default="text",
    show_default=True,
    help="Output format.",
)
@click.option("--write-methods", is_flag=True, hidden=True, help="Regenerate traceview/trace_methods.py (developers).")
@handle_errors
def analyses_command(graph: bool, fmt: str, write_methods: bool) -> None:
    """The analyses a profile gets: name, scope (rank-local or profile) and definition; --graph adds
    each one's parameters and inputs, --format dot draws the graph (docs/ARCHITECTURE.md)."""
    echo(write_methods_file() if write_methods else render(fmt, graph))
