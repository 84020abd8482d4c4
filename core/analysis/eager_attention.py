"""Attention computed from plain ops (HF `attn_implementation="eager"`, CLIP/OWLv2, GPT-2, divided
space-time video attention): QKᵀ as a batched GEMM, a softmax, ·V as another batched GEMM. The
kernel names say "GEMM" and "softmax"; what they compute is attention, so they are booked as
Attention, while the Q/K/V/output projections stay GEMMs.

Two ways to tell them, strongest first:
* module calls (with_stack): inside a call of an attention module (`*Attention`, `*SelfAttention`,
  `*Attn`), the batched-GEMM kernels (`aten::bmm`/`baddbmm`/`matmul`; without CPU ops, the GEMMs
  not launched from a submodule such as a `Linear`) and the softmax kernels, when the call holds
  a softmax and two such GEMMs;
* the operators alone (no stacks): an `aten::bmm` kernel, a softmax kernel within a few kernels
  after it, an `aten::bmm` kernel within a few after that, on one device.
Without module calls and without CPU ops nothing tells a batched GEMM from a projection: the
kernels keep their categories and a warning says the attention time is unknown.
"""

from __future__ import annotations


import numpy as np

from kerneldiff.core.analysis.attribution import launch_time
from kerneldiff.core.analysis.modules import launches_in, module_calls
from kerneldiff.core.analysis.stacks import parents
from kerneldiff.core.lazy_pattern import LazyPattern
from kerneldiff.core.model import TraceModel
from kerneldiff.core.numbers import distinct

ATTENTION_MODULE = LazyPattern(r"(Attention|Attn)$")
# the operators of decomposed attention (`kerneldiff.core.analysis.flops` prices them from these)
EAGER_BMM_OPS = ("aten::bmm", "aten::baddbmm", "aten::matmul")
EAGER_SOFTMAX_OPS = ("aten::_softmax", "aten::softmax", "aten::_safe_softmax")
BMM_OPS, SOFTMAX_OPS = EAGER_BMM_OPS, EAGER_SOFTMAX_OPS
# kernels between QKᵀ and the softmax (scale, mask add, an upcast) and between it and ·V (a cast,
# dropout): the same windows the softmax-anchored layer reading allows
BEFORE, AFTER = 5, 3
ATTENTION = "Attention"


def _op_names(model: TraceModel, rows: np.ndarray) -> np.ndarray:
    """The launching operator's name per kernel row ('' when unknown)."""
    k = model.kernels
    op = k.cpu_op[rows]
    out = np.full(len(rows), "", dtype=object)
    ok = op >= 0
    if ok.any():
        ids = model.cpu_ops.name[op[ok]]
        out[ok] = [model.strings[int(i)] if i >= 0 else "" for i in ids.tolist()]
    return out


def mark(model: TraceModel, classifier) -> None:
    """Book eager attention's QKᵀ, softmax and ·V kernels as Attention (k.cat)."""
    k = model.kernels
    if not len(k) or ATTENTION not in model.categories:
        return
    roles = np.array([classifier.role(c) for c in model.categories] + ["other"], dtype=object)
    soft_cat = np.array([c.lower() == "softmax" for c in model.categories] + [False])
    is_gemm = (roles == "gemm")[k.cat]   # per category, then per kernel: no string per kernel compared
    is_soft = soft_cat[k.cat]
    if not is_soft.any() or not is_gemm.any():
        return
    hit = _by_modules(model, is_gemm, is_soft)
    how = "attention module calls"
    if hit is None or not hit.any():
        hit = _by_ops(model, is_gemm, is_soft)
        how = "operator pattern aten::bmm → softmax → aten::bmm"
    if hit is None or not hit.any():
        if _pattern(model, is_gemm, is_soft, None).any():
            model.warnings.append("GEMM → softmax → GEMM kernels look like eager attention, but no module call or "
                                  "CPU op they link to tells its batched GEMMs from projections: attention time "
                                  "unknown (booked as GEMM and Softmax)")
        return
    if hit.any():
        # kernels no operator launched (a graph replays them: no Python, no CPU op) in the same
        # GEMM → softmax → GEMM pattern: the model was shown to run eager attention
        unlinked = (k.cpu_op < 0) & (k.launch < 0) | (k.cpu_op < 0) & graph_replayed(model)
        hit |= _pattern(model, is_gemm & unlinked, is_soft & unlinked, None)
        k.cat = np.where(hit, model.categories.index(ATTENTION), k.cat).astype(k.cat.dtype)
        model.eager_attention = how


def graph_replayed(model: TraceModel) -> np.ndarray:
    """Per kernel: launched by a CUDA/HIP graph launch (its kernels run no operator of their own)."""
    k = model.kernels
    out = np.zeros(len(k), bool)
    ok = k.launch >= 0
    if ok.any():
        names = model.launches.name[k.launch[ok]]
        ids = [i for i in distinct(names).tolist() if i >= 0 and "GraphLaunch" in model.strings[int(i)]]
        out[np.flatnonzero(ok)[np.isin(names, ids)]] = True
    return out


def _by_modules(model: TraceModel, is_gemm: np.ndarray, is_soft: np.ndarray) -> np.ndarray | None:
    calls = module_calls(model)
    if not len(calls):
        return None
    attn_cls = [i for i, c in enumerate(calls.classes) if ATTENTION_MODULE.search(c)]
    rows = np.flatnonzero(np.isin(calls.cls_id, attn_cls))
    if not len(rows):
        return None
    k = model.kernels
    hit = np.zeros(len(k), bool)
    t = launch_time(model)
    t = np.where(np.isnan(t), -np.inf, t)
    ops = np.full(len(k), "", dtype=object)
    cand = np.flatnonzero(is_gemm | is_soft)
    ops[cand] = _op_names(model, cand)
    par = parents(calls)
    for th in distinct(calls.tid[rows]).tolist():
        sel = rows[calls.tid[rows] == th]
        sel = sel[np.argsort(calls.ts[sel], kind="stable")]
        # the outermost attention calls (BertAttention around BertSelfAttention): one window each
        keep, last_end = [], -np.inf
        for r in sel.tolist():
            if calls.ts[r] > last_end:
                keep.append(r)
                last_end = calls.end[r]
        keep = np.array(keep, np.int64)
        inside = launches_in(calls.ts[keep], calls.end[keep], t[cand])
        ok = inside >= 0
        rows_in, which = cand[ok], inside[ok]
        # a GEMM launched from a submodule (Linear, Conv1D) is a projection, whatever its op
        kids = np.flatnonzero(np.isin(par, keep) & ~np.isin(calls.cls_id, attn_cls))
        kids = kids[np.argsort(calls.ts[kids], kind="stable")]
        in_kid = launches_in(calls.ts[kids], calls.end[kids], t[rows_in]) >= 0 if len(kids) else np.zeros(len(rows_in), bool)
        op = ops[rows_in]
        known = op != ""
        bmm = is_gemm[rows_in] & np.where(known, np.isin(op, BMM_OPS), ~in_kid)
        soft = is_soft[rows_in] & ~in_kid
        # only a call that holds the whole pattern: two batched GEMMs and a softmax
        n_bmm = np.bincount(which[bmm], minlength=len(keep))
        n_soft = np.bincount(which[soft], minlength=len(keep))
        full = (n_bmm >= 2) & (n_soft >= 1)
        take = (bmm | soft) & full[which]
        hit[rows_in[take]] = True
    return hit


def _pattern(model: TraceModel, is_gemm: np.ndarray, is_soft: np.ndarray, bmm: np.ndarray | None) -> np.ndarray:
    """Kernels of the pattern (batched) GEMM → softmax → (batched) GEMM, per device in time order:
    the softmax and the nearest such GEMM before it (within BEFORE kernels) and after (AFTER)."""
    k = model.kernels
    g = is_gemm if bmm is None else is_gemm & bmm
    hit = np.zeros(len(k), bool)
    for dev in distinct(k.device).tolist():
        rows = np.flatnonzero(k.device == dev)        # kernel rows are in time order per device
        gg, ss = g[rows], is_soft[rows]
        n = len(rows)
        for p in np.flatnonzero(ss).tolist():
            b = next((p - d for d in range(1, BEFORE + 1) if p - d >= 0 and gg[p - d]), None)
            a = next((p + d for d in range(1, AFTER + 1) if p + d < n and gg[p + d]), None)
            if b is not None and a is not None:
                hit[rows[[b, p, a]]] = True
    return hit


def _by_ops(model: TraceModel, is_gemm: np.ndarray, is_soft: np.ndarray) -> np.ndarray | None:
    k = model.kernels
    if not (k.cpu_op >= 0).any():
        return None
    cand = np.flatnonzero(is_gemm | is_soft)
    ops = np.full(len(k), "", dtype=object)
    ops[cand] = _op_names(model, cand)
    bmm = np.isin(ops, BMM_OPS)
    soft = is_soft & np.isin(ops, SOFTMAX_OPS)
    return _pattern(model, is_gemm, soft, bmm)
