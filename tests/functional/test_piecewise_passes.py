"""A forward that wraps piecewise compiled-graph calls is one pass (vLLM cuts its graph at each
attention: one forward calls a first, many middle and a last `## Call CompiledFxGraph … ##`).

No real trace we hold records piecewise graphs (b200_vllm_eager runs eager with one compiled call
inside its forward; the MI300X vLLM and SGLang decodes replay one whole graph), so the real B200
forward is cut into pieces at its recorded attention calls, from its raw events, and read without
the stacks and vLLM's annotation that would otherwise name the pass. Oracle: the raw forward call
(`nn.Module: GptOssForCausalLM_0`): one pass holding every kernel launched inside it. And on every
real vLLM / SGLang trace, the passes are the raw model-forward calls."""

from __future__ import annotations

import gzip
import json
import re

import pytest

from conftest import SHARED_TRACES, kineto_doc, real_trace, write_trace
from kerneldiff.core.orchestration import load

B200 = "b200_vllm_eager.json.gz"


def _events(name):
    with gzip.open(real_trace(name), "rt") as f:
        return json.load(f)


def _pieces(ev):
    """`## Call CompiledFxGraph ##` calls cutting the forward at each attention call: first, mid…, last."""
    fw = next(e for e in ev if e.get("name") == "nn.Module: GptOssForCausalLM_0")
    att = sorted((e for e in ev if e.get("cat") == "cpu_op" and e.get("name") == "vllm::unified_attention_with_output"),
                 key=lambda e: float(e["ts"]))
    t0, t1 = float(fw["ts"]), float(fw["ts"]) + float(fw["dur"])
    cuts = [t0] + [x for a in att for x in (float(a["ts"]), float(a["ts"]) + float(a["dur"]))] + [t1]
    names = ["first"] + ["mid"] * (len(att) - 1) + ["last"]
    return fw, [{"ph": "X", "cat": "user_annotation", "name": f"## Call CompiledFxGraph {n} ##", "pid": fw["pid"],
                 "tid": fw["tid"], "ts": cuts[2 * i] + 0.001, "dur": cuts[2 * i + 1] - cuts[2 * i] - 0.002, "args": {}}
                for i, n in enumerate(names)]


def _raw_inside(ev, fw) -> set[int]:
    """Correlation ids of the kernels launched inside the forward call."""
    t0, t1 = float(fw["ts"]), float(fw["ts"]) + float(fw["dur"])
    calls = {int(e["args"]["correlation"]) for e in ev if e.get("cat") in ("cuda_runtime", "cuda_driver")
             and "correlation" in e.get("args", {}) and t0 <= float(e["ts"]) <= t1}
    return {int(e["args"]["correlation"]) for e in ev if e.get("cat") == "kernel"
            and int(e["args"].get("correlation", -1)) in calls}


@pytest.mark.real
@pytest.mark.slow
@pytest.mark.parametrize("pieces", [True, False])
def test_a_forward_of_piecewise_graph_calls_is_one_pass(tmp_path, pieces):
    doc = _events(B200)
    ev = doc["traceEvents"]
    fw, calls = _pieces(ev)
    assert len(calls) == 37                     # 36 attention calls cut the forward into 37 pieces
    # the recording without stacks and without vLLM's execute_… annotation
    kept = [e for e in ev if e.get("cat") != "python_function" and not str(e.get("name", "")).startswith("execute_")]
    m = load(write_trace(tmp_path / "t.json", dict(doc, traceEvents=kept + (calls if pieces else []))),
             use_cache=False, workers=0)
    assert len(m.steps) == 1, [s.name for s in m.steps][:5]
    inside = _raw_inside(ev, fw)
    k = m.kernels
    in_pass = set(k.corr[k.step == 0].tolist())
    assert inside and inside <= in_pass


def _forward_calls(ev) -> int:
    """The model-forward calls a vLLM / SGLang step makes, from the raw Python frames."""
    pat = re.compile(r"gpu_model_runner\.py\(\d+\): _model_forward$|model_runner\.py\(\d+\): forward$")
    return sum(1 for e in ev if e.get("cat") == "python_function" and pat.search(e.get("name", "")))


@pytest.mark.real
@pytest.mark.parametrize("name", [B200, "mi300x_vllm_gptoss_decode.json.gz", "mi300x_sglang_qwen3-8b_decode.json.gz"])
def test_serving_traces_read_one_pass_per_model_forward(name):
    ev = _events(name)["traceEvents"]
    n = _forward_calls(ev)
    assert n >= 1
    assert len(load(SHARED_TRACES / name, use_cache=False, workers=0).steps) == n


def _doc(pieces: list[tuple[str, bool]], forwards: int):
    """`forwards` forwards, each a run of compiled calls (name, launches an attention kernel?) with
    an attention kernel launched after each call but the last (vLLM's eager attention between
    pieces when none launches its own), 20 µs apart."""
    ev, t, corr = [], 1000.0, 10

    def kernel(name, t):
        nonlocal corr
        corr += 1
        return [{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": t,
                 "dur": 3.0, "args": {"correlation": corr}},
                {"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": 7, "ts": t + 5, "dur": 4.0,
                 "args": {"correlation": corr, "device": 0, "stream": 7}}]

    for _ in range(forwards):
        for i, (n, own) in enumerate(pieces):
            ev.append({"ph": "X", "cat": "user_annotation", "name": f"## Call CompiledFxGraph {n} ##", "pid": 1,
                       "tid": 1, "ts": t, "dur": 15.0, "args": {}})
            ev += kernel("sm90_xmma_gemm_bf16bf16_bf16f32", t + 1)
            if own:
                ev += kernel("void flash_fwd_kernel<Flash_fwd_kernel_traits<64>>(Flash_fwd_params)", t + 8)
            t += 20.0
            if not own and i < len(pieces) - 1:
                ev += kernel("void flash_fwd_kernel<Flash_fwd_kernel_traits<64>>(Flash_fwd_params)", t - 4)
        t += 200.0
    return kineto_doc(ev)


@pytest.mark.parametrize("pieces, forwards, passes", [
    ([("first", False), ("mid", False), ("mid", False), ("last", False)], 1, 1),   # one piecewise forward
    ([("first", False), ("mid", False), ("last", False)], 3, 3),                  # three of them
    ([("prefill", True), ("decode", True), ("decode", True), ("bs16", True)], 1, 4),   # whole-forward graphs
])
def test_one_forward_of_pieces_against_whole_forward_graphs(tmp_path, pieces, forwards, passes):
    m = load(write_trace(tmp_path / "p.json", _doc(pieces, forwards)), use_cache=False, workers=0)
    assert len(m.steps) == passes
