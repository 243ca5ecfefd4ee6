"""The analytical expectation: what a transformer training step should take on this hardware, from
its configuration (`model_config.ModelConfig`) and the device's limits, set beside the measured
terms (docs/roofline.md, "The analytical model").

The approach is the NERSC performance model's (Isaacs et al., "Performance Estimates for Large AI
Transformer Models", 2024): count each operation's FLOPs, bytes moved and bytes communicated from
the model's shape and the parallel layout, time each at its roofline, add them up.

One rank of the last pipeline stage (the busiest: it holds the logits), one step. Notation: b =
micro_batch, s = seq, n = b·s tokens per micro-batch, h = hidden, f = ffn, g = 2 for a gated FFN
else 1, t = tp, k_t = the width of K (and V) on one rank = ceil(kv_heads / t)·h/heads (k/t when t
divides the KV heads; a rank holds one copy when there are fewer KV heads than ranks), E = bytes
per element of dtype, L = layers per stage = layers / pp, m = micro_batches.

Per layer and micro-batch, forward (Megatron-style tensor parallelism: QKV and FFN-up split by
columns, the output projection and FFN-down by rows, norms replicated):
- gemm rows (M×K @ K×N: flop = 2·M·K·N, bytes = E·(M·K + K·N + M·N)): qkv_proj (n, h, h/t + 2k_t),
  out_proj (n, h/t, h), ffn_up (n, h, g·f/t), ffn_down (n, f/t, h).
- attention (fused, flash): flop = 4·n·s·h/t, halved when causal; bytes = E·n·(2h/t + 2k_t) (Q,
  K, V read, the output written).
- elementwise rows, memory traffic only (their FLOPs are too few to matter and no MFU counts them):
  norm_attn 2·n·h·E (read, write), residual_norm 5·n·h·E (residual add 3, norm 2), activation
  (g+1)·n·f/t·E, residual 3·n·h·E.
- tp_all_reduce (t > 1): 2 per layer, n·h·E bytes each.
Backward: gemm FLOPs and bytes 2× the forward (dX and dW); attention 2.5× the forward FLOPs (as
the trace's flash-attention backward formula counts) and bytes E·n·(4h/t + 4k_t) (Q, K, V, O,
dO read, dQ, dK, dV written); elementwise 2× the forward bytes; two tp_all_reduce. recompute: one
more forward per layer (FLOPs, bytes and all-reduces). With vocab: logits gemm (n, h, vocab/t)
forward and backward, and the loss reading and writing the fp32 logits (2·n·vocab/t·4 bytes) once
per micro-batch (vocab/t rounded up: Megatron pads the vocabulary).

Time of a computing row = max(flop / peak, bytes / bandwidth), its bound the larger term (peak = the
device table's dense matrix peak for dtype, bandwidth its memory bandwidth, or the config's
overrides). Communication, bandwidth only (no latency term): a ring all-reduce of V bytes over r
ranks takes 2·(r−1)/r·V / link; a point-to-point transfer V / link; link = intra_node_gbps when
the group fits in one node (ranks ordered tp, then dp, then pp, as Megatron orders them), else
inter_node_gbps.

training = false (an inference profile): the forward rows only, the logits forward, two
tp_all_reduce per layer, one pipeline send per micro-batch; no optimizer, no gradient all-reduce.

Per step: every per-layer row runs L·m times, the logits m times; pp_send_recv (pp > 1) 2·m
transfers of n·h·E (activations in, gradients out); dp_all_reduce (dp > 1) once, of the stage's
weights / t in grad_dtype; the optimizer (Adam, mixed precision) once, memory-bound: per weight
on the rank 24 bytes (fp32 master, m, v, each read and written) + one gradient read + one weight
written, all divided by dp with distributed_optimizer (each rank updates its 1/dp shard). The pipeline bubble of 1F1B: (pp−1) × one
micro-batch's forward and backward (with its tp all-reduces). Nothing overlaps: the step is the
sum of the terms.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from traceview.analysis.flop_formulas import MATRIX_FAMILIES
from traceview.analysis.model_config import DTYPE_BYTES, ModelConfig

OPS_SCHEMA = pl.Schema(
    {
        "op": pl.String,
        "family": pl.String,
        "pass": pl.String,
        "runs_per_step": pl.Int64,
        "flop": pl.Float64,
        "bytes": pl.Float64,
        "comm_bytes": pl.Float64,
        "link": pl.String,
        "time_us": pl.Float64,
        "bound": pl.String,
        "step_us": pl.Float64,
    }
)

TERMS_SCHEMA = pl.Schema(
    {
        "term": pl.String,
        "rank": pl.Int64,
        "unit": pl.String,
        "expected": pl.Float64,
        "measured": pl.Float64,
        "difference": pl.Float64,
        "definition": pl.String,
    }
)

#: The terms whose sum is the expected step, in order, with what each holds.
STEP_TERMS = {
    "compute": "computing rows bound by the device's matrix peak (GEMMs, attention)",
    "memory": "computing rows bound by memory bandwidth (norms, activations, residuals, the loss)",
    "optimizer": "the optimizer step (Adam, memory-bound)",
    "tp_comm": "tensor-parallel all-reduces",
    "pp_comm": "pipeline sends and receives",
    "dp_comm": "the data-parallel gradient all-reduce",
    "bubble": "the 1F1B pipeline bubble: (pp-1) micro-batches' forward and backward",
}


def system_limits(config: ModelConfig, device_name: str | None, peaks: Sequence[dict] | None = None) -> dict:
    """The limits the model uses: peak_tflops (dense matrix peak for config.dtype, TFLOP/s),
    memory_tbps (TB/s), intra_node_gbps and inter_node_gbps (GB/s per direction per device),
    device (the table entry's name, or "config"). Each from the config's override, else from the
    device table entry matching config.device or `device_name` (per device: a package's figures
    / devices_per_package; `peaks`: the device peak table, None: the shipped one). ValueError
    when a needed one is unknown."""
    from traceview.analysis.throughput import device_peak

    name = config.device or device_name
    entry = device_peak(name, peaks, needs="tflops") if name else None
    per = int(entry.get("devices_per_package", 1)) if entry else 1
    tflops, links = ({} if entry is None else entry.get(key) for key in ("tflops", "link_gbps"))
    tflops, links = (v if isinstance(v, dict) else {} for v in (tflops, links))

    def table(value):
        return float(value) / per if isinstance(value, (int, float)) and not isinstance(value, bool) else None

    limits = {
        "peak_tflops": config.peak_tflops or table(tflops.get(config.dtype)),
        "memory_tbps": config.memory_tbps or table(entry.get("memory_tbps") if entry else None),
        "intra_node_gbps": config.intra_node_gbps or table(links.get("intra")),
        "inter_node_gbps": config.inter_node_gbps or table(links.get("inter")),
        "device": entry["name"] + (" (approximate)" if entry.get("approximate") else "") if entry else "config",
    }
    if name and entry is None:
        where = f"device {name!r} is not in the device table (or has no dtype peaks), so it gives"
    else:
        where = f"the device table gives device {name!r}" if name else "the profile records no device name, so"
    needed = [
        ("peak_tflops", f"{config.dtype} peak", True),
        ("memory_tbps", "memory bandwidth", True),
        ("intra_node_gbps", "link bandwidth inside a node", _link_used(config, "intra")),
        ("inter_node_gbps", "network bandwidth between nodes", _link_used(config, "inter")),
    ]
    for key, what, used in needed:
        if used and limits[key] is None:
            raise ValueError(f"model config: {where} no {what}: give {key} (or device) in the model config")
    return limits


def _group_link(config: ModelConfig, span: int) -> str:
    """ "intra" when a group spanning `span` consecutive ranks fits in one node, else "inter"."""
    return "intra" if span <= config.devices_per_node else "inter"


def _links(c: ModelConfig) -> dict[str, str]:
    return {"tp": _group_link(c, c.tp), "dp": _group_link(c, c.tp * c.dp), "pp": _group_link(c, c.world)}


def _link_used(c: ModelConfig, link: str) -> bool:
    """Whether a group that communicates crosses `link` ("intra" or "inter"): tp and pp always,
    dp only when training (its gradient all-reduce)."""
    links = _links(c)
    groups = (("tp", c.tp), ("pp", c.pp)) + ((("dp", c.dp),) if c.training else ())
    return any(size > 1 and links[g] == link for g, size in groups)


def _gemm(op: str, m: int, k: int, n: int, e: int) -> tuple[str, str, float, float]:
    return op, "gemm", 2.0 * m * k * n, float(e * (m * k + k * n + m * n))


def _kv_local(c: ModelConfig) -> int:
    """Width of K (and of V) on one tensor-parallel rank: its kv_heads / tp heads, at least one
    (with fewer KV heads than ranks each rank holds a copy of one, as Megatron does)."""
    return -(-(c.kv_heads or c.heads) // c.tp) * (c.hidden // c.heads)


def _forward_rows(c: ModelConfig) -> list[tuple[str, str, float, float]]:
    """(op, family, flop, bytes) of one layer's forward on one rank, one micro-batch."""
    e, t = DTYPE_BYTES[c.dtype], c.tp
    n, h, f, g = c.micro_batch * c.seq, c.hidden, c.ffn_size, 2 if c.gated_ffn else 1
    k = _kv_local(c)  # per rank
    attention_flop = 4.0 * n * c.seq * h / t * (0.5 if c.causal else 1.0)
    return [
        ("norm_attn", "elementwise", 0.0, float(2 * n * h * e)),
        _gemm("qkv_proj", n, h, h // t + 2 * k, e),
        ("attention", "attention", attention_flop, float(e * n * (2 * h // t + 2 * k))),
        _gemm("out_proj", n, h // t, h, e),
        ("residual_norm", "elementwise", 0.0, float(5 * n * h * e)),
        _gemm("ffn_up", n, h, g * f // t, e),
        ("activation", "elementwise", 0.0, float((g + 1) * n * f // t * e)),
        _gemm("ffn_down", n, f // t, h, e),
        ("residual", "elementwise", 0.0, float(3 * n * h * e)),
    ]


def _backward(row: tuple[str, str, float, float], c: ModelConfig) -> tuple[str, str, float, float]:
    op, family, flop, data = row
    if family == "attention":
        e, n = DTYPE_BYTES[c.dtype], c.micro_batch * c.seq
        return op, family, 2.5 * flop, float(e * n * (4 * c.hidden // c.tp + 4 * _kv_local(c)))
    return op, family, 2.0 * flop, 2.0 * data


def _vocab_local(c: ModelConfig) -> int:
    """The logits' columns on one tensor-parallel rank: vocab / tp rounded up (Megatron pads the
    vocabulary to a multiple of tp)."""
    return -(-c.vocab // c.tp)


def expected_ops(config: ModelConfig, limits: dict) -> pl.DataFrame:
    """One row per operation of the module docstring and pass (OPS_SCHEMA): runs_per_step, flop
    and bytes per run (computing rows), comm_bytes and link per run (communication rows),
    time_us per run at its roofline or link rate, bound ("compute", "memory" or "link") and
    step_us = runs_per_step × time_us."""
    c = config
    e = DTYPE_BYTES[c.dtype]
    n, h = c.micro_batch * c.seq, c.hidden
    per_layer = c.layers_per_stage * c.micro_batches
    peak, bandwidth = limits["peak_tflops"] * 1e6, limits["memory_tbps"] * 1e6  # FLOP/µs, bytes/µs
    links = _links(c)
    rows: list[dict] = []

    def computing(row, pass_: str, runs: int) -> None:
        op, family, flop, data = row
        compute, memory = flop / peak, data / bandwidth
        time = max(compute, memory)
        bound = "compute" if compute >= memory else "memory"
        rows.append(dict(op=op, family=family, pass_=pass_, runs=runs, flop=flop, bytes=data, time=time, bound=bound))

    def communicating(op: str, runs: int, volume: float, group: str, ranks: int, ring: bool) -> None:
        link = links[group]
        rate = limits[f"{link}_node_gbps"] * 1e3  # bytes/µs
        time = (2 * (ranks - 1) / ranks if ring else 1.0) * volume / rate
        rows.append(dict(op=op, family="communication", pass_="step", runs=runs, comm=volume, link=link, time=time))

    forward = _forward_rows(c)
    for row in forward:
        computing(row, "forward", per_layer)
    if not c.training:
        return _inference(c, rows, computing, communicating)
    for row in forward:
        computing(_backward(row, c), "backward", per_layer)
    if c.recompute:
        for row in forward:
            computing(row, "recompute", per_layer)
    if c.vocab:
        logits = _gemm("logits", n, h, _vocab_local(c), e)
        computing(logits, "forward", c.micro_batches)
        computing(_backward(logits, c), "backward", c.micro_batches)
        computing(("loss", "elementwise", 0.0, float(2 * n * _vocab_local(c) * 4)), "forward", c.micro_batches)
    if c.tp > 1:
        passes = 3 if c.recompute else 2
        communicating("tp_all_reduce", 2 * passes * per_layer, float(n * h * e), "tp", c.tp, ring=True)
    if c.pp > 1:
        communicating("pp_send_recv", 2 * c.micro_batches, float(n * h * e), "pp", c.pp, ring=False)
    local = stage_params(c) / c.tp
    if c.dp > 1:
        communicating("dp_all_reduce", 1, local * DTYPE_BYTES[c.grad_dtype], "dp", c.dp, ring=True)
    optimizer = local * (24 + DTYPE_BYTES[c.grad_dtype] + e) / (c.dp if c.distributed_optimizer else 1)
    rows.append(
        dict(op="optimizer", family="optimizer", pass_="step", runs=1, bytes=optimizer, time=optimizer / bandwidth)
    )
    rows[-1]["bound"] = "memory"
    return _ops_frame(rows)


def _inference(c: ModelConfig, rows: list[dict], computing, communicating) -> pl.DataFrame:
    """The forward-only step (training = false): the layers' forward rows already in `rows`, the
    logits forward, one tp all-reduce pair per layer, one pipeline send per micro-batch."""
    e, n = DTYPE_BYTES[c.dtype], c.micro_batch * c.seq
    per_layer = c.layers_per_stage * c.micro_batches
    if c.vocab:
        computing(_gemm("logits", n, c.hidden, _vocab_local(c), e), "forward", c.micro_batches)
    if c.tp > 1:
        communicating("tp_all_reduce", 2 * per_layer, float(n * c.hidden * e), "tp", c.tp, ring=True)
    if c.pp > 1:
        communicating("pp_send_recv", c.micro_batches, float(n * c.hidden * e), "pp", c.pp, ring=False)
    return _ops_frame(rows)


def _ops_frame(rows: list[dict]) -> pl.DataFrame:
    return pl.DataFrame(
        [
            (
                r["op"],
                r["family"],
                r["pass_"],
                r["runs"],
                r.get("flop"),
                r.get("bytes"),
                r.get("comm"),
                r.get("link"),
                r["time"],
                r.get("bound", "link"),
                r["runs"] * r["time"],
            )
            for r in rows
        ],
        schema=OPS_SCHEMA,
        orient="row",
    )


def stage_params(c: ModelConfig) -> int:
    """Weights of the last pipeline stage (before tensor parallelism): its layers, and the logits'
    vocab × hidden when vocab is given."""
    return c.layers_per_stage * c.layer_params() + c.vocab * c.hidden


def expected_terms(ops: pl.DataFrame, config: ModelConfig) -> dict[str, float]:
    """The step's terms (STEP_TERMS, µs) and their sum "step", from `expected_ops`; and the
    executed matrix FLOPs per step ("matrix_flop", recomputation included: what the trace
    records)."""
    computing = ops.filter(pl.col("family") != "communication")
    by_op = dict(ops.group_by("op").agg(pl.col("step_us").sum()).iter_rows())
    layers = computing.filter(pl.col("family") != "optimizer")
    terms = {
        "compute": float(layers.filter(pl.col("bound") == "compute")["step_us"].sum()),
        "memory": float(layers.filter(pl.col("bound") == "memory")["step_us"].sum()),
        "optimizer": by_op.get("optimizer", 0.0),
        "tp_comm": by_op.get("tp_all_reduce", 0.0),
        "pp_comm": by_op.get("pp_send_recv", 0.0),
        "dp_comm": by_op.get("dp_all_reduce", 0.0),
    }
    per_micro_batch = (terms["compute"] + terms["memory"] + terms["tp_comm"]) / config.micro_batches
    terms["bubble"] = (config.pp - 1) * per_micro_batch
    terms["step"] = sum(terms.values())
    matrix = ops.filter(pl.col("family").is_in(["gemm", "attention"]))
    terms["matrix_flop"] = float((matrix["flop"] * matrix["runs_per_step"]).sum())
    return terms


def measured_terms(
    iterations: pl.DataFrame,
    facts: pl.DataFrame,
    calls: pl.DataFrame,
    limits: pl.DataFrame,
    model_limits: dict | None = None,
    dtype: str | None = None,
) -> dict[str, float | int | None]:
    """The measured counterparts, on the busiest rank (the largest mean device-computing time per
    iteration, ties to the highest rank: the last pipeline stage, which the model describes),
    means over its steps (µs): step = iteration_us, busy = iteration_computing_us, comm =
    iteration_exposed_comm_us, or in a pipeline (the facts give bubble_ms) the exposed
    communication without its P2P receives (exposed_comm_excl_p2p_ms × 1000: those waits are the
    bubble), bubble = the facts' bubble_ms × 1000 (null without a pipeline); matrix_flop = the
    traced FLOPs of its GEMM, attention and convolution calls per step (null without recorded
    shapes);
    matrix_roofline_frac = Σ max(flop / peak, bytes / bandwidth) / Σ device time over those calls
    (1.0: at their roofline), against the rank's device table entry (`limits`: device_limits),
    else, for calls of `dtype`, the model's `model_limits` (a device the profile does not name);
    rank."""
    lived = iterations.filter(pl.col("iteration_us") > 0)
    if lived.is_empty():
        return {}
    means = (
        lived.group_by("rank")
        .agg(
            pl.col("iteration_us").mean().alias("step"),
            pl.col("iteration_computing_us").mean().alias("busy"),
            pl.col("iteration_exposed_comm_us").fill_null(0).mean().alias("comm"),
            pl.len().alias("steps"),
        )
        .sort(["busy", "rank"], descending=[True, True], nulls_last=True)
    )
    row = means.row(0, named=True)
    rank = row["rank"]
    out: dict[str, float | int | None] = {"rank": rank, "step": row["step"], "busy": row["busy"], "comm": row["comm"]}
    out["bubble"] = None
    if "bubble_ms" in facts.columns and "rank" in facts.columns:
        mine = facts.filter(pl.col("rank") == rank)
        bubble = mine["bubble_ms"].drop_nulls()
        if bubble.len():
            out["bubble"] = float(bubble.mean()) * 1000
            without_p2p = mine["exposed_comm_excl_p2p_ms"].drop_nulls()
            if without_p2p.len():
                out["comm"] = float(without_p2p.mean()) * 1000
    matrix = calls.filter(
        (pl.col("rank") == rank) & pl.col("family").is_in(MATRIX_FAMILIES) & pl.col("step").is_not_null()
    )
    steps = lived.filter(pl.col("rank") == rank)["step"].unique()
    in_steps = matrix.filter(pl.col("step").is_in(steps.implode()))
    out["matrix_flop"] = float(in_steps["flop"].sum()) / row["steps"] if in_steps.height else None
    in_steps = in_steps.filter(~pl.col("nested"))  # device time: a nested call's is its parent's
    peaks = limits.filter(pl.col("rank") == rank).drop_nulls("dtype").select("dtype", "matrix_tflops", "memory_tbps")
    if peaks.is_empty() and model_limits is not None and dtype is not None:
        peaks = pl.DataFrame(
            {
                "dtype": [dtype],
                "matrix_tflops": [model_limits["peak_tflops"]],
                "memory_tbps": [model_limits["memory_tbps"]],
            }
        )
    known = in_steps.join(peaks, on="dtype", how="inner").drop_nulls(["flop", "bytes", "matrix_tflops", "memory_tbps"])
    if known.height and known["device_ns"].sum() > 0:
        roof = pl.max_horizontal(
            pl.col("flop") / (pl.col("matrix_tflops") * 1e3), pl.col("bytes") / (pl.col("memory_tbps") * 1e3)
        )  # ns
        out["matrix_roofline_frac"] = float(known.select(roof.sum()).item()) / float(known["device_ns"].sum())
    else:
        out["matrix_roofline_frac"] = None
    return out


def expected_vs_measured(expected: dict[str, float], measured: dict) -> pl.DataFrame:
    """The expected terms beside the measured ones (TERMS_SCHEMA; difference = measured −
    expected; rank = the rank measured): each step term, then busy (compute + memory + optimizer, against the measured
    device-computing time), comm (tp + pp + dp, against the exposed communication), step,
    matrix_flop (executed GEMM and attention FLOPs per step against the traced ones: far apart,
    the configuration does not describe this run) and matrix_roofline_frac (the model assumes 1)."""
    rows = [(term, "us", expected[term], None, definition) for term, definition in STEP_TERMS.items()]
    rows[-1] = ("bubble", "us", expected["bubble"], measured.get("bubble"), STEP_TERMS["bubble"])
    busy = expected["compute"] + expected["memory"] + expected["optimizer"]
    comm = expected["tp_comm"] + expected["pp_comm"] + expected["dp_comm"]
    rows += [
        ("busy", "us", busy, measured.get("busy"), "device computing: compute + memory + optimizer"),
        ("comm", "us", comm, measured.get("comm"), "communication not hidden: tp + pp + dp (the model hides none)"),
        ("step", "us", expected["step"], measured.get("step"), "the step: the sum of the terms above"),
        (
            "matrix_flop",
            "flop",
            expected["matrix_flop"],
            measured.get("matrix_flop"),
            "GEMM and attention FLOPs run per step (recomputation included), traced from recorded shapes",
        ),
        (
            "matrix_roofline_frac",
            "frac",
            1.0,
            measured.get("matrix_roofline_frac"),
            "matrix work's roofline time / its device time (the model assumes its roofline)",
        ),
    ]
    rank = measured.get("rank")
    frame = pl.DataFrame([(t, rank, u, e, m, None, d) for t, u, e, m, d in rows], schema=TERMS_SCHEMA, orient="row")
    return frame.with_columns((pl.col("measured") - pl.col("expected")).alias("difference"))


def verdict(terms: pl.DataFrame) -> str:
    """One sentence: the expected and measured step, and what accounts for the difference (matrix
    work's share of its roofline, the exposed communication beyond the model's)."""
    value = {r["term"]: r for r in terms.iter_rows(named=True)}
    step = value["step"]
    head = f"expected {step['expected'] / 1e3:,.1f} ms per step"
    if step["measured"] is None:
        return head + " (no measured step to compare)"
    parts = []
    frac = value["matrix_roofline_frac"]["measured"]
    if frac is not None:
        parts.append(f"GEMMs and attention at {frac:.0%} of their roofline")
    comm = value["comm"]
    if comm["measured"] is not None and (comm["measured"] or comm["expected"]):
        more = comm["difference"] / 1e3
        if abs(more) < 0.05:
            parts.append("exposed communication within 0.05 ms of the model's")
        else:
            parts.append(f"{abs(more):,.1f} ms {'more' if more > 0 else 'less'} exposed communication than the model")
    bubble = value["bubble"]
    if bubble["measured"] is not None:
        parts.append(
            f"a pipeline bubble of {bubble['measured'] / 1e3:,.1f} ms against the model's {bubble['expected'] / 1e3:,.1f} ms"
        )
    flop = value["matrix_flop"]
    if flop["measured"]:
        ratio = flop["measured"] / flop["expected"] if flop["expected"] else None
        if ratio is not None and not 0.9 <= ratio <= 1.1:
            parts.append(f"the trace runs {ratio:.2f}x the model's matrix FLOPs: check the configuration")
    tail = (": " + ", ".join(parts)) if parts else ""
    return f"{head}, measured {step['measured'] / 1e3:,.1f} ms on rank {step['rank']}{tail}"
