"""The model's own structure, as the trace records it: `nn.Module: <Class>_<i>` calls.

With `with_stack=True` the PyTorch profiler writes a python_function event for every module call,
named after the module's class and its instance number (`nn.Module: LlamaDecoderLayer_3`). They
say exactly where a forward pass starts and ends (the top-level model's call) and which kernels
each decoder layer launched — no kernel-name pattern needed. Traces without stacks have none of
these events; the readings built on them then fall back to what the kernels show.
"""

from __future__ import annotations

from kerneldiff.core.lazy_dataclass import dataclass   # methods made on first use (lazy_dataclass.py)

import numpy as np

from kerneldiff.core.lazy_pattern import LazyPattern
from kerneldiff.core.model import TraceModel
from kerneldiff.core.numbers import distinct, equal_runs

MODULE_PREFIX = "nn.Module: "
# A call that ends within this of the next call's start has ended before it: ts + dur in floating
# point can overshoot the next start by a rounding error (seen: 0.0005 µs on 6e12 µs timestamps).
NEST_TOLERANCE_US = 0.01
_INSTANCE = LazyPattern(r"^(.*?)_([0-9]+)$")   # ASCII digits: int() refuses '²' (\d takes it)


@dataclass
class ModuleCalls:
    """Every module call, sorted by start time: class (an index into `classes`), instance,
    window, thread, nesting depth (0 = not inside another module call on the same thread)."""

    classes: list[str]
    cls_id: np.ndarray     # int32 index into classes
    instance: np.ndarray   # int64: the _<i> suffix (-1 when absent)
    ts: np.ndarray
    end: np.ndarray
    tid: np.ndarray
    depth: np.ndarray

    def __len__(self) -> int:
        return len(self.ts)

    def of_class(self, name: str) -> np.ndarray:
        if name not in self.classes:
            return np.empty(0, np.int64)
        return np.flatnonzero(self.cls_id == self.classes.index(name))

    def label(self, i: int) -> str:
        c = self.classes[int(self.cls_id[i])]
        return f"{c}_{int(self.instance[i])}" if self.instance[i] >= 0 else c

    def containing(self, t: float, tid: int) -> np.ndarray:
        """The calls on thread `tid` whose window holds `t` (ts <= t <= end), outermost first (by
        depth; at equal depth in start order). Only the calls from the first that could still be
        open at `t` are looked at: each thread's calls in start order with the running maximum of
        their ends, which no call before that one reaches. A pass's calls, not the trace's: the
        fusion views ask this for every kernel they name, and each asked every call of the trace
        before (on the real Llama pair 1.4% of a comparison's instructions; it grows with the
        trace)."""
        at = self._threads().get(tid)
        if at is None:
            return np.empty(0, np.int64)
        rows, ts, reach = at
        lo = int(np.searchsorted(reach, t, side="left"))    # reach[lo] >= t: nothing before lo ends at t
        hi = int(np.searchsorted(ts, t, side="right"))      # ts[:hi] <= t
        if lo >= hi:
            return np.empty(0, np.int64)
        hit = rows[lo:hi][self.end[rows[lo:hi]] >= t]
        return hit[np.argsort(self.depth[hit], kind="stable")]

    def _threads(self) -> dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """Per thread: its calls (start order), their starts, the running maximum of their ends."""
        by = self.__dict__.get("_by_thread")
        if by is None:
            by = {}
            for th in distinct(self.tid).tolist():
                rows = np.flatnonzero(self.tid == th)
                by[int(th)] = (rows, self.ts[rows], np.maximum.accumulate(self.end[rows]))
            self.__dict__["_by_thread"] = by
        return by


def module_calls(model: TraceModel) -> ModuleCalls:
    """Every nn.Module call of the trace (computed once per model: passes, layers and the fusion
    views all read it)."""
    return model.memo(("module_calls",), lambda: _module_calls(model))


def _module_calls(model: TraceModel) -> ModuleCalls:
    p = model.python
    empty = ModuleCalls([], np.empty(0, np.int32), np.empty(0, np.int64), np.empty(0), np.empty(0),
                        np.empty(0, np.int64), np.empty(0, np.int64))
    if len(p) == 0:
        return empty
    ids = np.flatnonzero(np.bincount(p.name[p.name >= 0]))   # names in use (ids are small ints)
    wanted = {int(i): model.strings[int(i)] for i in ids.tolist()
              if model.strings[int(i)].startswith(MODULE_PREFIX)}
    if not wanted:
        return empty
    # per distinct name (not per call): its class and instance, as lookup arrays by name id
    classes: list[str] = []
    index: dict[str, int] = {}
    top = int(max(wanted)) + 1
    cls_of = np.full(top, -1, np.int32)
    inst_of = np.full(top, -1, np.int64)
    for i, text in wanted.items():
        body = text[len(MODULE_PREFIX):].strip()
        m = _INSTANCE.match(body)
        c, n = (m.group(1), int(m.group(2))) if m and len(m.group(2)) <= 9 else (body, -1)
        if c not in index:
            index[c] = len(classes)
            classes.append(c)
        cls_of[i], inst_of[i] = index[c], n
    is_module = np.zeros(len(model.strings) + 1, bool)   # index -1 (no name) lands on the spare slot
    is_module[np.fromiter(wanted, np.int64)] = True
    rows = np.flatnonzero(is_module[p.name])
    rows = rows[start_order(p.ts[rows], p.dur[rows])]   # by start; an outer call before its inner one
    names = p.name[rows]
    ts, end, tid = p.ts[rows], p.ts[rows] + p.dur[rows], p.tid[rows]
    return ModuleCalls(classes, cls_of[names], inst_of[names], ts, end, tid, nesting_depth(ts, end, tid))


def nesting_depth(ts: np.ndarray, end: np.ndarray, tid: np.ndarray) -> np.ndarray:
    """Each call's nesting depth on its thread, the calls in start order (`start_order`): calls
    nest or follow each other, so the calls open at a call's start are the earlier ones that have
    not ended: (earlier calls) - (calls ended by then, within NEST_TOLERANCE_US)."""
    depth = np.zeros(len(ts), np.int64)
    for th in distinct(tid).tolist():
        sel = np.flatnonzero(tid == th)            # in start order
        ended = np.searchsorted(np.sort(end[sel], kind="stable"), ts[sel] + NEST_TOLERANCE_US, side="right")
        depth[sel] = np.arange(len(sel)) - ended
    return np.maximum(depth, 0)


def start_order(ts: np.ndarray, dur: np.ndarray) -> np.ndarray:
    """np.lexsort((-dur, ts)), i.e. by start and the longer first at equal starts, in the same
    order: a stable sort of the start times (calls come nearly in order, so this is ~O(n), where
    lexsort is O(n log n) on two keys: 30x faster on 500k calls), then the few runs of equal starts sorted by duration."""
    order = np.argsort(ts, kind="stable")
    s = ts[order]
    pos, run = equal_runs(s[1:] == s[:-1])
    if len(pos):
        sub = order[pos]
        order[pos] = sub[np.lexsort((-dur[sub], run))]
    return order


def launches_in(windows_ts: np.ndarray, windows_end: np.ndarray, t: np.ndarray) -> np.ndarray:
    """For each time in t, the index of the (non-overlapping, sorted) window containing it, or -1."""
    if len(windows_ts) == 0:
        return np.full(len(t), -1, np.int64)
    i = np.searchsorted(windows_ts, t, side="right") - 1
    ok = (i >= 0) & (t <= windows_end[np.maximum(i, 0)])
    return np.where(ok, i, -1)


def kernels_per_class(calls: ModuleCalls, launch_t: np.ndarray, rows: np.ndarray,
                      sorted_t: np.ndarray | None = None) -> dict[str, int]:
    """How many kernel launches (times in launch_t) fall inside the calls of each class."""
    t = np.sort(launch_t[~np.isnan(launch_t)], kind="stable") if sorted_t is None else sorted_t
    n = np.searchsorted(t, calls.end[rows], side="right") - np.searchsorted(t, calls.ts[rows], side="left")
    per = np.bincount(calls.cls_id[rows], weights=n, minlength=len(calls.classes))
    return {calls.classes[c]: int(per[c]) for c in distinct(calls.cls_id[rows]).tolist()}


def top_level_model(calls: ModuleCalls, launch_t: np.ndarray) -> str | None:
    """The class whose calls are the forward passes: among calls not nested in another module
    call, the class that launches the most kernels (an HF model's *ForCausalLM, vLLM's model)."""
    top = np.flatnonzero(calls.depth == 0)
    if not len(top):
        return None
    counts = kernels_per_class(calls, launch_t, top)
    best = max(counts, key=lambda c: (counts[c], c), default=None)
    return best if best is not None and counts[best] > 0 else None


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
    hit = calls.containing(float(model.launches.ts[li]), int(model.launches.tid[li]))
    return [calls.label(i) for i in hit.tolist()]
