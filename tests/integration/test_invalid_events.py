"""One bad event is dropped and counted, not the whole file refused (issue 30). The integration tests;
the topic's description and its other tests: tests/unit/test_invalid_events.py.
"""

from __future__ import annotations

import orjson
import pytest

from tests.support.invalid_events_shared import _kernels, _write, clean  # noqa: F401
from traceview.parsers import jsonio
from traceview.parsers.kineto import INVALID_EVENTS


@pytest.fixture(scope="module")
def half_bad(tmp_path_factory, clean):
    """A 40 MB trace (the shipped rank repeated in time) whose every other event holds a NaN, and
    how many bad events it holds: about 6 s to parse on 2 cores."""
    events = clean["traceEvents"]
    copies = 40_000_000 // len(orjson.dumps(events)) + 1
    parts, bad = [], 0
    for copy in range(copies):
        for i, event in enumerate(events):
            raw = orjson.dumps(dict(event, ts=event["ts"] + copy * 10**6) if "ts" in event else event)
            if i % 2 == 0:
                raw, bad = raw[:-1] + b',"bad":NaN}', bad + 1
            parts.append(raw)
    head = orjson.dumps({k: v for k, v in clean.items() if k != "traceEvents"})
    path = tmp_path_factory.mktemp("half_bad") / "rank0.pt.trace.json"
    path.write_bytes(head[:-1] + b',"traceEvents":[' + b",".join(parts) + b"]}")
    return path, bad


def test_a_file_of_bad_events_ends_in_seconds_in_bounded_memory(half_bad):
    """Every other event holds a NaN: each is dropped at the cost of reading up to it (not the
    whole buffer per event), and nothing is kept per bad event (the parse pauses the garbage
    collector: a kept exception, with its traceback's cycle, held 7 GB for 108,046)."""
    from tests.support import bounded

    path, bad = half_bad
    done = bounded.run(["info", str(path), "--no-cache"])
    assert done.returncode == 0, done.stderr
    assert done.seconds < 20 and done.peak_rss_bytes < bounded.MEMORY_LIMIT
    assert f"{bad:,} {INVALID_EVENTS}" in done.stdout


def test_sigterm_ends_a_parse_of_bad_events_within_3_s(half_bad):
    from tests.support import bounded

    # signalled once 1.5 s of CPU is used: past the imports, in the parse (about 6 s of CPU here)
    done, after_signal = bounded.terminate(["info", str(half_bad[0]), "--no-cache"], after_cpu_s=1.5)
    assert after_signal is not None, f"the parse ended {done.seconds:.1f} s in, before the signal"
    assert done.returncode == 143 and after_signal < 3, (done.returncode, after_signal, done.stderr)
    assert done.lines == ["traceview: terminated"]


def test_the_parallel_decode_keeps_the_events_around_a_bad_one_in_the_last_chunk(tmp_path, clean, monkeypatch):
    """A file decoded by worker processes (`parse_kineto(jobs=2)`, here with the size threshold
    and the chunks made small): its last events are decoded in the driver, and a bad event among
    them splits them in two; only the first part was kept, with no warning (a reviewer found it).
    (A bad event in a piece a worker decodes sends the whole file to the one-process reader.)"""
    from traceview.parsers import kineto

    monkeypatch.setattr(kineto, "PARALLEL_FILE_BYTES", 0)
    monkeypatch.setattr(jsonio, "CHUNK_BYTES", 1 << 16)
    events = [dict(e, ts=e["ts"] + copy * 10**6) if "ts" in e else e for copy in range(4) for e in clean["traceEvents"]]
    doc = dict(clean, traceEvents=events)
    last_kernel = max(i for i, e in enumerate(events) if e.get("cat") == "kernel")
    path = _write(tmp_path, doc, {last_kernel: b"NaN"})
    serial = kineto.parse_kineto(path, jobs=1)

    def no_fallback(*args):
        raise AssertionError("the parallel decode fell back to one process")

    monkeypatch.setattr(kineto, "_streamed", no_fallback)
    parallel = kineto.parse_kineto(path, jobs=2)
    for table in ("device_tasks", "host_events"):
        assert parallel.frames[table].equals(serial.frames[table]), table
    assert parallel.warnings == serial.warnings and any(INVALID_EVENTS in w for w in parallel.warnings)


def test_a_bad_event_full_of_nested_objects_is_dropped_in_seconds(tmp_path, clean):
    """An event whose args hold 512,000 `{}` (1.5 MB) before a NaN: every `},{` inside it is a
    candidate cut, and checking each by a decode from the buffer's start was quadratic (a 400 KB
    event took 85 s, this one would take minutes); the bounds are now found in one pass."""
    from tests.support import bounded

    kernels = _kernels(clean)
    nested = b'{"l":[' + b",".join([b"{}"] * 512_000) + b'],"x":NaN}'
    path = _write(tmp_path, clean, {kernels[len(kernels) // 2]: nested})
    done = bounded.run(["info", str(path), "--no-cache"])
    assert done.returncode == 0 and done.seconds < 20, (done.returncode, done.seconds, done.stderr)
    assert f"1 {INVALID_EVENTS}" in done.stdout
