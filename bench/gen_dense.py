"""An event-dense decode trace shaped unlike `kerneldiff.core.synth`'s: written independently of it.

What it imitates is a vLLM decode run under CUDA-graph replay as real profilers write it: short
kernel names (Triton `triton_poi_fused_…`, `nvjet_…`, a few templated ones), no Python stacks,
one `cudaGraphLaunch` per step whose correlation every replayed kernel shares (kernels without a
launch of their own), kernels spread over many streams, a `gpu_user_annotation` per step, flow
events, ts as floats with ns digits, and numbers in `args` as JSON numbers or (``--strings``) as
strings, as ROCm vLLM traces write them. ~3,600 events per MB.

    python bench/gen_dense.py /tmp/dense_60MB.json --size 60MB [--seed 1] [--strings] [--gzip]
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import sys


def _names(rng: random.Random, n: int) -> list[str]:
    out = []
    for i in range(n):
        r = rng.random()
        if r < 0.55:
            out.append(f"triton_{rng.choice(['poi', 'red', 'per'])}_fused_{rng.choice(['add', 'mul', 'rsqrt', 'silu', 'cat', 'copy'])}_{i}")
        elif r < 0.8:
            out.append(f"nvjet_tst_{rng.choice([64, 128, 192, 256])}x{rng.choice([8, 16, 32, 64])}_64x{rng.choice([3, 4, 6])}_{rng.choice([1, 2])}x1_v_bz_coopA_{rng.choice('NT')}")
        elif r < 0.9:
            out.append(f"void flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits<128, 64, 128, 4, {i % 3}>, true>(Flash_fwd_params)")
        else:
            out.append(rng.choice(["Memset (Device)", "Memcpy DtoD (Device -> Device)", "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
                                   "void vllm::rms_norm_kernel<c10::BFloat16, 8, 2>(c10::BFloat16*, c10::BFloat16 const*, c10::BFloat16 const*, float, int, int)"]))
    return out


def write(path: str, size: int, seed: int = 1, strings: bool = False, gz: bool = False) -> None:
    rng = random.Random(seed)
    names = _names(rng, 160)
    step_kernels = [rng.choice(names) for _ in range(rng.randint(900, 1100))]   # one graph's kernels
    streams = list(range(7, 7 + 24))
    num = (lambda v: str(v)) if strings else (lambda v: v)
    opener = gzip.open if gz else open
    written = 0
    ts = 6520618000000.0
    corr = 500000
    with opener(path, "wt", **({"compresslevel": 2} if gz else {})) as f:
        head = ('{"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "NVIDIA H100 80GB HBM3", "totalGlobalMem": 85029158912, '
                '"computeMajor": 9, "computeMinor": 0, "numSms": 132}], "distributedInfo": {"backend": "nccl", "rank": 0, "world_size": 8}, '
                '"with_stack": 0, "record_shapes": 0, "traceEvents": [\n')
        f.write(head)
        written += len(head)
        first = True
        step = 0
        while written < size:
            step += 1
            corr += 1
            parts = []
            t_cpu = ts
            parts.append({"ph": "X", "cat": "user_annotation", "name": f"execute_32_context_0(sq0sk0)_generation_32(sq32sk{55000 + step})",
                          "pid": 851, "tid": 851, "ts": round(t_cpu, 3), "dur": 950.5})
            parts.append({"ph": "X", "cat": "cpu_op", "name": "aten::copy_", "pid": 851, "tid": 851, "ts": round(t_cpu + 3.1, 3), "dur": 12.2,
                          "args": {"External id": num(corr * 4)}})
            parts.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaGraphLaunch", "pid": 851, "tid": 851, "ts": round(t_cpu + 20.07, 3), "dur": 30.4,
                          "args": {"cbid": 311, "correlation": num(corr)}})
            parts.append({"ph": "s", "id": corr, "pid": 851, "tid": 851, "ts": round(t_cpu + 20.07, 3), "cat": "ac2g", "name": "ac2g"})
            t = ts + 60.0
            g0 = t
            for k, nm in enumerate(step_kernels):
                dur = round(rng.uniform(1.5, 40.0), 3)
                ev = {"ph": "X", "cat": "kernel", "name": nm, "pid": 0, "tid": streams[k % len(streams)] if k % 7 == 0 else 7,
                      "ts": round(t, 3), "dur": dur,
                      "args": {"device": num(0), "stream": num(streams[k % len(streams)] if k % 7 == 0 else 7), "correlation": num(corr),
                               "registers per thread": 128, "shared memory": 0}}
                if k % 5 == 0:
                    ev["args"]["grid"] = [rng.choice([1, 32, 132]), 1, 1]
                    ev["args"]["block"] = [128, 1, 1]
                parts.append(ev)
                if k % 50 == 0:
                    parts.append({"ph": "f", "id": corr, "pid": 0, "tid": 7, "ts": round(t, 3), "cat": "ac2g", "name": "ac2g", "bp": "e"})
                t += dur + rng.uniform(0.2, 1.5)
            parts.append({"ph": "X", "cat": "gpu_user_annotation", "name": f"execute_32_context_0(sq0sk0)_generation_32(sq32sk{55000 + step})",
                          "pid": 0, "tid": 7, "ts": round(g0, 3), "dur": round(t - g0, 3)})
            ts = t + 120.0
            text = ",\n".join(json.dumps(p, separators=(",", ":")) for p in parts)
            if not first:
                text = ",\n" + text
            first = False
            f.write(text)
            written += len(text)
        tail = '\n], "traceName": "dense"}\n'
        f.write(tail)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--size", default="60MB")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--strings", action="store_true")
    ap.add_argument("--gzip", action="store_true")
    a = ap.parse_args()
    s = a.size.upper()
    mult = {"KB": 1e3, "MB": 1e6, "GB": 1e9}
    size = int(float(s[:-2]) * mult[s[-2:]]) if s[-2:] in mult else int(s)
    write(a.out, size, a.seed, a.strings, a.gzip)


if __name__ == "__main__":
    sys.exit(main())
