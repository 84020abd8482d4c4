"""A small generated pair with recorded shapes (record_shapes=True): an MI300X and an H100 trace of the
same 4-layer model, one forward pass, for the explorer's Shapes tab. Each layer runs a QKV addmm, a
causal flash attention, an output mm, two MLP up mms (the same shape twice) and a down mm; the
kernels carry grid, block, registers, shared memory and occupancy like real CUDA traces.

Kernel durations come from a target TFLOP/s per shape and side, so the figures the tab shows are
known: MI300X (A) runs the GEMMs at 60-75% of the H100's (B) speed, attention faster; B's cuBLAS
splits the down projection into a GEMM and a split-K reduction and puts a workspace memset in
front of its QKV GEMM.
"""

from __future__ import annotations

from pathlib import Path

from conftest import kineto_doc, write_trace

BF = "c10::BFloat16"
TOKENS, HIDDEN, MLP = 4096, 1024, 2816
BATCH, HEADS, SEQ, HEAD_DIM = 16, 16, 256, 64
LAYERS = 4

# side -> (device name, vendor, runtime launch call)
DEVICES = {"a": ("AMD Instinct MI300X VF", "AMD", "hipExtModuleLaunchKernel"),
           "b": ("NVIDIA H100 80GB HBM3", "NVIDIA", "cudaLaunchKernel")}

# role -> (op, input dims, input types, flops per call, {side: [(kernel, TFLOP/s or µs, grid, block, regs, smem)]})
# a kernel with TFLOP/s None lasts the µs given (memsets, split-K reductions)
_AMD_GEMM = "Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT256x128x64_MI16x16x1_SN_LDSB1_GRVWA8_ISA942"
_NV_GEMM = "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_TNT"


def _gemm(m: int, n: int, k: int) -> float:
    return 2.0 * m * n * k


ROLES = {
    "qkv": ("aten::addmm", [[3 * HIDDEN], [TOKENS, HIDDEN], [HIDDEN, 3 * HIDDEN], [], []],
            [BF, BF, BF, "Scalar", "Scalar"], _gemm(TOKENS, 3 * HIDDEN, HIDDEN),
            {"a": [(_AMD_GEMM, 450.0, 1, 1.0)],
             "b": [("Memset (Device)", None, 0, 1.5), (_NV_GEMM, 600.0, 1, 1.0)]}),
    "attn": ("aten::_flash_attention_forward", [[BATCH, SEQ, HEADS, HEAD_DIM]] * 3 + [[], [], [], [], [], []],
             [BF, BF, BF, "", "", "Scalar", "Scalar", "Scalar", "Scalar"],
             4.0 * BATCH * HEADS * SEQ * SEQ * HEAD_DIM / 2,
             {"a": [("attn_fwd", 95.0, 1, 1.0)],
              "b": [("flash_fwd_kernel<Flash_fwd_kernel_traits<64, 128, 128, 4, false, false, cutlass::bfloat16_t>>",
                     80.0, 1, 1.0)]}),
    "o_proj": ("aten::mm", [[TOKENS, HIDDEN], [HIDDEN, HIDDEN]], [BF, BF], _gemm(TOKENS, HIDDEN, HIDDEN),
               {"a": [(_AMD_GEMM, 430.0, 1, 1.0)], "b": [("nvjet_sm90_tst_128x128_64x6_2x1_v_bz_TNT", 580.0, 1, 1.0)]}),
    "up": ("aten::mm", [[TOKENS, HIDDEN], [HIDDEN, MLP]], [BF, BF], _gemm(TOKENS, MLP, HIDDEN),
           {"a": [(_AMD_GEMM.replace("MT256x128", "MT256x256"), 470.0, 1, 1.0)], "b": [(_NV_GEMM, 610.0, 1, 1.0)]}),
    "down": ("aten::mm", [[TOKENS, MLP], [MLP, HIDDEN]], [BF, BF], _gemm(TOKENS, HIDDEN, MLP),
             {"a": [(_AMD_GEMM, 520.0, 1, 1.0)],
              "b": [("nvjet_sm90_tst_128x128_64x6_2x1_v_bz_splitK_TNT", 700.0, 0.9, 1.0),
                    ("void cublasLt::splitKreduce_kernel<32, 16, int, __nv_bfloat16, float>", None, 0.1, 3.0)]}),
}
LAYER_ROLES = ("qkv", "attn", "o_proj", "up", "up", "down")


def _launch_args(kernel: str, side: str) -> dict:
    """Launch configuration as CUPTI records it (ROCm traces have none)."""
    if side == "a" or kernel.startswith("Memset"):
        return {}
    return {"grid": [132, 1, 1], "block": [384, 1, 1], "registers per thread": 168, "shared memory": 213_248,
            "est. achieved occupancy %": 12, "blocks per SM": 1.0}


def shape_events(side: str, layers: int = LAYERS, speed: float = 1.0) -> list[dict]:
    """One forward pass of `layers` layers on `side` ("a" or "b"); `speed` scales every rate."""
    _dev, _vendor, launch = DEVICES[side]
    ev: list[dict] = []
    t_cpu, t_gpu, ext, corr = 0.0, 1000.0, 1, 1
    start = t_cpu
    for layer in range(layers):
        for role in LAYER_ROLES:
            op, dims, types, flops, kernels = ROLES[role]
            plan = kernels[side]
            ev.append({"ph": "X", "cat": "cpu_op", "name": op, "pid": 1, "tid": 1, "ts": t_cpu, "dur": 20.0,
                       "args": {"External id": ext, "Input Dims": dims, "Input type": types}})
            for kernel, rate, part, extra in plan:
                # split-K: the GEMM does `part` of the math at `rate`; a reduction or memset lasts `extra` µs
                dur = flops * part / (rate * speed * 1e12) * 1e6 if rate else extra + 0.1 * layer
                ev.append({"ph": "X", "cat": "cuda_runtime", "name": launch, "pid": 1, "tid": 1, "ts": t_cpu + 2,
                           "dur": 3.0, "args": {"correlation": corr, "External id": ext}})
                cat = "gpu_memset" if kernel.startswith("Memset") else "kernel"
                ev.append({"ph": "X", "cat": cat, "name": kernel, "pid": 0, "tid": 7, "ts": t_gpu, "dur": round(dur, 3),
                           "args": {"correlation": corr, "External id": ext, "device": 0, "stream": 7,
                                    **(_launch_args(kernel, side) if cat == "kernel" else {})}})
                t_gpu += dur + 2.0
                corr += 1
            t_cpu += 25.0
            ext += 1
    ev.append({"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": start - 1,
               "dur": max(t_cpu, t_gpu) + 10, "args": {"External id": ext}})
    return ev


def write_shapes_pair(folder: Path, record_shapes: bool = True, **kw) -> tuple[Path, Path]:
    """The pair as `mi300x_shapes.json` (A) and `h100_shapes.json` (B) in `folder`."""
    paths = []
    for side, name in (("a", "mi300x_shapes.json"), ("b", "h100_shapes.json")):
        dev, vendor, _launch = DEVICES[side]
        ev = shape_events(side, **kw)
        if not record_shapes:
            for e in ev:
                e["args"].pop("Input Dims", None)
                e["args"].pop("Input type", None)
        paths.append(write_trace(folder / name, kineto_doc(ev, device_name=dev, vendor=vendor,
                                                           record_shapes=int(record_shapes))))
    return paths[0], paths[1]
