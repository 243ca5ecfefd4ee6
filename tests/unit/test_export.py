"""`traceview export --format perfetto`: a Chrome-trace JSON that Perfetto opens, with every rank,
the events, flows from launches to tasks, and traceview's iteration, terms, phases and findings as
tracks whose numbers equal the summary's.

This file holds the topic's unit tests; the others are in tests/integration/test_export.py, tests/corpus/test_export.py.
"""

from __future__ import annotations

import orjson
import pytest

import traceview as tv
from tests.support.export_shared import _check, _export  # noqa: F401
from tests.support.samples import shared_sample
from traceview.dashboards.perfetto import perfetto_json


@pytest.mark.parametrize("sample", ["dp4_nccl", "pp4_1f1b", "ascend_2rank", "cpu_single"])
def test_samples_export(sample):
    trace = shared_sample(sample)
    events = _export(trace)
    _check(trace, events)
    # a flow from every launch call to each task it launched
    starts = sum(e["ph"] == "s" for e in events)
    assert starts == sum(e["ph"] == "f" for e in events)
    if sample == "dp4_nccl":
        launched = trace.device_tasks.join(trace.launch_calls(), on=["rank", "correlation"], how="semi").height
        assert starts == launched > 0
        assert any(e["ph"] == "i" and e["name"].startswith("finding: ") for e in events)


def test_times_are_exact_on_epoch_clocks():
    """Ascend's epoch µs (1.7e15, parsed exactly from their decimal text): a float64 would round
    them to 0.25 µs; the export prints the parsed ns."""
    trace = shared_sample("ascend_2rank")
    text = perfetto_json(trace).decode()
    for row in trace.device_tasks.head(50).iter_rows(named=True):
        ns, dur = row["start_ns"], row["dur_ns"]
        assert f'"ts":{ns // 1000}.{ns % 1000:03d},"dur":{dur // 1000}.{dur % 1000:03d}' in text


def test_names_stay_what_they_were(tmp_path):
    path = tmp_path / "t.pt.trace.json"
    name = 'a "quoted"\nname </script> \u202e'
    path.write_text(
        orjson.dumps(
            {
                "traceEvents": [
                    {
                        "ph": "X",
                        "cat": "kernel",
                        "name": name,
                        "pid": 1,
                        "tid": 7,
                        "ts": 10.5,
                        "dur": 2,
                        "args": {"stream": 7},
                    }
                ]
            }
        ).decode()
    )
    kernel = next(e for e in _export(tv.load(path, use_cache=False)) if e.get("cat") == "kernel")
    assert kernel["name"] == name
