"""Why a row of the comparison has one side only, and where the other side's equivalent is.

An operation one side runs alone is often a fusion: eager Llama runs its RoPE and RMSNorm as
Elementwise, Copy/Memory and Reduce kernels, `torch.compile` as one Triton kernel each, which the
registry names RoPE and RMSNorm; the fusion findings hold that pairing. An attention shape one side
runs alone is often the same attention recorded differently: the compiled graph expands the 8 KV
heads of a GQA model to 32 before SDPA (and passes a mask, so it counts as full attention, where
the eager call without a mask counts as causal), so `B4 H32/8 S256×256 causal*` on one side is
`B4 H32/32 S256×256` on the other.
"""

from __future__ import annotations

from dataclasses import dataclass

from kerneldiff.core.compare.result import Comparison, OperationRow
from kerneldiff.core.compare.work_result import AttentionShape


def operation_counterpart(comp: Comparison, op: OperationRow) -> int | None:
    """The index (in comp.fusions) of the finding in which the other side runs this one-sided
    operation's work unfused; None when the operation is on both sides or no finding says."""
    if not op.only_in:
        return None
    for i, f in enumerate(comp.fusions):
        if f.fused_side == op.only_in and f.fused_category == op.category:
            return i
    return None


@dataclass(frozen=True)
class ShapeCounterpart:
    index: int            # the other side's shape, in comp.attention_shapes
    kv_heads: bool        # the key/value heads differ (expanded from a GQA model's, by repeat_kv)
    causal: bool          # one counts as causal, the other as full: their FLOPs per call differ 2x


def _side_only(s: AttentionShape) -> str | None:
    if s.a.calls and not s.b.calls:
        return "a"
    if s.b.calls and not s.a.calls:
        return "b"
    return None


def attention_counterparts(comp: Comparison) -> dict[int, ShapeCounterpart]:
    """For each attention shape one side runs alone (by index), the other side's shape of the same
    attention — same operator, batch, query heads, query and key lengths, head dims and dtype —
    recorded with other KV heads or another causality."""
    shapes = comp.attention_shapes
    index: dict[tuple, list[int]] = {}
    for i, s in enumerate(shapes):
        index.setdefault((s.op, s.batch, s.heads, s.seq_q, s.seq_k, s.head_dim, s.head_dim_v, s.dtype), []).append(i)
    out: dict[int, ShapeCounterpart] = {}
    for i, s in enumerate(shapes):
        side = _side_only(s)
        if side is None:
            continue
        for j in index[(s.op, s.batch, s.heads, s.seq_q, s.seq_k, s.head_dim, s.head_dim_v, s.dtype)]:
            t = shapes[j]
            other = _side_only(t)
            if j != i and other is not None and other != side:
                out[i] = ShapeCounterpart(j, t.kv_heads != s.kv_heads, t.causal != s.causal)
                break
    return out
