"""Build built/omp_results.json: a rocprofv3 JSON output made from the documented schema.

No public rocprofv3 JSON output was found, so this file is built, not recorded:
- its layout follows ROCm/rocprofiler-sdk's `source/docs/rocprofv3-schema.json` and what
  `source/lib/rocprofiler-sdk-tool/generateJSON.cpp` writes (commit in PROVENANCE.md): one element
  per process, `kernel_symbols` indexed by kernel id, `strings.buffer_records[kind].operations`
  naming each record's operation, `strings.marker_api` holding roctx messages by correlation id;
- its agents and kernel dispatches are the real MI300A run in omp_output/ (same kernels, times,
  queue, grid and workgroup sizes), so the JSON and CSV readings must agree;
- its HIP launch calls, roctx step ranges and memory copies are made up (said so here and in
  PROVENANCE.md): each kernel gets a hipLaunchKernel 20 us before it starts with its correlation
  id, kernels 1-4 and 5-8 are launched inside roctx ranges "step 0" and "step 1", and one 8 MiB
  copy goes to the device before the first kernel and back after the last.

Run from anywhere: python tests/data/rocprof/make_rocprof_json.py
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

HERE = Path(__file__).parent
PID = 4242
GPU, CPU = 2, 1  # rocprofiler_agent_type_t
HANDLE = 0x5000  # agent handle = HANDLE + logical node id (opaque in real output)
KINDS = [
    {"kind": "NONE", "operations": []},
    {"kind": "HIP_RUNTIME_API", "operations": ["hipNone", "hipMalloc", "hipMemcpy", "hipLaunchKernel"]},
    {"kind": "MARKER_CORE_API", "operations": ["roctxMarkA", "roctxRangePushA", "roctxRangePop"]},
    {
        "kind": "MEMORY_COPY",
        "operations": [
            "MEMORY_COPY_NONE",
            "MEMORY_COPY_HOST_TO_HOST",
            "MEMORY_COPY_HOST_TO_DEVICE",
            "MEMORY_COPY_DEVICE_TO_HOST",
            "MEMORY_COPY_DEVICE_TO_DEVICE",
        ],
    },
    {"kind": "KERNEL_DISPATCH", "operations": ["KERNEL_DISPATCH_NONE", "KERNEL_DISPATCH_COMPLETE"]},
]
HIP, MARKER, COPY, DISPATCH = 1, 2, 3, 4
LAUNCH_OP, PUSH_OP, H2D, D2H = 3, 1, 2, 3
US = 1000


def rows(name: str) -> list[dict]:
    with open(HERE / "omp_output" / name, newline="") as fh:
        return list(csv.DictReader(fh))


def build() -> dict:
    agents = [
        {
            "size": 0,
            "id": {"handle": HANDLE + int(a["Logical_Node_Id"])},
            "type": GPU if a["Agent_Type"] == "GPU" else CPU,
            "node_id": int(a["Node_Id"]),
            "logical_node_id": int(a["Logical_Node_Id"]),
            "cu_count": int(a["Cu_Count"]),
            "simd_count": int(a["Simd_Count"]),
            "wave_front_size": int(a["Wave_Front_Size"]),
            "name": a["Name"],
            "product_name": a["Product_Name"],
        }
        for a in rows("omp_agent_info.csv")
    ]
    kernels = rows("omp_kernel_trace.csv")
    symbols = [{"kernel_id": 0, "formatted_kernel_name": ""}] * (1 + max(int(k["Kernel_Id"]) for k in kernels))
    symbols = list(symbols)
    dispatch, launches = [], []
    for k in kernels:
        kid, corr, start = int(k["Kernel_Id"]), int(k["Correlation_Id"]), int(k["Start_Timestamp"])
        symbols[kid] = {
            "kernel_id": kid,
            "kernel_name": k["Kernel_Name"] + ".kd",
            "formatted_kernel_name": k["Kernel_Name"],
        }
        dispatch.append(
            {
                "size": 0,
                "kind": DISPATCH,
                "operation": 1,
                "thread_id": PID,
                "correlation_id": {"internal": corr, "external": 0},
                "start_timestamp": start,
                "end_timestamp": int(k["End_Timestamp"]),
                "dispatch_info": {
                    "size": 0,
                    "agent_id": {"handle": HANDLE + int(k["Agent_Id"])},
                    "queue_id": {"handle": int(k["Queue_Id"])},
                    "kernel_id": kid,
                    "dispatch_id": corr,
                    "private_segment_size": int(k["Private_Segment_Size"]),
                    "group_segment_size": int(k["Group_Segment_Size"]),
                    "workgroup_size": {a: int(k[f"Workgroup_Size_{a.upper()}"]) for a in "xyz"},
                    "grid_size": {a: int(k[f"Grid_Size_{a.upper()}"]) for a in "xyz"},
                },
            }
        )
        launches.append(
            {
                "size": 0,
                "kind": HIP,
                "operation": LAUNCH_OP,
                "correlation_id": {"internal": corr, "external": 0},
                "start_timestamp": start - 20 * US,
                "end_timestamp": start - 14 * US,
                "thread_id": PID,
            }
        )
    markers, messages = [], []
    for step, first in ((0, 0), (1, 4)):
        corr = 100 + step
        messages.append({"key": corr, "value": f"step {step}"})
        markers.append(
            {
                "size": 0,
                "kind": MARKER,
                "operation": PUSH_OP,
                "correlation_id": {"internal": corr, "external": 0},
                "start_timestamp": launches[first]["start_timestamp"] - 5 * US,
                "end_timestamp": launches[first + 3]["end_timestamp"] + 5 * US,
                "thread_id": PID,
            }
        )
    gpu = HANDLE + int(kernels[0]["Agent_Id"])
    first, last = int(kernels[0]["Start_Timestamp"]), int(kernels[-1]["End_Timestamp"])
    copies = [
        {
            "size": 0,
            "kind": COPY,
            "operation": op,
            "correlation_id": {"internal": corr, "external": 0},
            "start_timestamp": start,
            "end_timestamp": start + 400 * US,
            "thread_id": PID,
            "dst_agent_id": {"handle": dst},
            "src_agent_id": {"handle": src},
            "bytes": 8 << 20,
        }
        for op, corr, start, src, dst in (
            (H2D, 200, first - 1000 * US, HANDLE, gpu),
            (D2H, 201, last + 1000 * US, gpu, HANDLE),
        )
    ]
    process = {
        "metadata": {"pid": PID, "init_time": first - 5000 * US, "fini_time": last + 5000 * US},
        "agents": agents,
        "counters": [],
        "strings": {"callback_records": [], "buffer_records": KINDS, "marker_api": messages},
        "code_objects": [],
        "kernel_symbols": symbols,
        "callback_records": {"counter_collection": []},
        "buffer_records": {
            "kernel_dispatch": dispatch,
            "hip_api": launches,
            "hsa_api": [],
            "marker_api": markers,
            "rccl_api": [],
            "memory_copy": copies,
            "scratch_memory": [],
        },
    }
    return {"rocprofiler-sdk-tool": [process]}


if __name__ == "__main__":
    out = HERE / "built" / "omp_results.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(build(), indent=1) + "\n")
    print(out)
