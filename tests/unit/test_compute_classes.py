"""Compute classes (traceview.analysis.classes): one hand-made task per rule family, the launching
operator (innermost cpu_op at the launch call) against a slow reference, user rule files and their
errors, the summaries, and on real data: under 5 % unclassified device time on every Kineto GPU
trace and every Ascend rank of ../shared/traces/INDEX.md, and none on the shipped samples.

This file holds the topic's unit tests; the others are in tests/integration/test_compute_classes.py, tests/corpus/test_compute_classes.py.
"""

from __future__ import annotations

import polars as pl
import pytest

from tests.conftest import SAMPLES
from tests.support.compute_classes_shared import RULES, _agrees_with_external_ids, _host, _kernels, _load  # noqa: F401
from traceview import ruleset, schema
from traceview.analysis import classes as cc
from traceview.errors import TraceError

EXPECTED_GROUP = {
    "gemm": "tensor_contraction",
    "attention": "tensor_contraction",
    "convolution": "tensor_contraction",
    "normalization": "normalization",
    "softmax": "normalization",
    "elementwise": "elementwise",
    "reduction": "elementwise",
    "optimizer": "elementwise",
    "embedding": "elementwise",
    "communication": "communication",
    "memcpy": "memory",
    "memset": "memory",
    "other": "other",
}


def _frames(tasks: list[dict]) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Canonical device_tasks / host_events for hand-made tasks.

    Each task dict: name, and optionally kind (default kernel), launch (operator name: the task is
    launched from inside it), op_type, core_type, cube / vector (unit busy times, ns), rank.
    Task i runs at [i*1000, i*1000+100); its operator at [i*1000, i*1000+500) on thread 1; the
    launch call (cudaLaunchKernel, correlation i+1) at i*1000+10.
    """
    dev, host = [], []
    for i, t in enumerate(tasks):
        corr = i + 1
        dev.append(
            {
                "rank": t.get("rank", 0),
                "device": 0,
                "stream": 7,
                "name": t["name"],
                "kind": t.get("kind", "kernel"),
                "start_ns": i * 1000,
                "end_ns": i * 1000 + 100,
                "dur_ns": 100,
                "correlation": corr if t.get("launch") else None,
                "op_type": t.get("op_type"),
                "core_type": t.get("core_type"),
                "aic_mac_ns": t.get("cube"),
                "aiv_vec_ns": t.get("vector"),
            }
        )
        if t.get("launch"):
            host.append(
                {
                    "rank": t.get("rank", 0),
                    "pid": 1,
                    "tid": 1,
                    "name": t["launch"],
                    "cat": "cpu_op",
                    "kind": "operator",
                    "start_ns": i * 1000,
                    "end_ns": i * 1000 + 500,
                    "dur_ns": 500,
                }
            )
            host.append(
                {
                    "rank": t.get("rank", 0),
                    "pid": 1,
                    "tid": 1,
                    "name": "cudaLaunchKernel",
                    "cat": "cuda_runtime",
                    "kind": "runtime",
                    "start_ns": i * 1000 + 10,
                    "end_ns": i * 1000 + 20,
                    "dur_ns": 10,
                    "correlation": corr,
                }
            )
    dev_df = schema.conform(pl.DataFrame(dev, infer_schema_length=None), "device_tasks")
    host_df = (
        schema.conform(pl.DataFrame(host, infer_schema_length=None), "host_events")
        if host
        else schema.empty("host_events")
    )
    return dev_df, host_df


def _classes(tasks: list[dict], rules: cc.Rules = RULES) -> list[str]:
    dev, host = _frames(tasks)
    return cc.classify(dev, host, rules)["compute_class"].to_list()


# name, extra fields, expected class
CASES = [
    # GEMM: cuBLAS, cuBLASLt, CUTLASS, AMD Tensile/hipBLASLt, Triton, helpers of a matmul op
    (
        "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas",
        {},
        "gemm",
    ),
    ("ampere_sgemm_128x64_nn", {}, "gemm"),
    ("volta_sgemm_128x32_nt", {}, "gemm"),
    ("Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT256x192x64_MI16x16x1_SN_LDSB1_AFC1_AFEM1", {}, "gemm"),
    ("Cijk_Ailk_Bljk_SB_MT64x64x8_SN_1LDSB0_APM1_ABV0_ACED0_AF0EM1_AF1EM1_AMAS3", {}, "gemm"),
    ("nvjet_tst_192x8_64x8_4x1_v_bz_TNT", {}, "gemm"),
    (
        "void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_64x6_tn_align8>(cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_64x6_tn_align8::Params)",
        {},
        "gemm",
    ),
    (
        "void gemmSN_TN_kernel<float, 128, 16, 2, 4, 8, 9, false, cublasGemvTensorStridedBatched<float const> >(cublasGemmSmallNParams<float>)",
        {},
        "gemm",
    ),
    ("triton_tem_fused_mm_0", {}, "gemm"),
    ("triton_tem_fused_addmm_relu_3", {}, "gemm"),
    ("triton_mm", {}, "gemm"),
    ("_matmul_ogs_NNT_bf16xbf16xmxfp4_128x128x128x1_swiglu", {}, "gemm"),
    (
        "void splitKreduce_kernel<32, 16, int, float, float, float, float, true, true, false>(cublasSplitKParams<float>)",
        {"launch": "aten::addmm"},
        "gemm",
    ),
    ("kernel_42", {"launch": "aten::mm"}, "gemm"),
    # fbgemm is not GEMM: its quantisation kernels are elementwise
    (
        "void at::native::vectorized_elementwise_kernel<4, fbgemm_gpu::_float_to_hfp8_gpu(at::Tensor const&)::{lambda(float)#1}>",
        {"launch": "fbgemm::FloatToHFP8Quantized"},
        "elementwise",
    ),
    (
        "void fbgemm_gpu::(anonymous namespace)::_get_FP8_qparam_cuda_kernel<float>(float const*, int, int)",
        {"launch": "fbgemm::FloatToFP8RowwiseQuantized"},
        "elementwise",
    ),
    # attention
    (
        "void pytorch_flash::flash_fwd_kernel<pytorch_flash::Flash_fwd_kernel_traits<64, 128, 128, 4, false, false, cutlass::bfloat16_t> >(pytorch_flash::Flash_fwd_params)",
        {},
        "attention",
    ),
    (
        "void flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<Flash_bwd_kernel_traits<128, 64, 128, 8> >(Flash_bwd_params)",
        {},
        "attention",
    ),
    (
        "fmha_cutlassF_f32_aligned_64x64_rf_sm80(PyTorchMemEffAttention::AttentionKernel<float, cutlass::arch::Sm80, true, 64, 64, 64>::Params)",
        {},
        "attention",
    ),
    ("attn_fwd", {}, "attention"),
    ("void paged_attention_ll4mi_QKV_mfma16_kernel<0, __hip_bfloat16, __hip_bfloat16>", {}, "attention"),
    (
        "_ZN7ck_tile6kentryILi2ENS_38FmhaBatchPrefillWithPagedKVCacheKernelINS_40BlockFmhaBatchPrefillPipelineQRKSVSAsync",
        {},
        "attention",
    ),
    ("kernel_7", {"launch": "aten::scaled_dot_product_attention"}, "attention"),
    ("cutlass_generic_kernel", {"launch": "aten::_efficient_attention_forward"}, "attention"),
    ("triton_tem_fused_flex_attention_0", {}, "attention"),
    ("FlashAttentionScore", {"op_type": "FlashAttentionScore", "core_type": "MIX_AIC", "cube": 10}, "attention"),
    (
        "aclnnFlashAttentionScoreGrad_FlashAttentionScoreGrad_FlashAttentionScoreGrad",
        {"op_type": "FlashAttentionScoreGrad", "core_type": "MIX_AIC"},
        "attention",
    ),
    # convolution (cuDNN's GEMM-named conv kernels included)
    (
        "void implicit_convolve_sgemm<float, float, 1024, 6, 7, 3, 3, 5, 1, false, true, true>(int, int, int, float const*)",
        {},
        "convolution",
    ),
    ("void explicit_convolve_sgemm<float, int, 1024, 5, 5, 3, 3, 3, 0, false>(int, int, int)", {}, "convolution"),
    ("cudnn_ampere_scudnn_128x64_relu_xregs_large_nn_v1", {}, "convolution"),
    ("sm80_xmma_fprop_implicit_gemm_indexed_tf32f32_tf32f32_f32_nhwckrsc_nchw_tilesize128x128x16", {}, "convolution"),
    (
        "void cutlass_cudnn_infer::Kernel<cutlass_tensorop_s1688dgrad_optimized_tf32_128x128_16x4_nhwc_unity_stride_align4>",
        {},
        "convolution",
    ),
    ("igemm_fwd_gtcx2_nhwc_bf16_bx0_ex1_bt64x64x16_wt16x16x4", {}, "convolution"),
    ("volta_sgemm_64x64_nt", {"launch": "aten::convolution_backward"}, "convolution"),
    (
        "void cudnn::ops::nchwToNhwcKernel<float, float, float, false, true, (cudnnKernelDataType_t)2>(cudnn::ops::nchw2nhwc_params_t<float>)",
        {"launch": "aten::cudnn_convolution"},
        "convolution",
    ),
    ("batched_transpose_32x32_half", {"launch": "aten::miopen_convolution"}, "convolution"),
    ("Conv2D1", {"op_type": "Conv2D", "core_type": "AI_CORE", "cube": 1000}, "convolution"),
    ("Conv2DBackpropFilter6", {"op_type": "Conv2DBackpropFilter", "core_type": "AI_CORE"}, "convolution"),
    # normalization
    (
        "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::BFloat16, float>(int, float, c10::BFloat16 const*)",
        {},
        "normalization",
    ),
    (
        "void at::native::batch_norm_collect_statistics_kernel<at::native::Var, float, float, float, int>",
        {},
        "normalization",
    ),
    (
        "void cudnn::bn_fw_tr_1C11_kernel_NCHW<float, float, int, 512, true, 1, true>(cudnnTensorStruct, float const*)",
        {},
        "normalization",
    ),
    (
        "void vllm::rms_norm_kernel<c10::BFloat16, 8, 2>(c10::BFloat16*, c10::BFloat16 const*, long)",
        {},
        "normalization",
    ),
    ("MIOpenBatchNormFwdTrainSpatial", {}, "normalization"),
    ("triton_red_fused_add_native_layer_norm_0", {}, "normalization"),
    (
        "void at::native::elementwise_kernel_manual_unroll<128, 4, at::native::gpu_kernel_impl_nocast<at::native::AddFunctor<float> > >",
        {"launch": "aten::native_group_norm_backward"},
        "normalization",
    ),
    ("LayerNorm90", {"op_type": "LayerNormV3", "core_type": "AI_VECTOR_CORE", "vector": 10}, "normalization"),
    ("aclnnRmsNorm_RmsNorm_RmsNorm", {"op_type": "RmsNorm", "core_type": "AI_VECTOR_CORE"}, "normalization"),
    # softmax
    (
        "void at::native::(anonymous namespace)::cunn_SoftMaxForward<8, float, float, float, at::native::(anonymous namespace)::SoftMaxForwardEpilogue>",
        {},
        "softmax",
    ),
    (
        "void (anonymous namespace)::softmax_warp_forward<float, float, float, 9, false, false>(float*, float const*, int, int, int)",
        {},
        "softmax",
    ),
    ("triton_per_fused__softmax_0", {}, "softmax"),
    ("ScaledMaskedSoftmax98", {"op_type": "ScaledMaskedSoftmax", "core_type": "AI_VECTOR_CORE"}, "softmax"),
    ("SoftmaxV2_1", {"op_type": "SoftmaxV2", "core_type": "AI_VECTOR_CORE"}, "softmax"),
    # elementwise
    (
        "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul>)",
        {},
        "elementwise",
    ),
    (
        "void at::native::unrolled_elementwise_kernel<at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}>",
        {},
        "elementwise",
    ),
    ("triton_poi_fused_add_mul_0", {}, "elementwise"),
    ("triton_poi_fused__scaled_dot_product_flash_attention_cat_transpose_view_10", {}, "elementwise"),
    (
        "void vllm::rotary_embedding_kernel<c10::BFloat16, true>(long const*, c10::BFloat16*)",
        {"launch": "_C::rotary_embedding"},
        "elementwise",
    ),
    (
        "void vllm::reshape_and_cache_flash_kernel<__nv_bfloat16, unsigned char, (vllm::Fp8KVCacheDataType)1>",
        {},
        "elementwise",
    ),
    ("SubTensorOpWithScalar1d", {}, "elementwise"),
    ("aclnnAdd_AddAiCore_Add", {"op_type": "Add", "core_type": "AI_VECTOR_CORE", "vector": 5}, "elementwise"),
    ("Mul81", {"op_type": "Mul", "core_type": "AI_VECTOR_CORE"}, "elementwise"),
    ("aclnnMuls_MulAiCore_Mul", {}, "elementwise"),  # Level0 Ascend: no Type, the name tells
    ("trans_TransData_12", {}, "elementwise"),
    ("GatherV282", {"op_type": "GatherV2", "core_type": "AI_VECTOR_CORE"}, "elementwise"),
    # reduction
    (
        "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::MeanOps<float, float, float, float>, unsigned int, float, 4> >",
        {},
        "reduction",
    ),
    ("triton_red_fused_sum_0", {}, "reduction"),
    ("triton_per_fused_mean_1", {}, "reduction"),
    ("void cub::DeviceRadixSortOnesweepKernel<cub::DeviceRadixSortPolicy<long, int, int>::Policy800>", {}, "reduction"),
    ("void at::native::(anonymous namespace)::max_pool_forward_nchw<float, float>(int, float const*)", {}, "reduction"),
    ("kernel_3", {"launch": "aten::sum"}, "reduction"),
    ("aclnnReduceSum_ReduceSumOpAiCore_ReduceSum", {"op_type": "ReduceSum", "core_type": "MIX_AIV"}, "reduction"),
    ("ArgMaxWithValue112", {"op_type": "ArgMaxWithValue", "core_type": "AI_VECTOR_CORE"}, "reduction"),
    # optimizer
    (
        "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous namespace)::TensorListMetadata<4>, at::native::(anonymous namespace)::FusedAdamMathFunctor<float, 4> >",
        {"launch": "aten::_fused_adamw_"},
        "optimizer",
    ),
    (
        "void at::native::vectorized_elementwise_kernel<4, at::native::AddFunctor<float> >",
        {"launch": "aten::_foreach_add_"},
        "optimizer",
    ),
    (
        "aclnnForeachAddListV2_ForeachAddListV2_ForeachAddList",
        {"op_type": "ForeachAddList", "core_type": "AI_VECTOR_CORE"},
        "optimizer",
    ),
    ("ApplyAdamW175", {"op_type": "ApplyAdamW", "core_type": "AI_VECTOR_CORE"}, "optimizer"),
    # embedding
    ("void at::native::(anonymous namespace)::embedding_backward_feature_kernel<float, float, long>", {}, "embedding"),
    (
        "void at::native::(anonymous namespace)::indexSelectLargeIndex<float, long, unsigned int, 2, 2, -2, true>",
        {"launch": "aten::embedding"},
        "embedding",
    ),
    (
        "void split_embedding_codegen_forward_unweighted_kernel<float, float, float, false, long, 1ul, 8ul>",
        {},
        "embedding",
    ),
    ("aclnnEmbedding_GatherV2_GatherV2", {"op_type": "GatherV2", "core_type": "AI_VECTOR_CORE"}, "embedding"),
    # task kinds the parsers know
    (
        "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
        {"kind": "communication"},
        "communication",
    ),
    ("hcom_allReduce__586_0_1", {"kind": "communication", "core_type": "HCCL"}, "communication"),
    ("Memcpy HtoD (Pinned -> Device)", {"kind": "memcpy"}, "memcpy"),
    ("Memset (Device)", {"kind": "memset"}, "memset"),
    ("NonZero_MemSet", {"op_type": "0", "core_type": "AI_VECTOR_CORE"}, "memset"),
    # Ascend fallbacks by unit, and what stays unclassified
    ("SomeNewFusedOp1", {"op_type": "SomeNewFusedOp", "core_type": "MIX_AIC", "cube": 500, "vector": 20}, "gemm"),
    ("SomeNewVectorOp1", {"op_type": "SomeNewVectorOp", "core_type": "AI_VECTOR_CORE", "vector": 20}, "elementwise"),
    ("SomeNewCubeLessOp1", {"op_type": "SomeNewCubeLessOp", "core_type": "AI_CORE", "cube": 0}, "other"),
    ("SomeCpuOp1", {"op_type": "SomeCpuOp", "core_type": "AI_CPU"}, "other"),
    ("my_custom_kernel", {}, "other"),
    ("at::cuda::(anonymous namespace)::spin_kernel(long)", {}, "other"),
]


@pytest.mark.parametrize(("name", "extra", "expected"), CASES, ids=[f"{c[2]}-{c[0][:40]}" for c in CASES])
def test_rule_families(name, extra, expected):
    assert _classes([{"name": name, **extra}]) == [expected]


def test_all_cases_in_one_frame_and_groups():
    """The same answers when all cases are classified together (rule evaluation per distinct key)."""
    tasks = [{"name": n, **extra} for n, extra, _ in CASES]
    dev, host = _frames(tasks)
    out = cc.classify(dev, host, RULES)
    assert out["compute_class"].to_list() == [c[2] for c in CASES]
    assert out["compute_group"].to_list() == [EXPECTED_GROUP[c] for c in out["compute_class"]]
    assert set(out["compute_class"]) == set(cc.CLASSES)  # the cases cover every class
    # every task keeps its row and order; the input is not modified
    assert out.height == dev.height and out["name"].to_list() == dev["name"].to_list()
    assert "compute_class" not in dev.columns
    assert set(out.columns) == set(dev.columns) | {"launch_op", "compute_class", "compute_group", "classified"}


def test_shipped_table_is_consistent():
    assert RULES.groups == EXPECTED_GROUP
    assert set(RULES.kinds) == {"communication", "memcpy", "memset"}
    assert all(r.cls in cc.CLASSES for r in RULES.rules) and len(RULES.rules) >= 30
    assert RULES.sources == (str(cc.RULES_FILE),)


def test_classify_twice_and_without_host_events():
    dev, host = _frames([{"name": "kernel_42", "launch": "aten::mm"}, {"name": "ampere_sgemm_128x64_nn"}])
    once = cc.classify(dev, host, RULES)
    again = cc.classify(once, host, RULES)
    assert again["compute_class"].to_list() == once["compute_class"].to_list() == ["gemm", "gemm"]
    assert again.columns == once.columns
    bare = cc.classify(dev, None, RULES)
    assert bare["launch_op"].to_list() == [None, None]
    assert bare["compute_class"].to_list() == ["other", "gemm"]
    empty = cc.classify(schema.empty("device_tasks"), schema.empty("host_events"), RULES)
    assert empty.height == 0 and {"launch_op", "compute_class", "compute_group"} <= set(empty.columns)


def test_launch_op_is_the_innermost_open_operator():
    ops = [
        (1, 0, 1000, "aten::linear"),
        (1, 100, 500, "aten::addmm"),
        (1, 100, 200, "aten::empty"),  # same start as addmm, shorter: innermost at t=100
        (1, 1000, 2000, "aten::relu"),  # starts where linear ends
        (1, 3000, 3000, "aten::zero_len"),  # zero length: never open
        (2, 0, 5000, "other_thread_op"),
    ]
    launches = [
        (1, 150, 1),  # inside linear > addmm > empty
        (1, 300, 2),  # inside linear > addmm (empty ended)
        (1, 600, 3),  # inside linear only (addmm ended): a plain as-of join would say addmm
        (1, 1000, 4),  # linear ends at 1000 (half-open), relu starts: relu
        (1, 2500, 5),  # no operator open on thread 1 (thread 2's op does not count)
        (1, 3000, 6),  # only the zero-length op "contains" it: none
        (2, 100, 7),  # thread 2
        (1, 100, 8),  # exactly at the start of addmm and empty
    ]
    out = cc.launch_ops(_kernels([1, 2, 3, 4, 5, 6, 7, 8, None, 99]), _host(ops, launches))
    assert out.to_list() == [
        "aten::empty",
        "aten::addmm",
        "aten::linear",
        "aten::relu",
        None,
        None,
        "other_thread_op",
        "aten::empty",
        None,  # no correlation
        None,  # no launch call with that correlation
    ]


def test_launch_op_ignores_external_ids_that_only_equal_the_correlation():
    """Older Kineto traces give a kernel External id = correlation id; the cpu_op with that External
    id is unrelated. The thread-and-time rule must still find the real operator."""
    ops = [(1, 0, 100, "aten::conv2d"), (1, 200, 300, "aten::unrelated")]
    host = _host(ops, [(1, 50, 1001)])  # correlation 1001 == external id of "aten::unrelated"
    assert cc.launch_ops(_kernels([1001]), host).to_list() == ["aten::conv2d"]


def test_launch_op_per_rank():
    """Ranks are separate processes: same pid/tid/correlation on two ranks link within each rank."""
    host = pl.concat(
        [
            _host([(1, 0, 100, "aten::mm")], [(1, 50, 7)]),
            _host([(1, 0, 100, "aten::conv2d")], [(1, 50, 7)]).with_columns(pl.lit(1, pl.Int64).alias("rank")),
        ]
    )
    kernels = pl.concat([_kernels([7]), _kernels([7]).with_columns(pl.lit(1, pl.Int64).alias("rank"))])
    assert cc.launch_ops(kernels, host).to_list() == ["aten::mm", "aten::conv2d"]


def test_user_rules_come_first(tmp_path):
    user = tmp_path / "my_rules.toml"
    user.write_text(
        '[[rules]]\nclass = "attention"\nname = \'^ampere_sgemm\'\nnote = "our attention uses sgemm"\n\n'
        "[[rules]]\nclass = \"optimizer\"\nlaunch_op = '^my_opt::'\n\n"
        "[[rules]]\nclass = \"elementwise\"\nname = 'Memcpy'\n",
        encoding="utf-8",
    )
    rules = ruleset.build(compute_classes=user).compute_classes
    assert rules.sources == (str(user), str(cc.RULES_FILE))
    assert len(rules.rules) == len(RULES.rules) + 3 and rules.rules[0].cls == "attention"
    got = _classes(
        [
            {"name": "ampere_sgemm_128x64_nn"},
            {"name": "volta_sgemm_128x32_nt"},
            {"name": "k", "launch": "my_opt::step"},
            {"name": "my_custom_kernel"},
            {"name": "Memcpy HtoD (Pinned -> Device)", "kind": "memcpy"},
        ],
        rules,
    )
    # the task kinds the parsers know are not re-classified by rules
    assert got == ["attention", "gemm", "optimizer", "other", "memcpy"]
    # the shipped rules alone are unchanged
    assert _classes([{"name": "ampere_sgemm_128x64_nn"}]) == ["gemm"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[[rules]]\nclass = \"gemm\"\nname = '(unclosed'\n", r"rule 1 \(class 'gemm'\): invalid regex for 'name'"),
        (
            "[[rules]]\nclass = \"gemm\"\nname = 'ok'\n\n[[rules]]\nclass = \"gemm\"\nlaunch_op = 'foo(?!bar)'\n",
            r"rule 2 \(class 'gemm'\): invalid regex for 'launch_op'.*Rust regex syntax",
        ),
        ("[[rules]]\nclass = \"matmul\"\nname = 'x'\n", r"rule 1 \(class 'matmul'\): unknown class 'matmul'"),
        ("[[rules]]\nname = 'x'\n", r"rule 1: unknown class None"),
        ('[[rules]]\nclass = "gemm"\nnote = "no condition"\n', r"rule 1 \(class 'gemm'\): no match condition"),
        ("[[rules]]\nclass = \"gemm\"\nnmae = 'x'\n", r"rule 1 \(class 'gemm'\): unknown key\(s\) nmae"),
        ("[[rules]]\nclass = \"gemm\"\nname = ''\n", r"'name' must be a non-empty regex string"),
        ('[[rules]]\nclass = "gemm"\ncube = "yes"\n', r"'cube' must be true or false"),
        ('[groups]\ngemm = "other"\n', r"unknown top-level key\(s\) groups"),
        ("rules = 3\n", r"no \[\[rules\]\] tables found"),
        ("# nothing\n", r"no \[\[rule\]\] tables found"),
        ("[[rules]\nclass = 'gemm'\n", r"cannot read rules file .*invalid TOML"),
    ],
)
def test_invalid_rule_files_name_the_file_and_rule(tmp_path, text, message):
    path = tmp_path / "bad_rules.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(TraceError, match=message) as info:
        ruleset.build(compute_classes=path)
    assert str(path) in str(info.value)
    assert "\n" not in str(info.value)


def test_missing_rule_file(tmp_path):
    with pytest.raises(TraceError, match=r"cannot read rules file .*nope\.toml: no such file"):
        ruleset.build(compute_classes=tmp_path / "nope.toml")


def _classified_by_hand() -> pl.DataFrame:
    rows = [
        # rank 0: gemm 600 (2 tasks), elementwise 300, other 100 -> total 1000
        (0, "ampere_sgemm_128x64_nn", "gemm", 400),
        (0, "ampere_sgemm_128x64_nn", "gemm", 200),
        (0, "vec_add", "elementwise", 300),
        (0, "mystery", "other", 100),
        # rank 1: communication 1500, memcpy 500
        (1, "ncclDevKernel_AllReduce", "communication", 1500),
        (1, "Memcpy HtoD", "memcpy", 500),
    ]
    return pl.DataFrame(
        {
            "rank": [r[0] for r in rows],
            "name": [r[1] for r in rows],
            "compute_class": [r[2] for r in rows],
            "compute_group": [EXPECTED_GROUP[r[2]] for r in rows],
            "dur_ns": [r[3] * 1000 for r in rows],
            "classified": [r[2] != "other" for r in rows],
        },
        schema_overrides={"rank": pl.Int64, "dur_ns": pl.Int64},
    )


def test_class_summary():
    s = cc.class_summary(_classified_by_hand())
    assert s.columns == ["rank", "class", "group", "time_us", "share", "count"]
    assert s.rows() == [
        (0, "gemm", "tensor_contraction", 600.0, 0.6, 2),
        (0, "elementwise", "elementwise", 300.0, 0.3, 1),
        (0, "other", "other", 100.0, 0.1, 1),
        (1, "communication", "communication", 1500.0, 0.75, 1),
        (1, "memcpy", "memory", 500.0, 0.25, 1),
    ]
    whole = cc.class_summary(_classified_by_hand(), by=())
    assert whole["time_us"].sum() == pytest.approx(3000.0) and whole["share"].sum() == pytest.approx(1.0)
    assert whole.row(0) == ("communication", "communication", 1500.0, 0.5, 1)


def test_top_kernels():
    t = cc.top_kernels(_classified_by_hand(), n=2)
    assert t.columns == ["rank", "name", "class", "count", "total_us", "mean_us", "share"]
    assert t.rows() == [
        (0, "ampere_sgemm_128x64_nn", "gemm", 2, 600.0, 300.0, 0.6),
        (0, "vec_add", "elementwise", 1, 300.0, 300.0, 0.3),
        (1, "ncclDevKernel_AllReduce", "communication", 1, 1500.0, 1500.0, 0.75),
        (1, "Memcpy HtoD", "memcpy", 1, 500.0, 500.0, 0.25),
    ]
    assert cc.top_kernels(_classified_by_hand(), n=1, by=())["name"].to_list() == ["ncclDevKernel_AllReduce"]


def test_unclassified_share():
    u = cc.unclassified_share(_classified_by_hand())
    assert u.rows() == [(0, 100.0, 1000.0, 0.1), (1, 0.0, 2000.0, 0.0)]
    # class "other" chosen by a rule (a sleep kernel) is classified, so not unclassified
    on_purpose = _classified_by_hand().with_columns(pl.lit(True).alias("classified"))
    assert cc.unclassified_share(on_purpose)["other_us"].to_list() == [0.0, 0.0]


def test_sleep_kernel_is_other_by_rule():
    dev, host = _frames([{"name": "at::cuda::(anonymous namespace)::spin_kernel(long)"}, {"name": "mystery_kernel"}])
    out = cc.classify(dev, host, RULES)
    assert out["compute_class"].to_list() == ["other", "other"]
    assert out["classified"].to_list() == [True, False]


@pytest.mark.parametrize("sample", ["dp4_nccl", "pp4_1f1b", "ascend_2rank"])
def test_samples_fully_classified(sample):
    trace = _load(SAMPLES / sample)
    out = cc.classify(trace.device_tasks, trace.host_events, RULES)
    u = cc.unclassified_share(out)
    assert u.height == trace.ranks.height and (u["other_us"] == 0).all()
    summary = cc.class_summary(out)
    assert {"gemm", "communication"} <= set(summary["class"])
    # shares per rank add up to 1 and times to the raw device time
    per_rank = summary.group_by("rank").agg(pl.col("share").sum(), pl.col("time_us").sum())
    assert per_rank["share"].to_list() == pytest.approx([1.0] * per_rank.height)
    assert per_rank["time_us"].sum() == pytest.approx(trace.device_tasks["dur_ns"].sum() / 1000)
    if sample != "ascend_2rank":
        # every compute/memory task was launched from a recorded operator (the pipeline sample's
        # SendRecv runs under a `nccl:coalesced` annotation, no operator), and the step's families show
        assert out.filter(pl.col("kind") != "communication")["launch_op"].null_count() == 0
        assert {"attention", "normalization", "elementwise"} <= set(summary["class"])


def test_launch_op_agrees_with_external_ids_on_the_sample():
    """Where a kernel's External id names a cpu_op (recent Kineto), that op is the launching op."""
    trace = _load(SAMPLES / "dp4_nccl")
    _agrees_with_external_ids(trace)
