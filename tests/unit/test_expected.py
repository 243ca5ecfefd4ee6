"""The analytical model (traceview.analysis.expected, model_config): a hand computation of every
term from the formulas in docs/roofline.md, the model's matrix FLOPs against a traced transformer
step whose shapes are known, the layout's links, configuration errors, and the CLI.

This file holds the topic's unit tests; the others are in tests/integration/test_expected.py, tests/corpus/test_expected.py.
"""

from __future__ import annotations

import json
import math

import polars as pl
import pytest

import traceview as tv
from tests.conftest import run_cli
from tests.support.roofline import transformer_step
from tests.support.samples import shared_sample
from traceview.analysis import expected as ex
from traceview.analysis import model_config as model_config_module
from traceview.analysis.model_config import ModelConfig, model_config

H100 = {"peak_tflops": 989.0, "memory_tbps": 3.35, "intra_node_gbps": 450.0, "inter_node_gbps": 50.0}


def _terms(config: ModelConfig, limits=H100) -> dict:
    return ex.expected_terms(ex.expected_ops(config, limits), config)


def test_every_term_matches_a_hand_computation():
    """Two layers of h = 4096, 32 heads, s = 2048, one sequence per micro-batch, two micro-batches,
    tp = 2, dp = 2 in one node, bf16, on an H100 SXM (989 TFLOP/s, 3.35 TB/s, NVLink 450 GB/s per
    direction). Every number below is worked out by hand from the formulas (n = 2048 tokens)."""
    config = model_config(
        dict(layers=2, hidden=4096, heads=32, seq=2048, micro_batch=1, micro_batches=2, tp=2, dp=2, device="H100 SXM")
    )
    limits = ex.system_limits(config, None)
    assert {k: limits[k] for k in H100} == H100 and limits["device"] == "NVIDIA H100 SXM"
    peak, bandwidth, link = 989e6, 3.35e6, 450e3  # FLOP/µs, bytes/µs, bytes/µs
    # forward FLOPs per layer and micro-batch on one of the two tensor-parallel ranks
    qkv = 2 * 2048 * 4096 * 6144  # 103,079,215,104: [2048 x 4096] @ [4096 x (3 x 4096) / 2]
    attention = 4 * 2048 * 2048 * 4096 / 2 * 0.5  # causal: half of 4·n·s·h/t
    out = 2 * 2048 * 2048 * 4096  # [2048 x 2048] @ [2048 x 4096]
    ffn = 2 * 2048 * 4096 * 8192  # up and down each
    forward = qkv + attention + out + 2 * ffn
    backward = 2 * (qkv + out + 2 * ffn) + 2.5 * attention
    layer_runs = 2 * 2  # layers x micro-batches
    # every GEMM and attention row is compute-bound here (e.g. qkv: 104.2 µs of FLOPs, 27.5 µs of bytes)
    assert qkv / peak > 2 * (2048 * 4096 + 4096 * 6144 + 2048 * 6144) / bandwidth
    terms = _terms(config, limits)
    assert terms["compute"] == pytest.approx(layer_runs * (forward + backward) / peak, rel=1e-12)
    # elementwise bytes per layer forward: norm 2nh, residual + norm 5nh, activation 2·n·f/t, residual 3nh
    elementwise = 2 * (2 * 2048 * 4096 + 5 * 2048 * 4096 + 2 * 2048 * 8192 + 3 * 2048 * 4096)
    assert terms["memory"] == pytest.approx(layer_runs * 3 * elementwise / bandwidth, rel=1e-12)  # fwd + 2x bwd
    all_reduce = 2 * (2 - 1) / 2 * (2048 * 4096 * 2) / link  # ring over 2 ranks of n·h bf16 values
    assert terms["tp_comm"] == pytest.approx(4 * layer_runs * all_reduce, rel=1e-12)  # 2 forward, 2 backward
    layer_weights = 4096 * (4096 + 2 * 4096) + 4096 * 4096 + 2 * 4096 * 16384  # 201,326,592
    local = 2 * layer_weights / 2  # two layers, halved by tp
    assert terms["dp_comm"] == pytest.approx(2 * (2 - 1) / 2 * local * 4 / link, rel=1e-12)  # fp32 gradients
    assert terms["optimizer"] == pytest.approx(local * (24 + 4 + 2) / bandwidth, rel=1e-12)
    assert terms["pp_comm"] == 0 and terms["bubble"] == 0
    parts = ("compute", "memory", "optimizer", "tp_comm", "pp_comm", "dp_comm", "bubble")
    assert terms["step"] == pytest.approx(sum(terms[k] for k in parts), rel=1e-12)
    assert terms["matrix_flop"] == pytest.approx(layer_runs * (forward + backward), rel=1e-12)


def test_pipeline_bubble_recompute_vocab_and_links_across_nodes():
    base = dict(layers=8, hidden=2048, heads=16, seq=1024, micro_batch=2, micro_batches=8)
    flat = _terms(model_config(base))
    piped = model_config({**base, "pp": 4, "tp": 2, "dp": 4, "devices_per_node": 8})
    ops = ex.expected_ops(piped, H100)
    links = dict(ops.filter(ops["family"] == "communication").select("op", "link").iter_rows())
    # tp (2 ranks) in a node; dp spans tp x dp = 8 ranks: one node; pp spans all 32: between nodes
    assert links == {"tp_all_reduce": "intra", "dp_all_reduce": "intra", "pp_send_recv": "inter"}
    terms = _terms(piped)
    per_micro_batch = (terms["compute"] + terms["memory"] + terms["tp_comm"]) / 8
    assert terms["bubble"] == pytest.approx(3 * per_micro_batch)  # (p - 1) micro-batches
    assert terms["pp_comm"] == pytest.approx(2 * 8 * (2 * 1024 * 2048 * 2) / 50e3)  # 2 transfers per micro-batch
    # a quarter of the layers per stage, half of each matrix per tensor-parallel rank
    assert terms["matrix_flop"] == pytest.approx(flat["matrix_flop"] / 8)
    recomputed = _terms(model_config({**base, "recompute": True}))
    ratio = recomputed["matrix_flop"] / flat["matrix_flop"]
    assert 1.3 < ratio < 1.34  # one more forward: (1 + 3) / 3 for GEMMs, (1 + 3.5) / 3.5 for attention
    with_vocab = _terms(model_config({**base, "vocab": 32000}))
    logits = 2 * (2 * 1024) * 2048 * 32000 * 3 * 8  # forward + 2x backward, per micro-batch
    assert with_vocab["matrix_flop"] - flat["matrix_flop"] == pytest.approx(logits)
    across = model_config({**base, "tp": 8, "dp": 4})
    ops = ex.expected_ops(across, H100)
    assert ops.filter(ops["op"] == "dp_all_reduce")["link"].to_list() == ["inter"]


def test_model_flops_equal_the_traced_flops_of_a_known_transformer_step(tmp_path):
    """The generated step (two layers, h = 1024, 8 heads, s = 128, 4 sequences, no causal mask,
    every matmul recorded with shapes): the model's executed matrix FLOPs equal the traced ones
    exactly, and the measured side is filled from the trace."""
    path, model = transformer_step(tmp_path / "step.json")
    t = tv.load(path, use_cache=False)
    config = dict(layers=2, hidden=1024, heads=8, seq=128, micro_batch=4, causal=False)
    terms = {r["term"]: r for r in t.expected(config).iter_rows(named=True)}
    assert terms["matrix_flop"]["expected"] == pytest.approx(6 * model["params"] * model["tokens"] + model["attention"])
    assert terms["matrix_flop"]["measured"] == pytest.approx(terms["matrix_flop"]["expected"], rel=1e-12)
    assert terms["step"]["measured"] == pytest.approx(model["step_us"])
    frac = terms["matrix_roofline_frac"]["measured"]
    assert 0 < frac < 1  # 8 µs kernels of a few GFLOP: far below the roofline
    ops = t.expected_ops(config)
    assert set(ops["pass"]) == {"forward", "backward", "step"}
    text = ex.verdict(t.expected(config))
    assert text.startswith("expected ") and "of their roofline" in text and "measured" in text


def test_configuration_errors_are_one_line():
    good = dict(layers=4, hidden=512, heads=8, seq=64, micro_batch=1)
    cases = [
        ({**good, "bogus": 1}, "unknown key 'bogus'"),
        ({k: v for k, v in good.items() if k != "hidden"}, "hidden missing"),
        ({**good, "tp": 0}, "tp must be a positive integer"),
        ({**good, "layers": 4.5}, "layers must be an integer"),
        ({**good, "causal": "yes"}, "causal must be true or false"),
        ({**good, "dtype": "int4"}, "dtype must be one of"),
        ({**good, "pp": 3}, "layers (4) must be a multiple of pp (3)"),
        ({**good, "hidden": 500}, "hidden (500) must be a multiple of heads (8)"),
        ({**good, "peak_tflops": -1}, "peak_tflops must be a positive number"),
    ]
    for values, message in cases:
        with pytest.raises(ValueError, match="model config: ") as info:
            model_config(values)
        assert message in str(info.value) and "\n" not in str(info.value)
    with pytest.raises(ValueError, match="is not KEY=VALUE"):
        model_config(good, ["tp"])
    config = model_config(good, ["tp=2", "causal=false", "device=H100 SXM"])
    assert (config.tp, config.causal, config.device) == (2, False, "H100 SXM")
    with pytest.raises(ValueError, match="inter_node_gbps"):  # a PCIe card lists no network
        ex.system_limits(model_config({**good, "tp": 8, "dp": 2}), "NVIDIA H100 PCIe")
    with pytest.raises(ValueError, match="records no device name"):
        ex.system_limits(model_config(good), None)
    assert ex.system_limits(model_config({**good, "peak_tflops": 100, "memory_tbps": 1}), None)["device"] == "config"


@pytest.mark.parametrize(
    "override, message",
    [
        # issue 30: each of these was accepted and failed (or printed nan) after the whole load
        (
            "hidden=1" + "0" * 300,
            "hidden must be a positive integer from 1 to 2,147,483,648, got an integer of 997 bits",
        ),
        (
            "hidden=18446744073709551616",
            "hidden must be a positive integer from 1 to 2,147,483,648, got 18446744073709551616",
        ),
        ("layers=2097152", "layers must be a positive integer from 1 to 1,048,576, got 2097152"),
        ("vocab=4294967296", "vocab must be an integer from 0 to 2,147,483,648, got 4294967296"),
        ("memory_tbps=1e-310", "memory_tbps must be a positive number from 0.001 to 1e+06 TB/s, got 1e-310"),
        ("memory_tbps=nan", "memory_tbps must be a positive number from 0.001 to 1e+06 TB/s, got nan"),
        ("peak_tflops=inf", "peak_tflops must be a positive number from 0.001 to 1e+06 TFLOP/s, got inf"),
        ("inter_node_gbps=2e6", "inter_node_gbps must be a positive number from 0.001 to 1e+06 GB/s, got 2000000.0"),
        ("hidden=1" + "0" * 5000, "hidden must be an integer, got '1000000000"),  # beyond Python's int parsing
    ],
    ids=["hidden 1e300", "hidden 2**64", "layers 2**21", "vocab 2**32", "subnormal memory_tbps", "memory_tbps nan"]
    + ["peak_tflops inf", "inter_node_gbps 2e6", "hidden of 5001 digits"],
)
def test_model_config_numbers_are_finite_and_in_range(override, message):
    good = dict(layers=4, hidden=512, heads=8, seq=64, micro_batch=1)
    with pytest.raises(ValueError) as info:
        model_config(good, [override])
    assert str(info.value).startswith("model config: " + message) and len(str(info.value)) < 200


def test_model_config_at_its_ranges_gives_finite_times():
    """Every key at the top of its range (and the rates at the bottom): every figure stays finite."""
    top = {k: high for k, (low, high) in model_config_module.INT_RANGES.items()}
    top |= {"kv_heads": 1, "devices_per_node": 1, "recompute": True, "gated_ffn": True, "dtype": "fp8"}
    low = {k: lo for k, (lo, hi) in model_config_module.FLOAT_RANGES.items()}
    config = model_config({**top, **low})
    limits = ex.system_limits(config, None)
    terms = ex.expected_terms(ex.expected_ops(config, limits), config)
    assert all(math.isfinite(v) and v >= 0 for v in terms.values()) and terms["step"] > 0


def test_config_file_and_cli(tmp_path):
    path, _ = transformer_step(tmp_path / "step.json")
    config = tmp_path / "model.toml"
    config.write_text("[model]\nlayers = 2\nhidden = 1024\nheads = 8\nseq = 128\nmicro_batch = 4\n")
    out = run_cli("roofline", str(path), "--model-config", str(config), "--model", "causal=false")
    assert out.returncode == 0, out.stderr
    assert "Analytical model (docs/roofline.md): expected " in out.stdout and "matrix_roofline_frac" in out.stdout
    doc = json.loads(
        run_cli(
            "roofline", str(path), "--model-config", str(config), "--model", "causal=false", "--format", "json"
        ).stdout
    )
    terms = {r["term"]: r for r in doc["expected"]["terms"]}
    assert terms["matrix_flop"]["measured"] == pytest.approx(terms["matrix_flop"]["expected"])
    assert doc["expected"]["config"]["causal"] is False and doc["expected"]["operations"]
    bad = run_cli("roofline", str(path), "--model-config", str(config), "--model", "layers=0")
    assert bad.returncode == 2 and "layers must be a positive integer" in bad.stderr and "Traceback" not in bad.stderr
    csv = run_cli("roofline", str(path), "--model-config", str(config), "--format", "csv")
    assert csv.returncode == 2 and "--format csv" in csv.stderr
    missing = run_cli("roofline", str(path), "--model-config", str(tmp_path / "nope.toml"))
    assert missing.returncode == 2 and "no such file" in missing.stderr
    pcie = run_cli(
        "roofline", str(path), "--model-config", str(config), "--model", "tp=2", "--model", "device=H100 PCIe"
    )
    assert pcie.returncode == 0, pcie.stderr  # a PCIe card's link inside the node is listed
    far = run_cli(
        "roofline",
        str(path),
        "--model-config",
        str(config),
        "--model",
        "tp=8",
        "--model",
        "dp=2",
        "--model",
        "device=H100 PCIe",
    )
    assert far.returncode == 1 and "give inter_node_gbps" in far.stderr and len(far.stderr.strip().splitlines()) == 1


def test_inference_profile_counts_forward_passes_only():
    base = dict(layers=4, hidden=1024, heads=8, seq=256, micro_batch=2, tp=2, dp=2, vocab=1000)
    training, inference = _terms(model_config(base)), _terms(model_config({**base, "training": False}))
    assert inference["optimizer"] == inference["dp_comm"] == 0 and training["dp_comm"] > 0
    assert inference["tp_comm"] == pytest.approx(training["tp_comm"] / 2)  # forward's two of four per layer
    ops = ex.expected_ops(model_config({**base, "training": False}), H100)
    assert set(ops["pass"]) == {"forward", "step"} and "loss" not in set(ops["op"])


def test_a_pipeline_profile_measures_the_bubble_apart_from_communication():
    """pp4_1f1b: the exposed communication of each stage is its P2P receive wait, the bubble; the
    comm term leaves it to the bubble term, and the verdict names the bubble. Every stage computes
    as long: the tie goes to the last stage, rank 3, which the model describes."""
    t = shared_sample("pp4_1f1b")
    config = dict(layers=8, hidden=1024, heads=8, seq=128, micro_batch=4, pp=4, micro_batches=4, device="H100 SXM")
    terms = {r["term"]: r for r in t.expected(config).iter_rows(named=True)}
    assert terms["step"]["rank"] == 3
    iteration_comm = t.iteration_breakdown().filter(pl.col("rank") == 3)["iteration_exposed_comm_us"].mean()
    assert iteration_comm > 7000 and terms["comm"]["measured"] == 0.0
    assert terms["bubble"]["measured"] == pytest.approx(10914.0)
    sentence = ex.verdict(t.expected(config))
    assert "pipeline bubble of 10.9 ms" in sentence and "more exposed communication" not in sentence


def test_build_summary_takes_a_dict_and_the_model_is_that_of_the_step_asked(tmp_path):
    path, _ = transformer_step(tmp_path / "step.json")
    from traceview.summary import build_summary

    config = dict(layers=2, hidden=1024, heads=8, seq=128, micro_batch=4, causal=False)
    doc = build_summary(tv.load(path, use_cache=False), model_config=config)
    assert doc["expected"]["config"]["hidden"] == 1024 and doc["expected"]["verdict"].startswith("expected")
    frac = {r["term"]: r for r in doc["expected"]["terms"]}["matrix_roofline_frac"]["measured"]
    assert frac == pytest.approx(round(frac, 6)) and frac != round(frac, 3)  # a share keeps 6 digits


def test_layout_details_gqa_vocab_optimizer_and_inference_links():
    base = dict(layers=2, hidden=1024, heads=8, seq=128, micro_batch=1, tp=8)
    ops = ex.expected_ops(model_config({**base, "kv_heads": 1}), H100)
    qkv = ops.filter((ops["op"] == "qkv_proj") & (ops["pass"] == "forward")).row(0, named=True)
    # one KV head for 8 ranks: each keeps a copy, 128 wide: N = 1024/8 + 2·128 = 384
    assert qkv["flop"] == 2 * 128 * 1024 * 384
    odd = _terms(model_config({**base, "vocab": 7}))
    assert odd["matrix_flop"] > _terms(model_config(base))["matrix_flop"]  # 7 / 8 rounds up to one column
    dp = dict(layers=2, hidden=1024, heads=8, seq=128, micro_batch=1, dp=8)
    plain = ex.expected_ops(model_config(dp), H100).filter(pl.col("op") == "optimizer")["bytes"][0]
    sharded = ex.expected_ops(model_config({**dp, "distributed_optimizer": True}), H100)
    assert sharded.filter(pl.col("op") == "optimizer")["bytes"][0] == pytest.approx(plain / 8)
    # inference: no gradient all-reduce, so a PCIe card's missing network is not asked for
    config = model_config({**base, "tp": 8, "dp": 2, "training": False})
    assert ex.system_limits(config, "NVIDIA H100 PCIe")["intra_node_gbps"] == 64.0
    with pytest.raises(ValueError, match="is not in the device table"):
        ex.system_limits(model_config({**base, "device": "Nope"}), None)


def test_a_config_file_may_hold_top_level_keys_and_a_model_table(tmp_path):
    path = tmp_path / "m.toml"
    path.write_text(
        "tp = 8\ndp = 4\n\n[model]\nlayers = 8\nhidden = 1024\nheads = 8\nseq = 128\nmicro_batch = 1\ndp = 2\n"
    )
    config = model_config(path)
    assert (config.tp, config.dp) == (8, 2)  # both read; the [model] table wins
    with pytest.raises(ValueError, match="peak_tflops must be a positive number"):
        model_config(path, ["peak_tflops=inf"])


def test_what_if_and_the_model_follow_the_step_asked():
    from traceview.summary import build_summary

    t = shared_sample("dp4_nccl")
    config = dict(layers=4, hidden=1024, heads=8, seq=2048, micro_batch=2, dp=4)
    doc = build_summary(t, step=4, model_config=config)
    step4 = t.iteration_breakdown().filter(pl.col("step") == 4)
    assert doc["what_if"][0]["iteration_us"] == pytest.approx(step4["iteration_us"].mean(), abs=1e-3)
    measured = {r["term"]: r for r in doc["expected"]["terms"]}["step"]["measured"]
    busiest = step4.sort(["iteration_computing_us", "rank"], descending=True).row(0, named=True)
    assert measured == pytest.approx(busiest["iteration_us"], abs=1e-3)
    whole = build_summary(t, model_config=config)
    assert whole["what_if"][0]["iteration_us"] != doc["what_if"][0]["iteration_us"]
