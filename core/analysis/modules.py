"""The model's own structure, as the trace records it: `nn.Module: <Class>_<i>` calls.

With `with_stack=True` the PyTorch profiler writes a python_function event for every module call,
named after the module's class and its instance number (`nn.Module: LlamaDecoderLayer_3`). They
say exactly where a forward pass starts and ends (the top-level model's call) and which kernels
each decoder layer launched — no kernel-name pattern needed. Traces without stacks have none of
these events; the readings built on them then fall back to what the kernels show.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from kerneldiff.core.model import TraceModel

MODULE_PREFIX = "nn.Module: "
_INSTANCE = re.compile(r"^(.*?)_(\d+)$")


@dataclass
class ModuleCalls:
    """Every module call, sorted by start time: class, instance, window, thread, nesting depth
    (0 = not inside another module call on the same thread)."""

    cls: np.ndarray        # object: class name
    instance: np.ndarray   # int64: the _<i> suffix (-1 when absent)
    ts: np.ndarray
    end: np.ndarray
    tid: np.ndarray
    depth: np.ndarray

    def __len__(self) -> int:
        return len(self.ts)

    def of_class(self, name: str) -> np.ndarray:
        return np.flatnonzero(self.cls == name)


def module_calls(model: TraceModel) -> ModuleCalls:
    p = model.python
    empty = ModuleCalls(np.empty(0, object), np.empty(0, np.int64), np.empty(0), np.empty(0),
                        np.empty(0, np.int64), np.empty(0, np.int64))
    if len(p) == 0:
        return empty
    ids = np.unique(p.name)
    wanted = {int(i): model.strings[int(i)] for i in ids.tolist()
              if model.strings[int(i)].startswith(MODULE_PREFIX)}
    if not wanted:
        return empty
    rows = np.flatnonzero(np.isin(p.name, np.fromiter(wanted, np.int64)))
    rows = rows[np.lexsort((-p.dur[rows], p.ts[rows]))]   # by start; an outer call before its inner one
    parsed = {}
    for i, text in wanted.items():
        m = _INSTANCE.match(text[len(MODULE_PREFIX):].strip())
        parsed[i] = (m.group(1), int(m.group(2))) if m else (text[len(MODULE_PREFIX):].strip(), -1)
    names = p.name[rows].tolist()
    cls = np.array([parsed[n][0] for n in names], dtype=object)
    inst = np.array([parsed[n][1] for n in names], dtype=np.int64)
    ts, end, tid = p.ts[rows], p.ts[rows] + p.dur[rows], p.tid[rows]
    # nesting depth per thread: a stack of open call ends (module calls are few: thousands)
    depth = np.zeros(len(rows), np.int64)
    stacks: dict[int, list[float]] = {}
    for j, (t0, t1, th) in enumerate(zip(ts.tolist(), end.tolist(), tid.tolist())):
        st = stacks.setdefault(th, [])
        while st and st[-1] <= t0:
            st.pop()
        depth[j] = len(st)
        st.append(t1)
    return ModuleCalls(cls, inst, ts, end, tid, depth)


def launches_in(windows_ts: np.ndarray, windows_end: np.ndarray, t: np.ndarray) -> np.ndarray:
    """For each time in t, the index of the (non-overlapping, sorted) window containing it, or -1."""
    if len(windows_ts) == 0:
        return np.full(len(t), -1, np.int64)
    i = np.searchsorted(windows_ts, t, side="right") - 1
    ok = (i >= 0) & (t <= windows_end[np.maximum(i, 0)])
    return np.where(ok, i, -1)


def kernels_per_class(calls: ModuleCalls, launch_t: np.ndarray, rows: np.ndarray) -> dict[str, int]:
    """How many kernel launches (times in launch_t) fall inside the calls of each class."""
    out: dict[str, int] = {}
    t = np.sort(launch_t[~np.isnan(launch_t)])
    for c in np.unique(calls.cls[rows]).tolist():
        sel = rows[calls.cls[rows] == c]
        lo = np.searchsorted(t, calls.ts[sel], side="left")
        hi = np.searchsorted(t, calls.end[sel], side="right")
        out[c] = int((hi - lo).sum())
    return out


def top_level_model(calls: ModuleCalls, launch_t: np.ndarray) -> str | None:
    """The class whose calls are the forward passes: among calls not nested in another module
    call, the class that launches the most kernels (an HF model's *ForCausalLM, vLLM's model)."""
    top = np.flatnonzero(calls.depth == 0)
    if not len(top):
        return None
    counts = kernels_per_class(calls, launch_t, top)
    best = max(counts, key=lambda c: (counts[c], c), default=None)
    return best if best is not None and counts[best] > 0 else None


def decoder_layer_class(calls: ModuleCalls, launch_t: np.ndarray, within: np.ndarray) -> str | None:
    """The class of the decoder layers: repeated blocks (two or more instances, each called once
    per pass) that together launch the most kernels. A layer contains the attention, the MLP and
    the norms, so it covers more than any of its parts; the model itself has one instance."""
    rows = within
    if not len(rows):
        return None
    best, best_n = None, 0
    for c in np.unique(calls.cls[rows]).tolist():
        sel = rows[calls.cls[rows] == c]
        inst = calls.instance[sel]
        if len(np.unique(inst)) < 2 or (inst < 0).any():
            continue
        # calls of one instance must not nest in one another (a block, not a recursive helper)
        if np.any(calls.depth[sel] != calls.depth[sel][0]):
            continue
        n = kernels_per_class(calls, launch_t, sel)[c]
        if n > best_n or (n == best_n and best is not None and len(sel) < len(rows[calls.cls[rows] == best])):
            best, best_n = c, n
    return best


def module_path(model: TraceModel, row: int, calls: ModuleCalls | None = None) -> list[str]:
    """The module calls that enclose the launch of kernel `row`, outermost first
    (`LlamaForCausalLM_0 > LlamaModel_0 > LlamaDecoderLayer_3 > LlamaAttention_3`); empty when the
    trace has no module events or the kernel's launch is unknown. The join: kernel → its runtime
    launch (correlation) → the CPU thread and time of that launch → the module calls around it."""
    k = model.kernels
    li = int(k.launch[row])
    if li < 0:
        return []
    calls = module_calls(model) if calls is None else calls
    if not len(calls):
        return []
    t, tid = float(model.launches.ts[li]), int(model.launches.tid[li])
    hit = np.flatnonzero((calls.ts <= t) & (calls.end >= t) & (calls.tid == tid))
    hit = hit[np.argsort(calls.depth[hit], kind="stable")]
    return [f"{calls.cls[i]}_{calls.instance[i]}" if calls.instance[i] >= 0 else str(calls.cls[i])
            for i in hit.tolist()]
