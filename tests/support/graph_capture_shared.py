"""What the split modules of test_graph_capture.py share (helpers and fixtures)."""

from __future__ import annotations

CAPTURE_ADVICE = "Capture the step (or its static part) as CUDA graphs"
