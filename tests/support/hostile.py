"""Traces whose names are markup, scripts and template syntax: every view must show them as text.
`HOSTILE` / `hostile_trace` (one kernel name), `NAMES` (a payload per place a user influences),
`hostile_doc` and `write_hostile` (a two-rank profile with payloads everywhere, in its folder and
file names too)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import traceview as tv
from tests.conftest import DATA

HOSTILE = "</script><img src=x onerror=alert(1)>"


@pytest.fixture()
def hostile_trace(tmp_path):
    doc = json.loads((DATA / "kineto_minimal.json").read_text())
    for event in doc["traceEvents"]:
        if event.get("cat") == "kernel" and event["name"].startswith("sm90"):
            event["name"] = HOSTILE
    path = tmp_path / "rank0.pt.trace.json"
    path.write_text(json.dumps(doc))
    return tv.load(path, use_cache=False)


PWN = "window.__pwned=1"


SCRIPT = f"<script>{PWN}</script>"


ATTR = f'"><img src=x onerror="{PWN}">'


BREAKOUT = f"</script><script>{PWN}</script>"


JS_URL = "javascript:alert(1)"


SVG = f"<svg onload={PWN}>"


# File and folder names cannot hold "/": payloads without one.
FOLDER_NAME = f'"><img src=x onerror="{PWN}">'


FILE_NAME = f"{SVG}'{JS_URL}.pt.trace.json"


TEMPLATE = "{{7*7}}${7*7}%{x}<b>b</b>"  # Jinja/JS template and plotly hovertemplate syntax: must stay literal


RTL = "\u202etxt.exe"  # a right-to-left override: shown as it is, never dropped


LONG = "L" * 200_000 + SCRIPT  # a 200 KB name whose payload sits past any cut


NAMES = {
    "kernel": SCRIPT,
    "cpu_op": ATTR,
    "annotation": BREAKOUT,
    "thread": f"{JS_URL}{SCRIPT}",
    "process": ATTR + SVG,
    "stream": BREAKOUT + JS_URL,
    "device": SCRIPT + ATTR,
    "collective": f"</script><svg onload={PWN}>",
    "group": ATTR + RTL,
    "template": TEMPLATE,
    "long": LONG,
}


def hostile_doc() -> dict:
    """kineto_minimal.json with a payload in every name a user could have influenced."""
    doc = json.loads((DATA / "kineto_minimal.json").read_text())
    doc["deviceProperties"][0]["name"] = NAMES["device"]
    doc["traceName"] = SCRIPT
    for event in doc["traceEvents"]:
        cat = event.get("cat")
        if cat == "kernel" and event["name"].startswith("sm90"):
            event["name"] = NAMES["kernel"]
        elif cat == "kernel" and event["name"].startswith("nccl"):  # a collective: name and args
            event["name"] = "ncclDevKernel_AllReduce_Sum_bf16_RING_LL" + NAMES["collective"]
            event["args"].update({"Collective name": NAMES["collective"], "Process Group Name": NAMES["group"]})
        elif cat == "kernel":
            event["name"] = NAMES["template"] + RTL
        elif cat == "cpu_op":
            event["name"] = NAMES["cpu_op"]
        if cat in ("cpu_op", "cuda_runtime", "user_annotation"):
            event["tid"] = NAMES["thread"]  # string thread ids exist in real Kineto traces
    doc["traceEvents"] += [
        {
            "ph": "X",
            "cat": "user_annotation",
            "name": NAMES["annotation"],
            "pid": 10,
            "tid": NAMES["thread"],
            "ts": 1001.0,
            "dur": 50.0,
        },
        {
            "ph": "X",
            "cat": "gpu_user_annotation",
            "name": NAMES["annotation"],
            "pid": 0,
            "tid": 7,
            "ts": 1010.0,
            "dur": 30.0,
            "args": {"device": 0, "stream": 7},
        },
        {
            "ph": "X",
            "cat": "kernel",
            "name": NAMES["long"],
            "pid": 0,
            "tid": 7,
            "ts": 1220.0,
            "dur": 1.0,
            "args": {"device": 0, "stream": 7},
        },
        {"ph": "M", "name": "thread_name", "pid": 10, "tid": NAMES["thread"], "args": {"name": NAMES["thread"]}},
        {"ph": "M", "name": "thread_name", "pid": 0, "tid": 7, "args": {"name": NAMES["stream"]}},
        {"ph": "M", "name": "process_name", "pid": 0, "tid": 0, "args": {"name": NAMES["process"]}},
    ]
    return doc


def write_hostile(root: Path, folder: str = FOLDER_NAME) -> Path:
    path = root / folder
    path.mkdir(parents=True)
    (path / FILE_NAME).write_text(json.dumps(doc := hostile_doc()))
    second = dict(doc, distributedInfo={"backend": "nccl", "rank": 1, "world_size": 4})
    (path / f"{ATTR.replace('/', '')}.pt.trace.json").write_text(json.dumps(second))
    return path
