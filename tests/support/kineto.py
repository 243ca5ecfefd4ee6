"""Kineto (torch.profiler) trace events as the tests write them."""

from __future__ import annotations

import json
from pathlib import Path


def ns(us: float) -> int:
    """µs (as a test writes them) -> integer ns."""
    return round(us * 1000)


def complete_event(cat: str, name: str, pid, tid, start_ns: int, dur_ns: int, args: dict | None = None) -> dict:
    """A complete ("X") event: `ts` and `dur` in µs with 3 decimals, as Kineto writes them."""
    event = {
        "ph": "X",
        "cat": cat,
        "name": name,
        "pid": pid,
        "tid": tid,
        "ts": round(start_ns / 1000, 3),
        "dur": round(dur_ns / 1000, 3),
    }
    if args is not None:
        event["args"] = args
    return event


def write_trace(path: Path, events: list[dict], rank: int = 0, world_size: int = 1, device: str | None = None) -> Path:
    """A Kineto trace file of one rank holding `events`: schema version, distributedInfo and
    (when `device` is given) deviceProperties, as torch.profiler writes them."""
    doc = {"schemaVersion": 1, "distributedInfo": {"rank": rank, "world_size": world_size}}
    if device is not None:
        doc["deviceProperties"] = [{"id": 0, "name": device}]
    doc["traceEvents"] = events
    path.write_text(json.dumps(doc))
    return path
