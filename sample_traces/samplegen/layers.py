"""Model building blocks (host op trees and their kernels), shared by dp4_nccl and pp4_1f1b."""

from __future__ import annotations

from .kineto_rank import shape_args


# Model building blocks (host op trees + kernels), shared by dp4 and pp4
# forward entries: (op path, kernel keys, autograd node or None, input dims of the outer op)
def layer_forward_spec(tokens, h):
    t3 = [2, tokens // 2, h]
    return [
        (["aten::layer_norm", "aten::native_layer_norm"], ["ln_fwd"], "NativeLayerNormBackward0", [t3, [h], [h]]),
        (["aten::linear", "aten::matmul", "aten::mm"], ["gemm_tn_big"], "MmBackward0", [t3, [3 * h, h]]),
        (
            [
                "aten::scaled_dot_product_attention",
                "aten::_scaled_dot_product_flash_attention",
                "aten::_flash_attention_forward",
            ],
            ["flash_fwd"],
            "ScaledDotProductFlashAttentionBackward0",
            [[2, 32, tokens // 2, h // 32]] * 3,
        ),
        (["aten::linear", "aten::matmul", "aten::mm"], ["gemm_tn"], "MmBackward0", [t3, [h, h]]),
        (["aten::add"], ["add"], "AddBackward0", [t3, t3, []]),
        (["aten::layer_norm", "aten::native_layer_norm"], ["ln_fwd"], "NativeLayerNormBackward0", [t3, [h], [h]]),
        (["aten::linear", "aten::matmul", "aten::mm"], ["gemm_tn_big"], "MmBackward0", [t3, [4 * h, h]]),
        (["aten::gelu"], ["gelu_fwd"], "GeluBackward0", [[2, tokens // 2, 4 * h], []]),
        (
            ["aten::linear", "aten::matmul", "aten::mm"],
            ["gemm_tn_big"],
            "MmBackward0",
            [[2, tokens // 2, 4 * h], [h, 4 * h]],
        ),
        (["aten::add"], ["add"], "AddBackward0", [t3, t3, []]),
    ]


BACKWARD_KERNELS = {
    "NativeLayerNormBackward0": (["aten::native_layer_norm_backward"], ["ln_bwd_in", "ln_bwd_gb"]),
    "MmBackward0": (["aten::mm"], ["gemm_nn", "gemm_nt"]),
    "ScaledDotProductFlashAttentionBackward0": (
        ["aten::_scaled_dot_product_flash_attention_backward", "aten::_flash_attention_backward"],
        ["flash_bwd_dot", "flash_bwd_dq", "flash_bwd_cvt"],
    ),
    "AddBackward0": ([], []),
    "GeluBackward0": (["aten::gelu_backward"], ["gelu_bwd"]),
    "EmbeddingBackward0": (["aten::embedding_backward", "aten::embedding_dense_backward"], ["memset", "emb_bwd"]),
    "LogSoftmaxBackward0": (["aten::_log_softmax_backward_data"], ["softmax_bwd"]),
    "NllLossBackward0": (["aten::nll_loss_backward"], ["memset", "nll_bwd"]),
}


def run_forward_entry(R, path, kernels, node, dims, dur_of, seq):
    """Host ops for one forward entry; returns (outer op event, node, seq) for the backward pass."""
    cms, outer = [], None
    for i, name in enumerate(path):
        cm = R.op(name, args=shape_args(dims) if i == 0 else None, seq=seq if i == 0 else None)
        ev = cm.__enter__()
        cms.append(cm)
        outer = outer or ev
        if name == "aten::linear":
            with R.op("aten::t"):
                with R.op("aten::transpose"):
                    pass
    for k in kernels:
        R.launch(k, dur_of(k))
    for cm in reversed(cms):
        cm.__exit__(None, None, None)
    return outer, node, seq


def run_backward_entry(R, fwd_ev, node, seq, dur_of):
    """autograd::engine::evaluate_function: <node> -> <node> -> aten ops with their kernels."""
    with R.op(f"autograd::engine::evaluate_function: {node}", bwd_seq=seq) as ev:
        R.fwdbwd(fwd_ev, ev)
        with R.op(node, bwd_seq=seq):
            path, kernels = BACKWARD_KERNELS[node]
            if node == "MmBackward0":
                for k in kernels:
                    with R.op("aten::t"):
                        pass
                    with R.op("aten::mm"):
                        R.launch(k, dur_of(k))
            elif path:
                cms = [R.op(n) for n in path]
                for cm in cms:
                    cm.__enter__()
                for k in kernels:
                    if k == "memset":
                        with R.op("aten::zero_"):
                            with R.op("aten::fill_"):
                                R.launch(k, dur_of(k), nbytes=262144)
                    else:
                        R.launch(k, dur_of(k))
                for cm in reversed(cms):
                    cm.__exit__(None, None, None)
    return ev
