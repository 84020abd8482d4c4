"""What kind of pass each forward pass is: `steady`, `warmup`, `capture` or `compile`.

A pass that compiles (TorchDynamo / Inductor at work), records a CUDA/HIP graph (stream capture,
graph instantiation, torch's CUDAGraph tree recording) or warms one up runs work a steady pass does
not, and stands idle while the host does it: the first decode pass of a CUDA-graph run measured 2.4x
a steady decode pass and 98 % idle. Comparisons read steady passes by default
(kerneldiff.core.analysis.cut_work), so a run that captured in the window is not charged for it.

The kind is read from the trace's own events inside the pass (CPU time, from its start to the next
pass's start): runtime calls, annotations, operators and Python frames named below. Never from a
duration: a long pass is a prefill as often as a capture. A compile id that appears for the first
time (`Torch-Compiled Region: 0/1`) is not by itself a compile: the graph may have been compiled
before the profiler started, and then the pass runs it like any other.
"""

from __future__ import annotations

import re

import numpy as np

from kerneldiff.core.lazy_pattern import LazyPattern
from kerneldiff.core.model import TraceModel
from kerneldiff.core.numbers import distinct

KINDS = ("steady", "warmup", "capture", "compile")
# the first kind found wins, in this order. Each pattern comes with literals one of which every text
# it matches holds (in the lowercased text where the pattern ignores case): a name without any is
# not searched, and a trace with no such name never compiles the pattern
# (tests/unit/test_pass_kinds_markers.py holds the literals to the patterns' matches)
MARKERS = (
    ("compile", ("compile", "create_aot"), False, LazyPattern(
        r"compile_inner|entire_frame_compile|backend_compile|fx_codegen_and_compile|inductor_compile|"
        r"OutputGraph\.call_user_compiler|create_aot_dispatcher_function|"
        r"_dynamo/convert_frame\.py\(\d+\): _compile\b|_inductor/compile_fx\.py\(\d+\): compile_fx")),
    ("capture", ("BeginCapture", "GraphInstantiate", "CUDAGraphNode", "cudagraph_trees"), False, LazyPattern(
        r"^(cuda|hip|cu)StreamBeginCapture|^(cuda|hip|cu)GraphInstantiate|^CUDAGraphNode\.record|"
        r"cudagraph_trees\.py\(\d+\): record_function\b")),
    ("warmup", ("warm",), True,
     LazyPattern(r"^CUDAWarmupNode|cudagraph_trees\.py\(\d+\): _run_cuda_warmup|^warm[ _-]?up\b", re.I)),
)


def marker_hits(texts: list[tuple[int, str]], literals: tuple[str, ...], fold: bool, pattern: LazyPattern) -> list[int]:
    """The ids of the texts `pattern` finds, searched only where one of its `literals` is (in the
    lowercased text with `fold`)."""
    cands = [(i, t) for i, t in texts if any(lit in (t.lower() if fold else t) for lit in literals)]
    if not cands:
        return []
    search = pattern.search
    return [i for i, t in cands if search(t)]


def _marker_times(model: TraceModel) -> dict[str, np.ndarray]:
    """CPU start times of the events naming each kind."""
    tables = [model.launches, model.cpu_ops, model.python]
    a = model.annotations
    out: dict[str, list[np.ndarray]] = {kind: [] for kind, *_ in MARKERS}
    for t, rows in [(tab, None) for tab in tables] + [(a, np.flatnonzero(a.gpu == 0))]:
        if not len(t):
            continue
        names = t.name if rows is None else t.name[rows]
        ts = t.ts if rows is None else t.ts[rows]
        n = len(model.strings)
        texts = [(i, model.strings[i]) for i in distinct(names).tolist() if 0 <= i < n]
        for kind, literals, fold, pat in MARKERS:
            hit = marker_hits(texts, literals, fold, pat)
            if hit:
                out[kind].append(ts[np.isin(names, hit)])
    return {k: np.concatenate(v) for k, v in out.items() if v}


def assign_kinds(model: TraceModel) -> None:
    """Set `kind` on every step (steady when nothing in it says otherwise)."""
    steps = model.steps
    for s in steps:
        s.kind = "steady"
    if len(steps) < 2 or any(s.source == "whole-trace" for s in steps):
        return   # one pass is all there is: nothing steady to compare it with
    starts = np.array([s.ts for s in steps])
    ends = np.maximum(np.append(starts[1:], -np.inf), starts + np.array([s.dur for s in steps]))
    found = _marker_times(model)
    for kind, *_ in reversed(MARKERS):   # compile last: it wins over capture and warmup
        t = found.get(kind)
        if t is None:
            continue
        j = np.searchsorted(starts, t, side="right") - 1
        ok = (j >= 0) & (t <= ends[np.maximum(j, 0)])
        for i in distinct(j[ok]).tolist():
            steps[i].kind = kind


def kind_counts(model: TraceModel) -> dict[str, int]:
    out: dict[str, int] = {}
    for s in model.steps:
        out[getattr(s, "kind", "steady")] = out.get(getattr(s, "kind", "steady"), 0) + 1
    return out
