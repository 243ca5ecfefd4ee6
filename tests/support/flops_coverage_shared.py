"""What the split modules of test_flops_coverage.py share (helpers and fixtures)."""

from __future__ import annotations

from tests.support.roofline import BF16, OpTrace


def _step(path, known_us: int, unknown_us: int):
    """One ProfilerStep: an aten::mm whose kernel runs `known_us`, then an unlisted operator
    (aten::embedding_bag) whose kernel runs `unknown_us`."""
    b = OpTrace()
    b.events.append({"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 990,
                     "dur": 20 + known_us + unknown_us})  # fmt: skip
    mm = b.op("aten::mm", 1000, 5, [[512, 512], [512, 512]], [BF16, BF16], ["", ""])
    b.kernel(mm, 1001, 1010, known_us)
    bag = b.op("aten::embedding_bag", 1006, 5, [[1000, 64], [4096]], [BF16, "long"], ["", ""])
    b.kernel(bag, 1007, 1010 + known_us, unknown_us)
    return b.write(path)
