#!/usr/bin/env python3
"""(Re)generate the sample traces shipped in ``sample_traces/``.

    python sample_traces/generate.py            # write every sample, then run the checks
    python sample_traces/generate.py --check    # only check the files that are already there

Deterministic: fixed seeds, fixed ids and timestamps, gzip headers with mtime 0, no wall clock anywhere in the
output; two runs produce byte-identical files.  Standard library only.

Samples (details, layouts and every value known by construction: README.md, which this script also writes):
  dp4_nccl/      4-rank DDP GPU training (Kineto JSON .gz per rank), NCCL all-reduce on a dedicated stream,
                 rank 2 deliberately slow; expected.json holds the per-rank/per-step numbers.
  pp4_1f1b/      4-stage 1F1B pipeline (m=8 micro-batches, 2 steps) with NCCL SendRecv; expected.json.
  ascend_2rank/  2-rank torch_npu layout (kernel_details.csv, trace_view.json, step_trace_time.csv, ...).
  cpu_single/    a verbatim copy of a real torch.profiler CPU trace (copied, not generated).

All known values are computed by the small interval functions of samplegen/intervals.py (``union``/``intersect``/``subtract``) from
the very task intervals that are written to the files, so the files and the documented numbers cannot drift apart.
"""

from __future__ import annotations

import argparse
import shutil
import sys

from samplegen.ascend import write_ascend
from samplegen.checks import check_all
from samplegen.cpu import write_cpu_single
from samplegen.dp4 import write_dp4
from samplegen.output import write_bytes
from samplegen.paths import HERE
from samplegen.pp4 import write_pp4
from samplegen.readme import readme_text


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="only verify the existing files")
    args = ap.parse_args(argv)
    if not args.check:
        for sub in ("dp4_nccl", "pp4_1f1b", "ascend_2rank"):
            d = HERE / sub
            if d.exists():
                shutil.rmtree(d)
        _, dp_exp, dp_files = write_dp4(HERE / "dp4_nccl")
        _, pp_exp, pp_files = write_pp4(HERE / "pp4_1f1b")
        _, asc_exp = write_ascend(HERE / "ascend_2rank")
        cpu_info = write_cpu_single(HERE / "cpu_single")

        def du(sub):
            fs = [p for p in (HERE / sub).rglob("*") if p.is_file()]
            return len(fs), sum(p.stat().st_size for p in fs)

        sizes = {}
        for sub, what in (
            ("dp4_nccl", "4 x Kineto .json.gz, DDP + NCCL all-reduce, slow rank 2"),
            ("pp4_1f1b", "4 x Kineto .json.gz, 1F1B p=4 m=8, NCCL SendRecv"),
            ("ascend_2rank", "2 x torch_npu *_ascend_pt, HCCL all-reduce"),
            ("cpu_single", "real torch 2.13 CPU trace (copy) + PROVENANCE.md"),
        ):
            n, b = du(sub)
            sizes[sub] = (what, n, b)
        file_list = [
            (p.relative_to(HERE).as_posix(), p.stat().st_size)
            for p in sorted(HERE.rglob("*"))
            if p.is_file() and p.parent != HERE and p.relative_to(HERE).parts[0] != "samplegen"
        ]
        write_bytes(HERE / "README.md", readme_text(dp_exp, pp_exp, asc_exp, cpu_info, sizes, file_list).encode())
    problems = check_all()
    if problems:
        print(f"{len(problems)} check(s) failed", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
