"""Sample cpu_single: a verbatim copy of a real torch.profiler CPU trace."""

from __future__ import annotations

import gzip
import hashlib
import json
import shutil
import sys
from pathlib import Path

from .output import write_bytes
from .paths import CPU_TRACE_NAME, SHARED_CPU_DIR

# Sample 4: cpu_single (copied)
CPU_PROVENANCE = """# Provenance: cpu_single/

`{name}` is a verbatim copy of `traces/generated_cpu/single/{name}` from the project's shared real-trace corpus
(`../shared/traces`), which describes it as follows (adapted from its `generated_cpu/PROVENANCE.md`):

Real torch.profiler (Kineto) output, recorded on a 2-core x86-64 CPU machine with torch 2.13.0+cpu on 2026-11-22:
a tiny Transformer trained for 8 steps under `torch.profiler.profile(schedule(wait=1, warmup=1, active=5),
record_shapes=True, on_trace_ready=tensorboard_trace_handler)`.
- `single/`: one process; ProfilerStep#2..#6; about 11k events.
No GPU events: use it for CPU-only handling and host-side step analysis.
`traceName` fields were rewritten to relative paths; nothing else was changed.

This file is the only shipped sample that is copied rather than generated: `sample_traces/generate.py` copies it
again when `../shared/traces` is present and leaves this copy alone otherwise.
SHA-256 of the copy: `{sha}`.
"""


def write_cpu_single(out: Path):
    src = SHARED_CPU_DIR / "single" / CPU_TRACE_NAME
    dst = out / CPU_TRACE_NAME
    if src.is_file():
        out.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, dst)
    elif not dst.is_file():
        print(f"warning: {src} is absent and no copy exists in {out}; cpu_single not written", file=sys.stderr)
        return None
    sha = hashlib.sha256(dst.read_bytes()).hexdigest()
    write_bytes(out / "PROVENANCE.md", CPU_PROVENANCE.format(name=CPU_TRACE_NAME, sha=sha).encode())
    data = json.loads(gzip.decompress(dst.read_bytes()))
    steps = sorted(
        {e["name"] for e in data["traceEvents"] if e.get("name", "").startswith("ProfilerStep#")},
        key=lambda n: int(n.split("#")[1]),
    )
    return {
        "file": CPU_TRACE_NAME,
        "sha256": sha,
        "events": len(data["traceEvents"]),
        "steps": steps,
        "step_durations_ns": {
            e["name"]: round(e["dur"] * 1000)
            for e in data["traceEvents"]
            if e.get("name", "").startswith("ProfilerStep#")
        },
    }
