"""The model's hand-off to the notebook views, without an import from the model up to them.

`Trace.plot`, `Trace._repr_html_` and `RunComparison.figure` draw with `traceview.dashboards.notebook`,
a view. The model may not import a view (the layers contract in pyproject.toml), so the package's
own `__init__` (the composition root, above every layer) installs a loader of that module here, and
the model asks for it when a figure or table is wanted: plotly is imported on first use only.
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType

_loader: Callable[[], ModuleType] | None = None


def install(loader: Callable[[], ModuleType]) -> None:
    """Set the function that imports and returns the notebook views module."""
    global _loader
    _loader = loader


def views() -> ModuleType:
    """The notebook views module (`plots(trace)`, `trace_html(trace)`, `comparison_figure(doc)`).
    RuntimeError when nothing installed it (the `traceview` package always does on import)."""
    if _loader is None:
        raise RuntimeError("traceview's notebook views are not installed (import traceview first)")
    return _loader()
