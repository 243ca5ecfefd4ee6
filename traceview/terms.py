"""The vocabulary: the name of every term and column a view shows, and its label, in one place.

The analyses compute the terms under these names (a frame's column is the name plus its unit:
`communication_not_overlapped_us`, `..._frac`); the views (CLI text, report, dashboard, notebook,
Perfetto export, diff, compare) read the columns and print the labels from here, never spelling a
name themselves. docs/metrics.md defines each term.

- The step's device window (`traceview.analysis.breakdown`): OVERLAP_TERMS, BREAKDOWN_TERMS,
  TABLE_TERMS, TERM_LABELS.
- The iteration (`traceview.analysis.iteration`): ITERATION_TERMS, HOST_PARTS, ITERATION_LABELS.
- The phases (`traceview.analysis.phases`): PHASES, DEVICE_PHASE_COLUMNS, WALL_PHASE_COLUMNS,
  PHASE_LABELS.
- The diff of two runs (`traceview.analysis.diff`): DIFF_TERMS.
"""

from __future__ import annotations

#: Exposed communication: device time of communication with no computation at the same time.
EXPOSED_COMM = "communication_not_overlapped"

# ---- the step's device window (docs/metrics.md, "The step")

#: The overlap terms: a window's device time by what runs at the same time, in the order every
#: view shows them.
OVERLAP_TERMS = ("computing", "communication", "overlapped", EXPOSED_COMM, "exposed_memcpy", "free")

#: Every term of `breakdown.step_breakdown` (columns `<term>_us`).
BREAKDOWN_TERMS = (
    *OVERLAP_TERMS,
    "idle",
    "busy",
    "stage",
    "bubble",
    f"{EXPOSED_COMM}_exclude_receive",
    "pipeline_bubble",
    "preparing",
    "duration",
    "start",
)

#: The terms a per-step table shows, in this order (the CLI text and the report; after the step time).
TABLE_TERMS = (*OVERLAP_TERMS, "bubble", "pipeline_bubble", "preparing")

#: The label of each term wherever a view shows it (CLI text, report, dashboard, diff): one label,
#: one number. The exclude-receive term has its own label ("exposed comm excl. receives").
TERM_LABELS: dict[str, str] = {
    "computing": "computing",
    "communication": "communication",
    "overlapped": "overlapped comm",
    EXPOSED_COMM: "exposed comm",
    "exposed_memcpy": "exposed memcpy",
    "free": "free",
    "idle": "idle",
    "busy": "busy",
    "stage": "stage",
    "bubble": "bubble",
    f"{EXPOSED_COMM}_exclude_receive": "exposed comm excl. receives",
    "pipeline_bubble": "pipeline bubble",
    "preparing": "preparing",
    "duration": "step time",
    "start": "start",
}

# ---- the phases (docs/metrics.md, "Phases")

#: The phases, in their order of attribution (an instant in two goes to the first).
PHASES = ("optimizer", "backward", "forward", "other")
#: Device time per phase and wall time per phase (columns `<name>_us`), in display order.
DEVICE_PHASE_COLUMNS = [f"device_{p}" for p in ("forward", "backward", "optimizer", "other")]
WALL_PHASE_COLUMNS = [f"wall_{p}" for p in ("forward", "backward", "optimizer", "other")]
PHASE_LABELS: dict[str, str] = {
    **{f"device_{p}": f"device {p}" for p in PHASES},
    **{f"wall_{p}": f"{p} (wall)" for p in PHASES},
}

# ---- the iteration (docs/metrics.md, "The iteration")

#: The iteration's terms (columns `<term>_us` after rank, step); they add up to iteration_us.
ITERATION_TERMS = [
    "iteration_computing",
    "iteration_exposed_comm",
    "iteration_exposed_memcpy",
    "data_loading",
    "host_overhead",
    "other_idle",
]
#: The parts of host_overhead (the TensorBoard plugin's Runtime and CPU Exec).
HOST_PARTS = ["host_runtime", "host_framework"]

#: The label of each iteration column wherever a view shows it. The device terms are measured over
#: the iteration window, not the step's device window: their labels say "device ..." so that no
#: label of the step table ("computing", "exposed comm") names a second number.
ITERATION_LABELS: dict[str, str] = {
    "iteration": "iteration",
    "iteration_computing": "device computing",
    "iteration_exposed_comm": "device exposed comm",
    "iteration_exposed_memcpy": "device exposed memcpy",
    "data_loading": "data loading",
    "host_overhead": "host overhead",
    "other_idle": "other idle",
    "host_runtime": "host runtime",
    "host_framework": "host framework",
    **PHASE_LABELS,
}

# ---- two runs (docs/diff.md)

#: Terms compared, in report order: the step time and its exact decomposition first.
DIFF_TERMS: tuple[str, ...] = (
    "duration",
    "computing",
    EXPOSED_COMM,
    "exposed_memcpy",
    "idle",
    "free",
    "busy",
    "busy_span",
    "communication",
    "overlapped",
    "bubble",
    "stage",
    f"{EXPOSED_COMM}_exclude_receive",
    "preparing",
)

# ---- memory at the peak (docs/memory.md)

#: The key of one memory series (`memory` rows): a device's allocator on a rank.
MEMORY_SERIES = ["rank", "device_type", "device", "component"]
BEFORE_TRACE = "(allocated before the trace)"
UNATTRIBUTED = "(not attributed: no allocation records)"
#: The rows of memory_at_peak that are not blocks but what the blocks leave unexplained.
REMAINDERS = (BEFORE_TRACE, UNATTRIBUTED)

# ---- FLOPs (docs/roofline.md)

#: Below this coverage (the share of a step's kernel time whose FLOPs are known) a traced TFLOP/s
#: and MFU say more about what the formulas cover than about the run: they are null, and
#: traced_note says why ("n/a (FLOPs known for 3 % of kernel time)").
MIN_FLOPS_COVERAGE = 0.5
#: The operator families whose work runs on the matrix (tensor, cube) units; the others on the
#: vector units.
MATRIX_FAMILIES = ("gemm", "sdpa", "sdpa_bwd", "conv", "conv_bwd", "matmul")
