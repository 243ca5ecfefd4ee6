"""Where the generator writes and what it copies."""

from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).resolve().parent.parent  # sample_traces/
SHARED_CPU_DIR = HERE.parent.parent / "shared" / "traces" / "generated_cpu"
CPU_TRACE_NAME = "rank0.1795315865798409430.pt.trace.json.gz"
SIZE_LIMIT_BYTES = 5 * 1024 * 1024
