"""One colour per step-time term, per compute class and per rank, used by every figure and table.

Terms are the keys of the summary's step entries without the `_us` suffix; classes are the fine
compute classes of `traceview.analysis.classes` (see docs/metrics.md).
"""

from __future__ import annotations

from traceview.terms import EXPOSED_COMM
from traceview.terms import TERM_LABELS as _LABELS

TERM_COLORS: dict[str, str] = {
    "computing": "#4C78A8",  # blue: useful device work not hidden behind anything
    "overlapped": "#72B7B2",  # teal: compute and communication at the same time
    EXPOSED_COMM: "#D55E00",  # vermillion: exposed communication (the class's colour)
    "exposed_memcpy": "#225555",  # dark teal: exposed memcpy (the memcpy class's colour)
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
    "iteration_exposed_comm": TERM_COLORS[EXPOSED_COMM],
    "iteration_exposed_memcpy": TERM_COLORS["exposed_memcpy"],
    "data_loading": "#EECA3B",  # yellow: the host preparing the batch while the device waits
    "host_overhead": "#9D755D",  # brown: framework code and launches while the device waits
    "other_idle": TERM_COLORS["free"],
}

#: One colour per fine compute class, and the host runtime lane, told apart by every reader: the
#: seven colours of Okabe & Ito's colour-blind-safe set ("Color Universal Design", 2008) and seven
#: of Paul Tol's qualitative schemes (bright, light, dark, muted; personal.sron.nl/~pault). Picked so
#: that every pair is at least CIEDE2000 ΔE 10 apart in normal vision and after a deuteranopia or
#: protanopia simulation (Machado et al. 2009, severity 1); tests/unit/test_colors.py checks it
#: (measured minimum 11.1). Tritanopia (about 0.01 % of readers) is not held to it.
CLASS_COLORS: dict[str, str] = {
    "gemm": "#0072B2",  # Okabe-Ito blue
    "attention": "#56B4E9",  # Okabe-Ito sky blue
    "convolution": "#332288",  # Tol muted indigo
    "normalization": "#009E73",  # Okabe-Ito bluish green
    "softmax": "#225522",  # Tol dark green
    "elementwise": "#E69F00",  # Okabe-Ito orange
    "reduction": "#F0E442",  # Okabe-Ito yellow
    "optimizer": "#CC79A7",  # Okabe-Ito reddish purple
    "embedding": "#AA3377",  # Tol bright purple
    "communication": "#D55E00",  # Okabe-Ito vermillion
    "memcpy": "#225555",  # Tol dark teal
    "memset": "#000000",  # Okabe-Ito black
    "other": "#BBBBBB",  # Tol grey
}
FALLBACK_CLASS_COLOR = "#DDDDDD"  # a class a user's rules file added (Tol pale grey)
HOST_COLORS: dict[str, str] = {  # host-thread lanes of the timeline, by host event kind
    "operator": "#6B7280",
    "runtime": "#99DDFF",  # Tol light pale cyan: apart from every class colour (see CLASS_COLORS)
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
