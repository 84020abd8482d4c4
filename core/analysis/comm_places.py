"""Where each collective of one rank ran: its pass, the pass's phase, its layer and the block of
the layer it closes.

A tensor-parallel transformer layer runs two all-reduces: one after the attention block's output
projection, one after the MLP's (or MoE's) down projection. They have the same size, so only their
place tells them apart. Within a layer (the kernel table's layer column, analysis/layers) the block
is read from the kernels before the collective in GPU order: the layer's token mixer (attention or
state-space scan) with no norm since → `attention`; a norm after the mixer (the post-attention norm
opens the MLP) → `mlp`; no mixer yet in the layer → `pre-attention`. Outside layers, or a trace
without layers: no block (""), said so rather than guessed. In training traces (no inference phase)
a collective launched inside `autograd::engine::evaluate_function…` is placed in `backward`.
"""

from __future__ import annotations

import numpy as np

from kerneldiff.core.model import PHASES, TraceModel

MIXERS = ("attention", "ssm")
BACKWARD_OP = "autograd::engine::evaluate_function"


def _roles(model: TraceModel, classifier) -> np.ndarray:
    roles = []
    for c in model.categories:   # a fused norm (RMSNorm+GEMM) still opens a block, as layers.py reads it
        r = classifier.role(c)
        roles.append("norm" if r != "norm" and any(classifier.role(x) == "norm" for x in classifier.components(c)) else r)
    return np.array(roles + ["other"], dtype=object)   # category -1 -> "other"


def places(model: TraceModel, classifier, comm: np.ndarray) -> tuple[list[int], list[str], list[int], list[str]]:
    """Per communication kernel row of `comm`: (pass index or -1, phase or "", layer or -1,
    block or ""). The phase is the pass's; where that is unknown, `backward` for a collective the
    autograd engine launched (training), else ""."""
    k = model.kernels
    n = len(comm)
    if n == 0:
        return [], [], [], []
    step = k.step[comm].astype(np.int64)
    layer = k.layer[comm].astype(np.int64)
    phase = [PHASES[int(p)] if s >= 0 and PHASES[int(p)] != "unknown" else ""
             for s, p in zip(step.tolist(), k.phase[comm].tolist())]
    # training: a collective launched by the autograd engine (DDP's gradient all-reduce, a backward
    # all-to-all) ran in the backward pass, whatever the step's phase
    from kerneldiff.core.analysis.comm_shapes import enclosing_ops

    ask = np.asarray([i for i in range(n) if not phase[i]], dtype=np.int64)
    if len(ask):
        around = enclosing_ops(model, comm[ask], lambda name: name.startswith(BACKWARD_OP))
        for i, enc in zip(ask.tolist(), around):
            if enc:
                phase[i] = "backward"
    block = [""] * n
    inside = np.flatnonzero(layer >= 0)
    if len(inside):
        roles = _roles(model, classifier)
        role = roles[np.where(k.cat >= 0, k.cat, len(roles) - 1)]
        # the layered kernels in GPU order within each (pass, layer): rows are sorted by start
        rows = np.flatnonzero(k.layer >= 0)
        rows = rows[np.lexsort((rows, k.layer[rows], k.step[rows]))]
        pos = np.arange(len(rows))
        new = np.ones(len(rows), bool)
        new[1:] = (k.step[rows][1:] != k.step[rows][:-1]) | (k.layer[rows][1:] != k.layer[rows][:-1])
        first = np.maximum.accumulate(np.where(new, pos, 0))           # where each one's layer begins
        last_mix = np.maximum.accumulate(np.where(np.isin(role[rows], MIXERS), pos, -1))
        last_norm = np.maximum.accumulate(np.where(role[rows] == "norm", pos, -1))
        where = np.empty(len(k), np.int64)
        where[rows] = pos
        for i in inside.tolist():
            p = int(where[int(comm[i])])
            mix = int(last_mix[p - 1]) if p > first[p] else -1
            if mix < first[p]:
                block[i] = "pre-attention"
            else:
                block[i] = "mlp" if last_norm[p - 1] > mix else "attention"
    return step.tolist(), phase, layer.tolist(), block


def place_name(phase: str, block: str) -> str:
    """The row label of a place: "prefill attention", "mlp", "" (nothing known)."""
    return " ".join(x for x in (phase, block) if x)
