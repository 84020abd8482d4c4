"""One side's GPU work by the model's own structure: every compared kernel placed at the module path
(or, without module events, the operator path) its launch was made in.

The join: kernel → its runtime launch (correlation) → the CPU thread and time of the launch → the
innermost `nn.Module` call (with_stack) around it, and that call's ancestors. A trace without
module events gives the operators instead: the `aten::` ops (any cpu_op) around the launch. A
kernel whose launch is unknown or falls in no call is `outside`; a kernel launched by a module
itself, not one of its children, is in that module's `(self)` leaf, so every kernel is in exactly
one leaf and a node's time is the sum of its children's.

Two forms of the same kernels: by `path` (the calls as recorded), and by `layer` (the trace's own
decoder layers first, `layer N`, then the calls below the layer's call; kernels outside every layer
under `outside layers`) for sides whose module names do not meet (eager against compiled, where
Inductor's graph replaces the modules). Memoised on the model per phase.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from kerneldiff.core.analysis.cut_work import compared_mask
from kerneldiff.core.analysis.modules import module_calls
from kerneldiff.core.analysis.nesting import Nest, intern_paths
from kerneldiff.core.numbers import small_unique

OUTSIDE = "outside"
SELF = "(self)"
OUTSIDE_LAYERS = "outside layers"
_STEP_NUMBER = re.compile(r"(#)\d+$")      # ProfilerStep#12: one node for every pass
_DECODER = re.compile(r"^decoder-layer module calls \((.+)\)$")


@dataclass
class SideTree:
    """The compared kernels of one side with a leaf path each."""

    source: str                       # "modules" (nn.Module calls) | "operators" (cpu_ops) | "none"
    rows: np.ndarray                  # compared kernel rows
    paths: list[tuple[str, ...]]      # leaf paths (by path)
    leaf: np.ndarray                  # per row: index into paths
    layer_paths: list[tuple[str, ...]]
    layer_leaf: np.ndarray
    passes: np.ndarray                # per row: its pass index among the side's compared passes (-1: none)
    n_passes: int


def side_tree(model, phase: str = "all") -> SideTree:
    return model.memo(("module_tree", phase), lambda: _side_tree(model, phase))


def _calls(model):
    """(Nest of the calls, each sorted call's label, the source) from module calls, else cpu_ops."""
    calls = module_calls(model)
    if len(calls):
        nest = Nest(calls.ts, calls.end, calls.tid)
        # each distinct (class, instance) labelled once, from any one of its calls
        o = nest.order
        width = int(calls.instance.max()) + 2
        ids, inv = np.unique(calls.cls_id[o].astype(np.int64) * width + calls.instance[o] + 1, return_inverse=True)
        inv = inv.reshape(-1)
        one = np.empty(len(ids), np.int64)
        one[inv] = o
        text = [calls.label(i) for i in one.tolist()]
        return nest, [text[j] for j in inv.tolist()], "modules"
    c = model.cpu_ops
    if len(c) == 0:
        return None, [], "none"
    nest = Nest(c.ts, c.ts + np.maximum(c.dur, 0.0), c.tid)
    names = c.name[nest.order]
    text = {int(i) - 1: _STEP_NUMBER.sub(r"\1*", model.strings[int(i) - 1]) if i > 0 else "?"
            for i in small_unique(names + 1, len(model.strings) + 1)[0].tolist()}
    return nest, [text[int(i)] for i in names.tolist()], "operators"


def _side_tree(model, phase: str) -> SideTree:
    k = model.kernels
    rows = np.flatnonzero(compared_mask(model, phase))
    nest, labels, source = _calls(model)
    li = k.launch[rows]
    has = li >= 0
    pos = np.full(len(rows), -1, np.int64)
    if nest is not None and has.any():
        L = model.launches
        pos[has] = nest.innermost(L.ts[li[has]], L.tid[li[has]])
    if nest is not None:
        call_path, cpaths = intern_paths(nest, labels)
    else:
        call_path, cpaths = np.zeros(0, np.int64), []
    cp = np.where(pos >= 0, call_path[np.maximum(pos, 0)] if len(call_path) else 0, len(cpaths))
    raw = cpaths + [(OUTSIDE,)]
    used = small_unique(cp, len(raw))[0]
    paths, remap = _selfed([raw[c] for c in used.tolist()])
    leaf = np.asarray(remap, np.int64)[np.searchsorted(used, cp)] if len(rows) else np.zeros(0, np.int64)
    # the layer form: (path, layer) pairs, each distinct one placed once
    decoder = _DECODER.match(model.layer_source or "")
    cls = decoder.group(1) if decoder else None
    lay = k.layer[rows].astype(np.int64)
    width = len(raw)
    pair = (lay + 1) * width + cp
    upair, inv = small_unique(pair, int(pair.max()) + 1 if len(pair) else 0)
    lraw = []
    for u in upair.tolist():
        l, c = divmod(u, width)
        l -= 1
        path = cpaths[c] if c < len(cpaths) else ()
        lraw.append((f"layer {l}",) + _below(path, cls, source) if l >= 0
                    else (OUTSIDE_LAYERS,) + (path or (OUTSIDE,)))
    lpaths, lremap = _selfed(lraw)
    layer_leaf = np.asarray(lremap, np.int64)[inv] if len(rows) else np.zeros(0, np.int64)
    steps = k.step[rows]
    uniq = small_unique(steps[steps >= 0], len(model.steps))[0]
    passes = np.where(steps >= 0, np.searchsorted(uniq, steps), -1)
    return SideTree(source, rows, paths, leaf, lpaths, layer_leaf, passes, max(len(uniq), 1))


def _below(path: tuple[str, ...], cls: str | None, source: str) -> tuple[str, ...]:
    """The part of a call path below the decoder layer's call: the layer's own structure."""
    if cls is not None:
        for i, lab in enumerate(path):
            if lab.rsplit("_", 1)[0] == cls:
                return path[i + 1:]
    return path if source == "operators" else ()


def _index(paths: list[tuple[str, ...]]) -> tuple[list[tuple[str, ...]], list[int]]:
    ids: dict[tuple[str, ...], int] = {}
    out = []
    for p in paths:
        out.append(ids.setdefault(p, len(ids)))
    return list(ids), out


def _selfed(paths: list[tuple[str, ...]]) -> tuple[list[tuple[str, ...]], list[int]]:
    """Leaf paths where a path that is also another's prefix becomes its `(self)` child."""
    prefixes = {p[:i] for p in paths for i in range(1, len(p))}
    return _index([p + (SELF,) if p in prefixes else p for p in paths])

