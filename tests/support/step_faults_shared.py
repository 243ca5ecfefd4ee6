"""What the split modules of test_step_faults.py share (helpers and fixtures)."""

from __future__ import annotations

import orjson

from tests.conftest import DATA


def _write(tmp_path, name, events):
    doc = orjson.loads((DATA / name).read_bytes())
    doc["traceEvents"] = events(doc["traceEvents"])
    path = tmp_path / f"rank0.{name.removesuffix('.json')}.pt.trace.json"
    path.write_bytes(orjson.dumps(doc))
    return path
