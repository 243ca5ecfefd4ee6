"""Kineto traces built operator by operator with recorded shapes, for the roofline, FLOP and
analytical-model tests: `OpTrace` (each op's kernels launched from inside it) and a transformer's
training step (`transformer_step`)."""

from __future__ import annotations

import json
from pathlib import Path

H100 = "NVIDIA H100 80GB HBM3"


class OpTrace:
    """A Kineto trace built op by op: each op's kernels are launched from inside it."""

    def __init__(self):
        self.events = []
        self.next_id = 1

    def op(self, name, ts, dur, dims, types, concrete, tid=1):
        ext = self.next_id
        self.next_id += 1
        args = {"External id": ext, "Input Dims": dims, "Input type": types, "Concrete Inputs": concrete}
        self.events.append(
            {"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": tid, "ts": ts, "dur": dur, "args": args}
        )
        return ext

    def kernel(self, ext, launch_ts, start, dur, stream=7, tid=1, name="k"):
        corr = 1000 + len(self.events)
        self.events.append(
            {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": tid, "ts": launch_ts,
             "dur": 0.5, "args": {"correlation": corr, "External id": ext}}
        )  # fmt: skip
        self.events.append(
            {"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": stream, "ts": start, "dur": dur,
             "args": {"correlation": corr, "External id": ext, "device": 0, "stream": stream}}
        )  # fmt: skip

    def write(self, path: Path) -> Path:
        doc = {"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": H100}], "traceEvents": self.events}
        path.write_text(json.dumps(doc))
        return path


BF16, F32 = "c10::BFloat16", "float"


def transformer_step(path: Path, layers=2, hidden=1024, ffn=4096, batch=4, seq=128, heads=8) -> tuple[Path, dict]:
    """One training step of a transformer whose every matmul is recorded with its shapes: per layer
    the QKV, output and two MLP projections forward (x @ W) and backward (dX = dY @ W^T, dW = X^T @ dY),
    and flash attention forward and backward. Kernels run 80 % of the step."""
    b = OpTrace()
    tokens = batch * seq
    weights = [(hidden, 3 * hidden), (hidden, hidden), (hidden, ffn), (ffn, hidden)]
    head_dim = hidden // heads
    qkv = [[batch, heads, seq, head_dim]] * 3
    ts, gpu = 1000.0, 1000.0

    def call(name, dims, concrete=None):
        nonlocal ts, gpu
        types = [BF16 if d else "Scalar" for d in dims]
        ext = b.op(name, ts, 8, dims, types, concrete or [""] * len(dims))
        b.kernel(ext, ts + 1, gpu, 8)
        ts += 10
        gpu += 10

    for _ in range(layers):
        for k_in, k_out in weights:
            call("aten::mm", [[tokens, k_in], [k_in, k_out]])
        call(
            "aten::_scaled_dot_product_flash_attention",
            qkv + [[], [], [], []],
            ["", "", "", "0.", "False", "False", ""],
        )
    for _ in range(layers):
        call(
            "aten::_scaled_dot_product_flash_attention_backward",
            [[batch, heads, seq, head_dim]] * 5 + [[]] * 10,
            [""] * 11 + ["False"] + [""] * 3,
        )
        for k_in, k_out in reversed(weights):
            call("aten::mm", [[tokens, k_out], [k_out, k_in]])  # dX
            call("aten::mm", [[k_in, tokens], [tokens, k_out]])  # dW
    b.events.insert(
        0,
        {
            "ph": "X",
            "cat": "user_annotation",
            "name": "ProfilerStep#1",
            "pid": 1,
            "tid": 1,
            "ts": 990,
            "dur": ts - 990 + 5,
        },
    )
    params = layers * sum(i * o for i, o in weights)
    attention = layers * 4 * batch * heads * seq * seq * head_dim * 3.5  # forward 4·B·H·s²·d, backward 2.5x
    return b.write(path), {"params": params, "tokens": tokens, "attention": attention, "step_us": ts - 990 + 5}
