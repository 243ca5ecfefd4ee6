"""Rank-local analyses: computed where a rank is parsed (a Ray task), handed to the driver's Trace.

An analysis is rank-local when its rows for a rank depend on that rank's frames only, so running
it on each rank alone and concatenating the results gives what it gives on all ranks at once
(`tests/test_executors.py` checks this equality on real multi-rank profiles). These are:

    trace_breakdown          whole-trace decomposition per rank (`traceview.analysis.breakdown`)
    classified               the columns `classify` adds with the shipped rules (launch_op,
                             compute_class, compute_group, classified), one row per device task
    class_summary            compute classes per rank
    unclassified             unclassified device time per rank
    top_kernels              the 10 kernels with most device time per rank
    step_times               host/device step lengths and iteration gaps (`gaps.step_times`)
    launch_calls             launch call of each correlation id (`gaps.launch_calls`)
    stream_idle              idle time per stream, whole trace, 30 µs kernel-wait threshold
    launch_delays            launch-delay statistics per rank

Not rank-local, so computed by the driver from the frames it holds: the pipeline bubble (the
pipeline step is the longest compute span over the ranks of a pipeline group) and with it the
step breakdown and long steps; pipeline stages; collective matching, stragglers and step skew;
findings (they read stragglers). Results travel as Parquet bytes, a few KB per rank except
`classified` and `launch_calls` (a few small columns per device task / launch).

Where they are computed (`load(..., analyse=True)`, which every CLI command but `info` asks for):
in the Ray task that parses the rank, and in the local executor's worker process when the ranks
are large (`traceview.executors.ANALYSE_MIN_BYTES`; smaller ones are cheaper on the driver). They
are stored in the rank's cache entry (`traceview.cache`), so a second open of the profile reads
them instead of recomputing them, while the code that computed them is the same
(`traceview.digest.analysis_digest`).
"""

from __future__ import annotations

import io
from collections.abc import Callable

import polars as pl

#: The columns `traceview.analysis.classes.classify` adds to device_tasks.
CLASS_COLUMNS = ("launch_op", "compute_class", "compute_group", "classified")

#: name -> (the Trace memo key it fills, how to compute it on a one-rank Trace). The keys are
#: those `traceview.trace.Trace` uses for the same calls with their default arguments.
ANALYSES: dict[str, tuple[object, Callable]] = {
    "trace_breakdown": ("trace_breakdown", lambda t: t.trace_breakdown()),
    "classified": (("classified", None), lambda t: t.classified_tasks().select(CLASS_COLUMNS)),
    "class_summary": (("class_summary", None, ("rank",)), lambda t: t.compute_classes()),
    "unclassified": (("unclassified", None), lambda t: t.unclassified_share()),
    "top_kernels": (("top_kernels", 10, None, ("rank",)), lambda t: t.top_kernels()),
    "step_times": ("step_times", lambda t: t.iteration_gaps()),
    "launch_calls": ("launch_calls", lambda t: t._launch_calls()),
    "stream_idle": (("stream_idle", 30.0, False), lambda t: t.stream_idle()),
    "launch_delays": ("launch_delays", lambda t: t.launch_delays()),
}


def compute(trace) -> dict[str, bytes]:
    """Every rank-local analysis of a one-rank `trace`, as Parquet bytes by name."""
    out = {}
    for name, (_, run) in ANALYSES.items():
        buf = io.BytesIO()
        run(trace).write_parquet(buf)
        out[name] = buf.getvalue()
    return out


def seed(trace, per_rank: list[dict[str, bytes] | None]) -> bool:
    """Fill `trace`'s memo with the per-rank results (one entry per row of `trace.ranks`, in
    order); each result's `rank` column becomes the rank's number in `trace`. Nothing is seeded
    unless every rank has its results (a rank cached without them, e.g. by `traceview info`, has
    none) and all of them read back (a damaged cache file: the Trace computes them). True if seeded."""
    if not per_rank or any(r is None or set(r) != set(ANALYSES) for r in per_rank):
        return False
    numbers = trace.ranks["rank"].to_list()
    memo = {}
    try:
        for name, (key, _) in ANALYSES.items():
            frames = [_renumbered(pl.read_parquet(io.BytesIO(r[name])), n) for r, n in zip(per_rank, numbers)]
            frame = pl.concat(frames, how="diagonal_relaxed")
            if name == "classified":
                if frame.height != trace.device_tasks.height or frame.columns != list(CLASS_COLUMNS):
                    return False
                frame = trace.device_tasks.hstack(frame)
            memo[key] = frame
    except (OSError, ValueError, pl.exceptions.PolarsError):
        return False
    trace._memo.update(memo)
    return True


def _renumbered(frame: pl.DataFrame, rank: int) -> pl.DataFrame:
    if "rank" not in frame.columns:
        return frame
    return frame.with_columns(pl.lit(rank, dtype=frame.schema["rank"]).alias("rank"))
