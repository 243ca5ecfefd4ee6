#!/usr/bin/env python3
"""Write the bad-input corpus of tests/data/bad/ (and its README.md) from small clean bases.

    python tests/data/bad/make_bad.py            # (re)write every file next to this script
    python tests/data/bad/make_bad.py OUT_DIR    # write them into OUT_DIR instead

Deterministic: no clock, no unseeded randomness (the random bytes come from random.Random(7)),
gzip with mtime 0 and stored (level 0) blocks, so two runs give byte-identical files and
tests/integration/test_bad_inputs.py checks that the committed files are exactly what this script writes.
Standard library only.

The clean bases:
- `clean/rank{0,1}.pt.trace.json`: a 2-rank Kineto trace written here (steps 1 and 2; per step a
  GEMM, an elementwise kernel, an NCCL all-reduce whose ends coincide on both ranks, a memcpy and a
  memset; rank 1's GEMM is 50 µs longer, so rank 0 waits in the all-reduce).
- `clean_ascend/rank0_ascend_pt/`: kernel_details.csv and step_trace_time.csv of
  sample_traces/ascend_2rank/rank0_ascend_pt (copied byte for byte) and a profiler_info_0.json.
Every bad input is one of these with one thing wrong; CASES below says what, and what traceview
does with it (docs/robustness.md has the messages and the reasons).
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import pickle
import random
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
ASCEND_SAMPLE = ROOT / "sample_traces" / "ascend_2rank" / "rank0_ascend_pt"
OUTPUT = "ASCEND_PROFILER_OUTPUT"

#: (path, what is wrong, what traceview does). "fatal": exit 1 with one line; "loads": exit 0
#: (warnings counted where something was dropped or repaired); "partial": the bad rank is listed
#: under failures, the others load, exit 1.
CASES: list[tuple[str, str, str]] = [
    ("clean/", "nothing: the 2-rank Kineto base the other Kineto inputs are derived from", "loads, no warning"),
    ("clean_ascend/", "nothing: the Ascend base (one rank folder)", "loads, no warning"),
    ("missing.json", "does not exist (not written; the tests pass this path)", "fatal: no such file or folder"),
    ("empty.json", "0 bytes", "fatal: the file is empty"),
    ("random_bytes.json", "2 KiB of random bytes", "fatal: invalid JSON at byte N"),
    ("truncated.json", "clean rank 0 cut in the middle of an event", "fatal: truncated JSON (cut short or still being written)"),
    ("truncated.json.gz", "gzip of clean rank 0 cut in half", "fatal: truncated gzip stream"),
    ("not_a_trace.json", "a JSON object without traceEvents", "fatal: not a Chrome trace"),
    ("numbers.json", "a bare JSON list of numbers", "fatal: no trace events"),
    ("no_profiles/", "a folder holding only a text file", "fatal: no profiles found in this folder"),
    ("no_ts_dur.json", "clean rank 0 + 2 kernels without ts, 1 kernel and 1 cpu_op without dur",
     "loads; 2 + 2 events dropped and counted"),
    ("negative_dur.json", "clean rank 0 + a kernel and a memcpy with a negative dur", "loads; 2 events dropped and counted"),
    ("text_ts.json", "clean rank 0 + 2 kernels with a text ts, 1 with a text dur", "loads; 2 + 1 events dropped and counted"),
    ("huge_ts.json", "clean rank 0 + kernels with ts 1e16 and 1e300 µs (beyond Int64 ns, the year 2262)",
     "loads; the 2 events dropped and counted as non-numeric (never wrapped around)"),
    ("four_malformed.json", "clean rank 0 + 4 malformed kernels (no dur, negative dur, text ts, no ts)",
     "loads; 4 events dropped, counted in 3 warnings"),
    ("bad_unicode.json", "clean rank 0 with a lone surrogate escape (\\ud800) in a kernel name and an invalid "
     "UTF-8 byte in a host op name", "loads; the characters replaced by U+FFFD, 1 warning"),
    ("nul_names.json", "clean rank 0 with NUL characters (\\u0000) in a kernel and a host op name",
     "loads; the NULs replaced by U+FFFD, 2 names counted"),
    ("bom.json", "clean rank 0 behind a UTF-8 byte order mark", "loads, no warning"),
    ("duplicated.json", "clean rank 0 with 3 device events and 1 kernel launch written twice",
     "loads; the 3 device copies dropped and counted (the launch copy changes no number)"),
    ("unknown_phase.json", "clean rank 0 + events with ph 'Q', 7, no ph, and a B/E pair",
     "loads; the 5 events ignored and counted"),
    ("clock_skew/", "clean ranks 0 and 1, rank 1's clock 5 s ahead", "loads; per-rank numbers unchanged; a warning "
     "that the clocks disagree, start skew computed on clocks aligned at all-reduce ends"),
    ("being_written/", "clean rank 0 + rank 1 cut mid-event (its writer still running)",
     "partial: rank 1 failed (truncated JSON, still being written), rank 0 loads, exit 1"),
    ("partial_name/", "clean rank 0 + rank1.pt.trace.json.part", "partial: rank 1 failed (still being written), "
     "rank 0 loads, exit 1"),
    ("ascend_missing_column/", "kernel_details.csv without its Start Time(us) column",
     "fatal: required column 'Start Time(us)' is missing"),
    ("ascend_renamed_alias/", "kernel_details.csv headers Op Name, Task Start Time(us), Task Duration(us) "
     "(msprof spellings)", "loads, same numbers, no warning"),
    ("ascend_renamed_unknown/", "kernel_details.csv with Duration(us) renamed Elapsed(us)",
     "fatal: required column 'Duration(us)' is missing"),
    ("ascend_extra_columns/", "kernel_details.csv with 2 extra columns", "loads, same numbers, no warning"),
    ("ascend_padded_values/", "every kernel_details.csv header and value padded with spaces and tabs",
     "loads, same numbers, no warning"),
    ("ascend_duplicated_rows/", "kernel_details.csv with 2 rows written twice", "loads; 2 copies dropped and counted"),
    ("ascend_no_kernel_details/", "a rank folder with trace_view.json but no kernel_details.csv",
     "loads the tasks from trace_view.json (this one has no launch links: steps unknown, counted)"),
    ("ascend_no_data/", "a rank folder whose ASCEND_PROFILER_OUTPUT/ holds only step_trace_time.csv",
     "fatal: no kernel_details.csv, trace_view.json, ascend_pytorch_profiler_*.db or ascend_mindspore_profiler_*.db found"),
    ("mixed/", "clean Kineto rank 0 + an Ascend rank folder (rank 1) side by side", "loads both ranks, no warning"),
    ("memory_odd.json", "clean rank 0 + [memory] events: one good, one without ts, one with a list for Bytes, one "
     "with an Addr beyond Int64 and a text Device Type", "loads, same numbers; 1 memory event dropped and 1 nested "
     "value read as missing, counted"),
    ("ascend_memory_odd/", "clean Ascend rank + memory_record.csv and operator_memory.csv, one row of each with a "
     "time a spreadsheet rounded (1.69512E+15) or left empty", "loads, same numbers; the 2 rows dropped and counted"),
    ("snapshot_truncated.pickle", "a memory snapshot pickle cut short", "fatal: not a readable pickle"),
    ("nsys_truncated.sqlite", "the first 8,192 bytes of a real Nsight Systems SQLite export (tests/data/nsys)",
     "fatal: a SQLite database that cannot be read"),
    ("snapshot_refused.pickle", "a pickle that asks to call builtins.print while loading",
     "fatal: refused without running it"),
    ("rocprof_truncated.json", "the first half of the rocprofv3 JSON output in tests/data/rocprof/built",
     "fatal: truncated JSON"),
    ("rocprof_renamed_kernel_trace.csv", "a rocprofv3 CSV kernel trace whose Kernel_Name column is renamed",
     "fatal: not a rocprofv3 kernel trace (no Kernel_Name column)"),
]

# ------------------------------------------------------------------------------------------------
# The clean Kineto base
# ------------------------------------------------------------------------------------------------

US = 1000  # ns per µs
STEP_NS = 1_000_000
SKEW_NS = 5_000_000_000  # clock_skew/: rank 1's clock is 5 s ahead


def _us(ns: int) -> float:
    """ns -> µs with at most 3 decimals (exact through Kineto's float parsing)."""
    return ns / US


def _x(cat, name, pid, tid, start, dur, args=None) -> dict:
    event = {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": _us(start), "dur": _us(dur)}
    if args is not None:
        event["args"] = args
    return event


def kineto_rank(rank: int, shift_ns: int = 0) -> dict:
    """The clean trace of `rank` (0 or 1), every timestamp moved by `shift_ns`."""
    host, dev = 100 + rank, rank
    events: list[dict] = [
        {"ph": "M", "name": "process_name", "pid": host, "tid": 0, "args": {"name": "python3"}},
        {"ph": "M", "name": "process_name", "pid": dev, "tid": 0, "args": {"name": f"GPU {rank}"}},
        {"ph": "M", "name": "thread_name", "pid": dev, "tid": 7, "args": {"name": "stream 7"}},
        {"ph": "M", "name": "thread_name", "pid": dev, "tid": 20, "args": {"name": "stream 20"}},
    ]
    corr = 1000
    ext = 1
    for step in (1, 2):
        b = step * STEP_NS + shift_ns
        c = {k: corr + i for i, k in enumerate(("gemm", "add", "nccl", "copy", "memset"))}
        e = {k: ext + i for i, k in enumerate(("gemm", "add", "nccl", "copy"))}
        corr += 10
        ext += 10
        gemm_start, gemm_dur = b + 20_123, 300_456 + 50_000 * rank
        ew_start = gemm_start + gemm_dur + 5_000
        nccl_end = b + 600_000
        nccl_start = b + 250_000 + 150_000 * rank
        comm = {"Collective name": "allreduce", "Process Group Name": "0", "Group size": 2,
                "In msg nelems": 1048576, "Out msg nelems": 1048576, "dtype": "BFloat16"}
        events += [
            _x("user_annotation", f"ProfilerStep#{step}", host, host, b, 900_000, {"External id": e["gemm"] - 1}),
            _x("cpu_op", "aten::mm", host, host, b + 10_000, 30_000, {"External id": e["gemm"]}),
            _x("cuda_runtime", "cudaLaunchKernel", host, host, b + 12_500, 4_000,
               {"External id": e["gemm"], "correlation": c["gemm"]}),
            _x("cpu_op", "aten::add", host, host, b + 50_000, 10_000, {"External id": e["add"]}),
            _x("cuda_runtime", "cudaLaunchKernel", host, host, b + 51_000, 3_000,
               {"External id": e["add"], "correlation": c["add"]}),
            _x("cpu_op", "record_param_comms", host, host, b + 70_000, 20_000, {"External id": e["nccl"], **comm}),
            _x("cuda_runtime", "cudaLaunchKernelExC", host, host, b + 72_000, 5_000,
               {"External id": e["nccl"], "correlation": c["nccl"]}),
            _x("cpu_op", "aten::copy_", host, host, b + 100_000, 10_000, {"External id": e["copy"]}),
            _x("cuda_runtime", "cudaMemcpyAsync", host, host, b + 101_000, 2_000,
               {"External id": e["copy"], "correlation": c["copy"]}),
            _x("cuda_runtime", "cudaMemsetAsync", host, host, b + 120_000, 2_000, {"correlation": c["memset"]}),
            _x("kernel", "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64", dev, 7, gemm_start, gemm_dur,
               {"External id": e["gemm"], "device": dev, "stream": 7, "correlation": c["gemm"],
                "grid": [132, 1, 1], "block": [384, 1, 1]}),
            _x("kernel", "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>>",
               dev, 7, ew_start, 40_250, {"External id": e["add"], "device": dev, "stream": 7, "correlation": c["add"]}),
            _x("kernel", "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)", dev, 20,
               nccl_start, nccl_end - nccl_start,
               {"External id": e["nccl"], "device": dev, "stream": 20, "correlation": c["nccl"], **comm}),
            _x("gpu_memcpy", "Memcpy HtoD (Pinned -> Device)", dev, 7, b + 650_000, 20_000,
               {"device": dev, "stream": 7, "correlation": c["copy"], "bytes": 4096}),
            _x("gpu_memset", "Memset (Device)", dev, 7, b + 700_000, 1_500,
               {"device": dev, "stream": 7, "correlation": c["memset"], "bytes": 128}),
            {"ph": "s", "id": c["gemm"], "pid": host, "tid": host, "ts": _us(b + 12_500), "cat": "ac2g", "name": "ac2g"},
            {"ph": "f", "id": c["gemm"], "pid": dev, "tid": 7, "ts": _us(gemm_start), "cat": "ac2g", "name": "ac2g",
             "bp": "e"},
        ]
    return {
        "schemaVersion": 1,
        "deviceProperties": [{"id": dev, "name": "NVIDIA H100 80GB HBM3", "totalGlobalMem": 85000000000}],
        "distributedInfo": {"backend": "nccl", "rank": rank, "world_size": 2},
        "traceEvents": events,
        "traceName": f"rank{rank}.pt.trace.json",
    }


def dump(doc) -> bytes:
    """JSON as the bad files are written: one event per line, ASCII (escapes for anything else)."""
    if isinstance(doc, dict) and "traceEvents" in doc:
        head = {k: v for k, v in doc.items() if k != "traceEvents"}
        lines = ",\n".join("  " + json.dumps(e, ensure_ascii=True) for e in doc["traceEvents"])
        body = json.dumps(head, ensure_ascii=True)[1:-1]
        return ("{" + body + ',\n "traceEvents": [\n' + lines + "\n ]\n}\n").encode("ascii")
    return (json.dumps(doc, ensure_ascii=True) + "\n").encode("ascii")


def gzip_stored(data: bytes) -> bytes:
    """gzip with mtime 0 and stored blocks: the same bytes with any zlib build."""
    buf = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buf, mtime=0, compresslevel=0) as g:
        g.write(data)
    return buf.getvalue()


def cut_mid_event(data: bytes, fraction: float) -> bytes:
    """`data` cut at `fraction` of its length, moved to just inside the event there (a '"name"')."""
    at = int(len(data) * fraction)
    return data[: data.index(b'"name"', at) + 4]


def _kernel(name: str, **fields) -> dict:
    event = {"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": 7, "args": {"device": 0, "stream": 7}}
    event.update(fields)
    return event


def _with_events(extra: list[dict]) -> dict:
    doc = kineto_rank(0)
    doc["traceEvents"] = doc["traceEvents"] + extra
    return doc


def _renamed(doc: dict, old: str, new: str, count: int = 1) -> dict:
    """`doc` with the first `count` events named `old` renamed `new`."""
    for event in doc["traceEvents"]:
        if count and event.get("name") == old:
            event["name"] = new
            count -= 1
    return doc


def kineto_cases() -> dict[str, bytes]:
    rank0, rank1 = dump(kineto_rank(0)), dump(kineto_rank(1))
    files = {"clean/rank0.pt.trace.json": rank0, "clean/rank1.pt.trace.json": rank1}
    files["empty.json"] = b""
    data = bytearray(random.Random(7).randbytes(2048))
    data[0] = 0x07  # not '{', '[' or the gzip magic: random from the first byte on
    files["random_bytes.json"] = bytes(data)
    files["truncated.json"] = cut_mid_event(rank0, 0.6)
    gz = gzip_stored(rank0)
    files["truncated.json.gz"] = gz[: len(gz) // 2]
    files["not_a_trace.json"] = dump({"model": "resnet50", "epochs": 3, "metrics": {"top1": 0.76}})
    files["numbers.json"] = dump([1, 2, 3, 4.5])
    files["no_profiles/notes.txt"] = b"This folder holds no profile.\n"
    memory = {"ph": "i", "s": "t", "cat": "cpu_instant_event", "name": "[memory]", "pid": 100, "tid": 100}
    mem_args = {"Device Type": 1, "Device Id": 0, "Addr": 4096, "Bytes": 1 << 20}
    files["memory_odd.json"] = dump(_with_events([
        {**memory, "ts": 1100.0, "args": {**mem_args, "Total Allocated": 1 << 20, "Total Reserved": 2 << 20}},
        {**memory, "args": dict(mem_args)},
        {**memory, "ts": 1101.0, "args": {**mem_args, "Bytes": [1, 2]}},
        {**memory, "ts": 1102.0, "args": {**mem_args, "Addr": 2**70, "Device Type": "cuda"}},
    ]))
    saxpy = HERE.parent / "nsys" / "saxpy-mpi-cuda_nsys_perlmutter0.sqlite.gz"
    files["nsys_truncated.sqlite"] = gzip.decompress(saxpy.read_bytes())[:8_192]
    rocprof = HERE.parent / "rocprof"
    built = (rocprof / "built" / "omp_results.json").read_bytes()
    files["rocprof_truncated.json"] = built[: len(built) // 2]
    trace = (rocprof / "omp_output" / "omp_kernel_trace.csv").read_bytes()
    files["rocprof_renamed_kernel_trace.csv"] = trace.replace(b'"Kernel_Name"', b'"KernelName"', 1)
    # a pickle cut short, and one whose loading would call builtins.print (harmless, and refused)
    files["snapshot_truncated.pickle"] = pickle.dumps({"segments": [], "device_traces": [[]]}, protocol=4)[:-5]
    files["snapshot_refused.pickle"] = (
        b"\x80\x04\x95\x24\x00\x00\x00\x00\x00\x00\x00\x8c\x08builtins\x94\x8c\x05print\x94\x93\x94\x8c\x07refused\x94\x85\x94R\x94."
    )
    files["no_ts_dur.json"] = dump(_with_events([
        _kernel("no_ts_a", dur=5.0),
        _kernel("no_ts_b", dur=6.0),
        _kernel("no_dur", ts=1500.0),
        {"ph": "X", "cat": "cpu_op", "name": "aten::no_dur", "pid": 100, "tid": 100, "ts": 1510.0},
    ]))
    files["negative_dur.json"] = dump(_with_events([
        _kernel("negative_dur", ts=1500.0, dur=-5.0),
        {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy DtoH (Device -> Pinned)", "pid": 0, "tid": 7,
         "ts": 1600.0, "dur": -1.0, "args": {"device": 0, "stream": 7}},
    ]))
    files["text_ts.json"] = dump(_with_events([
        _kernel("text_ts", ts="soon", dur=1.0),
        _kernel("clock_ts", ts="12:00:01.5", dur=1.0),
        _kernel("text_dur", ts=1500.0, dur="fast"),
    ]))
    files["huge_ts.json"] = dump(_with_events([_kernel("far_future", ts=1e16, dur=1.0), _kernel("overflow", ts=1e300, dur=1.0)]))
    files["four_malformed.json"] = dump(_with_events([
        _kernel("no_dur", ts=1500.0),
        _kernel("negative_dur", ts=1510.0, dur=-5.0),
        _kernel("text_ts", ts="soon", dur=1.0),
        _kernel("no_ts", dur=1.0),
    ]))
    doc = _renamed(kineto_rank(0), "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>>",
                   "void at::native::vectorized_elementwise_kernel<4, \ud800>")
    doc = _renamed(doc, "aten::add", "aten::add_INVALID_BYTE")
    files["bad_unicode.json"] = dump(doc).replace(b"_INVALID_BYTE", b"\xff")
    doc = _renamed(kineto_rank(0), "Memset (Device)", "Memset\u0000(Device)")
    files["nul_names.json"] = dump(_renamed(doc, "aten::copy_", "aten::copy_\u0000"))
    files["bom.json"] = b"\xef\xbb\xbf" + rank0
    doc = kineto_rank(0)
    events: list[dict] = []
    wanted = {("kernel", 1): 1, ("kernel", 3): 1, ("gpu_memcpy", 2): 1, ("cuda_runtime", 3): 1}
    seen: dict[str, int] = {}
    for event in doc["traceEvents"]:
        events.append(event)
        cat = event.get("cat")
        if event.get("ph") == "X" and cat:
            seen[cat] = seen.get(cat, 0) + 1
            if wanted.get((cat, seen[cat])):
                events.append(dict(event))  # the same event written twice, as a buggy merge does
    doc["traceEvents"] = events
    files["duplicated.json"] = dump(doc)
    files["unknown_phase.json"] = dump(_with_events([
        {"ph": "Q", "cat": "kernel", "name": "q_phase", "pid": 0, "tid": 7, "ts": 1500.0, "dur": 1.0},
        {"ph": 7, "cat": "kernel", "name": "number_phase", "pid": 0, "tid": 7, "ts": 1502.0, "dur": 1.0},
        {"cat": "kernel", "name": "no_phase", "pid": 0, "tid": 7, "ts": 1504.0, "dur": 1.0},
        {"ph": "B", "cat": "cpu_op", "name": "begin_end", "pid": 100, "tid": 100, "ts": 1506.0},
        {"ph": "E", "cat": "cpu_op", "name": "begin_end", "pid": 100, "tid": 100, "ts": 1508.0},
    ]))
    files["clock_skew/rank0.pt.trace.json"] = rank0
    files["clock_skew/rank1.pt.trace.json"] = dump(kineto_rank(1, shift_ns=SKEW_NS))
    files["being_written/rank0.pt.trace.json"] = rank0
    files["being_written/rank1.pt.trace.json"] = cut_mid_event(rank1, 0.7)
    files["partial_name/rank0.pt.trace.json"] = rank0
    files["partial_name/rank1.pt.trace.json.part"] = cut_mid_event(rank1, 0.4)
    return files


# ------------------------------------------------------------------------------------------------
# Ascend
# ------------------------------------------------------------------------------------------------

KD = f"{OUTPUT}/kernel_details.csv"


def _read_csv(data: bytes) -> list[list[str]]:
    return list(csv.reader(io.StringIO(data.decode("utf-8"), newline="")))


def _write_csv(rows: list[list[str]]) -> bytes:
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\r\n").writerows(rows)
    return buf.getvalue().encode("utf-8")


def _rank_folder(prefix: str, kernel_details: bytes | None, rank: int = 0, extra: dict | None = None) -> dict[str, bytes]:
    folder = f"{prefix}/rank{rank}_ascend_pt" if prefix else f"rank{rank}_ascend_pt"
    out = {f"{folder}/profiler_info_{rank}.json": dump({"rank_id": rank})}
    if kernel_details is not None:
        out[f"{folder}/{KD}"] = kernel_details
    for name, data in (extra or {}).items():
        out[f"{folder}/{name}"] = data
    return out


def ascend_cases() -> dict[str, bytes]:
    kd = (ASCEND_SAMPLE / KD).read_bytes()
    step_trace = {f"{OUTPUT}/step_trace_time.csv": (ASCEND_SAMPLE / OUTPUT / "step_trace_time.csv").read_bytes()}
    rows = _read_csv(kd)
    header = rows[0]

    def renamed(mapping: dict[str, str]) -> bytes:
        return _write_csv([[mapping.get(h, h) for h in header]] + rows[1:])

    def dropped(column: str) -> bytes:
        i = header.index(column)
        return _write_csv([r[:i] + r[i + 1:] for r in rows])

    files: dict[str, bytes] = {}
    files.update(_rank_folder("clean_ascend", kd, extra=step_trace))
    files.update(_rank_folder("ascend_missing_column", dropped("Start Time(us)")))
    files.update(_rank_folder("ascend_renamed_alias", renamed(
        {"Name": "Op Name", "Start Time(us)": "Task Start Time(us)", "Duration(us)": "Task Duration(us)"})))
    files.update(_rank_folder("ascend_renamed_unknown", renamed({"Duration(us)": "Elapsed(us)"})))
    extra = [r[:5] + [("Custom Tag" if i == 0 else f"tag{i}")] + r[5:] + [("Comment" if i == 0 else "")]
             for i, r in enumerate(rows)]
    files.update(_rank_folder("ascend_extra_columns", _write_csv(extra)))
    pads = (" ", "\t", " \t", "  ")
    padded = [[f"{pads[(i + j) % 4]}{v}{pads[(i * 3 + j) % 4]}" for j, v in enumerate(r)] for i, r in enumerate(rows)]
    files.update(_rank_folder("ascend_padded_values", _write_csv(padded)))
    files.update(_rank_folder("ascend_duplicated_rows", _write_csv(rows[:3] + [rows[2]] + rows[3:10] + [rows[9]] + rows[10:])))
    trace_view = {f"{OUTPUT}/trace_view.json": (ASCEND_SAMPLE / OUTPUT / "trace_view.json").read_bytes()}
    files.update(_rank_folder("ascend_no_kernel_details", None, extra=trace_view))
    files.update(_rank_folder("ascend_no_data", None, extra=step_trace))
    files["mixed/rank0.pt.trace.json"] = dump(kineto_rank(0))
    files.update(_rank_folder("mixed", kd, rank=1))
    files.update(_rank_folder("ascend_memory_odd", kd, extra=_ascend_memory()))
    return files


def _ascend_memory() -> dict[str, bytes]:
    """memory_record.csv and operator_memory.csv with one row each whose time cannot be read."""
    record = (
        "Component,Timestamp(us),Total Allocated(MB),Total Reserved(MB),Total Active(MB),Stream Ptr,Device Type\n"
        "PTA,1736408883694238.150\t,935.9951171875,1452.0,935.9951171875,897357296,NPU:0\n"
        "PTA,1.69512E+15,940.0,1452.0,940.0,897357296,NPU:0\n"
        "PTA,1736408883694239.290\t,936.5,1452.0,936.5,897357296,NPU:0\n"
    )
    blocks = (
        "Name,Size(KB),Allocation Time(us),Release Time(us),Active Release Time(us),Duration(us),Active Duration(us),"
        "Allocation Total Allocated(MB),Allocation Total Reserved(MB),Allocation Total Active(MB),"
        "Release Total Allocated(MB),Release Total Reserved(MB),Release Total Active(MB),Stream Ptr,Device Type\n"
        "aten::mm,512.0,1736408883694238.500\t,,,,,936.0,1452.0,936.0,,,,897357296,NPU:0\n"
        "aten::add,16.0,,,,,,936.0,1452.0,936.0,,,,897357296,NPU:0\n"
    )
    return {f"{OUTPUT}/memory_record.csv": record.encode(), f"{OUTPUT}/operator_memory.csv": blocks.encode()}


# ------------------------------------------------------------------------------------------------


def readme() -> bytes:
    lines = [
        "# tests/data/bad: the bad-input corpus",
        "",
        "Written by `make_bad.py` (do not edit by hand: `python tests/data/bad/make_bad.py` rewrites every file",
        "and this README); `tests/integration/test_bad_inputs.py` runs every command on each input and checks that the",
        "files are exactly what the script writes. What traceview prints for each, and why:",
        "[docs/robustness.md](../../../docs/robustness.md).",
        "",
        "| input | what is wrong | what traceview does |",
        "|---|---|---|",
    ]
    for name, wrong, does in CASES:
        lines.append(f"| `{name}` | {wrong} | {does} |")
    return ("\n".join(lines) + "\n").encode("utf-8")


def all_files() -> dict[str, bytes]:
    files = {**kineto_cases(), **ascend_cases()}
    files["README.md"] = readme()
    return files


def write(out: Path) -> list[Path]:
    """Write the corpus under `out` (folders of cases replaced whole); returns the files written."""
    files = all_files()
    for top in sorted({name.split("/", 1)[0] for name in files if "/" in name}):
        if (out / top).is_dir():
            shutil.rmtree(out / top)
    written = []
    for name, data in sorted(files.items()):
        path = out / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        written.append(path)
    return written


def main(argv: list[str]) -> int:
    out = Path(argv[1]) if len(argv) > 1 else HERE
    written = write(out)
    print(f"wrote {len(written)} files under {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
