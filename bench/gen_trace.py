"""Benchmark trace generator: realistic Kineto JSON of a vLLM-style decode run, grown to a size.

Used by bench_load.py only when `core.synth` is not available. The event mix follows the real
with_stack traces in ../shared/traces (b200_vllm_eager): per GPU kernel ~12 python_function
frames, 3 cpu_ops (one launches the kernel), one runtime launch, one `ac2g` flow pair, the kernel
itself — so python_function ≈ 60% and cpu_op ≈ 16% of the events, kernels ≈ 5%. Formatting is
the one Kineto's C++ writer uses (two-space indent, several keys per line, float µs timestamps).
"""

from __future__ import annotations

import gzip
import os
import random
from pathlib import Path

try:
    from isal import igzip as _gzip
except ImportError:  # pragma: no cover
    _gzip = gzip

HEAD = """{
  "schemaVersion": 1,
  "deviceProperties": [
    {
      "id": 0, "name": "NVIDIA H100 80GB HBM3", "totalGlobalMem": 85029158912,
      "computeMajor": 9, "computeMinor": 0,
      "maxThreadsPerBlock": 1024, "maxThreadsPerMultiprocessor": 2048,
      "regsPerBlock": 65536, "warpSize": 32,
      "sharedMemPerBlock": 49152, "numSms": 132
    }
  ],
  "cupti_version": 22, "cuda_runtime_version": 12040, "with_stack": 1, "record_shapes": 1,
  "distributedInfo": {"backend": "nccl", "rank": 0, "world_size": 1},
  "traceEvents": [
"""
TAIL = """
  ],
  "traceName": "bench.json",
  "displayTimeUnit": "ms"
}
"""

# (kernel name, cpu op, duration µs) of one decoder layer, in launch order
LAYER = [
    ("std::enable_if<(((8)>(0)))&&vllm::_typeConvert<c10::BFloat16>::exists, void>::type "
     "vllm::fused_add_rms_norm_kernel<c10::BFloat16, 8>(c10::BFloat16*, long, c10::BFloat16*, "
     "c10::BFloat16 const*, float, int, int)", "_C::fused_add_rms_norm", 3.1),
    ("nvjet_tst_144x128_64x6_2x1_v_bz_bias_TNN", "aten::mm", 11.4),
    ("void vllm::rotary_embedding_kernel<c10::BFloat16, true>(long const*, c10::BFloat16*, "
     "c10::BFloat16*, c10::BFloat16 const*, int, long, long, long, int, int, int)", "_C::rotary_embedding", 2.2),
    ("void vllm::reshape_and_cache_flash_kernel<__nv_bfloat16, __nv_bfloat16, "
     "(vllm::Fp8KVCacheDataType)0>(__nv_bfloat16 const*, __nv_bfloat16 const*, __nv_bfloat16*, "
     "__nv_bfloat16*, long const*, long, long, long, long, int, int, int, float const*, float const*)",
     "_C_cache_ops::reshape_and_cache_flash", 2.0),
    ("void flash::flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits<128, 64, 128, 4, false, false, "
     "cutlass::bfloat16_t, Flash_kernel_traits<128, 64, 128, 4, cutlass::bfloat16_t> >, false, true, "
     "false, false, true, true, false, false>(flash::Flash_fwd_params)", "_vllm_fa2_C::varlen_fwd", 21.7),
    ("nvjet_tst_64x64_64x16_2x1_2cta_v_bz_bias_TNT", "aten::mm", 7.9),
    ("std::enable_if<(((8)>(0)))&&vllm::_typeConvert<c10::BFloat16>::exists, void>::type "
     "vllm::fused_add_rms_norm_kernel<c10::BFloat16, 8>(c10::BFloat16*, long, c10::BFloat16*, "
     "c10::BFloat16 const*, float, int, int)", "_C::fused_add_rms_norm", 3.0),
    ("nvjet_tst_256x128_64x4_2x1_v_bz_TNN", "aten::mm", 24.5),
    ("void vllm::act_and_mul_kernel<c10::BFloat16, &(c10::BFloat16 vllm::silu_kernel<c10::BFloat16>"
     "(c10::BFloat16 const&)), true>(c10::BFloat16*, c10::BFloat16 const*, int)", "_C::silu_and_mul", 4.4),
    ("nvjet_tst_128x64_64x8_2x1_v_bz_TNT", "aten::mm", 13.2),
]
PY_FRAMES = [
    "vllm/model_executor/models/llama.py(312): forward",
    "torch/nn/modules/module.py(1773): _wrapped_call_impl",
    "torch/nn/modules/module.py(1784): _call_impl",
    "vllm/model_executor/layers/linear.py(540): forward",
    "vllm/model_executor/layers/quantization/utils/w8a8_utils.py(402): apply",
    "torch/_ops.py(1243): __call__",
    "<built-in method mm of type object at 0x7f2a4c1e9f40>",
    "torch/nn/modules/module.py(1951): __getattr__",
    "<built-in function isinstance>",
    "vllm/attention/layer.py(281): forward",
    "<built-in method view of Tensor object at 0x7f29c8e1d2b0>",
    "vllm/_custom_ops.py(187): rms_norm",
]
LAYERS = 32


def _kernel(name, ts, dur, corr, ext):
    return (f'  {{\n    "ph": "X", "cat": "kernel", "name": "{name}", "pid": 0, "tid": 7,\n'
            f'    "ts": {ts:.3f}, "dur": {dur:.3f},\n    "args": {{\n      "External id": {ext},\n'
            f'      "queued": 0, "device": 0, "context": 1,\n      "stream": 7, "correlation": {corr},\n'
            f'      "registers per thread": 128,\n      "shared memory": 49152,\n'
            f'      "blocks per SM": 0.96969699,\n      "warps per SM": 3.87878799,\n'
            f'      "grid": [128, 1, 1],\n      "block": [128, 1, 1],\n'
            f'      "est. achieved occupancy %": 6\n    }}\n  }}')


def _cpu_op(name, ts, dur, ext, tid):
    return (f'  {{\n    "ph": "X", "cat": "cpu_op", "name": "{name}", "pid": 4242, "tid": {tid},\n'
            f'    "ts": {ts:.3f}, "dur": {dur:.3f},\n    "args": {{\n      "External id": {ext},\n'
            f'      "Record function id": 0, "Concrete Inputs": ["", "", ""], '
            f'"Input type": ["c10::BFloat16", "c10::BFloat16", ""], '
            f'"Input Strides": [[4096, 1], [1, 4096], []], "Input Dims": [[32, 4096], [4096, 6144], []], '
            f'"Ev Idx": {ext}\n    }}\n  }}')


def _runtime(ts, dur, corr, ext, tid):
    return (f'  {{\n    "ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 4242, "tid": {tid},\n'
            f'    "ts": {ts:.3f}, "dur": {dur:.3f},\n    "args": {{\n      "External id": {ext},\n'
            f'      "cbid": 211, "correlation": {corr}\n    }}\n  }}')


def _flow(ph, ts, corr, pid, tid):
    bp = ', "bp": "e"' if ph == "f" else ""
    return (f'  {{\n    "ph": "{ph}", "id": {corr}, "pid": {pid}, "tid": {tid}, "ts": {ts:.3f},\n'
            f'    "cat": "ac2g", "name": "ac2g"{bp}\n  }}')


def _python(name, ts, dur, pyid, parent, tid):
    return (f'  {{\n    "ph": "X", "cat": "python_function", "name": "{name}", "pid": 4242, "tid": {tid},\n'
            f'    "ts": {ts:.3f}, "dur": {dur:.3f},\n    "args": {{\n      "Python parent id": {parent}, '
            f'"Python id": {pyid}, "Ev Idx": {pyid}\n    }}\n  }}')


def _annotation(cat, name, ts, dur, pid, tid, ext):
    return (f'  {{\n    "ph": "X", "cat": "{cat}", "name": "{name}", "pid": {pid}, "tid": {tid},\n'
            f'    "ts": {ts:.3f}, "dur": {dur:.3f},\n    "args": {{\n      "External id": {ext}\n    }}\n  }}')


def _step_events(step: int, t0: float, ids: list[int], rng: random.Random) -> tuple[list[str], float]:
    """One decode step: annotation, 32 layers of kernels with their launches and Python stacks."""
    out: list[str] = []
    tid = 4242
    t = t0 + 5.0
    gpu_t = t0 + 120.0
    root = ids[1]
    ids[1] += 1
    first = len(out)
    out.append("")  # step annotation, filled in once the step's length is known
    for _layer in range(LAYERS):
        for kname, op, kdur in LAYER:
            ids[0] += 1
            corr = ids[0]
            ext = corr + 7_000_000
            # Python frames: a stack of 6 enclosing the launch + 6 short leaf calls
            parent = root
            stack_start = t
            depth = 6
            for f in range(depth):
                ids[1] += 1
                out.append(_python(PY_FRAMES[f], stack_start + f * 0.2, 30.0 - f * 2, ids[1], parent, tid))
                parent = ids[1]
            for f in range(6):
                ids[1] += 1
                out.append(_python(PY_FRAMES[6 + f], t + 1.2 + f * 0.9, 0.6, ids[1], parent, tid))
            out.append(_cpu_op("aten::empty", t + 7.0, 1.1, ext - 3_000_000, tid))
            out.append(_cpu_op("aten::view", t + 8.4, 0.9, ext - 4_000_000, tid))
            out.append(_cpu_op(op, t + 10.0, 9.0, ext, tid))
            lt = t + 12.0
            out.append(_runtime(lt, 4.5, corr, ext, tid))
            out.append(_flow("s", lt, corr, 4242, tid))
            dur = kdur * (0.9 + 0.2 * rng.random())
            gpu_t = max(gpu_t, lt + 8.0)
            out.append(_kernel(kname, gpu_t, dur, corr, ext))
            out.append(_flow("f", gpu_t, corr, 0, 7))
            gpu_t += dur + 1.0
            t += 22.0
    name = f"execute_context_0(0)_generation_32(32)"
    out[first] = _annotation("user_annotation", name, t0, t - t0, 4242, tid, ids[0] + 9_000_000 + step)
    out.append(_annotation("gpu_user_annotation", name, t0 + 120.0, gpu_t - t0 - 120.0, 0, 7,
                           ids[0] + 9_000_000 + step))
    return out, max(t, gpu_t) + 50.0


def write_trace(path: str | os.PathLike, target_bytes: int, gz: bool = False, seed: int = 0) -> Path:
    """Write a trace of about `target_bytes` (uncompressed JSON) to `path`."""
    path = Path(path)
    rng = random.Random(seed)
    tmp = path.with_name(path.name + ".part")
    opener = (lambda p: _gzip.open(p, "wb", compresslevel=1)) if gz else (lambda p: open(p, "wb", buffering=1 << 22))
    ids = [0, 1]
    written = 0
    with opener(tmp) as f:
        f.write(HEAD.encode())
        written += len(HEAD)
        t = 1_365_627_862_757.064
        step = 0
        sep = b""
        while written < target_bytes - len(TAIL):
            events, t = _step_events(step, t, ids, rng)
            block = sep + ",\n".join(events).encode()
            sep = b",\n"
            f.write(block)
            written += len(block)
            step += 1
        f.write(TAIL.encode())
    os.replace(tmp, path)
    return path


if __name__ == "__main__":
    import sys

    write_trace(sys.argv[1], int(float(sys.argv[2]) * 1e6), gz=sys.argv[1].endswith(".gz"))
