"""Which of a pass's kernels ran inside the forward call itself.

A pass is the model forward call's span. A kernel belongs to the last pass begun before its launch
(kerneldiff.core.analysis.passes), so the work `generate()` launches after the call returns
(sampling, the next input's copies) is the pass's too: on the eager Llama trace 726 kernels a pass,
of which 681 were launched inside `LlamaForCausalLM`'s call and 45 after it. The timeline measures
a pass on the kernels launched inside the call (where the trace records the call: a model module
call, a graph replay's launch); the rest lies between passes, and `--all-passes` gives it its own
ledger row. A pass's phase, kind and the kernels it is charged with elsewhere are unchanged.
"""

from __future__ import annotations

import numpy as np

from kerneldiff.core.analysis.attribution import launch_time


def after_call_mask(model) -> np.ndarray:
    """True on the kernels of a pass launched after its forward call returned (memoised)."""
    return model.memo(("after_call",), lambda: _after_call(model))


def _after_call(model) -> np.ndarray:
    k = model.kernels
    ends = np.array([s.call_end if getattr(s, "call_end", None) is not None else np.inf for s in model.steps])
    if not len(ends) or np.isinf(ends).all():
        return np.zeros(len(k), dtype=bool)
    t = launch_time(model)
    step = k.step
    ok = (step >= 0) & ~np.isnan(t)
    out = np.zeros(len(k), dtype=bool)
    out[ok] = t[ok] > ends[step[ok]]
    return out


def in_pass_mask(model) -> np.ndarray:
    """True on the kernels a pass is measured on: in a pass, and not launched after its call."""
    return (model.kernels.step >= 0) & ~after_call_mask(model)
