"""Where a forward ends when the trace records no call that spans it.

Without Python stacks a pass is entered by its embedding call and runs to the next one, so it
takes in what the loop around the model does after the forward returns: `generate()`'s logits
copy, logits processors, sampling and next-input bookkeeping (45 kernels a pass on the eager
Llama trace). The recording still keeps the forward's own last work and the sampling after it: a
language model's forward ends with its LM head, the pass's last GEMM, and sampling
(`aten::argmax`, `topk`, `multinomial`, `sort`) follows with no GEMM after it. So where a
sampling op is recorded after a pass's last GEMM launch, the forward is read as ending at that
launch (`Step.call_end`): the passes then measure the same kernels with and without stacks. A
router's `topk` inside an MoE layer is followed by the experts' GEMMs, so it never bounds a pass.
A pass entered by a compiled-graph call (`## Call CompiledFxGraph`, a user annotation kept
without stacks and CPU ops) ends where that call (or a piecewise forward's last piece) returns:
the call is the compiled forward (where runtime events place the launches inside it). Where neither tells (an encoder, a training step, sampling on the
CPU, no CPU ops), the pass keeps its work to the next entry, as before: a known limit, said in the
readings.
"""

from __future__ import annotations

import numpy as np

from kerneldiff.core.analysis.attribution import launch_time

SAMPLING_OPS = ("aten::argmax", "aten::topk", "aten::multinomial", "aten::sort", "aten::argsort")


def bound_by_compiled_call(model, passes) -> int:
    """Set `call_end` on the passes whose entry is a compiled-graph call: its end (`passes.end`,
    the last piece's for a piecewise forward); returns how many."""
    from kerneldiff.core.analysis.passes import COMPILED_GRAPH

    if len(model.launches) == 0:
        return 0     # no runtime events: a replayed graph's kernels are placed by their GPU start, after the call
    n = 0
    for j, s in enumerate(model.steps):
        if s.call_end is None and j < len(passes.end) and f"({COMPILED_GRAPH}" in s.name:
            s.call_end = float(passes.end[j])
            n += 1
    return n


def bound_by_sampling(model, gemm_cats: np.ndarray) -> int:
    """Set `call_end` on the passes (entered by embedding calls) whose last GEMM launch is followed
    by a recorded sampling op before the next pass; returns how many were bounded."""
    k, c, steps = model.kernels, model.cpu_ops, model.steps
    if not steps or not len(gemm_cats) or not len(c) or not len(k):
        return 0
    ids = [i for i, s in enumerate(model.strings) if s in SAMPLING_OPS]
    samp = np.sort(c.ts[np.isin(c.name, ids)]) if ids else np.zeros(0)
    if not len(samp):
        return 0
    t = launch_time(model)
    ok = (k.step >= 0) & ~np.isnan(t) & np.isin(k.cat, gemm_cats)
    last = np.full(len(steps), -np.inf)
    np.maximum.at(last, k.step[ok], t[ok])
    nxt = np.r_[[s.ts for s in steps][1:], np.inf]
    n = 0
    for j, s in enumerate(steps):
        if not np.isfinite(last[j]) or s.call_end is not None:
            continue
        i = np.searchsorted(samp, last[j], side="right")
        if i < len(samp) and samp[i] < nxt[j]:
            s.call_end = float(last[j])
            n += 1
    return n
