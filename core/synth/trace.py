"""Engine of the synthetic trace generator: the per-phase kernel program of a vLLM-like model
and a streaming Kineto-JSON writer. Public entry points live in `kerneldiff.core.synth.pair`.

The writer keeps two clocks in integer nanoseconds: the CPU thread (python frames, cpu ops,
runtime launches) and the GPU stream (kernels in launch order, each starting no earlier than
its launch plus a small latency and no earlier than the previous kernel's end). The CPU may run
at most two steps ahead of the GPU (it waits on an event for step k-2 before starting step k,
like asynchronous scheduling does), so whenever the GPU is the bottleneck the queue grows and a
step's kernels execute inside the NEXT step's CPU annotation window.
"""

from __future__ import annotations

import os
import time
import zlib
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import orjson

from kerneldiff.core.model import PHASES as MODEL_PHASES
from kerneldiff.core.synth import names as sn

PHASES = tuple(p for p in MODEL_PHASES if p not in ("unknown", "forward"))   # the phases a planted step can have
CONTAINER_FIRST = 2   # a profiler schedule (wait=1, warmup=1) records from ProfilerStep#2 on


def _js(s: str) -> str:
    """A JSON string literal (with quotes)."""
    return orjson.dumps(s).decode()


# --- the program: which GPU activities a step runs, with their CPU-side context --------------

@dataclass
class Gpu:
    """One GPU activity (kernel, memcpy or memset) of a step program."""

    role: str
    name: str
    category: str
    kind: str                      # kernel | memcpy | memset
    api: str                       # runtime call that launches it eagerly
    base_ns: float                 # mean duration in this phase on this GPU (slow layer included)
    layer: int = -1
    inner: str | None = None       # JSON name of a cpu op wrapping just this launch
    # JSON fragments, filled by the writer
    name_js: str = ""
    launch_cat: str = "cuda_runtime"
    launch_head: str = ""
    launch_tail: str = ""
    k_tail: str = ""
    k_graph_tail: str = ""
    launch_extra: str = ""         # trailing launch args (memcpy/memset bytes on AMD)
    launch_lo: int = 4000          # launch call duration: lo + U(0, span) ns
    launch_span: int = 3000
    nbytes: int = 0                # memcpy / memset size


@dataclass
class Op:
    """A model operation: python frames, nested cpu ops, then its launches."""

    frames: tuple[str, ...]        # python function names (JSON), outermost first
    cpu: tuple[str, ...]           # cpu op names (JSON), outermost first
    gpu: list[Gpu]
    block: tuple[str, ...] = ()    # enclosing module frames shared with neighbouring ops
    shapes: str = ""               # record_shapes fragment for the innermost cpu op


@dataclass
class Program:
    phase: str
    pre: list[Op]                  # input preparation (eager even under graph replay)
    body: list[Op]                 # embedding, layers, final norm (graph-captured in decode)
    post: list[Op]                 # lm_head, sampling, copy-out
    layer_frames: list[tuple[str, ...]]
    model_frames: tuple[str, ...]
    head: list[Op] = field(default_factory=list)   # inside the top-level model call after its inner
    #                                model (HF: lm_head in LlamaForCausalLM); graph-captured with body
    root_frames: tuple[str, ...] = ()              # python frames around a whole step
    shapes_everywhere: bool = False                # every cpu op of an Op records its shapes (as torch
    #                                does), not only the innermost one
    graph_frames: tuple[str, ...] = ()             # python frames around a graph replay
    per_layer: int = 0             # GPU activities per layer
    pre_count: int = 0             # GPU activities before layer 0 (prep + embedding)
    post_count: int = 0            # GPU activities after the last layer

    def activities(self) -> list[Gpu]:
        """Every GPU activity of one step, in launch (= GPU) order."""
        acts = self.__dict__.get("_acts")
        if acts is None:
            acts = self.__dict__["_acts"] = [g for op in self.pre + self.body + self.head + self.post
                                             for g in op.gpu]
        return acts


@dataclass
class Plant:
    """Planted behaviour of ONE side of a pair (all off for a plain trace)."""

    slow_layer: int = -1               # layer index whose kernels all run slow_factor x longer
    slow_factor: float = 1.0
    norm_gemm: bool = False            # input RMSNorm + QKV GEMM run as one fused kernel
    norm_quant: str = "none"           # post-attention norm: none | fused (norm+quant) | split (norm, quant)
    moe_swiglu: bool = True            # MoE expert GEMM with fused SwiGLU (else GEMM, act, GEMM)
    kv_split: bool = False             # KV-cache write launched twice (K and V separately)
    residual_add: bool = False         # an extra elementwise residual add at the end of each layer
    # ops run eagerly, one aten kernel each, where the other side runs one fused kernel
    # (names.UNFUSED_OPS): "norm" (to_copy, pow, mean, add, rsqrt, mul, to_copy, mul, plus the
    # residual add fused_add_rms_norm does), "act" (silu, mul), "rope" (mul, neg, cat, mul, add per q and k),
    # "attn" (with decomposed attention: the scale and the mask as kernels, softmax cast back to bf16)
    unfused_ops: tuple[str, ...] = ()


@dataclass(frozen=True)
class ModelDims:
    hidden: int = 4096
    heads: int = 32
    kv_heads: int = 8
    head_dim: int = 128
    intermediate: int = 14336
    vocab: int = 128256
    experts: int = 64
    top_k: int = 8


def _fw(path: str, line: int, fn: str) -> str:
    return _js(f"{path}({line}): {fn}")


def _mod(cls: str, i: int) -> str:
    return _js(f"nn.Module: {cls}_{i}")


_LINEAR = (_js("aten::linear"), _js("aten::mm"))
_NORM_FRAMES = (_fw("vllm/model_executor/custom_op.py", 46, "forward"),
                _fw("vllm/model_executor/layers/layernorm.py", 194, "forward_cuda"))


def _strides(d: list[int]) -> list[int]:
    """Contiguous strides ([] for a scalar argument)."""
    out, step = [], 1
    for n in reversed(d):
        out.append(step)
        step *= n
    return out[::-1]


def _shapes(dims: list[list[int]], types: list[str]) -> str:
    body = orjson.dumps({"Input Dims": dims, "Input type": types,
                         "Input Strides": [_strides(d) if d else [] for d in dims],
                         "Concrete Inputs": [""] * len(dims)}).decode()
    return body[1:-1] + ","


def build_program(gpu_key: str, phase: str, layers: int, moe: bool, tp: int, plant: Plant,
                  dims: ModelDims, tokens: int, style: str = "vllm", attention: str = "fused",
                  seq: tuple[int, int, int] | None = None, sampling: str = "greedy") -> Program:
    """The ordered GPU activities of one step in `phase`, grouped into ops with CPU context.

    style "vllm" (any engine) or "hf" (Hugging Face generate(): transformers' files and frames,
    embedding indices and GEMM inputs shaped [batch, tokens per sequence, ...] from `seq` =
    (batch, tokens per sequence, KV length), lm_head inside the top-level model call; sampling
    "greedy" (argmax) or "sample" (do_sample: top-k, top-p (sort, softmax), softmax, multinomial)).
    attention "fused" (one attention kernel, or split-KV + combine in decode) or
    "decomposed" (HF "eager", GPT-2: Q.K^T batched GEMM, softmax, P.V batched GEMM)."""
    prof = sn.GPUS[gpu_key]
    table = sn.kernel_table(gpu_key)
    vendor = prof.vendor
    speed = prof.speed
    dphase = "prefill" if phase == "prefill" else "decode"

    def dur_us(role: str) -> float:
        dec, pre = sn.BASE_US[role]
        if phase == "decode":
            us = dec
        elif phase == "prefill":
            us = pre
        else:  # mixed: a decode batch plus a prefill chunk of about a third of a full prompt
            us = dec + 0.3 * pre
        return us * speed.get(sn.ROLE_GROUP.get(role, "light"), 1.0)

    def g(role: str, layer: int = -1, inner: str | None = None, name_role: str | None = None,
          scale: float = 1.0) -> Gpu:
        entry = table[name_role or role]
        name = entry[dphase] if isinstance(entry, dict) else entry
        us = dur_us(role) * scale
        if layer >= 0 and layer == plant.slow_layer:
            us *= plant.slow_factor
        return Gpu(role, name, sn.CATEGORY[name], "kernel", sn.launch_api(vendor, name), us * 1000.0,
                   layer, inner)

    def mem(kind: str, direction: str, us: float) -> Gpu:
        if kind == "memcpy":
            name = sn.MEMCPY_NAMES[(vendor, direction)]
            api = "hipMemcpyAsync" if vendor == "amd" else "cudaMemcpyAsync"
        else:
            name = sn.MEMSET_NAME
            api = "hipMemsetAsync" if vendor == "amd" else "cudaMemsetAsync"
        scale = 4.0 if phase == "prefill" else 1.0
        return Gpu(f"{kind}_{direction}", name, sn.CATEGORY[name], kind, api, us * scale * 1000.0)

    hf = style == "hf"
    T, H = tokens, dims.hidden
    bf = "c10::BFloat16"
    mfile = "vllm/model_executor/models/" + ("qwen3_moe.py" if moe else "llama.py")
    if hf:
        mfile = "transformers/models/" + ("qwen3_moe/modeling_qwen3_moe.py" if moe else "llama/modeling_llama.py")
    cls = "Qwen3Moe" if moe else "Llama"
    prep = (_fw("transformers/generation/utils.py", 3290, "prepare_inputs_for_generation") if hf
            else _fw("vllm/v1/worker/gpu_model_runner.py", 1033, "_prepare_inputs"))
    nb, ns, nkv = seq if seq is not None else (T, 1, 1)   # batch, tokens per sequence, KV length
    copy3 = (_js("aten::to"), _js("aten::_to_copy"), _js("aten::copy_"))
    pre = [
        Op((prep,), copy3, [mem("memcpy", "h2d", 2.5)], shapes=_shapes([[T]], ["long int"])),
        Op((prep,), copy3, [mem("memcpy", "h2d", 2.0)], shapes=_shapes([[T]], ["long int"])),
        Op((prep,), (_js("aten::zero_"), _js("aten::fill_")), [mem("memset", "dev", 1.5)],
           shapes=_shapes([[T]], ["int"])),
    ]
    if hf:   # nn.Embedding: (weight, indices [batch, tokens per sequence], padding_idx, ...)
        body: list[Op] = [Op((_mod("Embedding", 0), _fw("torch/nn/modules/sparse.py", 190, "forward")),
                             (_js("aten::embedding"), _js("aten::index_select")), [g("embed")],
                             shapes=_shapes([[dims.vocab, H], [nb, ns], [], [], []],
                                            [bf, "long int", "Scalar", "Scalar", "Scalar"]))]
        lin = lambda n, k: _shapes([[nb, ns, k], [n, k]], [bf, bf])  # noqa: E731
    else:
        body = [Op((_mod("VocabParallelEmbedding", 0),
                    _fw("vllm/model_executor/layers/vocab_parallel_embedding.py", 461, "forward_native")),
                   (_js("aten::embedding"), _js("aten::index_select")), [g("embed")],
                   shapes=_shapes([[dims.vocab, H], [T]], [bf, "long int"]))]
        # only the innermost op (aten::mm) records shapes here: the activation and the weight as mm
        # sees it, transposed to [k, n] (aten::linear's own inputs would be [T, k] and [n, k])
        lin = lambda n, k: _shapes([[T, k], [k, n]], [bf, bf])  # noqa: E731
    act_inner = _js("_C::silu_and_mul")
    layer_frames = []

    def unfused(roles: tuple[str, ...], frames: tuple[str, ...], layer: int, block: tuple[str, ...] = ()) -> list[Op]:
        """One eager aten kernel per op (Plant.unfused_ops)."""
        return [Op(frames, tuple(_js(o) for o in sn.EAGER_OPS[r][0]), [g(r, layer)], block=block,
                   shapes=_shapes([[T, H]], [bf])) for r in roles]
    qkv_n = (dims.heads + 2 * dims.kv_heads) * dims.head_dim // tp
    for i in range(layers):
        layer_frames.append((_mod(f"{cls}DecoderLayer", i), _fw(mfile, 318, "forward")))
        attn_block = (_mod(f"{cls}Attention", i), _fw(mfile, 200, "forward"))
        norm_in = (_mod("RMSNorm", 2 * i),) + _NORM_FRAMES
        norm_name = "_C::rms_norm" if i == 0 else "_C::fused_add_rms_norm"
        if plant.norm_gemm:
            body.append(Op(norm_in, (_js("vllm::fused_rms_norm_gemm"),), [g("norm_gemm", i)],
                           shapes=lin(qkv_n, H)))
        elif "norm" in plant.unfused_ops:   # HF's LlamaRMSNorm (the residual add ended the layer before)
            body += unfused(sn.EAGER_NORM, norm_in, i)
        else:
            body.append(Op(norm_in, (_js(norm_name),), [g("norm" if i == 0 else "add_norm", i)],
                           shapes=_shapes([[T, H]], [bf])))
        if not plant.norm_gemm:
            body.append(Op((_mod("QKVParallelLinear", i), _fw("vllm/model_executor/layers/linear.py", 557, "forward")),
                           _LINEAR, [g("gemm_qkv", i)], block=attn_block, shapes=lin(qkv_n, H)))
        if "rope" in plant.unfused_ops:
            body += unfused(sn.EAGER_ROPE, (_fw(mfile, 160, "apply_rotary_pos_emb"),), i, block=attn_block)
        else:
            body.append(Op((_mod("RotaryEmbedding", 0),
                            _fw("vllm/model_executor/layers/rotary_embedding/base.py", 170, "forward_cuda")),
                           (_js("_C::rotary_embedding"),), [g("rope", i)], block=attn_block,
                           shapes=_shapes([[T], [T, qkv_n]], ["long int", bf])))
        kv_inner = _js("_C_cache_ops::reshape_and_cache_flash")
        attn: list[Gpu] = [g("kv_write", i, kv_inner, scale=0.6 if plant.kv_split else 1.0)]
        if plant.kv_split:
            attn.append(g("kv_write", i, kv_inner, scale=0.6))
        if attention == "decomposed":
            # the cache update, then torch.matmul(q, k^T), softmax(float32), torch.matmul(p, v)
            eager = (_fw(mfile, 176, "eager_attention_forward"),)
            bh, hd = nb * dims.heads // tp, dims.head_dim
            bmm = (_js("aten::matmul"), _js("aten::bmm"))
            body.append(Op((_fw("transformers/cache_utils.py", 118, "update"),), (), attn, block=attn_block,
                           shapes=_shapes([[nb, dims.kv_heads // tp, ns, hd]] * 2, [bf, bf])))
            body.append(Op(eager, bmm, [g("attn_bmm_qk", i)], block=attn_block,
                           shapes=_shapes([[bh, ns, hd], [bh, hd, nkv]], [bf, bf])))
            if "attn" in plant.unfused_ops:   # HF eager: * scaling, + causal mask
                body += unfused(("eager_mul", "eager_add"), eager, i, block=attn_block)
            body.append(Op(eager, (_js("aten::softmax"), _js("aten::_softmax")), [g("attn_softmax", i)],
                           block=attn_block, shapes=_shapes([[nb, dims.heads // tp, ns, nkv], [], []],
                                                            ["float", "Scalar", "Scalar"])))
            if "attn" in plant.unfused_ops:   # softmax(float32).to(query.dtype)
                body += unfused(("eager_copy_bf16",), eager, i, block=attn_block)
            body.append(Op(eager, bmm, [g("attn_bmm_pv", i)], block=attn_block,
                           shapes=_shapes([[bh, ns, nkv], [bh, nkv, hd]], [bf, bf])))
        else:
            if phase in ("prefill", "mixed"):
                attn.append(g("attn_prefill", i))
            if phase in ("decode", "mixed"):
                attn.append(g("attn_decode", i))
                attn.append(g("attn_decode_reduce", i))
            body.append(Op((_mod("Attention", i), _fw("vllm/attention/layer.py", 290, "forward")),
                           (_js("vllm::unified_attention_with_output"),), attn, block=attn_block,
                           shapes=_shapes([[T, dims.heads * dims.head_dim // tp]], [bf])))
        body.append(Op((_mod("RowParallelLinear", 2 * i), _fw("vllm/model_executor/layers/linear.py", 1388, "forward")),
                       _LINEAR, [g("gemm_o", i)], block=attn_block, shapes=lin(H, dims.heads * dims.head_dim // tp)))
        ar = (_fw("vllm/distributed/communication_op.py", 12, "tensor_model_parallel_all_reduce"),)
        if tp > 1:
            body.append(Op(ar, (_js("vllm::all_reduce"),), [g("allreduce", i)], block=attn_block,
                           shapes=_shapes([[T, H]], [bf])))
        norm_post = (_mod("RMSNorm", 2 * i + 1),) + _NORM_FRAMES
        if plant.norm_quant == "fused":
            body.append(Op(norm_post, (_js("_C::fused_add_rms_norm_static_fp8_quant"),),
                           [g("add_norm_quant", i)], shapes=_shapes([[T, H]], [bf])))
        elif plant.norm_quant == "split":
            body.append(Op(norm_post, (_js("_C::fused_add_rms_norm"),),
                           [g("add_norm", i), g("quant", i, _js("_C::static_scaled_fp8_quant"))],
                           shapes=_shapes([[T, H]], [bf])))
        elif "norm" in plant.unfused_ops:
            body += unfused(("eager_add",), (_fw(mfile, 330, "forward"),), i)
            body += unfused(sn.EAGER_NORM, norm_post, i)
        else:
            body.append(Op(norm_post, (_js("_C::fused_add_rms_norm"),), [g("add_norm", i)],
                           shapes=_shapes([[T, H]], [bf])))
        inter = dims.intermediate // tp
        if moe:
            blk = (_mod(f"{cls}SparseMoeBlock", i), _fw(mfile, 141, "forward"))
            body.append(Op((_mod("ReplicatedLinear", i), _fw("vllm/model_executor/layers/linear.py", 320, "forward")),
                           _LINEAR, [g("gemm_router", i)], block=blk, shapes=lin(dims.experts, H)))
            experts = [g("moe_topk", i), g("moe_sort", i)]
            if plant.moe_swiglu:
                experts.append(g("moe_gemm_swiglu", i))
            else:
                experts += [g("moe_gemm1", i), g("act", i, act_inner)]
            experts.append(g("moe_gemm2", i))
            experts.append(g("moe_finalize", i))
            body.append(Op((_mod("FusedMoE", i), _fw("vllm/model_executor/layers/fused_moe/layer.py", 1760, "forward_cuda")),
                           (_js("vllm::moe_forward"),), experts, block=blk, shapes=_shapes([[T, H], [T, dims.experts]], [bf, bf])))
        else:
            blk = (_mod(f"{cls}MLP", i), _fw(mfile, 92, "forward"))
            body.append(Op((_mod("MergedColumnParallelLinear", i), _fw("vllm/model_executor/layers/linear.py", 557, "forward")),
                           _LINEAR, [g("gemm_gate_up", i)], block=blk, shapes=lin(2 * inter, H)))
            if "act" in plant.unfused_ops:
                body += unfused(sn.EAGER_ACT, (_fw(mfile, 94, "forward"),), i, block=blk)
            else:
                body.append(Op((_mod("SiluAndMul", i), _fw("vllm/model_executor/layers/activation.py", 84,
                                                              "forward_cuda")),
                               (act_inner,), [g("act", i)], block=blk, shapes=_shapes([[T, 2 * inter]], [bf])))
            body.append(Op((_mod("RowParallelLinear", 2 * i + 1), _fw("vllm/model_executor/layers/linear.py", 1388, "forward")),
                           _LINEAR, [g("gemm_down", i)], block=blk, shapes=lin(H, inter)))
        if tp > 1:
            body.append(Op(ar, (_js("vllm::all_reduce"),), [g("allreduce", i)], block=blk,
                           shapes=_shapes([[T, H]], [bf])))
        if "norm" in plant.unfused_ops:     # the residual add the next fused_add_rms_norm would do
            body += unfused(("eager_add",), (_fw(mfile, 332, "forward"),), i)
        if plant.residual_add:
            body.append(Op((_fw(mfile, 330, "forward"),), (_js("aten::add_"),), [g("residual_add", i)],
                           shapes=_shapes([[T, H], [T, H]], [bf, bf])))
    if "norm" in plant.unfused_ops:
        body += unfused(sn.EAGER_NORM, (_mod("RMSNorm", 2 * layers),) + _NORM_FRAMES, -1)
    else:
        body.append(Op((_mod("RMSNorm", 2 * layers),) + _NORM_FRAMES,
                       (_js("_C::fused_add_rms_norm" if layers else "_C::rms_norm"),),
                       [g("add_norm" if layers else "norm")], shapes=_shapes([[T, H]], [bf])))
    logits = (_fw("vllm/v1/worker/gpu_model_runner.py", 2251, "compute_logits"), _mod("LogitsProcessor", 0),
              _fw("vllm/model_executor/layers/logits_processor.py", 60, "forward"))
    sampler = (_mod("Sampler", 0), _fw("vllm/v1/sample/sampler.py", 65, "forward"))
    B = tokens if phase == "decode" else max(1, tokens // 256)
    post = [
        # vLLM computes logits for each sequence's last token only: B rows (HF for every position)
        Op(logits, _LINEAR, [g("gemm_lm_head")],
           shapes=lin(dims.vocab // tp, H) if hf else _shapes([[B, H], [H, dims.vocab // tp]], [bf, bf])),
        Op(sampler + (_fw("vllm/v1/sample/ops/topk_topp_sampler.py", 98, "forward_native"),),
           (_js("aten::softmax"), _js("aten::_softmax")), [g("softmax")], shapes=_shapes([[B, dims.vocab]], ["float"])),
        Op(sampler + (_fw("vllm/v1/sample/sampler.py", 129, "greedy_sample"),), (_js("aten::argmax"),),
           [g("argmax")], shapes=_shapes([[B, dims.vocab]], ["float"])),
        Op(sampler + (_fw("vllm/v1/sample/ops/topk_topp_sampler.py", 180, "apply_top_k_top_p"),), (_js("aten::topk"),),
           [g("topk")], shapes=_shapes([[B, dims.vocab]], ["float"])),
        Op(sampler + (_fw("vllm/v1/sample/ops/topk_topp_sampler.py", 186, "apply_top_k_top_p"),), (_js("aten::sort"),),
           [g("sort")], shapes=_shapes([[B, dims.vocab]], ["float"])),
        Op((_fw("vllm/v1/worker/gpu_model_runner.py", 2330, "_to_list"),), copy3, [mem("memcpy", "d2h", 2.0)],
           shapes=_shapes([[B, 1]], ["long int"])),
    ]
    if hf:
        # lm_head is LlamaForCausalLM's own Linear (after LlamaModel); generate() then picks the
        # next tokens greedily and asks the host whether every sequence has finished
        gen = "transformers/generation/utils.py"
        head = [Op((_mod("Linear", 7 * layers), _fw("torch/nn/modules/linear.py", 134, "forward")), _LINEAR,
                   [g("gemm_lm_head")], shapes=_shapes([[nb, 1, H], [dims.vocab // tp, H]], [bf, bf]))]
        lp = "transformers/generation/logits_process.py"
        scores = _shapes([[nb, dims.vocab]], ["float"])
        soft = (_js("aten::softmax"), _js("aten::_softmax"))
        if sampling == "sample":
            post = [Op((_fw(gen, 3330, "_sample"), _fw(lp, 560, "__call__")), (_js("aten::topk"),), [g("topk")],
                       shapes=scores),
                    Op((_fw(gen, 3330, "_sample"), _fw(lp, 620, "__call__")), (_js("aten::sort"),), [g("sort")],
                       shapes=scores),
                    Op((_fw(gen, 3330, "_sample"), _fw(lp, 621, "__call__")), soft, [g("softmax")], shapes=scores),
                    Op((_fw(gen, 3342, "_sample"),), soft, [g("softmax")], shapes=scores),
                    Op((_fw(gen, 3343, "_sample"),), (_js("aten::multinomial"),), [g("multinomial")],
                       shapes=scores)]
        else:
            post = [Op((_fw(gen, 3335, "_sample"),), (_js("aten::argmax"),), [g("argmax")], shapes=scores)]
        post += [Op((_fw(gen, 3360, "_sample"),), (_js("aten::item"), _js("aten::_local_scalar_dense")),
                   [mem("memcpy", "d2h", 2.0)], shapes=_shapes([[]], ["bool"]))]
        return _finish(Program(
            phase, pre, body, post, layer_frames,
            (_fw("torch/nn/modules/module.py", 1784, "_call_impl"), _mod(f"{cls}ForCausalLM", 0),
             _fw(mfile, 459, "forward"), _mod(f"{cls}Model", 0), _fw(mfile, 371, "forward")),
            head=head, root_frames=(_fw(gen, 2539, "generate"), _fw(gen, 3251, "_sample")), shapes_everywhere=True,
            graph_frames=(_fw("torch/_inductor/cudagraph_trees.py", 1959, "run"),
                          _fw("torch/_inductor/cudagraph_trees.py", 2100, "execute_node"))), layers)
    return _finish(Program(phase, pre, body, post, layer_frames,
                           (_fw("vllm/v1/worker/gpu_model_runner.py", 2026, "_model_forward"),
                            _mod(f"{cls}ForCausalLM", 0), _fw(mfile, 580, "forward"), _mod(f"{cls}Model", 0),
                            _fw(mfile, 398, "forward"))), layers)


_VLLM_ROOT = (_fw("vllm/v1/engine/core.py", 284, "step"), _fw("vllm/v1/worker/gpu_worker.py", 447, "execute_model"),
              _fw("torch/utils/_contextlib.py", 120, "decorate_context"),
              _fw("vllm/v1/worker/gpu_model_runner.py", 2205, "execute_model"))
_VLLM_GRAPH = (_fw("vllm/compilation/cuda_graph.py", 225, "__call__"), _fw("torch/cuda/graphs.py", 88, "replay"))


def _finish(prog: Program, layers: int) -> Program:
    prog.root_frames = prog.root_frames or _VLLM_ROOT
    prog.graph_frames = prog.graph_frames or _VLLM_GRAPH
    acts = prog.activities()
    in_layers = [a for a in acts if a.layer >= 0]
    prog.per_layer = len(in_layers) // layers if layers else 0
    first = next((k for k, a in enumerate(acts) if a.layer == 0), len(acts))
    prog.pre_count = first
    prog.post_count = len(acts) - first - len(in_layers)
    return prog


# --- writing ----------------------------------------------------------------------------------

def _open_out(path: str, gz: bool):
    raw = open(path, "wb")
    if not gz:
        return raw, raw
    try:
        from isal import igzip

        # filename="" and mtime=0 keep the gzip header free of the path and the clock: same bytes
        return igzip.IGzipFile(filename="", mode="wb", fileobj=raw, compresslevel=1, mtime=0), raw
    except ImportError:  # pragma: no cover - isal is a dependency, gzip is the fallback
        import gzip

        return gzip.GzipFile(filename="", mode="wb", fileobj=raw, compresslevel=3, mtime=0), raw


class TraceWriter:
    """Streams one synthetic trace. `run()` returns the statistics / per-step truth."""

    FLUSH_EVENTS = 8192

    def __init__(self, path: str, cfg: Any, programs: dict[str, Program], phases: list[str],
                 step_names, gz: bool, containers: list[int] | None = None) -> None:
        self.path = path
        self.containers = containers     # passes per ProfilerStep container (HF generate() calls)
        self.container_records: list[dict[str, Any]] = []
        self.first_ns: list[int] = []    # each step's first GPU activity start
        self.shapes_everywhere = any(p.shapes_everywhere for p in programs.values())
        self.cfg = cfg
        self.programs = programs
        self.phases = phases
        self.step_names = step_names
        # SGLang annotates each step twice: the engine's vLLM-style name outside the scheduler's
        self.outer_names = step_namer("vllm", cfg.batch, cfg.prompt_len, cfg.prefill_requests)
        self.gz = gz
        prof = sn.GPUS[cfg.gpu]
        self.prof = prof
        self.amd = prof.vendor == "amd"
        self.rng = np.random.default_rng([cfg.seed, cfg.salt, 0x5EED])
        self.pid = 800 + int(self.rng.integers(0, 60000))
        self.dev = cfg.device
        self.stream = 0 if self.amd else 7
        self.q = '"' if cfg.strings_numbers else ""
        self.tf = self._tf_float if cfg.float_ts else self._tf_int
        self.df = self._df_float if cfg.float_ts else self._tf_int
        # ns since boot; real traces sit around 6.5e12 µs (days of uptime), where a double still
        # resolves the ns digits of "ts"
        self.t = (6_000_000_000_000 + int(self.rng.integers(0, 900_000_000_000))) * 1000
        self.t0 = self.t
        self.g = self.t                  # GPU stream free at
        self.ext = 1000 + int(self.rng.integers(0, 500_000))
        self.corr = 5000 + int(self.rng.integers(0, 500_000))
        self.pyid = 100 + int(self.rng.integers(0, 1_000_000))
        self.evidx = 0
        self.root_ids = (self.pyid, self.pyid + 1)
        self.pyid += 2
        self.gpu_end: list[int] = []
        self.buf: list[str] = []
        self.sep = ""
        self.bytes = 0
        self.events = 0
        self.counts = {"kernel": 0, "memcpy": 0, "memset": 0, "launch": 0}
        self.name_counts: dict[str, int] = {}
        self.steps: list[dict[str, Any]] = []
        self._starts: list[int] = []
        self._frames: list[tuple[str, int, int, int]] = []   # open python frames: name, ts, id, parent
        for prog in programs.values():
            for a in prog.activities():
                self._prepare(a)

    # -- formatting ------------------------------------------------------------------------
    @staticmethod
    def _tf_float(t: int) -> str:
        """ns -> µs with ns digits. Timestamps only: needs t >= 1000 (string slicing is the
        fastest formatting in CPython, and formatting is a third of the generation time)."""
        s = str(t)
        return f"{s[:-3]}.{s[-3:]}"

    @staticmethod
    def _df_float(d: int) -> str:
        return "%d.%03d" % divmod(d, 1000)

    @staticmethod
    def _tf_int(t: int) -> str:
        return str(t // 1000)

    def _prepare(self, a: Gpu) -> None:
        """Precompute the static JSON fragments of an activity's launch and GPU events."""
        if a.name_js:
            return
        q = self.q
        a.name_js = _js(a.name)
        h = zlib_hash(a.name)
        if a.kind == "kernel":
            grid = [max(1, (h % 4096) + 1), 1, 1]
            block = [256 if self.amd else 128 * (1 + h % 3), 1, 1]
            gb = f'"grid":{orjson.dumps(grid).decode()},"block":{orjson.dumps(block).decode()}'
            if self.amd:
                cid = {"hipLaunchKernel": 107, "hipExtModuleLaunchKernel": 65, "hipModuleLaunchKernel": 58}[a.api]
                a.launch_head = '"args":{"External id":' + q
                a.launch_tail = f'{q},"kernel":{a.name_js},"cid":{cid},"correlation":{q}'
                a.k_tail = f'{q},"kind":"Dispatch Kernel",{gb}}}}}'
                a.k_graph_tail = f'{q},"kind":"Dispatch Task"}}}}'
                a.launch_lo, a.launch_span = (7000, 2500) if cid == 65 else (5000, 3000)
            else:
                cbid = {"cudaLaunchKernel": 211, "cudaLaunchKernelExC": 430, "cuLaunchKernelEx": 652}[a.api]
                if a.api == "cuLaunchKernelEx":
                    a.launch_cat = "cuda_driver"
                a.launch_head = '"args":{"External id":' + q
                a.launch_tail = f'{q},"cbid":{cbid},"correlation":{q}'
                regs = 32 + 8 * (h % 24)
                smem = (h % 8) * 16384
                bps = round(grid[0] / self.prof.sms, 6)
                nv = (f'"registers per thread":{regs},"shared memory":{smem},"blocks per SM":{bps},'
                      f'"warps per SM":{round(bps * block[0] / 32, 6)},{gb},"est. achieved occupancy %":{h % 100}}}}}')
                a.k_tail = f'{q},{nv}'
                a.k_graph_tail = a.k_tail
                a.launch_lo, a.launch_span = (3500, 2500) if cbid == 211 else (5000, 4000)
        else:
            nbytes = 4 * (64 + h % 8192)
            if self.amd:
                cid = 134 if a.kind == "memcpy" else 129
                kind = {"memcpy_h2d": "1", "memcpy_d2h": "2"}.get(a.role, "0")
                a.launch_head = '"args":{"External id":' + q
                a.launch_tail = (f'{q},"cid":{cid},"correlation":{q}')
                a.launch_extra = f',"bytes":"{nbytes}","kind":"{kind}"'
                akind = {"memcpy_h2d": "HtoD", "memcpy_d2h": "DtoH"}.get(a.role, "")
                a.k_tail = (f'{q},"kind":"{akind}","bytes":{nbytes}' if akind else f'{q},"bytes":{nbytes}')
            else:
                cbid = 41 if a.kind == "memcpy" else 51
                a.launch_head = '"args":{"External id":' + q
                a.launch_tail = f'{q},"cbid":{cbid},"correlation":{q}'
                a.k_tail = f'{q},"bytes":{nbytes}'
            a.nbytes = nbytes
            a.launch_lo, a.launch_span = (6000, 6000)

    # -- output ----------------------------------------------------------------------------
    def _flush(self) -> None:
        if not self.buf:
            return
        data = (self.sep + ",\n".join(self.buf)).encode()
        self.sep = ",\n"
        self.out.write(data)
        self.bytes += len(data)
        self.events += len(self.buf)
        self.buf.clear()

    def _header(self) -> bytes:
        cfg, prof = self.cfg, self.prof
        name = "" if cfg.empty_device_name else prof.name
        devs = []
        for i in range(max(8, cfg.tp)):
            d: dict[str, Any] = {"id": i, "name": name, "totalGlobalMem": prof.mem, "computeMajor": prof.major,
                                 "computeMinor": prof.minor, "maxThreadsPerBlock": 1024,
                                 "maxThreadsPerMultiprocessor": 2048, "regsPerBlock": 65536,
                                 "warpSize": 64 if self.amd else 32,
                                 "sharedMemPerBlock": 65536 if self.amd else 49152, "numSms": prof.sms}
            if self.amd:
                d["maxSharedMemoryPerMultiProcessor"] = 65536
            else:
                d.update(regsPerMultiprocessor=65536, sharedMemPerBlockOptin=232448,
                         sharedMemPerMultiprocessor=233472)
            devs.append(d)
        head: dict[str, Any] = {"schemaVersion": 1, "deviceProperties": devs}
        if self.amd:
            head.update(roctracer_version=4.1, with_flops=1)
        else:
            head.update(cupti_version=26, cuda_runtime_version=12080, cuda_driver_version=12090)
        head["distributedInfo"] = {"backend": "nccl", "rank": 0, "world_size": cfg.tp}
        head["record_shapes"] = int(cfg.record_shapes)
        if self.amd:
            head.update(hip_runtime_version=60443483, profile_memory=0, hip_driver_version=60443483)
        head["with_stack"] = int(cfg.with_stack)
        head["trace_id"] = f"{int(self.rng.integers(0, 2**63)):016X}{cfg.seed & 0xFFFFFFFF:08X}SYNTH000"[:32]
        head["displayTimeUnit"] = "ms"
        head["baseTimeNanoseconds"] = 1751410836000000000
        body = orjson.dumps(head).decode()
        return (body[:-1] + ',\n"traceEvents":[\n').encode()

    # -- the run ---------------------------------------------------------------------------
    def run(self) -> dict[str, Any]:
        cfg = self.cfg
        t_start = time.perf_counter()
        self.out, self.raw = _open_out(self.path, self.gz)
        try:
            head = self._header()
            self.out.write(head)
            self.bytes += len(head)
            k = 0
            n_cfg = len(self.phases)
            sizes = self.containers or []
            c_idx, c_left, c_open = 0, (sizes[0] if sizes else 0), None
            while True:
                if k < n_cfg:
                    phase = self.phases[k]
                elif cfg.target_bytes and self._size() < cfg.target_bytes:
                    phase = "decode"
                else:
                    break
                if sizes and c_open is None:
                    c_open = self._container_start()
                self._step(k, phase)
                if sizes:
                    self.steps[-1]["container"] = c_idx
                    c_left -= 1
                    if c_left == 0 and c_idx + 1 < len(sizes):
                        self._container_end(c_open, c_idx)
                        c_open, c_idx, c_left = None, c_idx + 1, sizes[c_idx + 1]
                k += 1
                if len(self.buf) >= self.FLUSH_EVENTS or cfg.target_bytes:
                    self._flush()
            if c_open is not None:
                self._container_end(c_open, c_idx)
            self._trailer()
            self._flush()
            tail = f'\n],\n"traceName":"/tmp/kerneldiff_synth_{cfg.gpu}_{cfg.seed}.json"}}\n'.encode()
            self.out.write(tail)
            self.bytes += len(tail)
        finally:
            if self.out is not self.raw:
                self.out.close()
            self.raw.close()
        secs = time.perf_counter() - t_start
        size = os.path.getsize(self.path)
        return {"path": self.path, "bytes": size, "uncompressed_bytes": self.bytes, "events": self.events,
                "seconds": secs, "mb_per_s": self.bytes / 1e6 / max(secs, 1e-9),
                "kernels": self.counts["kernel"], "memcpys": self.counts["memcpy"],
                "memsets": self.counts["memset"], "launches": self.counts["launch"],
                "name_counts": self.name_counts, "steps": self.steps, "containers": self.container_records}

    # -- ProfilerStep containers (a torch.profiler schedule: one generate() call per step) ----
    def _container_start(self) -> tuple[int, int, int, int]:
        """(CPU start, External id, Ev Idx, index of its first step record)."""
        self.t += 500_000 + int(self.rng.integers(0, 500_000))   # between two generate() calls
        out = (self.t, self.ext, self.evidx, len(self.steps))
        self.ext += 1
        self.evidx += 1
        self.t += 5000
        return out

    def _container_end(self, opened: tuple[int, int, int, int], index: int) -> None:
        """generate() returns after the GPU drained its queue; then prof.step() ends the step."""
        t0, ext, idx, first_step = opened
        pid, tf, q = self.pid, self.tf, self.q
        ap = self.buf.append
        last = max(self.gpu_end[first_step:], default=self.t)
        if last > self.t:
            corr = self.corr
            self.corr += 1
            wait = last - self.t + 2000
            name, args = (("hipDeviceSynchronize", f'"cid":68,"correlation":{q}{corr}{q}') if self.amd else
                          ("cudaDeviceSynchronize", f'"cbid":165,"correlation":{q}{corr}{q}'))
            ap(f'{{"ph":"X","cat":"cuda_runtime","name":"{name}","pid":{pid},"tid":{pid},"ts":{tf(self.t)},'
               f'"dur":{self.df(wait)},"args":{{{args}}}}}')
            ap(f'{{"ph":"f","id":{corr},"pid":{pid},"tid":{pid},"ts":{tf(self.t)},"cat":"ac2g","name":"ac2g","bp":"e"}}')
            self.t += wait
        self.t += 20_000
        name_js = _js(f"ProfilerStep#{CONTAINER_FIRST + index}")
        ap(f'{{"ph":"X","cat":"user_annotation","name":{name_js},"pid":{pid},"tid":{pid},"ts":{tf(t0)},'
           f'"dur":{self.df(self.t - t0)},"args":{{"External id":{ext},"Record function id":0,"Ev Idx":{idx}}}}}')
        recs = self.steps[first_step:]
        if self.cfg.gpu_annotations and recs:
            g0 = min(self.first_ns[first_step:])
            g1 = max(self.gpu_end[first_step:])
            ap(f'{{"ph":"X","cat":"gpu_user_annotation","name":{name_js},"pid":{self.dev},"tid":{self.stream},'
               f'"ts":{tf(g0)},"dur":{self.df(g1 - g0)},"args":{{"External id":{ext}}}}}')
        self.container_records.append({"name": f"ProfilerStep#{CONTAINER_FIRST + index}",
                                       "steps": [r["index"] for r in recs],
                                       "cpu_ts_us": t0 / 1000, "cpu_end_us": self.t / 1000})
        self.t += 1000

    def _size(self) -> int:
        """Bytes on disk so far (the buffer is flushed after every step when sizing)."""
        return self.bytes if self.out is self.raw else self.raw.tell()

    def _trailer(self) -> None:
        """Long-lived root python frames and process/thread metadata (known only at the end)."""
        ap = self.buf.append
        pid, tf = self.pid, self.tf
        t0 = self.t0 - 20_000
        t1 = max(self.t, self.g) + 20_000
        if self.cfg.with_stack:
            r0, r1 = self.root_ids
            for name, pyid, parent in (("vllm/v1/engine/core.py(701): run_engine_core", r0, "null"),
                                       ("vllm/v1/engine/core.py(728): run_busy_loop", r1, r0)):
                ap(f'{{"ph":"X","cat":"python_function","name":{_js(name)},"pid":{pid},"tid":{pid},'
                   f'"ts":{tf(t0)},"dur":{self.df(t1 - t0)},"args":{{"Python parent id":{parent},"Python id":{pyid},'
                   f'"Ev Idx":{self.evidx}}}}}')
                self.evidx += 1
        ts = tf(self.t0)
        for p, label, sort in ((pid, "CPU", pid), (self.dev, f"GPU {self.dev}", 5000000 + self.dev)):
            ap(f'{{"name":"process_name","ph":"M","ts":{ts},"pid":{p},"tid":0,"args":{{"name":"python3"}}}}')
            ap(f'{{"name":"process_labels","ph":"M","ts":{ts},"pid":{p},"tid":0,"args":{{"labels":"{label}"}}}}')
            ap(f'{{"name":"process_sort_index","ph":"M","ts":{ts},"pid":{p},"tid":0,"args":{{"sort_index":{sort}}}}}')
        ap(f'{{"name":"thread_name","ph":"M","ts":{ts},"pid":{pid},"tid":{pid},"args":{{"name":"thread {pid} (python3)"}}}}')
        ap(f'{{"name":"thread_name","ph":"M","ts":{ts},"pid":{self.dev},"tid":{self.stream},'
           f'"args":{{"name":"stream {self.stream} "}}}}')

    def _step(self, k: int, phase: str) -> None:
        cfg = self.cfg
        prog = self.programs[phase]
        graph = cfg.graph and phase == "decode"
        acts = prog.activities()
        n = len(acts)
        rng = self.rng
        base = np.fromiter((a.base_ns for a in acts), dtype=np.float64, count=n)
        durs = np.maximum(base * np.exp(cfg.noise * rng.standard_normal(n)), 500.0).astype(np.int64).tolist()
        self._dur = iter(durs).__next__
        # CPU jitter draws: an op with deep frames and an inner cpu op takes ~25 per activity
        self._u = iter(rng.random(48 * n + 256).tolist()).__next__
        u = self._u
        ap = self.buf.append
        pid, tf, q = self.pid, self.tf, self.q
        sync = "hipEventSynchronize" if self.amd else "cudaEventSynchronize"

        # scheduler gap, then wait until the GPU has finished step k-2
        self.t += 120_000 + int(u() * 200_000)
        if k >= 2 and self.gpu_end[k - 2] > self.t:
            wait = self.gpu_end[k - 2] - self.t + 3000
            corr = self.corr
            self.corr += 1
            args = f'"cid":60,"correlation":{q}{corr}{q}' if self.amd else f'"cbid":126,"correlation":{q}{corr}{q}'
            ap(f'{{"ph":"X","cat":"cuda_runtime","name":"{sync}","pid":{pid},"tid":{pid},"ts":{tf(self.t)},'
               f'"dur":{self.df(wait)},"args":{{{args}}}}}')
            ap(f'{{"ph":"f","id":{corr},"pid":{pid},"tid":{pid},"ts":{tf(self.t)},"cat":"ac2g","name":"ac2g","bp":"e"}}')
            self.t += wait + 1000
        self._frames.clear()
        stk = cfg.with_stack
        if stk:
            for f in prog.root_frames:
                self._open(f)
        ann_ts = self.t
        ann_ext = self.ext
        self.ext += 1
        ann_idx = self.evidx
        self.evidx += 1
        self.t += 3000 + int(u() * 4000)
        self._cur = {"kernel": 0, "memcpy": 0, "memset": 0, "first": None, "last": 0}
        for op in prog.pre:
            self._op(op)
        if stk:
            for f in prog.model_frames[:1]:
                self._open(f)
        if graph:
            self._graph(prog)
        else:
            if stk:
                for f in prog.model_frames[1:]:
                    self._open(f)
            cur_layer = -2
            cur_block: tuple[str, ...] = ()
            for op in prog.body:
                lay = op.gpu[0].layer
                if lay != cur_layer:
                    if stk:
                        for _ in cur_block:
                            self._close()
                        cur_block = ()
                        if cur_layer >= 0:
                            for _ in prog.layer_frames[cur_layer]:
                                self._close()
                        if lay >= 0:
                            for f in prog.layer_frames[lay]:
                                self._open(f)
                    cur_layer = lay
                if stk and op.block != cur_block:
                    for _ in cur_block:
                        self._close()
                    for f in op.block:
                        self._open(f)
                    cur_block = op.block
                self._op(op)
                self.t += 1000 + int(u() * 2500)
            if stk:
                for _ in cur_block:
                    self._close()
                if cur_layer >= 0:
                    for _ in prog.layer_frames[cur_layer]:
                        self._close()
                for _ in prog.model_frames[3:]:
                    self._close()     # the inner model (LlamaModel)
            for op in prog.head:      # the top-level model's own layers (HF lm_head)
                self._op(op)
                self.t += 1000 + int(u() * 2500)
            if stk:
                for _ in prog.model_frames[1:3]:
                    self._close()     # the top-level model (LlamaForCausalLM)
        if stk:
            self._close()  # _model_forward
        for op in prog.post:
            self._op(op)
        if cfg.sync_every and (k + 1) % cfg.sync_every == 0 and self._cur["last"] > self.t:
            # the scheduler needs the sampled tokens now: block until the GPU drained the queue
            corr = self.corr
            self.corr += 1
            wait = self._cur["last"] - self.t + 2000
            name, args = (("hipStreamSynchronize", f'"cid":77,"correlation":{q}{corr}{q}') if self.amd else
                          ("cudaStreamSynchronize", f'"cbid":131,"correlation":{q}{corr}{q}'))
            ap(f'{{"ph":"X","cat":"cuda_runtime","name":"{name}","pid":{pid},"tid":{pid},"ts":{tf(self.t)},'
               f'"dur":{self.df(wait)},"args":{{{args}}}}}')
            ap(f'{{"ph":"f","id":{corr},"pid":{pid},"tid":{pid},"ts":{tf(self.t)},"cat":"ac2g","name":"ac2g","bp":"e"}}')
            self.t += wait
        self.t += 2000 + int(u() * 3000)
        ann_end = self.t
        style = cfg.annotation_style
        # (name, CPU start, CPU end, External id, Ev Idx) of each annotation of this step: none in
        # HF generate() (its ProfilerStep wraps many passes: see run()); SGLang's two of one step
        # (the engine's `execute_…` and the scheduler's `step[…]` just inside it)
        anns = [] if style == "hf-generate" else [(self.step_names(k, phase), ann_ts, ann_end, ann_ext, ann_idx)]
        if style == "sglang-double":
            anns.insert(0, (self.outer_names(k, phase), ann_ts - 20_000 - int(u() * 60_000), ann_end + 1500,
                            self.ext, self.evidx))
            self.ext += 1
            self.evidx += 1
        for text, a0, a1, a_ext, a_idx in anns:
            ap(f'{{"ph":"X","cat":"user_annotation","name":{_js(text)},"pid":{pid},"tid":{pid},"ts":{tf(a0)},'
               f'"dur":{self.df(a1 - a0)},"args":{{"External id":{a_ext},"Record function id":0,"Ev Idx":{a_idx}}}}}')
        if stk:
            while self._frames:
                self._close()
        self.t += 1000
        cur = self._cur
        first, last = cur["first"], cur["last"]
        self.first_ns.append(first if first is not None else last)
        if cfg.gpu_annotations and first is not None:
            for text, _, _, a_ext, _ in anns:
                ap(f'{{"ph":"X","cat":"gpu_user_annotation","name":{_js(text)},"pid":{self.dev},"tid":{self.stream},'
                   f'"ts":{tf(first)},"dur":{self.df(last - first)},"args":{{"External id":{a_ext}}}}}')
        self.gpu_end.append(max(last, self.gpu_end[-1] if self.gpu_end else 0))
        self.steps.append({"index": k, "phase": phase, "name": self.step_names(k, phase), "graph": graph,
                           "cpu_ts_us": ann_ts / 1000, "cpu_end_us": ann_end / 1000,
                           "gpu_first_us": (first or 0) / 1000, "gpu_end_us": last / 1000,
                           "kernels": cur["kernel"], "memcpys": cur["memcpy"], "memsets": cur["memset"],
                           "lagged": self._count_lagged(ann_end)})

    def _count_lagged(self, ann_end: int) -> int:
        """GPU activities of this step that start after its CPU annotation ended."""
        starts = self._starts
        self._starts = []
        return sum(1 for s in starts if s > ann_end)

    # -- python frames ---------------------------------------------------------------------
    def _open(self, name_js: str) -> None:
        parent = self._frames[-1][2] if self._frames else self.root_ids[1]
        self._frames.append((name_js, self.t, self.pyid, parent))
        self.pyid += 1
        self.t += 600 + int(self._u() * 900)

    def _close(self) -> None:
        name_js, ts, pyid, parent = self._frames.pop()
        self.t += 300 + int(self._u() * 500)
        tf, pid = self.tf, self.pid
        self.buf.append(f'{{"ph":"X","cat":"python_function","name":{name_js},"pid":{pid},"tid":{pid},'
                        f'"ts":{tf(ts)},"dur":{self.df(self.t - ts)},"args":{{"Python parent id":{parent},'
                        f'"Python id":{pyid},"Ev Idx":{self.evidx}}}}}')
        self.evidx += 1

    # -- cpu ops and launches --------------------------------------------------------------
    def _cpu_op(self, name_js: str, ts: int, ext: int, idx: int, shapes: str) -> None:
        tf, pid = self.tf, self.pid
        self.buf.append(f'{{"ph":"X","cat":"cpu_op","name":{name_js},"pid":{pid},"tid":{pid},"ts":{tf(ts)},'
                        f'"dur":{self.df(self.t - ts)},"args":{{"External id":{ext},"Record function id":0,{shapes}'
                        f'"Ev Idx":{idx}}}}}')

    def _op(self, op: Op) -> None:
        u = self._u
        stk = self.cfg.with_stack
        shapes_on = self.cfg.record_shapes
        if stk:
            for f in op.frames:
                self._open(f)
        opened: list[tuple[str, int, int, int]] = []
        for name_js in op.cpu:
            opened.append((name_js, self.t, self.ext, self.evidx))
            self.ext += 1
            self.evidx += 1
            self.t += 1200 + int(u() * 2500)
        ext = opened[-1][2] if opened else -1
        for a in op.gpu:
            if a.inner is not None:
                its, iext, iidx = self.t, self.ext, self.evidx
                self.ext += 1
                self.evidx += 1
                self.t += 800 + int(u() * 1500)
                self._launch(a, iext)
                self.t += 500 + int(u() * 800)
                self._cpu_op(a.inner, its, iext, iidx, op.shapes if shapes_on and self.shapes_everywhere else "")
            else:
                self._launch(a, ext)
            self.t += 400 + int(u() * 1200)
        for j in range(len(opened) - 1, -1, -1):
            name_js, ts, e, idx = opened[j]
            self.t += 300 + int(u() * 700)
            self._cpu_op(name_js, ts, e, idx, op.shapes if (shapes_on and (self.shapes_everywhere or
                                                                            j == len(opened) - 1)) else "")
        if stk:
            for _ in op.frames:
                self._close()

    def _launch(self, a: Gpu, ext: int) -> None:
        """Eager launch of one activity: runtime event, flow start, GPU event, flow end."""
        u, tf, q, pid = self._u, self.tf, self.q, self.pid
        ap = self.buf.append
        t = self.t
        L = a.launch_lo + int(u() * a.launch_span)
        corr = self.corr
        self.corr += 1
        extra = a.launch_extra
        ts = tf(t)
        ap(f'{{"ph":"X","cat":"{a.launch_cat}","name":"{a.api}","pid":{pid},"tid":{pid},"ts":{ts},'
           f'"dur":{self.df(L)},{a.launch_head}{ext}{a.launch_tail}{corr}{q}{extra}}}}}')
        ap(f'{{"ph":"s","id":{corr},"pid":{pid},"tid":{pid},"ts":{ts},"cat":"ac2g","name":"ac2g"}}')
        latency = 2500 + int(u() * 3500)
        gap = 700 + int(u() * 1500) if self.amd else 500 + int(u() * 900)
        start = max(self.g + gap, t + latency)
        self._gpu_event(a, start, corr, ext, graph=False)
        self.t = t + L
        self.counts["launch"] += 1

    def _gpu_event(self, a: Gpu, start: int, corr: int, ext: int, graph: bool, node: int = 0) -> None:
        tf, q = self.tf, self.q
        ap = self.buf.append
        dur = self._dur()
        dev, st = self.dev, self.stream
        if a.kind == "kernel":
            cat = "kernel"
            if graph:
                if self.amd:
                    args = f'"args":{{"device":{q}{dev}{q},"stream":{q}{st}{q},"correlation":{q}{corr}{a.k_graph_tail}'
                else:
                    args = (f'"args":{{"queued":0,"device":{q}{dev}{q},"context":1,"stream":{q}{st}{q},'
                            f'"correlation":{q}{corr}{q},"graph node id":{node}{a.k_graph_tail[len(q):]}')
            elif self.amd:
                xid = f'"External id":{q}{ext}{q},' if self.cfg.kernel_external_ids else ""
                args = f'"args":{{{xid}"device":{q}{dev}{q},"stream":{q}{st}{q},"correlation":{q}{corr}{a.k_tail}'
            else:
                xid = f'"External id":{q}{ext}{q},' if self.cfg.kernel_external_ids else ""
                args = (f'"args":{{{xid}"queued":0,"device":{q}{dev}{q},"context":1,"stream":{q}{st}{q},'
                        f'"correlation":{q}{corr}{a.k_tail}')
        else:
            cat = "gpu_memcpy" if a.kind == "memcpy" else "gpu_memset"
            nbytes = a.nbytes
            bw = round(nbytes / max(dur, 1), 6)  # bytes/ns == GB/s
            ctx = "" if self.amd else '"context":1,'
            args = (f'"args":{{"External id":{q}{ext}{q},"device":{q}{dev}{q},{ctx}"stream":{q}{st}{q},'
                    f'"correlation":{q}{corr}{a.k_tail},"memory bandwidth (GB/s)":{bw}}}}}')
        ts = tf(start)
        ap(f'{{"ph":"X","cat":"{cat}","name":{a.name_js},"pid":{dev},"tid":{st},"ts":{ts},'
           f'"dur":{self.df(dur)},{args}')
        ap(f'{{"ph":"f","id":{corr},"pid":{dev},"tid":{st},"ts":{ts},"cat":"ac2g","name":"ac2g","bp":"e"}}')
        self.g = start + dur
        cur = self._cur
        cur[a.kind] += 1
        if cur["first"] is None:
            cur["first"] = start
        cur["last"] = start + dur
        self._starts.append(start)
        self.counts[a.kind] += 1
        nc = self.name_counts
        nc[a.name] = nc.get(a.name, 0) + 1

    def _graph(self, prog: Program) -> None:
        """Replay the captured body (and head): one graph launch; every kernel carries its
        correlation. No module call or operator runs on the CPU."""
        u, tf, q, pid = self._u, self.tf, self.q, self.pid
        ap = self.buf.append
        stk = self.cfg.with_stack
        if stk:
            for f in prog.graph_frames:
                self._open(f)
        t = self.t
        corr = self.corr
        self.corr += 1
        # hipGraphLaunch blocks for a long time in real ROCm traces (~0.5 ms); cudaGraphLaunch is cheap
        L = (150_000 + int(u() * 350_000)) if self.amd else (15_000 + int(u() * 25_000))
        api, cat, args = (("hipGraphLaunch", "cuda_runtime", f'"cid":215,"correlation":{q}{corr}{q}') if self.amd
                          else ("cudaGraphLaunch", "cuda_runtime", f'"cbid":311,"correlation":{q}{corr}{q}'))
        ap(f'{{"ph":"X","cat":"{cat}","name":"{api}","pid":{pid},"tid":{pid},"ts":{tf(t)},"dur":{self.df(L)},'
           f'"args":{{{args}}}}}')
        ap(f'{{"ph":"s","id":{corr},"pid":{pid},"tid":{pid},"ts":{tf(t)},"cat":"ac2g","name":"ac2g"}}')
        self.counts["launch"] += 1
        start_min = t + 8000 + int(u() * 6000)
        node = 0
        for op in prog.body + prog.head:
            for a in op.gpu:
                gap = 300 + int(u() * 700)
                start = max(self.g + gap, start_min)
                self._gpu_event(a, start, corr, -1, graph=True, node=node)
                node += 1
        self.t = t + L + 1000
        if stk:
            for _ in prog.graph_frames:
                self._close()


def zlib_hash(s: str) -> int:
    """A stable small hash (Python's hash() is salted per process)."""
    return zlib.crc32(s.encode())


def phase_list(steps: int, prefill_steps: int, mixed_steps: int) -> list[str]:
    out = []
    for k in range(steps):
        if k < prefill_steps:
            out.append("prefill")
        elif k < prefill_steps + mixed_steps:
            out.append("mixed")
        else:
            out.append("decode")
    return out


def step_namer(style: str, batch: int, prompt_len: int, prefill_reqs: int, first_step: int = 0):
    """Annotation text per (step index, phase) in the given style."""

    def name(k: int, phase: str) -> str:
        ctx_reqs = prefill_reqs if phase == "prefill" else (1 if phase == "mixed" else 0)
        ctx_tok = ctx_reqs * (prompt_len if phase == "prefill" else prompt_len // 2)
        gen = 0 if phase == "prefill" else batch
        kv = gen * (prompt_len + k)  # every decode request has a prompt plus k generated tokens
        if style == "vllm":
            c_sq = ctx_reqs * (prompt_len if phase == "prefill" else prompt_len // 2) ** 2
            return (f"execute_{ctx_reqs + gen}_context_{ctx_reqs}(sq{ctx_tok}sk{ctx_tok}sqsq{c_sq}sqsk{c_sq})"
                    f"_generation_{gen}(sq{gen}sk{kv}sqsq{gen}sqsk{kv})")
        if style == "vllm-old":
            return (f"execute_context_{ctx_reqs}({ctx_tok}_{ctx_tok * ctx_tok})"
                    f"_generation_{gen}({gen})")
        if style in ("sglang", "sglang-double"):   # -double: the inner one (the outer is "vllm")
            if phase == "decode":
                return f"step[DECODE bs={gen}]"
            if phase == "prefill":
                return f"step[EXTEND bs={ctx_reqs} toks={ctx_tok}]"
            return f"step[MIXED bs={ctx_reqs + gen} toks={ctx_tok + gen}]"
        if style == "hf-generate":
            return f"forward {k}"     # not annotated: its ProfilerStep holds the whole generate() call
        return f"ProfilerStep#{first_step + k}"

    return name


def tokens_for(phase: str, batch: int, prompt_len: int, prefill_reqs: int) -> int:
    if phase == "prefill":
        return prefill_reqs * prompt_len
    if phase == "mixed":
        return batch + prompt_len // 2
    return batch

