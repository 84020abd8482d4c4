"""FLOPs and bytes of an operator from its recorded shapes (`record_shapes=True`), and of each kernel.

A cpu_op row keeps the op's `Input Dims` and `Input type` as compact JSON text (`model.cpu_ops.dims`
and `.types`, ids into the string table). `op_work(name, dims, types)` turns one such triple into
an `OpWork`: what the operator computes (FLOPs), the bytes it must move at least once to or from
device memory, and the key of its shape. `model_work(model)` gives every kernel its launching op's
work, split across the op's kernels in proportion to their durations when one op launches several.

Formulas (a multiply-add is 2 FLOPs; bytes = every input read once + the output written once):

* GEMMs — `mm`, `addmm`, `_addmm_activation`, `bmm`, `baddbmm`, `matmul`, `linear`, `_scaled_mm`
  (fp8), `_int_mm`: 2·batch·m·n·k. `matmul`/`linear` fold leading dimensions into m the way
  PyTorch does (a [16, 559, 1024] input against a 2-D weight is one 8944×n×1024 GEMM). The output
  dtype is the input's, except `_scaled_mm` (its `out_dtype` argument is not recorded: bf16,
  2 bytes, assumed) and `_int_mm` (int32).
* Attention — `scaled_dot_product_attention`, the flash / efficient / cuDNN / overrideable SDPA
  back ends and their `_*_attention_forward` ops, `flash_attn::_flash_attn_forward`, and the
  backward ops: forward 2·B·Hq·Sq·Sk·(D + Dv) (QKᵀ and PV), backward 2.5× that (the usual
  convention: QKᵀ recomputed, dV, dP, dQ, dK). Layout [B, H, S, D] for the `aten::_scaled_dot_*`
  and cuDNN ops, [B, S, H, D] for `_flash_attention_*`, `_efficient_attention_*` and flash_attn.
  Variable-length (3-D, packed) inputs carry no sequence lengths in the shapes: no work.
  **Causality is read** from the op's recorded `Concrete Inputs` (is_causal, or the efficient
  kernels' custom_mask_type; `CAUSAL_ARG`), and so are dropout, scale, enable_gqa and a sliding
  window (`ATTENTION_ARGS`); the KV heads are the key's own (GQA: Hq a multiple of Hkv). aiter's
  `mha_fwd` / `fmha_v3_fwd` read like flash_attn's. Dropout leaves the FLOPs as they are (said on
  the shape); a sliding window gives no work (a band, not the matrix). Causal halves the score matrix (FLOPs halved, the
  convention of the FlashAttention benchmarks), a single-token query never is. Where the scalars
  were not recorded it is assumed: an op without an attention-mask tensor whose query and key
  lengths are equal (> 1) is causal; one with a mask, or with Sq ≠ Sk, full. `OpWork.causal` says
  which, and the shape's `causal_read` whether it was read.
* Memory-bound operators — elementwise (unary, binary with broadcasting), reductions, norms,
  softmax, copies, fills, concatenation (only with an `out` tensor: a TensorList's elements are
  not typed in the record), gathers (`embedding`, `index_select` along dim 0), and a
  few vLLM custom ops (`_C::fused_add_rms_norm`, `_C::rms_norm`, `_C::silu_and_mul`,
  `_C::rotary_embedding`, `_C::*fp8_quant`, `reshape_and_cache[_flash]`) and Inductor's
  `triton_{poi,red,per}_*` kernels (every tensor argument moved once: a fused kernel moves its
  graph's inputs and outputs, not its ops' intermediates; an embedding table it looks up only at
  the gathered rows). Gathers move the rows they gather, never the whole table; a `gather`'s
  index is counted once per row (strides are not recorded: see `_gather_index_bytes`), so a
  gather's bytes are a lower bound. Their FLOPs are one per
  output element (a few for norms and softmax): what matters for them is the bytes. Reductions
  count the input only (the output is small and its shape not recorded).

Everything else (convolutions — stride and padding are not in the shapes —, grouped GEMMs,
communication, ops whose output dtype or size the shapes do not fix) has no work: its kernels
count as "not covered" in the throughput figures.
"""

from __future__ import annotations

import math
import re
import weakref
from dataclasses import replace
from functools import lru_cache
from typing import Any

import numpy as np

try:
    import orjson as _json

    _loads = _json.loads
except ImportError:  # pragma: no cover
    import json as _json

    _loads = _json.loads

from kerneldiff.core.analysis.eager_attention import EAGER_BMM_OPS, EAGER_SOFTMAX_OPS  # noqa: F401 - re-exported
from kerneldiff.core.lazy_dataclass import dataclass   # methods made on first use: a bare `info` uses few
from kerneldiff.core.lazy_pattern import LazyPattern
from kerneldiff.core.model import KIND_KERNEL, TraceModel

# record_shapes' `Input type` spellings -> (short dtype name, bytes per element)
DTYPES: dict[str, tuple[str, float]] = {
    "c10::BFloat16": ("bf16", 2), "c10::Half": ("fp16", 2), "float": ("fp32", 4), "double": ("fp64", 8),
    "c10::Float8_e4m3fn": ("fp8_e4m3", 1), "c10::Float8_e5m2": ("fp8_e5m2", 1),
    "c10::Float8_e4m3fnuz": ("fp8_e4m3fnuz", 1), "c10::Float8_e5m2fnuz": ("fp8_e5m2fnuz", 1),
    "c10::Float8_e8m0fnu": ("fp8_e8m0", 1), "c10::Float4_e2m1fn_x2": ("fp4x2", 1),
    "long int": ("int64", 8), "long": ("int64", 8), "int": ("int32", 4), "short int": ("int16", 2),
    "short": ("int16", 2), "signed char": ("int8", 1), "unsigned char": ("uint8", 1), "bool": ("bool", 1),
    "unsigned int": ("uint32", 4), "unsigned long": ("uint64", 8), "unsigned short": ("uint16", 2),
    "c10::complex<float>": ("complex64", 8), "c10::complex<double>": ("complex128", 16),
    "c10::complex<c10::Half>": ("complex32", 4), "c10::qint8": ("qint8", 1), "c10::quint8": ("quint8", 1),
    "c10::qint32": ("qint32", 4),
}

# dtype -> the peak figure (kerneldiff.core.analysis.peaks) its matrix math runs at
PEAK_CLASS = {"bf16": "bf16", "fp16": "fp16", "fp32": "fp32", "fp64": "fp64", "fp8_e4m3": "fp8", "fp8_e5m2": "fp8",
              "fp8_e4m3fnuz": "fp8", "fp8_e5m2fnuz": "fp8", "fp4x2": "fp4", "int8": "int8", "uint8": "int8"}
VECTOR_CLASS = "fp32"    # memory-bound operators' arithmetic runs on the vector units

GEMM, ATTENTION, MEMORY = "gemm", "attention", "memory"
KINDS = (GEMM, ATTENTION, MEMORY)


@dataclass(frozen=True)
class OpWork:
    """The work of one call of an operator with one set of input shapes."""

    kind: str                       # "gemm" | "attention" | "memory"
    op: str                         # the operator, as recorded ("aten::mm")
    flops: float
    bytes: float                    # moved at least once to or from device memory
    dtype: str                      # of the (first) operand: "bf16", "fp8_e4m3", ...
    peak: str                       # the peak figure its math runs at: "bf16", "fp8", "fp32" (vector), ...
    # the shape, by name: gemm m, n, k, batch; attention batch, heads, kv_heads, seq_q, seq_k,
    # head_dim, head_dim_v, causal, backward
    shape: tuple[tuple[str, Any], ...] = ()

    def get(self, key: str, default: Any = None) -> Any:
        return dict(self.shape).get(key, default)

    @property
    def causal(self) -> bool | None:
        return self.get("causal")


# --- inputs ---------------------------------------------------------------------------------------

@dataclass(frozen=True)
class _Arg:
    dims: Any            # list of ints (a tensor; [] for a 0-dim one or a non-tensor), or list of lists
    type: str            # the recorded type text: "c10::BFloat16", "Scalar", "TensorList", ""

    @property
    def tensor(self) -> bool:
        return self.type in DTYPES

    @property
    def shape(self) -> list[int] | None:
        """The tensor's shape, None for a non-tensor argument (a 0-dim tensor is [])."""
        if not self.tensor or not isinstance(self.dims, list) or not all(isinstance(d, int) for d in self.dims):
            return None
        return self.dims

    @property
    def numel(self) -> int:
        s = self.shape
        return math.prod(s) if s is not None else 0

    @property
    def size(self) -> float:
        return DTYPES[self.type][1] if self.tensor else 0.0

    @property
    def bytes(self) -> float:
        return self.numel * self.size

    @property
    def dtype(self) -> str:
        return DTYPES[self.type][0] if self.tensor else ""


def _args(dims_text: str | None, types_text: str | None) -> list[_Arg] | None:
    if not dims_text or not types_text:
        return None
    try:
        dims, types = _loads(dims_text), _loads(types_text)
    except (ValueError, TypeError):
        return None
    if not isinstance(dims, list) or not isinstance(types, list):
        return None
    n = max(len(dims), len(types))
    dims = dims + [[]] * (n - len(dims))
    types = [t if isinstance(t, str) else "" for t in types] + [""] * (n - len(types))
    return [_Arg(d, t) for d, t in zip(dims, types)]


def _arg(args: list[_Arg], i: int) -> _Arg | None:
    return args[i] if i < len(args) else None


def _tensor(args: list[_Arg], i: int, ndim: int | tuple[int, ...] | None = None) -> list[int] | None:
    a = _arg(args, i)
    s = a.shape if a is not None else None
    if s is None:
        return None
    if ndim is not None and len(s) not in ((ndim,) if isinstance(ndim, int) else ndim):
        return None
    if any(d < 0 for d in s):
        return None
    return s


def _mask(args: list[_Arg], i: int | None) -> bool:
    """Whether an attention-mask (bias) tensor was passed at position i."""
    if i is None:
        return False
    a = _arg(args, i)
    return a is not None and a.tensor and bool(a.shape)


# --- GEMMs ----------------------------------------------------------------------------------------

def _gemm(op: str, a: _Arg, m: int, n: int, k: int, batch: int, extra_read: float = 0.0,
          out_size: float | None = None, b_size: float | None = None) -> OpWork | None:
    if min(m, n, k, batch) <= 0:
        return None
    sa = a.size
    sb = sa if b_size is None else b_size
    so = sa if out_size is None else out_size
    flops = 2.0 * batch * m * n * k
    nbytes = batch * (m * k * sa + k * n * sb + m * n * so) + extra_read
    return OpWork(GEMM, op, flops, nbytes, a.dtype, PEAK_CLASS.get(a.dtype, VECTOR_CLASS),
                  (("m", m), ("n", n), ("k", k), ("batch", batch)))


def _mm_work(op: str, args: list[_Arg], first: int = 0, bias: int | None = None,
             out_size: float | None = None) -> OpWork | None:
    A, B = _tensor(args, first, 2), _tensor(args, first + 1, 2)
    if A is None or B is None or A[1] != B[0]:
        return None
    extra = args[bias].bytes if bias is not None and _arg(args, bias) is not None else 0.0
    return _gemm(op, args[first], A[0], B[1], A[1], 1, extra, out_size, args[first + 1].size)


def _bmm_work(op: str, args: list[_Arg], first: int = 0, bias: int | None = None) -> OpWork | None:
    A, B = _tensor(args, first, 3), _tensor(args, first + 1, 3)
    if A is None or B is None or A[2] != B[1] or A[0] != B[0]:
        return None
    extra = args[bias].bytes if bias is not None and _arg(args, bias) is not None else 0.0
    return _gemm(op, args[first], A[1], B[2], A[2], A[0], extra)


def _broadcast(a: list[int], b: list[int]) -> list[int] | None:
    n = max(len(a), len(b))
    a, b = [1] * (n - len(a)) + list(a), [1] * (n - len(b)) + list(b)
    out = []
    for x, y in zip(a, b):
        if x != y and 1 not in (x, y):
            return None
        out.append(max(x, y))
    return out


def _matmul_work(op: str, args: list[_Arg]) -> OpWork | None:
    """torch.matmul's cases: dot, matrix-vector, mm, folded N-D × 2-D, broadcast batched."""
    A, B = _tensor(args, 0), _tensor(args, 1)
    if not A or not B:
        return None
    if len(B) == 1:                      # ... × vector
        k, n, Bb = B[0], 1, []
    else:
        k, n, Bb = B[-2], B[-1], B[:-2]
    if len(A) == 1:
        m, Ab, ka = 1, [], A[0]
    else:
        m, Ab, ka = A[-2], A[:-2], A[-1]
    if ka != k:
        return None
    if not Bb:                           # N-D × 2-D (or vector): one GEMM over the folded rows
        return _gemm(op, args[0], m * math.prod(Ab), n, k, 1, 0.0, None, args[1].size)
    batch = _broadcast(Ab, Bb)
    if batch is None:
        return None
    return _gemm(op, args[0], m, n, k, math.prod(batch), 0.0, None, args[1].size)


def _linear_work(op: str, args: list[_Arg]) -> OpWork | None:
    X, W = _tensor(args, 0), _tensor(args, 1, 2)
    if not X or W is None or X[-1] != W[1]:
        return None
    extra = args[2].bytes if _arg(args, 2) is not None else 0.0
    return _gemm(op, args[0], math.prod(X[:-1]), W[0], W[1], 1, extra, None, args[1].size)


def _scaled_mm_work(op: str, args: list[_Arg]) -> OpWork | None:
    # (a, b, scale_a, scale_b, bias, scale_result, out_dtype, use_fast_accum): out_dtype not kept,
    # bf16 (2 bytes) assumed
    w = _mm_work(op, args, out_size=2.0)
    if w is None:
        return None
    extra = sum(args[i].bytes for i in (2, 3, 4) if _arg(args, i) is not None)
    return OpWork(w.kind, w.op, w.flops, w.bytes + extra, w.dtype, w.peak, w.shape)


GEMM_OPS = {
    "aten::mm": lambda op, a: _mm_work(op, a),
    "aten::addmm": lambda op, a: _mm_work(op, a, first=1, bias=0),
    "aten::_addmm_activation": lambda op, a: _mm_work(op, a, first=1, bias=0),
    "aten::bmm": lambda op, a: _bmm_work(op, a),
    "aten::baddbmm": lambda op, a: _bmm_work(op, a, first=1, bias=0),
    "aten::matmul": _matmul_work,
    "aten::linear": _linear_work,
    "aten::_scaled_mm": _scaled_mm_work,
    "aten::_int_mm": lambda op, a: _mm_work(op, a, out_size=4.0),
}


# --- attention ------------------------------------------------------------------------------------

# op -> (layout, index of q, index of the mask/bias tensor or None, backward?)
ATTENTION_OPS: dict[str, tuple[str, int, int | None, bool]] = {
    "aten::scaled_dot_product_attention": ("bhsd", 0, 3, False),
    "aten::_scaled_dot_product_flash_attention": ("bhsd", 0, None, False),
    "aten::_scaled_dot_product_efficient_attention": ("bhsd", 0, 3, False),
    "aten::_scaled_dot_product_cudnn_attention": ("bhsd", 0, 3, False),
    "aten::_scaled_dot_product_fused_attention_overrideable": ("bhsd", 0, 3, False),
    "aten::_cudnn_attention_forward": ("bhsd", 0, 3, False),
    "aten::_flash_attention_forward": ("bshd", 0, None, False),
    "aten::_efficient_attention_forward": ("bshd", 0, 3, False),
    "flash_attn::_flash_attn_forward": ("bshd", 0, None, False),
    # AMD's aiter (CK / asm FMHA): q [b, sq, hq, d] like flash_attn, then dropout_p, softmax_scale,
    # is_causal, window_size_left/right
    "aiter::mha_fwd": ("bshd", 0, None, False),
    "aiter::fmha_v3_fwd": ("bshd", 0, None, False),
    "aten::_scaled_dot_product_flash_attention_backward": ("bhsd", 1, None, True),
    "aten::_scaled_dot_product_efficient_attention_backward": ("bhsd", 1, 4, True),
    "aten::_scaled_dot_product_cudnn_attention_backward": ("bhsd", 1, 8, True),
    "aten::_scaled_dot_product_fused_attention_overrideable_backward": ("bhsd", 1, 4, True),
    "aten::_cudnn_attention_backward": ("bhsd", 1, 8, True),
    "aten::_flash_attention_backward": ("bshd", 1, None, True),
    "aten::_efficient_attention_backward": ("bshd", 1, 4, True),
    "flash_attn::_flash_attn_backward": ("bshd", 1, None, True),
}
BACKWARD_FACTOR = 2.5


def attention_flops(batch: int, heads: int, seq_q: int, seq_k: int, head_dim: int, head_dim_v: int | None = None,
                    causal: bool = False, backward: bool = False) -> float:
    """2·B·H·Sq·Sk·(D + Dv); halved when causal; ×2.5 for the backward pass."""
    dv = head_dim if head_dim_v is None else head_dim_v
    f = 2.0 * batch * heads * seq_q * seq_k * (head_dim + dv)
    if causal:
        f /= 2
    return f * (BACKWARD_FACTOR if backward else 1.0)


# op -> the position of its is_causal argument in the recorded Concrete Inputs (PyTorch's
# signatures; `_efficient_attention_*` take a custom_mask_type there: 0 none, 1 and 2 causal)
CAUSAL_ARG: dict[str, int] = {
    "aten::scaled_dot_product_attention": 5,
    "aten::_scaled_dot_product_flash_attention": 4,
    "aten::_scaled_dot_product_efficient_attention": 6,
    "aten::_scaled_dot_product_cudnn_attention": 6,
    "aten::_scaled_dot_product_fused_attention_overrideable": 5,
    "aten::_cudnn_attention_forward": 10,
    "aten::_flash_attention_forward": 8,
    "aten::_efficient_attention_forward": 9,
    "flash_attn::_flash_attn_forward": 5,
    "aiter::mha_fwd": 5,
    "aiter::fmha_v3_fwd": 5,
    "aten::_scaled_dot_product_flash_attention_backward": 11,
    "aten::_scaled_dot_product_efficient_attention_backward": 11,
    "aten::_scaled_dot_product_cudnn_attention_backward": 14,
    "aten::_scaled_dot_product_fused_attention_overrideable_backward": 13,
    "aten::_cudnn_attention_backward": 14,
    "aten::_flash_attention_backward": 11,
    "aten::_efficient_attention_backward": 14,
    "flash_attn::_flash_attn_backward": 11,
}


# op -> positions of (dropout_p, scale, enable_gqa, window_size_left) in its Concrete Inputs (the
# forward ops' signatures; None: not an argument of that op). Dropout leaves the FLOPs as they
# are (it masks the probabilities, the matmuls are the same) but is said; scale None is the
# default 1/sqrt(head_dim). A sliding window (window_size_left ≥ 0 shorter than the keys) computes
# a band, not the score matrix: no work is claimed for it.
ATTENTION_ARGS: dict[str, tuple[int | None, int | None, int | None, int | None]] = {
    "aten::scaled_dot_product_attention": (4, 6, 7, None),
    "aten::_scaled_dot_product_flash_attention": (3, 6, None, None),
    "aten::_scaled_dot_product_efficient_attention": (5, 7, None, None),
    "aten::_scaled_dot_product_cudnn_attention": (5, 8, None, None),
    "aten::_scaled_dot_product_fused_attention_overrideable": (4, 7, None, None),
    "aten::_cudnn_attention_forward": (9, 12, None, None),
    "aten::_flash_attention_forward": (7, 10, None, 11),
    "aten::_efficient_attention_forward": (8, 11, None, None),
    "flash_attn::_flash_attn_forward": (3, 4, None, 6),
    "aiter::mha_fwd": (3, 4, None, 6),
    "aiter::fmha_v3_fwd": (3, 4, None, 6),
}


def _number(v) -> float | None:
    """A recorded scalar as a float ("0.", "0.125", 0.1), None when absent or not a number."""
    if isinstance(v, bool) or v is None or v == "":
        return None
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def recorded_args(op: str, concrete: list | None) -> dict[str, Any]:
    """dropout, scale, enable_gqa and window_size_left as the op was given them (its Concrete
    Inputs); a key is absent where the op takes no such argument or it was not recorded."""
    pos = ATTENTION_ARGS.get(op)
    out: dict[str, Any] = {}
    if pos is None or not concrete:
        return out
    for name, i in zip(("dropout", "scale", "enable_gqa", "window"), pos):
        if i is None or i >= len(concrete):
            continue
        v = concrete[i]
        if name == "enable_gqa":
            if v in ("True", "False"):
                out[name] = v == "True"
        elif (f := _number(v)) is not None:
            out[name] = f
    return out


def _concrete(text: str | None) -> list | None:
    if not text:
        return None
    try:
        v = _loads(text)
    except (ValueError, TypeError):
        return None
    return v if isinstance(v, list) else None


def recorded_causal(op: str, concrete: list | None) -> bool | None:
    """is_causal as the op was given it (its Concrete Inputs), None when not recorded there."""
    i = CAUSAL_ARG.get(op)
    if i is None or not concrete or i >= len(concrete):
        return None
    v = concrete[i]
    if v in ("True", "False"):
        return v == "True"
    if op.startswith("aten::_efficient_attention") and isinstance(v, str) and v in ("0", "1", "2"):
        return v != "0"
    return None


def _attention_work(op: str, args: list[_Arg], concrete: list | None = None) -> OpWork | None:
    layout, qi, mi, backward = ATTENTION_OPS[op]
    q, k, v = (_tensor(args, qi + j, 4) for j in range(3))
    if q is None or k is None or v is None:
        return None
    if layout == "bhsd":
        (b, h, sq, d), (bk, hk, sk, dk), (bv, hv, sv, dv) = q, k, v
    else:
        (b, sq, h, d), (bk, sk, hk, dk), (bv, sv, hv, dv) = q, k, v
    if bk != b or bv != b or dk != d or sv != sk or hv != hk or min(b, h, sq, sk, d, dv, hk) <= 0 or h % hk:
        return None
    masked = _mask(args, mi)
    read = recorded_causal(op, concrete)
    rec = recorded_args(op, concrete)
    if rec.get("enable_gqa") is False and hk != h:
        return None          # the record contradicts itself: SDPA without GQA takes as many kv heads
    if 0 <= rec.get("window", -1) < sk - 1:
        return None          # a sliding window: a band of the score matrix, not the formula's work
    # a query of one token against the cache attends to all of it: is_causal changes nothing there
    causal = (read and sq > 1) if read is not None else (not masked and sq == sk > 1)
    flops = attention_flops(b, h, sq, sk, d, dv, causal, backward)
    qa, ka, va = args[qi], args[qi + 1], args[qi + 2]
    out = b * h * sq * dv * qa.size
    nbytes = qa.bytes + ka.bytes + va.bytes + out
    if backward:     # + grad_out and out read, dq dk dv written
        nbytes += out + qa.bytes + ka.bytes + va.bytes
    if masked:
        nbytes += args[mi].bytes
    shape = (("batch", b), ("heads", h), ("kv_heads", hk), ("seq_q", sq), ("seq_k", sk), ("head_dim", d),
             ("head_dim_v", dv), ("causal", causal), ("backward", backward), ("causal_read", read is not None),
             ("dropout", rec.get("dropout")), ("scale", rec.get("scale")))
    return OpWork(ATTENTION, op, flops, nbytes, qa.dtype, PEAK_CLASS.get(qa.dtype, VECTOR_CLASS), shape)


# --- memory-bound operators -----------------------------------------------------------------------

UNARY = {"neg", "rsqrt", "sqrt", "exp", "exp2", "log", "log2", "log1p", "expm1", "cos", "sin", "tanh", "sigmoid",
         "silu", "gelu", "relu", "abs", "reciprocal", "erf", "clone", "contiguous", "pow", "square", "clamp",
         "clamp_min", "clamp_max", "hardtanh", "leaky_relu", "elu", "mish", "hardswish", "hardsigmoid", "floor",
         "ceil", "round", "trunc", "sign", "logical_not", "bitwise_not", "nan_to_num", "softplus", "_softmax",
         "softmax", "log_softmax", "_log_softmax", "gelu_backward", "silu_backward"}
# per output element
UNARY_FLOPS = {"_softmax": 5, "softmax": 5, "log_softmax": 5, "_log_softmax": 5}
BINARY = {"add", "sub", "mul", "div", "maximum", "minimum", "pow", "eq", "ne", "lt", "gt", "le", "ge",
          "bitwise_and", "bitwise_or", "bitwise_xor", "__and__", "__or__", "__xor__", "logical_and", "logical_or",
          "where", "masked_fill", "lerp", "addcmul", "addcdiv", "fmod", "remainder", "rsub", "atan2",
          "threshold_backward", "mse_loss"}
COMPARISONS = {"eq", "ne", "lt", "gt", "le", "ge", "logical_and", "logical_or", "logical_not"}
REDUCTIONS = {"sum", "mean", "amax", "amin", "max", "min", "argmax", "argmin", "prod", "norm", "linalg_vector_norm",
              "var", "std", "var_mean", "any", "all", "logsumexp", "cumsum"}
NORMS = {"layer_norm", "native_layer_norm", "rms_norm", "_fused_rms_norm", "group_norm", "native_group_norm",
         "batch_norm", "native_batch_norm", "_batch_norm_impl_index", "instance_norm"}
NORM_FLOPS = 5


def _memory(op: str, flops: float, nbytes: float, dtype: str) -> OpWork | None:
    if nbytes <= 0:
        return None
    return OpWork(MEMORY, op, float(flops), float(nbytes), dtype, VECTOR_CLASS)


def _tensors(args: list[_Arg]) -> list[_Arg]:
    return [a for a in args if a.shape is not None and a.tensor]


def _elementwise(op: str, base: str, args: list[_Arg]) -> OpWork | None:
    ts = _tensors(args)
    if not ts:
        return None
    inplace = op.endswith("_") and not op.endswith("__")
    if base in UNARY and (base not in BINARY or len(ts) == 1):
        a = ts[0]
        return _memory(op, a.numel * UNARY_FLOPS.get(base, 1), 2 * a.bytes, a.dtype)
    shape: list[int] | None = []
    for t in ts:
        shape = _broadcast(shape, t.shape) if shape is not None else None
    if shape is None:
        return None
    numel = math.prod(shape)
    if inplace:
        out = ts[0].bytes
    else:
        wide = [t for t in ts if t.numel > 1] or ts
        out = numel * (1 if base in COMPARISONS else max(t.size for t in wide))
    return _memory(op, numel, sum(t.bytes for t in ts) + out, ts[0].dtype)


def _memory_work(op: str, args: list[_Arg]) -> OpWork | None:
    base = op.split("::", 1)[-1]
    if op.startswith("aten::"):
        stem = base.rstrip("_") if not base.endswith("__") else base
        if base == "copy_":
            ts = _tensors(args)[:2]
            return _memory(op, ts[0].numel, sum(t.bytes for t in ts), ts[-1].dtype) if ts else None
        if stem in ("fill", "zero"):
            ts = _tensors(args)[:1]
            return _memory(op, 0, ts[0].bytes, ts[0].dtype) if ts else None
        if base in ("cat", "stack", "concat", "concatenate"):
            parts = args[0].dims if args and isinstance(args[0].dims, list) else []
            types = args[0].type
            if types != "TensorList" or not all(isinstance(p, list) for p in parts):
                return None
            # the elements of a TensorList are not typed in the record: only an `out` tensor says
            dt = next((a.type for a in args[1:] if a.tensor and a.shape), None)
            if dt is None:
                return None
            numel = sum(math.prod(p) for p in parts if all(isinstance(d, int) for d in p))
            return _memory(op, 0, 2 * numel * DTYPES[dt][1], DTYPES[dt][0])
        if base == "embedding":
            W, I = _tensor(args, 0, 2), _tensor(args, 1)
            if W is None or I is None:
                return None
            rows = math.prod(I)
            out = rows * W[1] * args[0].size
            return _memory(op, 0, args[1].bytes + 2 * out, args[0].dtype)
        if base == "index_select":      # dim is a scalar (not kept): 0 assumed, the embedding case
            S, I = _tensor(args, 0), _tensor(args, 2)
            if not S or I is None:
                return None
            out = math.prod(I) * math.prod(S[1:]) * args[0].size
            return _memory(op, 0, args[2].bytes + 2 * out, args[0].dtype)
        if base == "gather":
            S, I = _tensor(args, 0), _tensor(args, 2)
            if S is None or I is None:
                return None
            out = math.prod(I) * args[0].size
            return _memory(op, 0, _gather_index_bytes(I, args[2].size) + 2 * out, args[0].dtype)
        if stem in REDUCTIONS:
            ts = _tensors(args)[:1]
            return _memory(op, ts[0].numel, ts[0].bytes, ts[0].dtype) if ts else None
        if stem in NORMS:
            ts = _tensors(args)
            if not ts:
                return None
            x = ts[0]
            return _memory(op, NORM_FLOPS * x.numel, 2 * x.bytes + sum(t.bytes for t in ts[1:3]), x.dtype)
        if stem in UNARY or stem in BINARY:
            return _elementwise(op, stem, args)
        return None
    ts = _tensors(args)
    if not ts:
        return None
    if op == "_C::fused_add_rms_norm":          # (input, residual, weight, eps): input and residual updated
        x = ts[0]
        return _memory(op, NORM_FLOPS * x.numel, 2 * ts[0].bytes + 2 * ts[1].bytes + ts[2].bytes, x.dtype) \
            if len(ts) >= 3 else None
    if op in ("_C::rms_norm", "_C::silu_and_mul", "_C::gelu_and_mul", "_C::gelu_tanh_and_mul", "_C::mul_and_silu",
              "_C::static_scaled_fp8_quant", "_C::dynamic_scaled_fp8_quant",
              "_C::dynamic_per_token_scaled_fp8_quant"):   # (out, input, ...): every tensor once
        return _memory(op, ts[0].numel * (NORM_FLOPS if "norm" in op else 1), sum(t.bytes for t in ts),
                       ts[1].dtype if len(ts) > 1 else ts[0].dtype)
    if op == "_C::rotary_embedding":             # (positions, query, key, head_size, cos_sin_cache, is_neox)
        P, Q, K = _tensor(args, 0), _tensor(args, 1), _tensor(args, 2)
        C = _tensor(args, 4, 2)
        if P is None or Q is None or K is None or C is None:
            return None
        cache = math.prod(P) * C[1] * args[4].size
        return _memory(op, 3 * (math.prod(Q) + math.prod(K)),
                       args[0].bytes + 2 * (args[1].bytes + args[2].bytes) + cache, args[1].dtype)
    if op in ("_C_cache_ops::reshape_and_cache_flash", "_C_cache_ops::reshape_and_cache"):
        # (key, value, key_cache, value_cache, slot_mapping, ...): the new keys and values written
        # into the cache at its element size
        if len(args) < 5 or not all(args[i].tensor for i in range(5)):
            return None
        k, v, kc, s = args[0], args[1], args[2], args[4]
        return _memory(op, 0, k.bytes + v.bytes + (k.numel + v.numel) * kc.size + s.bytes, k.dtype)
    if op.startswith(("triton_poi_", "triton_red_", "triton_per_")):
        # an Inductor kernel: its tensor arguments are its graph's inputs and outputs, each moved
        # once (the intermediates of the ops it fuses stay in registers); an embedding table among
        # them is read only at the gathered rows
        nbytes = [t.bytes for t in ts]
        lookup = _inductor_lookup(op, ts)
        if lookup is not None:
            i, rows = lookup
            nbytes[i] = rows * ts[i].shape[1] * ts[i].size
        biggest = max(ts, key=lambda t: t.numel)
        return _memory(op, biggest.numel, sum(nbytes), biggest.dtype)
    return None


_INTEGER = {"int64", "int32", "int16", "int8", "uint8", "uint32", "uint64", "uint16"}


def _inductor_lookup(op: str, ts: list[_Arg]) -> tuple[int, int] | None:
    """(index of the table, rows gathered) for an Inductor kernel that folds in an embedding lookup
    (`triton_red_fused__to_copy_embedding_mean_mul_pow_rsqrt_0`, arguments `[[4, 1], [32000, 2048],
    …]`): the table is the largest 2-D floating-point argument and the lookup reads one row of it
    per index, so a decode step of 4 tokens moves 4 rows (16 KB), not the 131 MB table. None when
    the name lists no embedding or the arguments hold no integer index."""
    if "embedding" not in op:
        return None
    idx = [t for t in ts if t.dtype in _INTEGER]
    tables = [(t.numel, i) for i, t in enumerate(ts) if t.dtype not in _INTEGER and len(t.shape) == 2]
    if not idx or not tables:
        return None
    _, i = max(tables)
    rows = max(t.numel for t in idx)
    return (i, rows) if rows < ts[i].shape[0] else None


def _gather_index_bytes(index: list[int], size: float) -> float:
    """The index a gather reads. The record keeps shapes, not strides: an index of the output's
    shape is usually one index per row expanded along the row (an embedding written as
    `gather(table, 0, ids.unsqueeze(-1).expand(-1, hidden))`, which PyTorch runs as its
    vectorised gather: 8 KB of ids, not the 16 MB an int64 index of [1024, 2048] would be). So
    one index per row is counted: a materialised index is under-counted, and the bandwidth read
    from it is a lower bound, never a figure above the hardware."""
    if len(index) < 2:
        return math.prod(index) * size
    return math.prod(index[:-1]) * size


@lru_cache(maxsize=65536)
def op_work(name: str, dims: str | None, types: str | None, concrete: str | None = None) -> OpWork | None:
    """The work of one call of `name` with the recorded `Input Dims` / `Input type` texts (None when
    the shapes do not determine it); `concrete`, its `Concrete Inputs` text, says an attention op's
    is_causal."""
    if not dims or not types:
        return None
    args = _args(dims, types)
    if not args:
        return None
    try:
        if name in GEMM_OPS:
            return GEMM_OPS[name](name, args)
        if name in ATTENTION_OPS:
            return _attention_work(name, args, _concrete(concrete))
        return _memory_work(name, args)
    except (IndexError, TypeError, ValueError, KeyError, OverflowError):
        return None   # a malformed record: no work, never a crash


# --- per kernel -----------------------------------------------------------------------------------

@dataclass
class ModelWork:
    """Every kernel's share of its launching operator's work (a model's kernel rows)."""

    works: list[OpWork]          # distinct works; the ids below index it
    op_work: np.ndarray          # per cpu_op row: id into works, -1 none (only rows that launch kernels)
    kernel_work: np.ndarray      # per kernel row: its op's work id, -1 none
    share: np.ndarray            # per kernel row: its fraction of the op's work (0 for memsets beside kernels)
    flops: np.ndarray            # per kernel row: share · op FLOPs
    bytes: np.ndarray            # per kernel row: share · op bytes
    # per cpu_op row: the row standing for its call (an eager attention triple's three ops are one
    # call: its QKᵀ bmm); None when every op is its own call
    call_op: np.ndarray | None = None

    def call_of(self, ops: np.ndarray) -> np.ndarray:
        """The call each cpu_op row (-1: none) belongs to, for counting calls."""
        if self.call_op is None:
            return ops
        return np.where(ops >= 0, self.call_op[np.maximum(ops, 0)], ops)

    def covered(self) -> np.ndarray:
        """Kernel rows whose work is known (the launching op's shapes determine it)."""
        return self.kernel_work >= 0


def kernels_bytes(model, rows) -> float | None:
    """The bytes the kernels at model rows `rows` must move, from their operators' recorded shapes;
    None when one of them has no known work or none of its operator's (a cuBLAS workspace memset
    beside the GEMM: its own bytes are not in the shapes)."""
    rows = np.asarray(rows, dtype=np.int64)
    w = work_of(model)
    if len(rows) == 0 or (rows < 0).any() or (w.kernel_work[rows] < 0).any() or (w.share[rows] <= 0).any():
        return None
    return float(w.bytes[rows].sum())


def _unique_id_triples(key: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """np.unique(key, axis=0, return_inverse=True) for rows of three ids in [-1, n): the three as
    one integer in the same order when it fits (a 1-D unique, ~10x faster), else the 2-D one."""
    width = n + 1
    if width ** 3 >= 2 ** 62:
        uniq, inv = np.unique(key, axis=0, return_inverse=True)
        return uniq, np.asarray(inv).reshape(-1)
    flat = ((key[:, 0] + 1) * width + key[:, 1] + 1) * width + key[:, 2] + 1
    u, inv = np.unique(flat, return_inverse=True)
    return np.stack([u // (width * width), u // width % width, u % width], axis=1) - 1, inv.reshape(-1)


def _op_works(model: TraceModel, ops: np.ndarray) -> tuple[list[OpWork], np.ndarray]:
    """Work id of each cpu_op row in `ops` (distinct (name, dims, types) computed once)."""
    c, s = model.cpu_ops, model.strings
    key = np.stack([c.name[ops], c.dims[ops], c.types[ops]], axis=1).astype(np.int64)
    uniq, inv = _unique_id_triples(key, len(s))
    works: list[OpWork] = []
    index: dict[OpWork, int] = {}
    ids = np.full(len(uniq), -1, dtype=np.int32)
    attention = []
    for i, (n, d, t) in enumerate(uniq.tolist()):
        if d < 0 or t < 0:
            continue
        if s[n] in ATTENTION_OPS:
            attention.append(i)
            continue
        w = op_work(s[n], s[d], s[t])
        if w is not None:
            ids[i] = index.setdefault(w, len(works))
            if ids[i] == len(works):
                works.append(w)
    out = ids[np.asarray(inv).reshape(-1)]
    # an attention op's work also depends on its scalar arguments (is_causal): per distinct text
    for i in attention:
        n, d, t = uniq[i].tolist()
        sel = np.flatnonzero(inv.reshape(-1) == i)
        conc = c.concrete[ops[sel]]
        for cid in np.unique(conc).tolist():
            w = op_work(s[n], s[d], s[t], s[cid] if cid >= 0 else None)
            if w is not None:
                j = index.setdefault(w, len(works))
                if j == len(works):
                    works.append(w)
                out[sel[conc == cid]] = j
    return works, out


def model_work(model: TraceModel) -> ModelWork:
    """Each kernel's share of its launching op's FLOPs and bytes.

    One op's work is split across the kernels it launched in proportion to their durations
    (evenly when they all last 0). Memsets and memcpys beside kernels of the same op get none (a
    cuBLAS workspace memset does no GEMM work); an op that launched only copies shares its work
    among them (a `copy_` that became a memcpy)."""
    k = model.kernels
    n = len(k)
    op = k.cpu_op.astype(np.int64)
    linked = np.flatnonzero(op >= 0)
    op_ids = np.full(len(model.cpu_ops), -1, dtype=np.int32)
    works: list[OpWork] = []
    if len(linked):
        used = np.unique(op[linked])
        works, ids = _op_works(model, used)
        op_ids[used] = ids
    kw = np.full(n, -1, dtype=np.int32)
    kw[linked] = op_ids[op[linked]]
    share = np.zeros(n)
    has = np.flatnonzero(kw >= 0)
    if len(has):
        o = op[has]
        dur = k.dur[has]
        is_kernel = k.kind[has] == KIND_KERNEL
        nops = len(model.cpu_ops)
        kernels_of_op = np.bincount(o[is_kernel], minlength=nops)
        eligible = is_kernel | (kernels_of_op[o] == 0)
        tot = np.bincount(o[eligible], weights=dur[eligible], minlength=nops)
        cnt = np.bincount(o[eligible], minlength=nops)
        t, c = tot[o], cnt[o]
        s = np.where(t > 0, dur / np.where(t > 0, t, 1.0), 1.0 / np.maximum(c, 1))
        share[has] = np.where(eligible, s, 0.0)
    call_op = _apply_eager(model, works, op_ids, kw, share)
    has = np.flatnonzero(kw >= 0)
    works = _tensor_core_fp32(model, works, kw)
    fl = np.zeros(n)
    by = np.zeros(n)
    if works:
        wf = np.array([w.flops for w in works])
        wb = np.array([w.bytes for w in works])
        fl[has] = share[has] * wf[kw[has]]
        by[has] = share[has] * wb[kw[has]]
    return ModelWork(works=works, op_work=op_ids, kernel_work=kw, share=share, flops=fl, bytes=by, call_op=call_op)


# --- eager attention --------------------------------------------------------------------------------
# Eager attention (QKᵀ bmm, softmax, ·V bmm, booked as Attention by `analysis.eager_attention`) gets
# its work from the bmm inputs: one attention work per (QKᵀ, softmax, ·V) triple, shared by the
# three operators' kernels, so it has TFLOP/s and % of peak like SDPA. QKᵀ's inputs are [.., Sq, D]
# and [.., D, Sk], ·V's [.., Sq, Sk] and [.., Sk, Dv]; the leading dims are the batch times the
# heads (folded into one in a 3-D bmm, CLIP/OWLv2 style: a 4-D softmax input [B, H, Sq, Sk] then
# tells them apart, else batch and heads stay unknown and `batch_heads` holds their product).
# FLOPs 2·B·H·Sq·Sk·(D + Dv): eager attention computes the whole score matrix, causal mask or not.
# Bytes: Q, K, V read and the output written once (the same ideal minimum as a fused kernel's).

EAGER_OP = "eager attention (bmm · softmax · bmm)"


def _op_args(model: TraceModel, op: int) -> list | None:
    c, s = model.cpu_ops, model.strings
    d, t = int(c.dims[op]), int(c.types[op])
    if d < 0 or t < 0:
        return None
    return _args(s[d], s[t])


def eager_work(model: TraceModel, qk: int, soft: int, pv: int) -> OpWork | None:
    """The attention work of one triple of cpu_op rows, None when their shapes do not chain."""
    a, b = _op_args(model, qk), _op_args(model, pv)
    if not a or not b or len(a) < 2 or len(b) < 2:
        return None
    q, kt, p, v = _tensor(a, 0, (3, 4)), _tensor(a, 1, (3, 4)), _tensor(b, 0, (3, 4)), _tensor(b, 1, (3, 4))
    if q is None or kt is None or p is None or v is None:
        return None
    lead = q[:-2]
    sq, d, sk, dv = q[-2], q[-1], kt[-1], v[-1]
    if kt[-2] != d or p[-2:] != [sq, sk] or v[-2] != sk or kt[:-2] != lead or p[:-2] != lead or v[:-2] != lead:
        return None
    bh = math.prod(lead)
    if min(bh, sq, sk, d, dv) <= 0:
        return None
    batch = heads = None
    if len(lead) == 2:
        batch, heads = lead
    else:
        s = _op_args(model, soft)
        x = _tensor(s, 0, 4) if s else None
        if x is not None and x[-2:] == [sq, sk] and x[0] * x[1] == bh:
            batch, heads = x[0], x[1]
    qa = a[0]
    flops = 2.0 * bh * sq * sk * (d + dv)
    nbytes = (bh * sq * d + bh * sk * d + bh * sk * dv + bh * sq * dv) * qa.size
    shape = (("batch", batch), ("heads", heads), ("kv_heads", heads), ("seq_q", sq), ("seq_k", sk), ("head_dim", d),
             ("head_dim_v", dv), ("causal", False), ("backward", False), ("causal_read", True), ("batch_heads", bh))
    return OpWork(ATTENTION, EAGER_OP, flops, float(nbytes), qa.dtype, PEAK_CLASS.get(qa.dtype, VECTOR_CLASS), shape)


def eager_triples(model: TraceModel, attention_cats: list[int]) -> list[tuple[int, int, int]]:
    """(QKᵀ, softmax, ·V) cpu_op rows of the eager attention kernels, per device in time order."""
    k = model.kernels
    rows = np.flatnonzero(np.isin(k.cat, attention_cats) & (k.cpu_op >= 0))
    if not len(rows):
        return []
    names = {}
    out = []
    for dev in np.unique(k.device[rows]).tolist():
        seq = []   # distinct ops in kernel order: (op row, kind)
        for op in k.cpu_op[rows[k.device[rows] == dev]].tolist():
            if seq and seq[-1][0] == op:
                continue
            n = names.get(op)
            if n is None:
                i = int(model.cpu_ops.name[op])
                text = model.strings[i] if i >= 0 else ""
                n = names[op] = "bmm" if text in EAGER_BMM_OPS else "soft" if text in EAGER_SOFTMAX_OPS else ""
            seq.append((op, n))
        i = 0
        while i + 2 < len(seq):
            if (seq[i][1], seq[i + 1][1], seq[i + 2][1]) == ("bmm", "soft", "bmm"):
                out.append((seq[i][0], seq[i + 1][0], seq[i + 2][0]))
                i += 3
            else:
                i += 1
    return out


def _apply_eager(model: TraceModel, works: list[OpWork], op_ids: np.ndarray, kw: np.ndarray,
                 share: np.ndarray) -> np.ndarray | None:
    """Give each eager attention triple's kernels one attention work (in place), shared by duration.
    Returns each cpu_op row's call (a triple's ops: its QKᵀ op), None when there is no triple."""
    if not getattr(model, "eager_attention", ""):
        return None
    cats = [i for i, c in enumerate(model.categories) if c == "Attention"]
    k = model.kernels
    found = eager_triples(model, cats)
    if not found:
        return None
    ops = np.array(found, np.int64)
    member = np.full(len(model.cpu_ops), -1, np.int64)
    for j in range(3):
        member[ops[:, j]] = np.arange(len(ops))
    rows = np.flatnonzero(k.cpu_op >= 0)
    rows = rows[member[k.cpu_op[rows]] >= 0]
    inst = member[k.cpu_op[rows]]
    is_kernel = k.kind[rows] == 0
    rows, inst = rows[is_kernel], inst[is_kernel]
    tot = np.bincount(inst, weights=k.dur[rows], minlength=len(ops))
    cnt = np.bincount(inst, minlength=len(ops))
    index = {w: i for i, w in enumerate(works)}
    ids = np.full(len(ops), -1, np.int64)
    for n, (qk, soft, pv) in enumerate(found):
        w = eager_work(model, qk, soft, pv)
        if w is None:
            continue
        ids[n] = index.setdefault(w, len(works))
        if ids[n] == len(works):
            works.append(w)
    good = ids[inst] >= 0
    rows, inst = rows[good], inst[good]
    kw[rows] = ids[inst]
    t = tot[inst]
    share[rows] = np.where(t > 0, k.dur[rows] / np.where(t > 0, t, 1.0), 1.0 / np.maximum(cnt[inst], 1))
    for j in range(3):
        ok = ids >= 0
        op_ids[ops[ok, j]] = ids[ok]
    # the triple's memsets and copies do no attention work
    other = np.flatnonzero((k.cpu_op >= 0) & (k.kind != 0))
    other = other[member[k.cpu_op[other]] >= 0]
    other = other[ids[member[k.cpu_op[other]]] >= 0]
    kw[other] = ids[member[k.cpu_op[other]]]
    share[other] = 0.0
    call_op = np.arange(len(model.cpu_ops), dtype=np.int64)
    for j in (1, 2):
        call_op[ops[:, j]] = ops[:, 0]
    return call_op


# Kernels that run FP32 matrix math on the tensor cores as TF32 (NVIDIA: cuBLAS `…tf32…`,
# CUTLASS `tensorop_s1688gemm`, the single-precision tensor-op GEMM) or XF32 (AMD CDNA3 hipBLASLt).
# PyTorch's default keeps FP32 matmul off TF32, but a run with allow_tf32 (or a library's own
# choice) is told by the kernel it launched, not by the operator's dtype.
_TF32_KERNEL = LazyPattern(r"tf32|xf32|tensorop_s1688", re.I)


def _tensor_core_fp32(model: TraceModel, works: list[OpWork], kw: np.ndarray) -> list[OpWork]:
    """An FP32 GEMM or attention whose kernels ran as TF32 is set against the TF32 peak: the FP32
    (vector) figure would put it at several times the GPU's peak (an A100 trace: 569%)."""
    fp32 = [i for i, w in enumerate(works) if w.peak == "fp32" and w.kind in (GEMM, ATTENTION)]
    if not fp32:
        return works
    k = model.kernels
    tf32_names = {i for i in np.unique(k.name) if _TF32_KERNEL.search(model.strings[int(i)])}
    if not tf32_names:
        return works
    hit = np.isin(k.name, np.fromiter(tf32_names, np.int64, len(tf32_names))) & (kw >= 0)
    tf32_works = set(np.unique(kw[hit]).tolist())
    out = list(works)
    for i in fp32:
        if i in tf32_works:
            out[i] = replace(works[i], peak="tf32")
    return out


def attention_text(w: OpWork) -> str:
    """`B16 H16/16 S559×559 D64 causal` (heads/kv heads, query×key length)."""
    g = w.get
    d = f"D{g('head_dim')}" + (f"/{g('head_dim_v')}" if g("head_dim_v") != g("head_dim") else "")
    bh = (f"B{g('batch')} H{g('heads')}/{g('kv_heads')}" if g("batch") is not None and g("heads") is not None
          else f"BH{g('batch_heads')}")
    return (f"{bh} S{g('seq_q')}×{g('seq_k')} {d}"
            + (" causal" if g("causal") else "") + (f" dropout {g('dropout'):g}" if g("dropout") else "")
            + (" bwd" if g("backward") else ""))


_WORK_CACHE: dict[int, tuple[weakref.ref, ModelWork]] = {}


def work_of(model) -> ModelWork:
    """model_work(model), computed once per loaded model (the explorer compares phase after phase)."""
    memo = getattr(model, "memo", None)
    if memo is not None:
        return memo(("work",), lambda: model_work(model))
    hit = _WORK_CACHE.get(id(model))
    if hit is not None and hit[0]() is model:
        return hit[1]
    w = model_work(model)
    for key, (ref, _) in list(_WORK_CACHE.items()):     # drop the entries of models gone
        if ref() is None:
            _WORK_CACHE.pop(key, None)
    try:
        _WORK_CACHE[id(model)] = (weakref.ref(model), w)
    except TypeError:   # pragma: no cover - a model type without weak references: no cache
        pass
    return w
