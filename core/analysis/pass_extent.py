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


def between_host(model) -> str | None:
    """What the host ran between one forward call and the next: the innermost Python frame holding
    the most of those gaps (`transformers/generation/utils.py(2917): _sample` for `generate()`),
    None where the calls' ends or the Python frames are not recorded (memoised)."""
    return model.memo(("between_host",), lambda: _between_host(model))


def _between_host(model) -> str | None:
    steps = model.steps
    py = model.python
    if len(steps) < 2 or not len(py) or any(getattr(s, "call_end", None) is None for s in steps):
        return None
    starts = np.array([s.ts for s in steps])
    ends = np.array([s.call_end for s in steps])
    g0, g1 = ends[:-1], starts[1:]
    found: dict[int, int] = {}
    # the frames long enough to hold the shortest gap, latest start first: the first that holds a
    # gap is its innermost
    rows = np.flatnonzero(py.dur >= float(np.min(g1 - g0)))
    rows = rows[np.argsort(-py.ts[rows], kind="stable")]
    t0, t1, names = py.ts[rows], py.ts[rows] + py.dur[rows], py.name[rows]
    for a, b in zip(g0.tolist(), g1.tolist()):
        hold = np.flatnonzero((t0 <= a) & (t1 >= b))
        if len(hold):
            n = int(names[hold[0]])
            found[n] = found.get(n, 0) + 1
    if not found:
        return None
    best = max(found, key=lambda n: (found[n], -n))
    return model.strings[best] if 0 <= best < len(model.strings) else None
