"""Where traceview.parsers and traceview.dashboards live.

Installed (`pip install .`), they are folders inside the `traceview` package. In the repository
they are the top-level folders parsers/ and dashboards/ beside traceview/ (the design card's
layout), which setuptools maps into the package (`package-dir` in pyproject.toml; an editable
install maps them by an import hook of its own). This module covers the one case left: running
from a source checkout that is not the installed one (`python -m traceview` in the repository,
with no install, a regular install, or another checkout's editable install): then the two folders
beside this package are mapped here, and nothing else is (no other top-level name of the
checkout becomes importable as traceview.*).
"""

from __future__ import annotations

import importlib.util
import sys
from importlib.abc import MetaPathFinder
from pathlib import Path

SUBPACKAGES = ("parsers", "dashboards")


class _BesideFinder(MetaPathFinder):
    """Finds `traceview.<name>` for the SUBPACKAGES folders beside the package folder."""

    def __init__(self, folders: dict[str, Path]):
        self.folders = folders

    def find_spec(self, fullname, path=None, target=None):
        folder = self.folders.get(fullname)
        if folder is None:
            return None
        return importlib.util.spec_from_file_location(
            fullname, folder / "__init__.py", submodule_search_locations=[str(folder)]
        )


def use_source_checkout() -> None:
    """Map parsers/ and dashboards/ beside this package when they are not inside it (a checkout),
    before every other finder: the subpackages always come from the checkout the package itself
    was imported from, also when another checkout is installed in editable mode (whose hook would
    otherwise hand out its own parsers/ and dashboards/ under this package)."""
    here = Path(__file__).resolve().parent
    folders = {
        f"traceview.{name}": here.parent / name
        for name in SUBPACKAGES
        if not (here / name).is_dir() and (here.parent / name / "__init__.py").is_file()
    }
    if folders and not any(isinstance(f, _BesideFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, _BesideFinder(folders))
