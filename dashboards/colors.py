"""One colour per step-time term, per compute class and per rank, used by every figure and table.

Terms are the keys of the summary's step entries without the `_us` suffix; classes are the fine
compute classes of `traceview.analysis.classes` (see docs/metrics.md).
"""

from __future__ import annotations

from traceview.analysis.breakdown import TERM_LABELS as _LABELS

TERM_COLORS: dict[str, str] = {
    "computing": "#4C78A8",  # blue: useful device work not hidden behind anything
    "overlapped": "#72B7B2",  # teal: compute and communication at the same time
    "communication_not_overlapped": "#E45756",  # red: exposed communication
    "exposed_memcpy": "#F58518",  # orange
    "free": "#BAB0AC",  # grey: device idle inside the step
    "bubble": "#B279A2",  # purple: pipeline bubble (receive ops, torch_npu's)
    "pipeline_bubble": "#6F4E7C",  # dark purple: the pipeline-bubble estimate
}

#: Legend of the stacked step bars: the terms' labels (`traceview.analysis.breakdown.TERM_LABELS`),
#: plus what the bar shows of computing (computing − overlapped: the overlapped part has its own bar)
#: and where the bubble is drawn.
TERM_LABELS: dict[str, str] = {
    **{t: _LABELS[t] for t in TERM_COLORS},
    "computing": f"{_LABELS['computing']} (not overlapped)",
    "bubble": f"{_LABELS['bubble']} (inside the bars)",
    "pipeline_bubble": f"{_LABELS['pipeline_bubble']} (estimate)",
}

#: The iteration's terms (`traceview.analysis.iteration.TERMS`), wherever they are stacked.
ITERATION_COLORS: dict[str, str] = {
    "iteration_computing": TERM_COLORS["computing"],
    "iteration_exposed_comm": TERM_COLORS["communication_not_overlapped"],
    "iteration_exposed_memcpy": TERM_COLORS["exposed_memcpy"],
    "data_loading": "#EECA3B",  # yellow: the host preparing the batch while the device waits
    "host_overhead": "#9D755D",  # brown: framework code and launches while the device waits
    "other_idle": TERM_COLORS["free"],
}

CLASS_COLORS: dict[str, str] = {
    "gemm": "#1F77B4",
    "attention": "#17BECF",
    "convolution": "#AEC7E8",
    "normalization": "#2CA02C",
    "softmax": "#98DF8A",
    "elementwise": "#FF7F0E",
    "reduction": "#FFBB78",
    "optimizer": "#9467BD",
    "embedding": "#C5B0D5",
    "communication": TERM_COLORS["communication_not_overlapped"],
    "memcpy": TERM_COLORS["exposed_memcpy"],
    "memset": "#8C564B",
    "other": "#7F7F7F",
}
FALLBACK_CLASS_COLOR = "#C7C7C7"  # a class a user's rules file added
HOST_COLORS: dict[str, str] = {  # host-thread lanes of the timeline, by host event kind
    "operator": "#6B7280",
    "runtime": "#D97706",
    "annotation": "#A78BFA",
    "python": "#FCD34D",
}

RANK_COLORS: list[str] = [
    "#4C78A8",
    "#F58518",
    "#54A24B",
    "#E45756",
    "#72B7B2",
    "#EECA3B",
    "#B279A2",
    "#FF9DA6",
    "#9D755D",
    "#BAB0AC",
    "#1F77B4",
    "#2CA02C",
    "#9467BD",
    "#8C564B",
    "#E377C2",
    "#17BECF",
]
LONG_STEP_COLOR = "#D62728"


def class_color(name: str) -> str:
    return CLASS_COLORS.get(name) or HOST_COLORS.get(name, FALLBACK_CLASS_COLOR)


def rank_color(rank: int) -> str:
    return RANK_COLORS[rank % len(RANK_COLORS)]
