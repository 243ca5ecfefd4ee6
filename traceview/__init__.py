"""traceview: profiler trace analysis for torch.profiler (Kineto) and torch_npu (Ascend) profiles.

    import traceview as tv
    t = tv.load("./profile")      # a file, a rank folder, or a folder of ranks
    t.device_tasks                # polars DataFrame, schema in docs/schema.md
    d = tv.diff(t, "./other")     # what changed between two runs (docs/diff.md)
    c = tv.compare(["./a", "./b", "./c"])  # N runs side by side (docs/compare.md)

The package's layers (docs/ARCHITECTURE.md): traceview.parsers (ingestion) and traceview.analysis
(pure functions of frames) on the foundation (schema, errors, rules); the model (Trace, load, the
cache, the executors) above them; traceview.dashboards (views) and traceview.cli on top.
"""

from traceview import notebook_views, ruleset
from traceview.errors import TraceError
from traceview.loader import load
from traceview.trace import Trace
from traceview.version import __version__


def _notebook_views():
    """The notebook views (`Trace.plot`, `Trace._repr_html_`, `RunComparison.figure`): the package
    is the composition root that hands them to the model (`traceview.notebook_views`)."""
    from traceview.dashboards import notebook

    return notebook


notebook_views.install(_notebook_views)

__all__ = ["Trace", "TraceError", "compare", "diff", "load", "ruleset", "__version__"]


def diff(base, new, rules=None, **options):
    """Compare run `new` with run `base`, each a loaded `Trace` or a path to `load`; `rules`: a
    rules file (or `traceview.ruleset.RuleSet`) both runs are analysed with (a path is loaded with
    it, a Trace taken `with_rules`); `options` as `traceview.run_diff.diff` (step, whole_trace).
    Returns a `RunDiff`."""
    from traceview.run_diff import diff as compare

    load_options = _with_rules_built({"rules": rules})
    return compare(_run(base, load_options), _run(new, load_options), **options)


def compare(runs, labels=None, model=None, **load_options):
    """Compare runs side by side, each a loaded `Trace` or a path to `load` (with `load_options`;
    with `rules=`, a Trace is taken `with_rules` too), in order; `labels` one per run (default:
    each path's name); `model`: keyword arguments of `Trace.throughput` for tokens/s and MFU. Returns a `RunComparison` (docs/compare.md)."""
    from traceview.run_compare import compare as side_by_side

    if isinstance(runs, (str, Trace)) or hasattr(runs, "__fspath__"):
        raise TypeError("compare takes a list of runs (paths or Traces), two or more")
    load_options = _with_rules_built(load_options)
    return side_by_side([_run(run, load_options) for run in runs], labels=labels, model=model)


def _with_rules_built(load_options: dict) -> dict:
    """`load_options` with its rules file (if any) read once, as a RuleSet every run shares."""
    if load_options.get("rules") is None:
        return load_options
    return {**load_options, "rules": ruleset.build(load_options["rules"])}


def _run(run, load_options: dict) -> Trace:
    """A run as a Trace: a loaded Trace (taken `with_rules` when `load_options` gives rules, so it
    is analysed as a loaded path is), or a path loaded with `load_options`."""
    if isinstance(run, Trace):
        rules = load_options.get("rules")
        return run if rules is None else run.with_rules(rules)
    return load(run, **load_options)
