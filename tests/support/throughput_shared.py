"""What the split modules of test_throughput.py share (helpers and fixtures)."""

from __future__ import annotations

# Real device names (the `device` column of ../shared/traces/INDEX.md and the deviceProperties of the
# traces) -> the device_peaks.toml entry they must match (None: no peak known; MFU stays null).
REAL_NAMES = {
    "NVIDIA H100 80GB HBM3": ("NVIDIA H100 SXM", 989.0),
    "NVIDIA A100-PG509-200": ("NVIDIA A100", 312.0),
    "NVIDIA B200": ("NVIDIA B200", 2250.0),
    "Tesla V100-SXM2-32GB": ("NVIDIA V100 SXM2", 125.0),
    "Tesla V100-DGXS-32GB": ("NVIDIA V100 SXM2", 125.0),
    "AMD Instinct MI300X": ("AMD Instinct MI300X", 1307.4),
    "AMD Instinct MI300X VF": ("AMD Instinct MI300X", 1307.4),
    "AMD Instinct MI210": ("AMD Instinct MI210", 181.0),
    "NVIDIA GeForce RTX 2080 Ti": None,  # consumer part: not in the table
    "AMD Radeon Graphics": None,  # what ROCm 6.2 wrote for an MI250 (says nothing about the model)
    "ARTEMIS": None,  # Meta MTIA
}
