"""Which device tasks are communication, and how host-event categories map to kinds.

These are data tables, not code: an ordered list of case-insensitive regular expressions matched
against kernel names, and a mapping from the profiler's `cat` to a host-event kind. The finer
compute classes (gemm, attention, ...) live with the compute-class analysis.
"""

from __future__ import annotations

import polars as pl

#: A GPU kernel whose name matches any of these is communication (NCCL/RCCL/HCCL collectives and
#: P2P, PyTorch custom all-reduce, symmetric-memory collectives).
COMMUNICATION_KERNEL_PATTERNS: tuple[str, ...] = (
    r"nccl",
    r"rccl",
    r"hccl",
    r"^hcom_",
    r"cross_device_reduce",
    r"multimem_all_reduce",
    # collective names, not inside a longer word (so `small_reduce_kernel` is no all-reduce)
    r"(?:^|[^a-z])all_?reduce",
    r"(?:^|[^a-z])all_?gather",
    r"(?:^|[^a-z])reduce_?scatter",
    r"(?:^|[^a-z])all_?to_?all",
    r"sendrecv",
)

#: Kineto X-event category (lower-cased) -> device task kind.
DEVICE_CATEGORIES: dict[str, str] = {
    "kernel": "kernel",
    "gpu_memcpy": "memcpy",
    "memcpy": "memcpy",
    "gpu_memset": "memset",
    "memset": "memset",
}

#: Kineto X-event category (lower-cased) of GPU-side user annotations (ProfilerStep#N on the GPU).
DEVICE_ANNOTATION_CATEGORIES: tuple[str, ...] = ("gpu_user_annotation",)

#: Host X-event category (lower-cased) -> host event kind; anything else is "other".
HOST_CATEGORIES: dict[str, str] = {
    "cpu_op": "operator",
    "operator": "operator",
    "user_annotation": "annotation",
    "python_function": "python",
    "cuda_runtime": "runtime",
    "runtime": "runtime",
    "cuda_driver": "runtime",
    "cuda_sync": "runtime",
    "mtia_runtime": "runtime",
}

#: Host categories that are the profiler's own bookkeeping, not program activity (not loaded).
IGNORED_CATEGORIES: tuple[str, ...] = ("trace",)


def communication_regex() -> str:
    """One case-insensitive regex matching any communication kernel name."""
    return "(?i)" + "|".join(f"(?:{p})" for p in COMMUNICATION_KERNEL_PATTERNS)


def device_kind(raw_kind: pl.Expr, name: pl.Expr) -> pl.Expr:
    """Kind of a device task: a kernel whose name is a collective becomes 'communication'."""
    return (
        pl.when((raw_kind == "kernel") & name.str.contains(communication_regex()))
        .then(pl.lit("communication"))
        .otherwise(raw_kind)
    )
