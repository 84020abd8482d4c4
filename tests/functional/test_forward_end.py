"""Without stacks, a pass entered by its embedding call ends where the forward's own work ends: at
its last GEMM (the LM head) when a sampling op is recorded after it
(kerneldiff.core.analysis.forward_end). Oracle on the real eager Llama traces: the kernels
launched inside the raw `nn.Module: LlamaForCausalLM_0` calls (the with_stack recording), against
what the stripped trace measures; built traces check an MoE router's topk and a trace without
sampling."""

from __future__ import annotations

import gzip
import json

import pytest

from conftest import kineto_doc, real_trace, write_trace
from kerneldiff.core.analysis.pass_extent import in_pass_mask
from kerneldiff.core.orchestration import load


def _inside_forward_calls(ev) -> set[int]:
    """Correlation ids of the kernels launched inside a LlamaForCausalLM call (raw events)."""
    spans = sorted((float(e["ts"]), float(e["ts"]) + float(e["dur"])) for e in ev
                   if e.get("cat") == "python_function" and e.get("name", "").startswith("nn.Module: LlamaForCausalLM"))
    import bisect
    starts = [s for s, _ in spans]
    inside = set()
    for e in ev:
        if e.get("cat") in ("cuda_runtime", "cuda_driver") and "correlation" in e.get("args", {}):
            j = bisect.bisect_right(starts, float(e["ts"])) - 1
            if j >= 0 and float(e["ts"]) <= spans[j][1]:
                inside.add(int(e["args"]["correlation"]))
    return {int(e["args"]["correlation"]) for e in ev if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")
            and int(e["args"].get("correlation", -1)) in inside}


@pytest.mark.real
@pytest.mark.slow
@pytest.mark.parametrize("name, source", [("h100_llama_eager_sdpa.json.gz", "token embedding calls"),
                                          ("h200_llama_eager_sdpa.json.gz", "token embedding calls"),
                                          ("h100_llama_compiled.json.gz", "compiled graph calls")])
def test_a_pass_without_stacks_measures_the_forward_calls_kernels(tmp_path, name, source):
    with gzip.open(real_trace(name), "rt") as f:
        doc = json.load(f)
    ev = doc["traceEvents"]
    want = _inside_forward_calls(ev)
    kept = [e for e in ev if e.get("cat") != "python_function"]
    m = load(write_trace(tmp_path / "ns.json", dict(doc, traceEvents=kept)), use_cache=False, workers=0)
    assert m.pass_source == source and len(m.steps) == 48
    assert all(s.call_end is not None for s in m.steps)
    got = set(m.kernels.corr[in_pass_mask(m)].tolist())
    assert got == want
    if "eager" in name:
        assert len(want) == 48 * 681    # 681 a pass inside the call; generate() adds 45 after it


@pytest.mark.real
@pytest.mark.slow
@pytest.mark.parametrize("drop", [None, "cpu_op"])
def test_a_graph_replayed_pass_ends_with_its_compiled_call(tmp_path, drop):
    """The recorded static-cache CUDA-graph trace (no stacks): each decode pass is a
    `## Call CompiledFxGraph` call replaying a graph; it measures the kernels launched inside that
    call (raw events), with CPU ops recorded (sampling after it) and without (the call's end)."""
    from conftest import ROOT

    path = ROOT / "tests" / "data" / "recorded" / "h100small_static_graphs.json.gz"
    with gzip.open(path, "rt") as f:
        doc = json.load(f)
    ev = doc["traceEvents"]
    import bisect
    calls = sorted((float(e["ts"]), float(e["ts"]) + float(e["dur"])) for e in ev if e.get("cat") == "user_annotation"
                   and e["name"].startswith("## Call CompiledFxGraph"))
    starts = [c[0] for c in calls]
    rt = {int(e["args"]["correlation"]): e for e in ev if e.get("cat") in ("cuda_runtime", "cuda_driver")
          and "correlation" in e.get("args", {})}
    want = [set() for _ in calls]
    for e in ev:
        r = rt.get(int((e.get("args") or {}).get("correlation", -1))) if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset") else None
        if r is not None:
            j = bisect.bisect_right(starts, float(r["ts"])) - 1
            if j >= 0 and float(r["ts"]) <= calls[j][1]:
                want[j].add(int(e["args"]["correlation"]))
    kept = [e for e in ev if e.get("cat") != drop]
    m = load(write_trace(tmp_path / "g.json", dict(doc, traceEvents=kept)), use_cache=False, workers=0)
    k, ip = m.kernels, in_pass_mask(m)
    got = [set(k.corr[(k.step == j) & ip].tolist()) for j, s in enumerate(m.steps) if "CompiledFxGraph" in s.name]
    assert len(got) == len(calls) == 15
    assert got == want


def _doc(tail: list[str], passes: int = 3):
    """`passes` forwards: embedding, attention, a GEMM, then `tail` ops (each launching one
    kernel; "gemm" a GEMM, "topk"/"argmax" those ops, "add" elementwise)."""
    ev, t, corr = [], 1000.0, 100
    kernels = {"embedding": "void at::native::indexSelectLargeIndex<c10::BFloat16>(...)",
               "attention": "void flash_fwd_kernel<Flash_fwd_kernel_traits<64>>(Flash_fwd_params)",
               "gemm": "sm90_xmma_gemm_bf16bf16_bf16f32", "topk": "void at::native::sbtopk::gatherTopK<float>(...)",
               "argmax": "void at::native::reduce_kernel<512, 1, ArgMaxOps<float>>(...)",
               "add": "void at::native::vectorized_elementwise_kernel<4, AddFunctor<float>>(...)"}
    ops = {"embedding": "aten::embedding", "attention": "aten::_flash_attention_forward", "gemm": "aten::mm",
           "topk": "aten::topk", "argmax": "aten::argmax", "add": "aten::add"}
    for _ in range(passes):
        for what in ["embedding", "attention", "attention", "gemm", *tail]:
            corr += 1
            ev += [{"ph": "X", "cat": "cpu_op", "name": ops[what], "pid": 1, "tid": 1, "ts": t, "dur": 8.0,
                    "args": {"External id": corr}},
                   {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": t + 2,
                    "dur": 3.0, "args": {"correlation": corr, "External id": corr}},
                   {"ph": "X", "cat": "kernel", "name": kernels[what], "pid": 0, "tid": 7, "ts": t + 6, "dur": 4.0,
                    "args": {"correlation": corr, "External id": corr, "device": 0, "stream": 7}}]
            t += 20.0
        t += 100.0
    return kineto_doc(ev)


@pytest.mark.parametrize("tail, bounded", [
    (["add", "argmax", "add"], True),          # sampling after the LM head: the copy, argmax, bookkeeping lie outside
    (["topk", "gemm", "gemm"], False),         # an MoE router's topk, then the experts: no sampling
    (["add"], False),                          # nothing recorded after the forward: the pass runs on
])
def test_sampling_after_the_last_gemm_bounds_the_pass(tmp_path, tail, bounded):
    m = load(write_trace(tmp_path / "t.json", _doc(tail)), use_cache=False, workers=0)
    assert len(m.steps) == 3
    assert all((s.call_end is not None) == bounded for s in m.steps)
    outside = (m.kernels.step >= 0) & ~in_pass_mask(m)
    assert int(outside.sum()) == (len(tail) * 3 if bounded else 0)
