"""The kernels the GPU samples run: CUDA runtime callback ids, H100 properties, kernel names, launch shapes and classes."""

from __future__ import annotations

# Kineto (torch.profiler) trace builder, shared by the GPU samples
CBID = {
    "cudaLaunchKernel": 211,
    "cudaLaunchKernelExC": 430,
    "cudaMemcpyAsync": 41,
    "cudaMemsetAsync": 51,
    "cudaStreamSynchronize": 131,
    "cudaDeviceSynchronize": 165,
    "cudaEventRecord": 135,
    "cudaStreamWaitEvent": 147,
}

H100_PROPS = {
    "name": "NVIDIA H100 80GB HBM3",
    "totalGlobalMem": 85017755648,
    "computeMajor": 9,
    "computeMinor": 0,
    "maxThreadsPerBlock": 1024,
    "maxThreadsPerMultiprocessor": 2048,
    "regsPerBlock": 65536,
    "warpSize": 32,
    "sharedMemPerBlock": 49152,
    "numSms": 132,
    "regsPerMultiprocessor": 65536,
    "sharedMemPerBlockOptin": 232448,
    "sharedMemPerMultiprocessor": 233472,
}
NUM_SMS = H100_PROPS["numSms"]

COMPUTE_STREAM = 7


_GEMM = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_{}_n_tilesize{}_warpgroupsize{}_execute_segment_k_off_kernel__5x_cublas"
_FLASH_BWD_TRAITS = (
    "Flash_bwd_kernel_traits<128, 64, 128, 8, 2, 4, 2, false, false, cutlass::bfloat16_t, "
    "Flash_kernel_traits<128, 64, 128, 8, cutlass::bfloat16_t> >"
)
_GELU = (
    "at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() "
    "const::{lambda()#4}::operator()() const::{lambda(c10::BFloat16)#1}"
)
_GELU_B = (
    "at::native::GeluBackwardCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::"
    "operator()() const::{lambda()#4}::operator()() const::{lambda(c10::BFloat16, c10::BFloat16)#1}"
)
_ADD = "at::native::CUDAFunctor_add<c10::BFloat16>"
_DIV = (
    "at::native::BinaryFunctor<c10::BFloat16, c10::BFloat16, c10::BFloat16, "
    "at::native::binary_internal::DivFunctor<c10::BFloat16> >"
)
_ADAMW = (
    "at::native::(anonymous namespace)::FusedOptimizerTensorListMetadata<4>, "
    "at::native::(anonymous namespace)::FusedAdamMathFunctor<float, 4, (at::native::ADAM_MODE)1, false>, "
    "float*, double, double, double, double, double, bool, float*, float*"
)
_LPNORM = (
    "at::native::(anonymous namespace)::TensorListMetadata<1>, at::native::(anonymous namespace)::"
    "LpNormFunctor<c10::BFloat16, (at::native::(anonymous namespace)::NormType)1, float, float>, float*, int"
)
_FMUL = (
    "at::native::(anonymous namespace)::TensorListMetadata<1>, at::native::(anonymous namespace)::"
    "BinaryOpScalarTensorFunctor<c10::BFloat16, 1, 1, 0>, std::multiplies<float>, float*"
)
_NORM2 = "at::native::ReduceOp<float, at::native::NormTwoOps<float, float, float>, unsigned int, float, 4, 4>"

# The kernels by key: the demangled name ...
_NAMES = {
    "gemm_tn_big": _GEMM.format("tn", "128x256x64", "2x1x1"),
    "gemm_tn": _GEMM.format("tn", "128x128x64", "1x1x1"),
    "gemm_nn": _GEMM.format("nn", "128x256x64", "2x1x1"),
    "gemm_nt": _GEMM.format("nt", "128x128x64", "1x1x1"),
    "flash_fwd": (
        "void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, "
        "cutlass::bfloat16_t, Flash_kernel_traits<128, 128, 64, 4, cutlass::bfloat16_t> >, false, true, "
        "false, false, true, true, false, false>(pytorch_flash::Flash_fwd_params)"
    ),
    "flash_bwd_dot": f"void pytorch_flash::flash_bwd_dot_do_o_kernel<true, {_FLASH_BWD_TRAITS} >(pytorch_flash::Flash_bwd_params)",
    "flash_bwd_dq": (
        f"void pytorch_flash::flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<{_FLASH_BWD_TRAITS}, "
        "true, true, false, false, false, true, false, false>(pytorch_flash::Flash_bwd_params)"
    ),
    "flash_bwd_cvt": f"void pytorch_flash::flash_bwd_convert_dq_kernel<{_FLASH_BWD_TRAITS} >(pytorch_flash::Flash_bwd_params, int)",
    "ln_fwd": (
        "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::BFloat16, float>(int, "
        "float, c10::BFloat16 const*, c10::BFloat16 const*, c10::BFloat16 const*, float*, float*, "
        "c10::BFloat16*)"
    ),
    "ln_bwd_in": (
        "void at::native::(anonymous namespace)::layer_norm_grad_input_kernel_vectorized<c10::BFloat16, "
        "float>(c10::BFloat16 const*, c10::BFloat16 const*, float const*, float const*, "
        "c10::BFloat16 const*, c10::BFloat16*, int)"
    ),
    "ln_bwd_gb": (
        "void at::native::(anonymous namespace)::GammaBetaBackwardCUDAKernel_32x32<c10::BFloat16, float>"
        "(long, long, c10::BFloat16 const*, c10::BFloat16 const*, float const*, float const*, "
        "c10::BFloat16*, c10::BFloat16*)"
    ),
    "add": (
        f"void at::native::vectorized_elementwise_kernel<4, {_ADD}, std::array<char*, 3ul> >(int, {_ADD}, "
        "std::array<char*, 3ul>)"
    ),
    "gelu_fwd": (
        f"void at::native::vectorized_elementwise_kernel<4, {_GELU}, std::array<char*, 2ul> >(int, "
        f"{_GELU}, std::array<char*, 2ul>)"
    ),
    "gelu_bwd": (
        f"void at::native::vectorized_elementwise_kernel<4, {_GELU_B}, std::array<char*, 3ul> >(int, "
        f"{_GELU_B}, std::array<char*, 3ul>)"
    ),
    "div": (
        f"void at::native::vectorized_elementwise_kernel<4, {_DIV}, std::array<char*, 3ul> >(int, {_DIV}, "
        "std::array<char*, 3ul>)"
    ),
    "softmax_fwd": (
        "void at::native::(anonymous namespace)::cunn_SoftMaxForward<8, c10::BFloat16, float, "
        "c10::BFloat16, at::native::(anonymous namespace)::LogSoftMaxForwardEpilogue>(c10::BFloat16*, "
        "c10::BFloat16 const*, int)"
    ),
    "softmax_bwd": (
        "void at::native::(anonymous namespace)::cunn_SoftMaxBackward<8, c10::BFloat16, float, "
        "c10::BFloat16, at::native::(anonymous namespace)::LogSoftMaxBackwardEpilogue>(c10::BFloat16*, "
        "c10::BFloat16 const*, c10::BFloat16 const*, long)"
    ),
    "nll_fwd": (
        "void at::native::(anonymous namespace)::nll_loss_forward_reduce_cuda_kernel_2d<c10::BFloat16, "
        "float, long>(c10::BFloat16*, c10::BFloat16*, c10::BFloat16 const*, long const*, "
        "c10::BFloat16 const*, bool, long, long, long, long)"
    ),
    "nll_bwd": (
        "void at::native::(anonymous namespace)::nll_loss_backward_reduce_cuda_kernel_2d<c10::BFloat16, "
        "long>(c10::BFloat16*, c10::BFloat16 const*, long const*, c10::BFloat16 const*, "
        "c10::BFloat16 const*, bool, int, int, long, long)"
    ),
    "emb_fwd": (
        "void at::native::(anonymous namespace)::indexSelectLargeIndex<c10::BFloat16, long, unsigned int, "
        "2, 2, -2, true>(at::cuda::detail::TensorInfo<c10::BFloat16, unsigned int>, "
        "at::cuda::detail::TensorInfo<c10::BFloat16 const, unsigned int>, "
        "at::cuda::detail::TensorInfo<long const, unsigned int>, int, int, unsigned int, unsigned int, "
        "long)"
    ),
    "emb_bwd": (
        "void at::native::(anonymous namespace)::embedding_backward_feature_kernel<c10::BFloat16, float, "
        "long>(long const*, c10::BFloat16 const*, c10::BFloat16*, int, long, int, int)"
    ),
    "lpnorm": f"void at::native::(anonymous namespace)::multi_tensor_apply_kernel<{_LPNORM}>({_LPNORM})",
    "norm_reduce": f"void at::native::reduce_kernel<512, 1, {_NORM2} >({_NORM2})",
    "foreach_mul": f"void at::native::(anonymous namespace)::multi_tensor_apply_kernel<{_FMUL}>({_FMUL})",
    "adamw": f"void at::native::(anonymous namespace)::multi_tensor_apply_kernel<{_ADAMW}>({_ADAMW})",
}
# ... and the launch: grid, block, registers a thread, shared memory (bytes), occupancy (%), compute class
_LAUNCH = {
    "gemm_tn_big": ([32, 48, 1], [384, 1, 1], 168, 213248, 9, "gemm"),
    "gemm_tn": ([32, 32, 1], [384, 1, 1], 168, 180224, 9, "gemm"),
    "gemm_nn": ([32, 48, 1], [384, 1, 1], 168, 213248, 9, "gemm"),
    "gemm_nt": ([96, 32, 1], [384, 1, 1], 168, 180224, 9, "gemm"),
    "flash_fwd": ([16, 64, 2], [128, 1, 1], 255, 49152, 6, "attention"),
    "flash_bwd_dot": ([32, 2, 32], [256, 1, 1], 40, 0, 50, "attention"),
    "flash_bwd_dq": ([32, 2, 32], [256, 1, 1], 255, 114688, 12, "attention"),
    "flash_bwd_cvt": ([32, 2, 32], [256, 1, 1], 64, 32768, 38, "attention"),
    "ln_fwd": ([4096, 1, 1], [128, 1, 1], 30, 0, 88, "normalization"),
    "ln_bwd_in": ([4096, 1, 1], [128, 1, 1], 40, 0, 79, "normalization"),
    "ln_bwd_gb": ([128, 1, 1], [32, 32, 1], 64, 8448, 47, "normalization"),
    "add": ([16384, 1, 1], [128, 1, 1], 28, 0, 91, "elementwise"),
    "gelu_fwd": ([65536, 1, 1], [128, 1, 1], 32, 0, 90, "elementwise"),
    "gelu_bwd": ([65536, 1, 1], [128, 1, 1], 32, 0, 89, "elementwise"),
    "div": ([524288, 1, 1], [128, 1, 1], 26, 0, 92, "elementwise"),
    "softmax_fwd": ([4096, 1, 1], [1024, 1, 1], 38, 64, 78, "softmax"),
    "softmax_bwd": ([4096, 1, 1], [1024, 1, 1], 40, 64, 77, "softmax"),
    "nll_fwd": ([1, 1, 1], [1024, 1, 1], 30, 8192, 2, "reduction"),
    "nll_bwd": ([1, 1, 1], [1024, 1, 1], 24, 0, 2, "elementwise"),
    "emb_fwd": ([8192, 1, 1], [128, 1, 1], 32, 0, 84, "embedding"),
    "emb_bwd": ([128, 1, 1], [32, 32, 1], 56, 12288, 44, "embedding"),
    "lpnorm": ([4736, 1, 1], [512, 1, 1], 38, 4096, 63, "optimizer"),
    "norm_reduce": ([1, 1, 1], [32, 16, 1], 32, 16, 3, "reduction"),
    "foreach_mul": ([4736, 1, 1], [512, 1, 1], 30, 0, 66, "optimizer"),
    "adamw": ([7296, 1, 1], [512, 1, 1], 72, 0, 49, "optimizer"),
}

KSPEC = {
    **{
        key: {"name": _NAMES[key], "grid": grid, "block": block, "regs": regs, "smem": smem, "occ": occ, "cls": cls}
        for key, (grid, block, regs, smem, occ, cls) in _LAUNCH.items()
    },
    "memset": {"name": "Memset (Device)", "cls": "memset"},
    "memcpy_h2d": {"name": "Memcpy HtoD (Pinned -> Device)", "cls": "memcpy"},
    "memcpy_d2h": {"name": "Memcpy DtoH (Device -> Pinned)", "cls": "memcpy"},
}

NCCL_ALLREDUCE = "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)"
NCCL_SENDRECV = "ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)"
