"""Throughput and MFU: hand-computed values, and the device peak table on real device names.

This file holds the topic's unit tests; the others are in tests/integration/test_throughput.py, tests/corpus/test_throughput.py.
"""

from __future__ import annotations

import re

import polars as pl
import pytest

from tests.support.samples import shared_sample
from tests.support.throughput_shared import REAL_NAMES  # noqa: F401
from traceview import ruleset
from traceview.analysis.throughput import PEAKS_FILE, device_peak, peak_entries, throughput

# 7B parameters, 4,096 x 256 = 1,048,576 tokens per step, 64 devices, 1 s steps:
#   tokens/s = 1,048,576; per device 16,384
#   model FLOPs = 6 x 7e9 x 1,048,576 = 4.4040192e16 per step -> / 1 s / 64 / 1e12 = 688.128 TFLOP/s
#   MFU on an H100 SXM (989) = 688.128 / 989 = 0.695781...; with recomputation 8/6 x 688.128 = 917.504
TOKENS = 4096 * 256


def test_hand_computed_tokens_tflops_and_mfu():
    out = throughput(
        [1_000_000.0, 2_000_000.0],
        seq_len=4096,
        global_batch=256,
        params=7e9,
        devices=64,
        device_name="NVIDIA H100 80GB HBM3",
    )
    assert out["step"].to_list() == [0, 1]
    assert out["tokens_per_step"].to_list() == [TOKENS, TOKENS]
    assert out["tokens_per_s"].to_list() == pytest.approx([1_048_576, 524_288])
    assert out["tokens_per_s_per_device"].to_list() == pytest.approx([16_384, 8_192])
    assert out["model_flops_per_step"][0] == pytest.approx(4.4040192e16)
    assert out["model_tflops_per_device"].to_list() == pytest.approx([688.128, 344.064])
    assert out["peak_tflops"].to_list() == [989.0, 989.0]
    assert out["peak_source"][0] == "NVIDIA H100 SXM"
    assert out["mfu_frac"].to_list() == pytest.approx([688.128 / 989, 344.064 / 989])

    rec = throughput(1_000_000.0, tokens_per_step=TOKENS, params=7e9, devices=64, recompute=True, peak_tflops=1000)
    # recomputation: the model FLOPs (MFU) stay 6 x params x tokens, the hardware FLOPs (HFU) are 8 x
    assert rec["model_tflops_per_device"][0] == pytest.approx(688.128)
    assert rec["mfu_frac"][0] == pytest.approx(0.688128)
    assert rec["hardware_tflops_per_device"][0] == pytest.approx(917.504)
    assert rec["hfu_frac"][0] == pytest.approx(0.917504)
    assert rec["mfu_formula"][0] == (
        "MFU = 6 x 7e+09 params x 1.049e+06 tokens per step / step time (s) / 64 device(s) / 1000 TFLOP/s peak"
    )
    assert rec["hfu_formula"][0].startswith("HFU = 8 x 7e+09 params x 1.049e+06 tokens per step")
    plain = throughput(1_000_000.0, tokens_per_step=TOKENS, params=7e9, devices=64, peak_tflops=1000)
    assert plain["hfu_frac"][0] == plain["mfu_frac"][0]
    assert rec["peak_source"][0] == "given"


def test_flops_per_token_wins_and_missing_inputs_give_nulls():
    # 2,000 tokens per step on 2 devices, 0.5 s steps, 1e12 FLOPs per token: 2e15 / 0.5 / 2 / 1e12 = 2,000
    out = throughput(
        [500_000.0],
        tokens_per_step=2_000,
        flops_per_token=1e12,
        params=1e9,
        recompute=True,
        devices=2,
        peak_tflops=4_000,
    )
    assert out["model_tflops_per_device"][0] == pytest.approx(2_000.0)
    assert out["mfu_frac"][0] == pytest.approx(0.5)
    bare = throughput([500_000.0, 0.0], devices=8, device_name="some unknown accelerator")
    assert bare["step_time_us"].to_list() == [500_000.0, 0.0]
    for col in ("tokens_per_s", "model_tflops_per_device", "peak_tflops", "peak_source", "mfu_frac"):
        assert bare[col].null_count() == 2, col
    no_flops = throughput([500_000.0, 0.0], tokens_per_step=1_000, devices=1, device_name="NVIDIA A100-SXM4-80GB")
    assert no_flops["tokens_per_s"].to_list() == [2_000.0, None]  # a step time of 0 gives null, not inf
    assert no_flops["mfu_frac"].null_count() == 2 and no_flops["peak_tflops"][0] == 312.0


def test_frame_input_takes_the_slowest_rank_and_counts_devices():
    steps = pl.DataFrame(
        {"rank": [0, 1, 0, 1], "step": [5, 5, 6, 6], "duration_us": [900_000.0, 1_000_000.0, 1_200_000.0, 1_100_000.0]}
    )
    out = throughput(steps, tokens_per_step=8_192, params=1e9)
    assert out["step"].to_list() == [5, 6]
    assert out["step_time_us"].to_list() == [1_000_000.0, 1_200_000.0]
    assert out["devices"].to_list() == [2, 2]
    # 6 x 1e9 x 8,192 / 1 s / 2 devices = 24.576 TFLOP/s per device
    assert out["model_tflops_per_device"][0] == pytest.approx(24.576)
    assert throughput(steps, tokens_per_step=8_192, devices=16)["tokens_per_s_per_device"][0] == pytest.approx(512.0)


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="devices"):
        throughput([1.0], tokens_per_step=1)
    with pytest.raises(ValueError, match="seq_len and global_batch"):
        throughput([1.0], seq_len=4096, devices=1)
    with pytest.raises(ValueError, match="positive"):
        throughput([1.0], devices=0)
    with pytest.raises(ValueError, match="peak_tflops"):
        throughput([1.0], devices=1, peak_tflops=-5)
    with pytest.raises(ValueError, match="duration_us"):
        throughput(pl.DataFrame({"x": [1.0]}), devices=1)


OTHER_NAMES = {
    "NVIDIA H100 PCIe": ("NVIDIA H100 PCIe", 756.0),
    "NVIDIA H100 NVL": None,  # neither the SXM nor the PCIe number
    "NVIDIA H200": ("NVIDIA H200", 989.0),
    "NVIDIA H800": ("NVIDIA H100 SXM", 989.0),
    "NVIDIA A100-SXM4-80GB": ("NVIDIA A100 80GB SXM", 312.0),
    "NVIDIA A100 80GB PCIe": ("NVIDIA A100 80GB PCIe", 312.0),
    "NVIDIA A100-SXM4-40GB": ("NVIDIA A100", 312.0),
    "AMD Instinct MI355X": ("AMD Instinct MI355X", 2516.6),
    "Tesla V100-PCIE-32GB": ("NVIDIA V100 PCIe", 112.0),
    "Tesla V100S-PCIE-32GB": ("NVIDIA V100S PCIe", 130.0),
    "NVIDIA GB200": None,
    "AMD Instinct MI250X": ("AMD Instinct MI250X", 191.5),  # 383 per package of 2 GCDs
    "Ascend910B3": ("Huawei Ascend 910B", 313.0),
}


@pytest.mark.parametrize(
    "name, tbps",
    [
        ("NVIDIA A100-SXM4-40GB", 1.555),
        ("NVIDIA A100-SXM4-80GB", 2.039),
        ("NVIDIA A100 80GB PCIe", 1.935),
        ("NVIDIA H100 80GB HBM3", 3.35),
        ("NVIDIA H200", 4.8),
        ("AMD Instinct MI250X", 3.2768),  # per package (the roofline divides by devices_per_package)
    ],
)
def test_the_memory_bandwidth_of_each_variant(name, tbps):
    assert device_peak(name)["memory_tbps"] == tbps


@pytest.mark.parametrize("name", sorted({**REAL_NAMES, **OTHER_NAMES}))
def test_device_name_matching(name):
    want = {**REAL_NAMES, **OTHER_NAMES}[name]
    got = device_peak(name)
    assert (got and (got["name"], got["per_device_tflops"])) == (want or None)


def test_ascend_peak_is_marked_approximate():
    out = throughput([1e6], tokens_per_step=1, params=1, devices=1, device_name="Ascend910B2")
    assert out["peak_source"][0] == "Huawei Ascend 910B (approximate)"


def test_peak_table_cites_a_source_for_every_entry():
    entries = peak_entries()
    assert len(entries) >= 10
    blocks = PEAKS_FILE.read_text(encoding="utf-8").split("[[rule]]")[1:]
    assert len(blocks) == len(entries)
    for block, entry in zip(blocks, entries):
        comments = " ".join(line for line in block.splitlines() if line.lstrip().startswith("#"))
        assert re.search(r"datasheet|spec", comments, re.IGNORECASE), entry["name"]
        assert entry.get("approximate", False) == ("Approximate" in comments), entry["name"]
        assert 50 < entry["peak_tflops"] < 5_000, entry["name"]


def test_the_headline_shows_tokens_mfu_and_hfu_with_their_formulas():
    """With the model given, the summary's headline carries the mean tokens/s per device, MFU and
    HFU over the steps, and both formulas with their inputs; the text prints them first."""
    from traceview.cli.summary import summary_text
    from traceview.summary import build_summary

    trace = shared_sample("dp4_nccl")
    model = {"seq_len": 4096, "global_batch": 32, "params": 1.3e8, "recompute": True}
    doc = build_summary(trace, throughput=model)
    rows = trace.throughput(**model)
    first = doc["headline"]
    assert first["mfu_frac"] == pytest.approx(rows["mfu_frac"].mean(), abs=1e-6)
    assert first["hfu_frac"] == pytest.approx(rows["hfu_frac"].mean(), abs=1e-6)
    assert first["hfu_frac"] == pytest.approx(first["mfu_frac"] * 8 / 6, rel=1e-5)
    assert first["tokens_per_s_per_device"] == pytest.approx(rows["tokens_per_s_per_device"].mean(), rel=1e-9)
    text = summary_text(doc).splitlines()
    assert f"MFU {100 * first['mfu_frac']:.1f} % (HFU {100 * first['hfu_frac']:.1f} %)" in text[1]
    assert first["mfu_formula"] in text[:8] and first["hfu_formula"] in text[:8]
    assert "mfu_frac" not in build_summary(trace)["headline"]


# Issue 30: device names are matched by polars' linear-time regex engine, and the shipped table's
# look-around became `exclude` patterns. Every name below (the shipped entries' comments, the
# corpus, and variants seen in the wild) maps to the entry the table's look-around patterns gave
# (written down from the table before the change), with and without the roofline's `needs="tflops"`.
SAME_ENTRY_AS_BEFORE = {
    "NVIDIA V100S PCIe": "NVIDIA V100S PCIe",
    "Tesla V100S-PCIE-32GB": "NVIDIA V100S PCIe",
    "NVIDIA V100 PCIe": "NVIDIA V100 PCIe",
    "Tesla V100-PCIE-32GB": "NVIDIA V100 PCIe",
    "Tesla V100-PCIE-16GB": "NVIDIA V100 PCIe",
    "NVIDIA V100 SXM2": "NVIDIA V100 SXM2",
    "Tesla V100-SXM2-32GB": "NVIDIA V100 SXM2",
    "Tesla V100-SXM2-16GB": "NVIDIA V100 SXM2",
    "Tesla V100-DGXS-32GB": "NVIDIA V100 SXM2",
    "NVIDIA A100 80GB PCIe": "NVIDIA A100 80GB PCIe",
    "NVIDIA A100-PCIe-80GB": "NVIDIA A100 80GB PCIe",
    "NVIDIA A800 80GB PCIe": "NVIDIA A100 80GB PCIe",
    "NVIDIA A100 80GB SXM": "NVIDIA A100 80GB SXM",
    "NVIDIA A100-SXM4-80GB": "NVIDIA A100 80GB SXM",
    "NVIDIA A800-SXM4-80GB": "NVIDIA A100 80GB SXM",
    "NVIDIA A100": "NVIDIA A100",
    "NVIDIA A100-PG509-200": "NVIDIA A100",
    "NVIDIA A100-PCIE-40GB": "NVIDIA A100",
    "NVIDIA A100-SXM4-40GB": "NVIDIA A100",
    "NVIDIA A800-SXM4-40GB": "NVIDIA A100",
    "NVIDIA H100 PCIe": "NVIDIA H100 PCIe",
    "NVIDIA H100 PCIE": "NVIDIA H100 PCIe",
    "nvidia h100 pcie": "NVIDIA H100 PCIe",
    "NVIDIA H800 PCIe": "NVIDIA H100 PCIe",
    "H100 PCIe H800": "NVIDIA H100 PCIe",
    "NVIDIA H100 SXM": "NVIDIA H100 SXM",
    "NVIDIA H100 80GB HBM3": "NVIDIA H100 SXM",
    "NVIDIA H100": "NVIDIA H100 SXM",
    "NVIDIA H800": "NVIDIA H100 SXM",
    "NVIDIA H800 80GB HBM3": "NVIDIA H100 SXM",
    "NVIDIA PCIe H100": "NVIDIA H100 SXM",  # the look-ahead only looked after the H100
    "NVIDIA H100 NVL": None,
    "NVIDIA H200": "NVIDIA H200",
    "NVIDIA GH200 480GB": "NVIDIA H200",
    "NVIDIA GH200 144G HBM3e": "NVIDIA H200",
    "NVIDIA H200 NVL": None,
    "NVIDIA B200": "NVIDIA B200",
    "nvidia b200": "NVIDIA B200",
    "NVIDIA GB200": None,
    "nvidia gb200 nvl72": None,
    "AMD Instinct MI250X": "AMD Instinct MI250X",
    "AMD Instinct MI250X / MI250": "AMD Instinct MI250X",
    "AMD Instinct MI250": None,
    "AMD Instinct MI300X": "AMD Instinct MI300X",
    "AMD Instinct MI300X VF": "AMD Instinct MI300X",
    "AMD Instinct MI210": "AMD Instinct MI210",
    "AMD Instinct MI355X": "AMD Instinct MI355X",
    "Huawei Ascend 910B": "Huawei Ascend 910B",
    "Ascend910B1": "Huawei Ascend 910B",
    "Ascend910B2": "Huawei Ascend 910B",
    "Ascend910B3": "Huawei Ascend 910B",
    "Ascend910B4": "Huawei Ascend 910B",
    "Ascend910A": None,
    "Ascend910_9392": None,
    "Ascend": None,
    "NVIDIA H20": None,
    "NVIDIA L40S": None,
    "NVIDIA GeForce RTX 2080 Ti": None,
    "NVIDIA GeForce RTX 4090": None,
    "AMD Radeon Graphics": None,
    "ARTEMIS": None,
}


@pytest.mark.parametrize("name", sorted(SAME_ENTRY_AS_BEFORE))
def test_device_names_match_the_same_entry_as_before_the_exclude_patterns(name):
    want = SAME_ENTRY_AS_BEFORE[name]
    for needs in (None, "tflops"):
        got = device_peak(name, needs=needs)
        assert (got and got["name"]) == want, needs


def test_the_shipped_table_uses_no_look_around_and_every_pattern_runs_in_polars():
    for entry in peak_entries():
        for key in ("match", "exclude"):
            if key in entry:
                assert "(?<" not in entry[key] and "(?=" not in entry[key] and "(?!" not in entry[key]
                pl.Series([""]).str.contains("(?i)" + entry[key])  # raises on a pattern Rust regex refuses


def test_a_users_exclude_pattern_keeps_a_name_out_of_its_entry(tmp_path):
    rules = tmp_path / "r.toml"
    rules.write_text(
        '[[device_peaks.rule]]\nname = "Chip"\nmatch = "MyChip"\nexclude = "MyChip.*lite"\npeak_tflops = 100.0\n'
    )
    peaks = ruleset.build(rules).device_peaks
    assert device_peak("ACME MyChip 9", peaks)["name"] == "Chip"
    assert device_peak("acme mychip 9 LITE", peaks) is None  # exclude is case-insensitive too
    assert device_peak("NVIDIA H100 PCIe", peaks)["name"] == "NVIDIA H100 PCIe"


@pytest.mark.parametrize(
    "given, message",
    [
        ({"params": float("nan")}, "params must be a finite number, got nan"),
        ({"peak_tflops": float("inf")}, "peak_tflops must be a finite number, got inf"),
        ({"tokens_per_step": 10**400}, "tokens_per_step must be a finite number, got an integer of 1329 bits"),
    ],
)
def test_throughput_inputs_must_be_finite(given, message):
    with pytest.raises(ValueError) as info:
        throughput([1e6], **{"tokens_per_step": 1.0, "params": 1.0, "devices": 1, **given})
    assert str(info.value) == message
