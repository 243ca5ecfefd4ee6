"""What the split modules of test_streaming.py share (helpers and fixtures)."""

from __future__ import annotations

from pathlib import Path

from polars.testing import assert_frame_equal

from traceview.parsers import kineto


def _whole(path: Path):
    """The reference: the whole-document reader only."""
    warn = kineto.Warnings(path)
    doc, frames = kineto._whole(path, warn)
    return kineto._build(path, doc, frames, warn)


def _assert_same(a, b):
    assert a.meta == b.meta
    assert a.warnings == b.warnings
    for table, frame in a.frames.items():
        assert_frame_equal(frame, b.frames[table], check_exact=True)
