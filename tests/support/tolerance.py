"""The tolerance numbers are held to against the reference tools (docs/metrics.md)."""

from __future__ import annotations


def close(got: float, want: float, rel: float = 0.0005, floor_us: float = 1.0) -> bool:
    """docs/metrics.md tolerance: max(1 µs, 0.05 %) per value."""
    return abs(got - want) <= max(floor_us, rel * abs(want))
