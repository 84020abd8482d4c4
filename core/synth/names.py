"""Catalog for the synthetic trace generator: GPU profiles and per-GPU kernel names.

Names are modelled on the kernels real vLLM / SGLang / PyTorch traces show for each platform
(Tensile `Cijk_…`, hipBLASLt `wvSplitK`, ck_tile and aiter mangled names, triton unified attention
on ROCm; nvjet, sm90 xmma, FlashAttention-3, TRT-LLM fmha, flashinfer on NVIDIA). Every name has an
intended category, spelled the way `core/registry.toml` spells categories; the tests check that
the classifier agrees, so a change on either side shows up.

Roles are what a kernel does in the model (`gemm_qkv`, `attn_decode`, ...); a GPU profile maps each
role to one kernel name (GEMMs and attention per phase).
"""

from __future__ import annotations

from dataclasses import dataclass, field

# --- GPUs -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class GpuProfile:
    key: str
    vendor: str                  # "amd" | "nvidia"
    name: str                    # deviceProperties name
    mem: int
    major: int
    minor: int
    sms: int
    # relative kernel speed per role group (H100 = 1.0; >1 is slower)
    speed: dict[str, float] = field(default_factory=dict)


GPUS: dict[str, GpuProfile] = {
    "mi300x": GpuProfile("mi300x", "amd", "AMD Instinct MI300X", 206141652992, 9, 4, 304,
                         {"gemm": 1.15, "attn": 1.35, "light": 1.05, "comm": 1.3, "moe": 1.25, "sample": 1.1}),
    "mi355x": GpuProfile("mi355x", "amd", "AMD Instinct MI355X", 309237645312, 9, 5, 256,
                         {"gemm": 0.7, "attn": 0.85, "light": 0.9, "comm": 1.0, "moe": 0.75, "sample": 0.9}),
    "h100": GpuProfile("h100", "nvidia", "NVIDIA H100 80GB HBM3", 85018279936, 9, 0, 132,
                       {"gemm": 1.0, "attn": 1.0, "light": 1.0, "comm": 1.0, "moe": 1.0, "sample": 1.0}),
    "b200": GpuProfile("b200", "nvidia", "NVIDIA B200", 191503138816, 10, 0, 148,
                       {"gemm": 0.55, "attn": 0.6, "light": 0.8, "comm": 0.7, "moe": 0.55, "sample": 0.8}),
}
DEFAULT_GPU = {"amd": "mi300x", "nvidia": "h100"}
OTHER_GPU = {"mi300x": "mi355x", "mi355x": "mi300x", "h100": "b200", "b200": "h100"}

# --- role metadata ----------------------------------------------------------------------------

# role -> speed group (see GpuProfile.speed)
ROLE_GROUP = {
    "gemm_qkv": "gemm", "gemm_o": "gemm", "gemm_gate_up": "gemm", "gemm_down": "gemm",
    "gemm_router": "gemm", "gemm_lm_head": "gemm", "norm_gemm": "gemm",
    "attn_prefill": "attn", "attn_decode": "attn", "attn_decode_reduce": "attn",
    "allreduce": "comm",
    "moe_topk": "moe", "moe_sort": "moe", "moe_gemm1": "moe", "moe_gemm2": "moe",
    "moe_gemm_swiglu": "moe", "moe_finalize": "moe",
    "softmax": "sample", "argmax": "sample", "topk": "sample", "sort": "sample", "multinomial": "sample",
    "attn_bmm_qk": "attn", "attn_softmax": "attn", "attn_bmm_pv": "attn",
}

# Base durations in µs on an H100 (speed 1.0) for decode (batch 32) and prefill (~2k tokens) of a
# 8B-class model. Decode values are deliberately heavier than a pure model would give so that the
# GPU runs slower than the eager CPU launch loop: the queue grows and kernels execute during the
# next step's CPU window, as in real traces.
BASE_US: dict[str, tuple[float, float]] = {  # role: (decode, prefill)
    "embed": (4, 40), "norm": (6, 45), "add_norm": (7, 55), "add_norm_quant": (8, 60),
    "quant": (4, 30), "norm_gemm": (32, 420),
    "gemm_qkv": (30, 380), "rope": (4, 35), "kv_write": (5, 30),
    "attn_prefill": (0, 520), "attn_decode": (55, 0), "attn_decode_reduce": (6, 0),
    "gemm_o": (22, 260), "allreduce": (18, 140), "gemm_gate_up": (75, 900), "act": (7, 70),
    "gemm_down": (42, 460), "residual_add": (4, 35),
    "gemm_router": (6, 30), "moe_topk": (5, 20), "moe_sort": (6, 25), "moe_gemm1": (85, 950),
    "moe_gemm2": (50, 520), "moe_gemm_swiglu": (84, 930), "moe_finalize": (7, 45),
    "gemm_lm_head": (120, 140), "softmax": (12, 12), "argmax": (8, 8), "topk": (10, 10), "sort": (14, 14),
    # decomposed attention (HF "eager", GPT-2): Q.K^T batched GEMM, softmax, P.V batched GEMM
    "attn_bmm_qk": (14, 240), "attn_softmax": (6, 170), "attn_bmm_pv": (14, 250),
    "multinomial": (9, 9),
}

# --- fixed kernel names ---------------------------------------------------------------------------

_TENSILE_TAIL = ("_SN_LDSB1_AFC1_AFEM1_AFEM1_ASEM1_CLR1_CADS0_DTVA0_DTVB0_EPS0_FDSI0_GRPM1_GRVWA8_GRVWB8_"
                 "{gsu}_GLS0_ISA{isa}_IU1_K1_LBSPPA512_LBSPPB512_LBSPPM0_LPA16_LPB16_LPM0_LRVW8_LWPMn1_MIAV0_"
                 "MIWT1_1_MO40_NTn1_NTA0_NTB0_NTC0_NTD4_NTM0_NEPBS8_NLCA1_NLCB1_ONLL1_PGR2_PLR1_PKA1_SIA3_SS1_"
                 "SPO0_SRVW0_SSO0_SVW1_SK0_SKXCCM0_TLDS1_ULSGRO0_USL1_UIOFGRO0_USFGROn1_VSn1_VWA1_VWB1_WSGRA0_"
                 "WSGRB0_WS64_WG{wg}")


def tensile(mt: str, isa: str, wg: str = "32_8_1", gsu: str = "GSUAMB") -> str:
    """A Tensile (rocBLAS / hipBLASLt) bf16 GEMM kernel name."""
    return ("Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT" + mt + "_MI16x16x1"
            + _TENSILE_TAIL.format(gsu=gsu, isa=isa, wg=wg))


def _sm90_xmma(tile: str, wg: str) -> str:
    return (f"sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize{tile}_warpgroupsize{wg}"
            "_execute_segment_k_off_kernel__5x_cublas")


WV_SPLITK = ("void wvSplitK_hf_sml_<__hip_bfloat16, 64, 2, 16, 8, 2, 1>(int, int, __hip_bfloat16 const*, "
             "__hip_bfloat16 const*, __hip_bfloat16*, int, int)")

CK_RMSNORM = ("_ZN7ck_tile6kentryILi1ENS_12Rmsnorm2dFwdINS_27Rmsnorm2dFwdPipelineOnePassINS_27Rmsnorm2dFwdPipeline"
              "ProblemIDF16bDF16bfDF16bDF16bDF16bffNS_19Generic2dBlockShapeINS_8sequenceIJLi1ELi4096EEEENS5_IJLi1E"
              "Li128EEEENS5_IJLi1ELi8EEEEEENS_18Rmsnorm2dFwdTraitsILb1ELb0ELb0ELb0ELNS_21Rmsnorm2dFusedAddEnumE0E"
              "LNS_23Rmsnorm2dFusedQuantEnumE0ELNS_22Rmsnorm2dSensitiveEnumE0EEEEENS_33Rmsnorm2dFwdPipelineDefault"
              "PolicyEEENS_17Default2DEpilogueINS_24Default2DEpilogueProblemIfDF16bLb0ELb1ELb0EEEvEEEEJNSM_5Kargs"
              "EEEEvDpT1_")
VLLM_RMSNORM = ("void vllm::rms_norm_kernel<c10::BFloat16, 8, 2>(c10::BFloat16*, c10::BFloat16 const*, long, "
                "long, long, long, long, c10::BFloat16 const*, float, int, int)")
VLLM_ADD_RMSNORM = ("std::enable_if<(((8)>(0)))&&vllm::_typeConvert<c10::BFloat16>::exists, void>::type "
                    "vllm::fused_add_rms_norm_kernel<c10::BFloat16, 8>(c10::BFloat16*, long, c10::BFloat16*, "
                    "c10::BFloat16 const*, float, int, int)")
AITER_ADD_RMSNORM = "_ZN5aiter24add_rmsnorm_quant_kernelIDF16bDF16bLi256ELi16ELb0ELb0ELb1ELi1EEEvPT0_PT_PfS4_S4_S4_diiiiiiib"
AITER_ADD_RMSNORM_QUANT = "_ZN5aiter24add_rmsnorm_quant_kernelIDF16bDF16bLi256ELi16ELb1ELb0ELb1ELi1EEEvPT0_PT_PfS4_S4_S4_diiiiiiib"
NV_ADD_RMSNORM_QUANT = ("void vllm::fused_add_rms_norm_static_fp8_quant_kernel<c10::BFloat16, 8, c10::Float8_e4m3fn>"
                        "(c10::Float8_e4m3fn*, c10::BFloat16*, int, c10::BFloat16 const*, float const*, float, int, int)")
AMD_QUANT = ("void vllm::scaled_fp8_quant_kernel_strided<c10::BFloat16, c10::Float8_e4m3fnuz>(c10::Float8_e4m3fnuz*, "
             "c10::BFloat16 const*, float const*, int, long, long)")
NV_QUANT = ("void vllm::scaled_fp8_quant_kernel_strided<c10::BFloat16, c10::Float8_e4m3fn>(c10::Float8_e4m3fn*, "
            "c10::BFloat16 const*, float const*, int, long, long)")
AMD_NORM_GEMM = "_ZN5aiter32fused_rmsnorm_gemm_a16w16_kernelIDF16bLi256ELi64ELb1EEEvPT_PKS1_S4_S4_fiiii"
NV_NORM_GEMM = ("void tensorrt_llm::kernels::fusedRmsNormGemmKernel<__nv_bfloat16, 128, 64, 64, true>"
                "(tensorrt_llm::kernels::FusedRmsNormGemmParams<__nv_bfloat16>)")
ROTARY = ("void vllm::rotary_embedding_kernel<c10::BFloat16, true>(long const*, c10::BFloat16*, c10::BFloat16*, "
          "c10::BFloat16 const*, int, long, long, long, int, int, int)")
AMD_KV = ("void vllm::reshape_and_cache_flash_kernel<__hip_bfloat16, __hip_bfloat16, (vllm::Fp8KVCacheDataType)0>"
          "(__hip_bfloat16 const*, __hip_bfloat16 const*, __hip_bfloat16*, __hip_bfloat16*, long const*, long, long, "
          "long, long, long, int, int, int, float const*, float const*, int)")
NV_KV = ("void vllm::reshape_and_cache_flash_kernel<__nv_bfloat16, __nv_bfloat16, (vllm::Fp8KVCacheDataType)0>"
         "(__nv_bfloat16 const*, __nv_bfloat16 const*, __nv_bfloat16*, __nv_bfloat16*, long const*, long, long, long, "
         "long, long, int, int, int, float const*, float const*)")
ACT_AND_MUL = ("void vllm::act_and_mul_kernel<c10::BFloat16, &(c10::BFloat16 vllm::silu_kernel<c10::BFloat16>"
               "(c10::BFloat16 const&)), true>(c10::BFloat16*, c10::BFloat16 const*, int)")
SGL_ACT_AND_MUL = "_ZN7sgl_hip10activation18act_and_mul_kernelI14__hip_bfloat16TnPFT_RKS3_EXadL_Z4siluIS2_ES3_S5_EEEEvPS3_PS4_i"
RESIDUAL_ADD = ("void at::native::vectorized_elementwise_kernel<8, at::native::CUDAFunctor_add<c10::BFloat16>, "
                "std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<c10::BFloat16>, std::array<char*, 3ul>)")
EMBED = ("void at::native::(anonymous namespace)::indexSelectLargeIndex<c10::BFloat16, long, unsigned int, 2, 2, "
         "-2, true>(at::cuda::detail::TensorInfo<c10::BFloat16, unsigned int>, at::cuda::detail::TensorInfo"
         "<c10::BFloat16 const, unsigned int>, at::cuda::detail::TensorInfo<long const, unsigned int>, int, int, "
         "unsigned int, unsigned int, long)")
AMD_ALLREDUCE = ("void vllm::cross_device_reduce_1stage<__hip_bfloat16, 2>(vllm::RankData*, vllm::RankSignals, "
                 "vllm::Signal*, __hip_bfloat16*, int, int)")
NCCL_ALLREDUCE = "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)"
MULTIMEM_ALLREDUCE = ("void (anonymous namespace)::multimem_all_reduce_kernel<c10::BFloat16, 16>(c10::BFloat16*, "
                      "unsigned long, unsigned int**, unsigned long, unsigned long)")
SOFTMAX = ("void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float, float, "
           "at::native::(anonymous namespace)::SoftMaxForwardEpilogue>(float*, float const*, int)")
MULTINOMIAL = ("void at::native::(anonymous namespace)::sampleMultinomialOnce<float, float>(long*, long, int, "
               "float*, float*, int, int)")
ARGMAX = ("void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::ArgMaxOps<float>, "
          "unsigned int, long, 4, 4> >(at::native::ReduceOp<float, at::native::ArgMaxOps<float>, unsigned int, "
          "long, 4, 4>)")
TOPK = ("void at::native::sbtopk::gatherTopK<float, unsigned int, 2, false>(at::cuda::detail::TensorInfo<float "
        "const, unsigned int>, unsigned int, unsigned int, bool, unsigned int, unsigned int, "
        "at::cuda::detail::TensorInfo<float, unsigned int>, unsigned int, at::cuda::detail::TensorInfo<long, "
        "unsigned int>, unsigned int, float*)")
CUB_SORT = ("void cub::CUB_200700_900_NS::DeviceRadixSortOnesweepKernel<cub::CUB_200700_900_NS::"
            "DeviceRadixSortPolicy<float, long, int>::Policy900, true, float, long, int, int, "
            "cub::CUB_200700_900_NS::detail::identity_decomposer_t>(int*, int*, float*, float const*, long*, "
            "long const*, int, int, int, cub::CUB_200700_900_NS::detail::identity_decomposer_t)")
ROCPRIM_SORT = ("void rocprim::ROCPRIM_400200_NS::detail::onesweep_iteration_kernel<rocprim::ROCPRIM_400200_NS::"
                "detail::wrapped_radix_sort_onesweep_config<rocprim::ROCPRIM_400200_NS::default_config, float, "
                "long>, true, float*, float*, long*, long*, unsigned int, rocprim::ROCPRIM_400200_NS::"
                "identity_decomposer>(float*, float*, long*, long*, unsigned int*, unsigned int*, unsigned int, "
                "unsigned int, unsigned int, unsigned int, rocprim::ROCPRIM_400200_NS::identity_decomposer, bool, bool)")

# attention
UNIFIED_2D, UNIFIED_3D, REDUCE_SEGMENTS = "kernel_unified_attention_2d", "kernel_unified_attention_3d", "reduce_segments"
ATTN_FWD = "attn_fwd"
LL4MI = ("void paged_attention_ll4mi_QKV_mfma16_kernel<0, __hip_bfloat16, __hip_bfloat16, "
         "(vllm::Fp8KVCacheDataType)0, 1, 128, 256, false, 4, 1, ck_tile::ComposedAttention<0u, false> >"
         "(__hip_bfloat16 const*, __hip_bfloat16 const*, __hip_bfloat16 const*, float, int const*, int const*, "
         "int const*, float const*, int, int, int, int, float*, float*, __hip_bfloat16*, float, float, "
         "float const*, float const*, float const*, ck_tile::ComposedAttention<0u, false> const*)")
LL4MI_REDUCE = ("void paged_attention_ll4mi_reduce_kernel<__hip_bfloat16, __hip_bfloat16, 128, 128, 256, 3, false>"
                "(__hip_bfloat16*, float const*, float const*, __hip_bfloat16 const*, int const*, int const*, int, "
                "int, float const*)")
_FA3 = ("void cutlass::device_kernel<flash::enable_sm90_or_later<flash::FlashAttnFwdSm90<flash::"
        "CollectiveMainloopFwdSm90<2, cute::tuple<cute::C<1>, cute::C<1>, cute::C<1> >, cute::tuple<cute::C<128>, "
        "cute::C<{n}>, cute::C<128> >, 128, cutlass::bfloat16_t, float, cutlass::arch::Sm90, true, false, false, "
        "true, {split}, false, false, true, true, false, false>, flash::CollectiveEpilogueFwd<cute::tuple<"
        "cute::C<128>, cute::C<128>, cute::C<{n}> >, cute::tuple<cute::C<1>, cute::C<1>, cute::C<1> >, "
        "cutlass::bfloat16_t, cutlass::arch::Sm90, 256, true, true, false, false>, flash::VarlenDynamicPersistent"
        "TileScheduler<128, 256, 128, true, {split}, true> > > >(flash::FlashAttnFwdSm90<...>::Params)")
FA3_PREFILL = _FA3.format(n=176, split="false")
FA3_DECODE = _FA3.format(n=128, split="true")
FA3_COMBINE = ("void flash::FlashAttnFwdCombine<cute::tuple<cute::C<8>, cute::C<128> >, 7, 256, 1, false, true, "
               "cutlass::bfloat16_t, float, cutlass::arch::Sm90>::operator()(flash::FlashAttnFwdCombine<...>::Params)")
FMHA_CONTEXT = "fmhaSm100aKernel_QkvBfloat16OBfloat16H128PagedKvCausalP32VarSeqQ128Kv128PersistentContext"
FMHA_GEN = "fmhaSm100aKernel_QkvBfloat16OBfloat16H128PagedKvDenseP32VarSeqQ8Kv128StaticSwapsAbForGen"
FI_MERGE = ("void flashinfer::PersistentVariableLengthMergeStatesKernel<8u, 16u, 8u, 4u, __nv_bfloat16, float, int>"
            "(__nv_bfloat16*, float*, int*, __nv_bfloat16*, float*, unsigned int, unsigned int*, unsigned int)")

# decomposed attention: the batched GEMMs cuBLAS / Tensile run for torch.matmul on 4-D tensors
# (Q.K^T is "tn", P.V is "nn"); the softmax between them is SOFTMAX
NV_BMM_QK = ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize64x64x64_warpgroupsize1x1x1_batched_"
             "execute_segment_k_off_kernel__5x_cublas")
NV_BMM_PV = ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_nn_n_tilesize64x128x64_warpgroupsize1x1x1_batched_"
             "execute_segment_k_off_kernel__5x_cublas")

# MoE
OGS_TOPK, OGS_ROUTING = "_topk_forward", "_combined_routing_compute"
OGS_GEMM = "_matmul_ogs_NNT_bf16xbf16xmxfp4_16x128x256x1"
OGS_GEMM_SWIGLU = "_matmul_ogs_NNT_bf16xbf16xmxfp4_16x128x256x1_swiglu"
OGS_FINALIZE = "_finalize_matmul_scatter_bf16"
_RR = ("moe::dev::routing::routingRenormalize::KernelParams<__nv_bfloat16, __nv_bfloat16, 128, false, true, true>")
TRT_TOPK = (f"void moe::dev::routing::routingRenormalize::routingIndicesHistogramScoresKernel<{_RR} >({_RR})")
TRT_SORT = f"void moe::dev::routing::routingIndicesOffsetsKernel<{_RR} >({_RR})"
TRT_GEMM = ("bmm_Bfloat16_MxE2m1MxE4m3_Fp32_t128x16x256u2_s3_et128x16_m128x16x32_cga1x1x1_16dp256b_rM_TN_"
            "transOut_schedP2x1x2x3_biasM_bN_tmaOpt_clmp_dynBatch_sm100f")
TRT_GEMM_SWIGLU = ("bmm_MxE4m3_MxE2m1MxE4m3_Fp32_t128x16x256u2_s3_et128x16_m128x16x32_cga1x1x1_16dp256b_rM_TN_"
                   "transOut_schedP2x1x2x3_biasM_bN_tma_tmaOpt_clmp_swiGlu_dynBatch_sm100f")
TRT_FINALIZE = ("void moe::dev::finalize::finalizeKernelVecLoad<moe::dev::finalize::KernelParams<cutlass::bfloat16_t, "
                "cutlass::bfloat16_t, 4, true> >(moe::dev::finalize::KernelParams<cutlass::bfloat16_t, "
                "cutlass::bfloat16_t, 4, true>)")

# GPU activity rows (gpu_memcpy / gpu_memset) are named by the runtime
MEMCPY_NAMES = {
    ("amd", "h2d"): "Memcpy HtoD (Host -> Device)", ("amd", "d2h"): "Memcpy DtoH (Device -> Host)",
    ("nvidia", "h2d"): "Memcpy HtoD (Pinned -> Device)", ("nvidia", "d2h"): "Memcpy DtoH (Device -> Pinned)",
}
MEMSET_NAME = "Memset (Device)"

# Intended category of every kernel name above (registry.toml spelling).
CATEGORY: dict[str, str] = {}


def _cat(category: str, *names: str) -> None:
    for n in names:
        CATEGORY[n] = category


_cat("RMSNorm", CK_RMSNORM, VLLM_RMSNORM, VLLM_ADD_RMSNORM, AITER_ADD_RMSNORM, AITER_ADD_RMSNORM_QUANT,
     NV_ADD_RMSNORM_QUANT)
_cat("RMSNorm+GEMM", AMD_NORM_GEMM, NV_NORM_GEMM)
_cat("Quantize", AMD_QUANT, NV_QUANT)
_cat("RoPE", ROTARY)
_cat("KV Cache", AMD_KV, NV_KV)
_cat("Activation", ACT_AND_MUL, SGL_ACT_AND_MUL)
_cat("Elementwise", RESIDUAL_ADD)
_cat("Gather/Scatter", EMBED)
_cat("All-Reduce", AMD_ALLREDUCE, NCCL_ALLREDUCE, MULTIMEM_ALLREDUCE)
_cat("Softmax", SOFTMAX)
_cat("Dense GEMM", NV_BMM_QK, NV_BMM_PV)
_cat("Reduce", ARGMAX)
_cat("Sampling", MULTINOMIAL)
_cat("Sorting", TOPK, CUB_SORT, ROCPRIM_SORT)
_cat("Attention", UNIFIED_2D, UNIFIED_3D, REDUCE_SEGMENTS, ATTN_FWD, FA3_PREFILL, FA3_DECODE, FA3_COMBINE, FI_MERGE)
_cat("Attention (decode)", LL4MI, LL4MI_REDUCE, FMHA_GEN)
_cat("Attention (prefill)", FMHA_CONTEXT)
_cat("MoE Routing", OGS_TOPK, OGS_ROUTING, TRT_TOPK, TRT_SORT)
_cat("MoE GEMM", OGS_GEMM, TRT_GEMM)
_cat("MoE GEMM+SwiGLU", OGS_GEMM_SWIGLU, TRT_GEMM_SWIGLU)
_cat("MoE Finalize", OGS_FINALIZE, TRT_FINALIZE)
_cat("Copy/Memory", *MEMCPY_NAMES.values(), MEMSET_NAME)

# Eager PyTorch: the one-op kernels a model runs where a fused kernel would do them together
# (`Plant.unfused_ops`: Hugging Face's LlamaRMSNorm, rotate_half rotary embedding, silu then mul).
# role -> (aten op chain, outermost first; NVIDIA kernel; AMD kernel), names as recorded on H100 and MI300X.
_TI = "at::TensorIteratorBase&"
_BF = "c10::BFloat16"
_MULF = "at::native::BinaryFunctor<float, float, float, at::native::binary_internal::MulFunctor<float> >"
_MULB = f"at::native::BinaryFunctor<{_BF}, {_BF}, {_BF}, at::native::binary_internal::MulFunctor<float> >"
_COPY = ("aten::to", "aten::_to_copy", "aten::copy_")
EAGER_OPS: dict[str, tuple[tuple[str, ...], str, str]] = {
    "eager_copy_f32": (_COPY,
                       "void at::native::unrolled_elementwise_kernel<at::native::direct_copy_kernel_cuda(%s)::"
                       "{lambda()#3}::operator()() const::{lambda()#7}::operator()() const::{lambda(float)#1}, "
                       "std::array<char*, 2ul>, 4, TrivialOffsetCalculator<1, unsigned int>, TrivialOffsetCalculator<1, "
                       "unsigned int>, at::native::memory::LoadWithCast<1>, at::native::memory::StoreWithCast<1> >"
                       "(int, at::native::direct_copy_kernel_cuda(%s)::{lambda()#3}::operator()() const::{lambda()#7}"
                       "::operator()() const::{lambda(float)#1}, std::array<char*, 2ul>)" % (_TI, _TI),
                       "void at::native::elementwise_kernel<512, 1, at::native::gpu_kernel_impl<at::native::"
                       "direct_copy_kernel_cuda(%s)::{lambda()#3}::operator()() const::{lambda()#7}::operator()() "
                       "const::{lambda(float)#1}>(%s)::{lambda(int)#1}>(int)" % (_TI, _TI)),
    "eager_pow": (("aten::pow",),) + ("void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous "
                                      "namespace)::pow_tensor_scalar_kernel_impl<float, float>(%s, float)::"
                                      "{lambda(float)#1}, std::array<char*, 2ul> >(int)" % _TI,) * 2,
    "eager_mean": (("aten::mean",),) + ("void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, "
                                        "at::native::MeanOps<float, float, float, float>, unsigned int, float, 4, 4> >"
                                        "(at::native::ReduceOp<float, at::native::MeanOps<float, float, float, float>, "
                                        "unsigned int, float, 4, 4>)",) * 2,
    "eager_add_eps": (("aten::add",),) + ("void at::native::vectorized_elementwise_kernel<4, at::native::"
                                          "CUDAFunctorOnSelf_add<float>, std::array<char*, 2ul> >(int, at::native::"
                                          "CUDAFunctorOnSelf_add<float>, std::array<char*, 2ul>)",) * 2,
    "eager_rsqrt": (("aten::rsqrt",),) + ("void at::native::vectorized_elementwise_kernel<4, at::native::"
                                          "rsqrt_kernel_cuda(%s)::{lambda()#2}::operator()() const::{lambda()#2}::"
                                          "operator()() const::{lambda(float)#1}, std::array<char*, 2ul> >(int)" % _TI,)
                                          * 2,
    "eager_mul_f32": (("aten::mul",),
                      "void at::native::elementwise_kernel<128, 2, at::native::gpu_kernel_impl_nocast<%s >(%s, %s "
                      "const&)::{lambda(int)#1}>(int)" % (_MULF, _TI, _MULF),
                      "void at::native::elementwise_kernel_manual_unroll<128, 4, at::native::gpu_kernel_impl_nocast<%s >"
                      "(%s, %s const&)::{lambda(int, bool)#1}>(int)" % (_MULF, _TI, _MULF)),
    "eager_copy_bf16": (_COPY,) + ("void at::native::vectorized_elementwise_kernel<4, at::native::"
                                   "bfloat16_copy_kernel_cuda(%s)::{lambda(float)#1}, std::array<char*, 2ul> >(int)"
                                   % _TI,) * 2,
    "eager_mul": (("aten::mul",),
                  "void at::native::elementwise_kernel<128, 4, at::native::gpu_kernel_impl_nocast<%s >(%s, %s const&)::"
                  "{lambda(int)#1}>(int)" % (_MULB, _TI, _MULB),
                  "void at::native::elementwise_kernel_manual_unroll<128, 8, at::native::gpu_kernel_impl_nocast<%s >"
                  "(%s, %s const&)::{lambda(int, bool)#1}>(int)" % (_MULB, _TI, _MULB)),
    "eager_add": (("aten::add",), RESIDUAL_ADD,
                  "void at::native::elementwise_kernel_manual_unroll<128, 8, at::native::gpu_kernel_impl_nocast<"
                  "at::native::CUDAFunctor_add<%s> >(%s, at::native::CUDAFunctor_add<%s> const&)::{lambda(int, bool)#1}>"
                  "(int)" % (_BF, _TI, _BF)),
    "eager_neg": (("aten::neg",),
                  "void at::native::elementwise_kernel<128, 4, at::native::gpu_kernel_impl_nocast<at::native::"
                  "neg_kernel_cuda(%s)::{lambda()#2}::operator()() const::{lambda()#9}::operator()() const::"
                  "{lambda(%s)#1}>(%s)::{lambda(int)#1}>(int)" % (_TI, _BF, _TI),
                  "void at::native::elementwise_kernel_manual_unroll<128, 8, at::native::gpu_kernel_impl_nocast<"
                  "at::native::neg_kernel_cuda(%s)::{lambda()#2}::operator()() const::{lambda()#9}::operator()() "
                  "const::{lambda(%s)#1}>(%s)::{lambda(int, bool)#1}>(int)" % (_TI, _BF, _TI)),
    "eager_cat": (("aten::cat",),) + ("void at::native::(anonymous namespace)::CatArrayBatchedCopy<at::native::"
                                      "(anonymous namespace)::OpaqueType<2u>, unsigned int, 4, 64, 64>(at::native::"
                                      "(anonymous namespace)::OpaqueType<2u>*, unsigned int)",) * 2,
    "eager_silu": (("aten::silu",),) + ("void at::native::vectorized_elementwise_kernel<8, at::native::(anonymous "
                                        "namespace)::silu_kernel(%s)::{lambda()#1}::operator()() const::{lambda()#6}::"
                                        "operator()() const::{lambda(%s)#1}, std::array<char*, 2ul> >(int)"
                                        % (_TI, _BF),) * 2,
    "eager_mul_act": (("aten::mul",),) + ("void at::native::vectorized_elementwise_kernel<8, %s, std::array<char*, "
                                          "3ul> >(int, %s, std::array<char*, 3ul>)" % (_MULB, _MULB),) * 2,
}
# HF LlamaRMSNorm: to(float32), pow, mean, + eps, rsqrt, mul, to(bf16), * weight
EAGER_NORM = ("eager_copy_f32", "eager_pow", "eager_mean", "eager_add_eps", "eager_rsqrt", "eager_mul_f32",
              "eager_copy_bf16", "eager_mul")
# apply_rotary_pos_emb, for q then k: x * cos, rotate_half (neg, cat), * sin, +
EAGER_ROPE = ("eager_mul", "eager_neg", "eager_cat", "eager_mul", "eager_add") * 2
EAGER_ACT = ("eager_silu", "eager_mul_act")          # act_fn(gate) * up
UNFUSED_OPS = ("norm", "act", "rope", "attn")
_EAGER_CATEGORY = {"eager_copy_f32": "Copy/Memory", "eager_copy_bf16": "Copy/Memory", "eager_cat": "Copy/Memory",
                   "eager_mean": "Reduce", "eager_silu": "Activation"}
for _role, (_ops, _nv, _amd) in EAGER_OPS.items():
    _cat(_EAGER_CATEGORY.get(_role, "Elementwise"), _nv, _amd)
    ROLE_GROUP.setdefault(_role, "light")
BASE_US.update({   # decode (batch 32), prefill (~2k tokens): the Llama-3.2-1B H100 trace's eager kernels
    "eager_copy_f32": (3.0, 20), "eager_pow": (1.3, 18), "eager_mean": (3.0, 13), "eager_add_eps": (1.3, 5),
    "eager_rsqrt": (1.4, 5), "eager_mul_f32": (1.8, 23), "eager_copy_bf16": (1.2, 14), "eager_mul": (2.5, 17),
    "eager_add": (1.2, 14), "eager_neg": (2.2, 11), "eager_cat": (2.1, 27), "eager_silu": (1.8, 33),
    "eager_mul_act": (1.5, 37),
})


def _gemms(gpu: str) -> dict[tuple[str, str], str]:
    """(role, phase) -> GEMM kernel name; phase is 'decode' or 'prefill'."""
    if gpu in ("mi300x", "mi355x"):
        isa = "942" if gpu == "mi300x" else "950"
        d = {
            ("gemm_qkv", "decode"): tensile("32x32x256", isa),
            ("gemm_o", "decode"): tensile("16x16x256", isa, gsu="GSUAMBSK"),
            ("gemm_gate_up", "decode"): tensile("64x32x256", isa, wg="64_4_1"),
            ("gemm_down", "decode"): tensile("32x64x256", isa, wg="64_4_1", gsu="GSUAMBSK"),
            ("gemm_router", "decode"): WV_SPLITK,
            ("gemm_lm_head", "decode"): tensile("448x32x64", isa, wg="64_4_1"),
            ("gemm_qkv", "prefill"): tensile("256x128x64", isa, wg="64_4_1"),
            ("gemm_o", "prefill"): tensile("128x224x64", isa, wg="64_4_1"),
            ("gemm_gate_up", "prefill"): tensile("256x256x64", isa, wg="64_4_1"),
            ("gemm_down", "prefill"): tensile("256x128x64", isa, wg="64_4_1", gsu="GSUAMBSK"),
            ("gemm_router", "prefill"): tensile("64x16x128", isa),
            ("gemm_lm_head", "prefill"): tensile("448x32x64", isa, wg="64_4_1"),
        }
    elif gpu == "h100":
        d = {
            ("gemm_qkv", "decode"): "nvjet_hsh_64x32_64x16_4x1_v_bz_TNT",
            ("gemm_o", "decode"): "nvjet_hsh_64x16_64x16_2x4_2cta_h_bz_TNT",
            ("gemm_gate_up", "decode"): "nvjet_hsh_128x32_64x8_2x1_v_bz_TNT",
            ("gemm_down", "decode"): "nvjet_hsh_64x32_64x16_2x4_h_bz_splitK_TNT",
            ("gemm_router", "decode"): "nvjet_hsh_64x8_64x16_4x1_v_bz_TNT",
            ("gemm_lm_head", "decode"): _sm90_xmma("64x128x64", "1x1x1"),
            ("gemm_qkv", "prefill"): _sm90_xmma("128x256x64", "2x1x1"),
            ("gemm_o", "prefill"): _sm90_xmma("128x128x64", "1x1x1"),
            ("gemm_gate_up", "prefill"): _sm90_xmma("256x128x64", "2x1x1"),
            ("gemm_down", "prefill"): _sm90_xmma("128x256x64", "1x2x1"),
            ("gemm_router", "prefill"): "nvjet_hsh_128x64_64x4_2x1_v_bz_TNT",
            ("gemm_lm_head", "prefill"): _sm90_xmma("64x128x64", "1x1x1"),
        }
    else:  # b200
        d = {
            ("gemm_qkv", "decode"): "nvjet_tst_64x64_64x16_2x1_2cta_v_bz_TNT",
            ("gemm_o", "decode"): "nvjet_tst_64x16_64x16_2x4_2cta_h_bz_TNT",
            ("gemm_gate_up", "decode"): "nvjet_tst_144x128_64x6_2x1_v_bz_TNN",
            ("gemm_down", "decode"): "nvjet_tst_64x32_64x16_2x4_2cta_h_bz_TNT",
            ("gemm_router", "decode"): "nvjet_tst_192x8_64x8_4x1_v_bz_TNT",
            ("gemm_lm_head", "decode"): "nvjet_tst_256x64_64x4_2x1_2cta_v_bz_TNT",
            ("gemm_qkv", "prefill"): "nvjet_tst_256x128_64x4_2x1_2cta_v_bz_TNT",
            ("gemm_o", "prefill"): "nvjet_tst_128x256_64x4_1x2_h_bz_TNT",
            ("gemm_gate_up", "prefill"): "nvjet_tst_256x256_64x4_2x1_2cta_v_bz_TNN",
            ("gemm_down", "prefill"): "nvjet_tst_256x128_64x4_1x2_2cta_h_bz_TNT",
            ("gemm_router", "prefill"): "nvjet_tst_128x64_64x6_2x1_v_bz_TNT",
            ("gemm_lm_head", "prefill"): "nvjet_tst_256x64_64x4_2x1_2cta_v_bz_TNT",
        }
    for name in d.values():
        CATEGORY.setdefault(name, "Dense GEMM")
    return d


def kernel_table(gpu: str) -> dict[str, object]:
    """role -> kernel name, or role -> {phase: name} for GEMMs / attention.

    Attention roles: attn_prefill, attn_decode (+ attn_decode_reduce when the backend splits
    the KV sequence and combines the partial results in a second kernel).
    """
    vendor = GPUS[gpu].vendor
    amd = vendor == "amd"
    t: dict[str, object] = {
        "embed": EMBED,
        "norm": CK_RMSNORM if amd else VLLM_RMSNORM,
        "add_norm": AITER_ADD_RMSNORM if gpu == "mi355x" else VLLM_ADD_RMSNORM,
        "add_norm_quant": AITER_ADD_RMSNORM_QUANT if amd else NV_ADD_RMSNORM_QUANT,
        "quant": AMD_QUANT if amd else NV_QUANT,
        "norm_gemm": AMD_NORM_GEMM if amd else NV_NORM_GEMM,
        "rope": ROTARY,
        "kv_write": AMD_KV if amd else NV_KV,
        "act": SGL_ACT_AND_MUL if gpu == "mi355x" else ACT_AND_MUL,
        "residual_add": RESIDUAL_ADD,
        "allreduce": {"mi300x": AMD_ALLREDUCE, "mi355x": AMD_ALLREDUCE, "h100": NCCL_ALLREDUCE,
                      "b200": MULTIMEM_ALLREDUCE}[gpu],
        "softmax": SOFTMAX, "argmax": ARGMAX, "topk": TOPK, "sort": ROCPRIM_SORT if amd else CUB_SORT,
        "multinomial": MULTINOMIAL,
    }
    if gpu == "mi300x":
        t.update(attn_prefill=UNIFIED_2D, attn_decode=UNIFIED_3D, attn_decode_reduce=REDUCE_SEGMENTS)
    elif gpu == "mi355x":
        t.update(attn_prefill=ATTN_FWD, attn_decode=LL4MI, attn_decode_reduce=LL4MI_REDUCE)
    elif gpu == "h100":
        t.update(attn_prefill=FA3_PREFILL, attn_decode=FA3_DECODE, attn_decode_reduce=FA3_COMBINE)
    else:
        t.update(attn_prefill=FMHA_CONTEXT, attn_decode=FMHA_GEN, attn_decode_reduce=FI_MERGE)
    if gpu == "b200":
        t.update(moe_topk=TRT_TOPK, moe_sort=TRT_SORT, moe_gemm1=TRT_GEMM, moe_gemm2=TRT_GEMM,
                 moe_gemm_swiglu=TRT_GEMM_SWIGLU, moe_finalize=TRT_FINALIZE)
    else:  # triton_kernels matmul_ogs runs on MI300/MI355 and Hopper alike (gpt-oss in vLLM)
        t.update(moe_topk=OGS_TOPK, moe_sort=OGS_ROUTING, moe_gemm1=OGS_GEMM, moe_gemm2=OGS_GEMM,
                 moe_gemm_swiglu=OGS_GEMM_SWIGLU, moe_finalize=OGS_FINALIZE)
    if amd:
        isa = "942" if gpu == "mi300x" else "950"
        t.update(attn_bmm_qk=tensile("64x64x64", isa, wg="16_16_1"),
                 attn_bmm_pv=tensile("64x128x64", isa, wg="16_16_1"))
    else:
        t.update(attn_bmm_qk=NV_BMM_QK, attn_bmm_pv=NV_BMM_PV)
    t["attn_softmax"] = SOFTMAX
    for role, (_ops, nv, amd_name) in EAGER_OPS.items():
        t[role] = amd_name if amd else nv
    for role in ("attn_bmm_qk", "attn_bmm_pv"):
        CATEGORY.setdefault(t[role], "Dense GEMM")  # type: ignore[arg-type]
    for (role, phase), name in _gemms(gpu).items():
        t.setdefault(role, {})[phase] = name  # type: ignore[index]
    return t


def launch_api(vendor: str, name: str) -> str:
    """Runtime call that launches `name` eagerly (what the CPU-side cuda_runtime event is called)."""
    if vendor == "amd":
        if name.startswith("Cijk_"):
            return "hipExtModuleLaunchKernel"
        if name.startswith(("void", "std::")):
            return "hipLaunchKernel"
        return "hipModuleLaunchKernel"      # triton, aiter / ck_tile code objects
    if name.startswith(("nvjet", "sm90_xmma", "bmm_")):
        return "cudaLaunchKernelExC"
    if name.startswith(("void", "std::")) and "flash" not in name and "tensorrt_llm" not in name:
        return "cudaLaunchKernel"
    return "cuLaunchKernelEx"               # triton, flashinfer / FA3 / TRT-LLM cubins (driver API)
