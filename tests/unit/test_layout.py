"""The checkout is what every tool reads (issue 31): traceview/parsers and traceview/dashboards are
real folders inside the package, the design card's top-level parsers/ and dashboards/ are links to
them, and every module of the package sits in a layer of the import contract."""

from __future__ import annotations

import pytest

from tests.conftest import ROOT


@pytest.mark.parametrize("name", ["parsers", "dashboards"])
def test_top_level_folders_link_into_the_package(name):
    top, inside = ROOT / name, ROOT / "traceview" / name
    assert inside.is_dir() and not inside.is_symlink()
    assert top.is_symlink() and top.resolve() == inside.resolve()


def test_every_module_of_the_package_is_in_a_layer():
    from traceview.rules import read  # tomllib, or tomli on Python 3.10

    contracts = read(ROOT / "pyproject.toml")["tool"]["importlinter"]["contracts"]
    (layers,) = [c["layers"] for c in contracts if c["type"] == "layers"]
    named = {part.strip() for layer in layers for part in layer.replace("|", ":").split(":")}
    package = ROOT / "traceview"
    modules = {f"traceview.{p.stem}" for p in package.glob("*.py") if p.stem != "__init__"}
    modules |= {f"traceview.{p.name}" for p in package.iterdir() if (p / "__init__.py").is_file()}
    assert modules - named == set()
    assert named - modules == set()
