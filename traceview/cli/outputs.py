"""The renderer seam: each command's outputs, declared once.

A command builds one document (the summary, a run diff, a comparison, ...) and hands it to its
`Renderers`: format name -> a function of that document to the text printed. The `--format`
option (its choices, default and help) and the dispatch come from the same declaration, so no
command branches on a format name, and adding a format to a command is one entry here. The JSON
renderer every command shares is `as_json`. Renderers are named by module (`lazy`) so that
declaring them imports nothing: a command imports only the renderer it prints with.

`traceview report` writes files (html, json, csv tables, parquet) and `export` one format: they
write through `traceview.cli.report.write_output`, not through this seam.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import click
import orjson

from traceview.safe_text import json_text

#: A renderer: a command's document -> the text printed.
Render = Callable[[Any], str]


def as_json(doc: Any) -> str:
    """`doc` as indented JSON, with the characters a terminal would act on escaped
    (`safe_text.json_text`: the same JSON value)."""
    return json_text(orjson.dumps(doc, option=orjson.OPT_INDENT_2 | orjson.OPT_SERIALIZE_NUMPY).decode())


def lazy(module: str, name: str) -> Render:
    """The renderer `name` of `module`, imported when it first renders."""

    def render(doc: Any) -> str:
        return getattr(importlib.import_module(module), name)(doc)

    render.__qualname__ = f"{module}.{name}"
    return render


@dataclass(frozen=True)
class Renderers:
    """One command's output formats: `formats` (name -> renderer, in the order `--help` lists
    them), the `default` one and the option's `help`."""

    formats: Mapping[str, Render]
    default: str = "text"
    help: str = "Output format."

    def __post_init__(self) -> None:
        if self.default not in self.formats:
            raise ValueError(f"default format {self.default!r} is not one of {', '.join(self.formats)}")

    def option(self) -> Callable[[Callable], Callable]:
        """The command's `--format` option (the value reaches it as `fmt`)."""
        choice = click.Choice(list(self.formats))
        return click.option("--format", "fmt", type=choice, default=self.default, show_default=True, help=self.help)

    def render(self, fmt: str, doc: Any) -> str:
        """`doc` in format `fmt` (click has checked `fmt` against the choices)."""
        return self.formats[fmt](doc)


INFO = Renderers({"text": lazy("traceview.cli.info", "info_text"), "json": as_json})

SUMMARY = Renderers({"text": lazy("traceview.cli.summary", "summary_text"), "json": as_json})

ROOFLINE = Renderers(
    {
        "text": lazy("traceview.cli.roofline", "roofline_text"),
        "json": lazy("traceview.cli.roofline", "roofline_json"),
        "csv": lazy("traceview.cli.roofline", "roofline_csv"),
    }
)

DIFF = Renderers(
    {
        "text": lazy("traceview.cli.diff", "diff_text"),
        "json": as_json,
        "html": lazy("traceview.dashboards.diff_report", "diff_html"),
    },
    help="Output format (html: a self-contained page on stdout).",
)

COMPARE = Renderers(
    {
        "text": lazy("traceview.cli.compare", "compare_text"),
        "json": as_json,
        "csv": lazy("traceview.cli.compare", "compare_csv"),
        "html": lazy("traceview.dashboards.compare_view", "compare_html"),
    },
    help="Output format (csv: one row per run; html: a self-contained page).",
)

ANALYSES = Renderers(
    {
        "text": lazy("traceview.cli.analyses", "analyses_text"),
        "dot": lazy("traceview.cli.analyses", "analyses_dot"),
        "json": lazy("traceview.cli.analyses", "analyses_json"),
    }
)
