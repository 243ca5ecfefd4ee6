"""The renderer seam (`traceview.cli.outputs`): each command's `--format` choices are its declared
renderers, every declared renderer resolves to a function, and the dispatch renders the format
asked for."""

from __future__ import annotations

import importlib

import click
import pytest

from traceview.cli import outputs

#: the click group (`traceview.cli.main` the module; the package's `main` is the entry point)
GROUP = importlib.import_module("traceview.cli.main").main

COMMANDS = {
    "info": outputs.INFO,
    "summary": outputs.SUMMARY,
    "roofline": outputs.ROOFLINE,
    "diff": outputs.DIFF,
    "compare": outputs.COMPARE,
    "analyses": outputs.ANALYSES,
}


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_the_format_option_offers_the_declared_renderers(name):
    command = GROUP.commands[name]
    option = next(p for p in command.params if p.name == "fmt")
    assert isinstance(option.type, click.Choice)
    assert list(option.type.choices) == list(COMMANDS[name].formats)
    assert option.default == COMMANDS[name].default


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_lazy_renderer_names_a_function(name):
    for fmt, render in COMMANDS[name].formats.items():
        if render is outputs.as_json:
            continue
        module, _, function = render.__qualname__.rpartition(".")
        assert callable(getattr(importlib.import_module(module), function)), (name, fmt)


def test_render_dispatches_on_the_format():
    seen = []
    renderers = outputs.Renderers({"text": lambda doc: seen.append(("text", doc)) or "t", "json": outputs.as_json})
    assert renderers.render("text", {"a": 1}) == "t" and seen == [("text", {"a": 1})]
    assert renderers.render("json", {"a": "\x9b"}) == '{\n  "a": "\\u009b"\n}'  # a C1 control escaped
    with pytest.raises(ValueError, match="default format 'csv' is not one of text"):
        outputs.Renderers({"text": str}, default="csv")
