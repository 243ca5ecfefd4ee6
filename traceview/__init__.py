"""traceview: profiler trace analysis for torch.profiler (Kineto) and torch_npu (Ascend) profiles.

    import traceview as tv
    t = tv.load("./profile")      # a file, a rank folder, or a folder of ranks
    t.device_tasks                # polars DataFrame, schema in docs/schema.md
    d = tv.diff(t, "./other")     # what changed between two runs (docs/diff.md)

`load`, `diff` and `Trace` are imported on first use, so that `parsers` (which builds on
`traceview.schema`) and `traceview.load` (which calls `parsers`) do not import each other at start-up.
"""

from traceview.errors import TraceError

__version__ = "0.1.0"

__all__ = ["Trace", "TraceError", "diff", "load", "__version__"]


def __getattr__(name: str):
    if name == "load":
        from traceview.loader import load

        return load
    if name == "diff":
        from traceview.run_diff import diff

        return diff
    if name == "Trace":
        from traceview.trace import Trace

        return Trace
    raise AttributeError(f"module 'traceview' has no attribute {name!r}")
