"""traceview: profiler trace analysis for torch.profiler (Kineto) and torch_npu (Ascend) profiles.

    import traceview as tv
    t = tv.load("./profile")      # a file, a rank folder, or a folder of ranks
    t.device_tasks                # polars DataFrame, schema in docs/schema.md
"""

from traceview.errors import TraceError
from traceview.load import load
from traceview.trace import Trace

__version__ = "0.1.0"

__all__ = ["Trace", "TraceError", "load", "__version__"]
