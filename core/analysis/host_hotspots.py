"""Where one side's host time goes, operation by operation: self time of every CPU event in the
compared passes, and which of them ran while the GPU waited for a launch.

The host events of a thread (CPU operators, `python_function` frames with with_stack, runtime API
calls) nest: a call runs inside its caller. Each instant of the thread belongs to the innermost
event running then, or to none: an event's self time is its share of the thread's instants, so the
self times of a thread and its unclaimed time sum to the window exactly (integer ns); self times are
read on the launching thread (the one that made the most launch calls: the Python thread). A
launch-bound idle gap of the GPU (`kerneldiff.core.analysis.timeline.launch_bound_closers`) is
split the same way over the thread that launched the kernel ending it (the GPU waited for that
thread's launch: in training, the autograd thread's for the backward kernels); the part of a gap
where that thread records no event is `(no host event)`, whatever other threads ran then (the
trace does not say the launching thread waited on them). The gaps' parts sum to the ledger's
`idle: launch-bound` row of that side.

Names are grouped as the host ran them: a Python frame as recorded less an object's address
(`<built-in method get of dict object>`: the address differs between runs), a module call without
its instance (`nn.Module: LlamaAttention`), operators and runtime calls as recorded. A frame keeps
its line number, which tells one class's `forward` from another's in the same file. Memoised on the model.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from kerneldiff.core.analysis.cut_work import compared_mask
from kerneldiff.core.analysis.modules import MODULE_PREFIX
from kerneldiff.core.analysis.modules import start_order
from kerneldiff.core.analysis.timeline import launch_bound_closers
from kerneldiff.core.numbers import small_unique

try:   # the segment sweep in C (setup.py builds it where a compiler is at hand); numpy otherwise, same segments
    from kerneldiff.core.analysis import _hostscan
except ImportError:
    _hostscan = None

NO_EVENT = "(no host event)"
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")
_INSTANCE = re.compile(r"_[0-9]+$")
_NS = 1000.0
KINDS = ("operator", "python", "runtime")


@dataclass
class HostSide:
    """One side's host time over its compared passes, in ns."""

    names: list[tuple[str, str]]   # (kind, name); the last is (`none`, NO_EVENT)
    self_ns: np.ndarray            # per name: self time inside the passes' windows
    per_pass_ns: np.ndarray        # (names, passes): self time in each pass's window
    idle_ns: np.ndarray            # per name: launch-bound idle during which it was innermost
    window_ns: int                 # the passes' windows, summed
    idle_total_ns: int             # the launch-bound idle (the ledger row, in ns)
    passes: int
    threads: int
    gap_threads: int = 1           # threads that launched the kernels ending the gaps


def display_name(kind: str, text: str) -> str:
    if kind == "python":
        if text.startswith(MODULE_PREFIX):
            return _INSTANCE.sub("", text)
        return _ADDRESS.sub("", text)
    return text


def host_side(model, phase: str = "all", by_pass: bool = False) -> HostSide:
    """`by_pass`: the launch-bound gaps inside the passes only (a comparison that measures the
    passes: the ledger row these gaps split is the passes' launch-bound idle)."""
    return model.memo(("host_hotspots", phase, by_pass), lambda: _host_side(model, phase, by_pass))


def _events(model, tid: int | None = None):
    """The host events (of thread `tid`, or every thread's): (ts, end, tid, name key) with the name
    keys' (kind, name); the tids only for every thread's (None for one thread's)."""
    parts, keys, index = [], [], {}
    for kind, table in zip(KINDS, (model.cpu_ops, model.python, model.launches)):
        sel = slice(None)
        if tid is not None:
            on = table.tid == tid
            if not on.all():   # a thread of its own for every table is common: no copies then
                sel = np.flatnonzero(on)
        names = table.name[sel]
        if len(names) == 0:
            continue
        ids, inv = small_unique(names + 1, len(model.strings) + 1)   # name ids from -1 (none)
        local = np.empty(len(ids), np.int64)
        for j, i in enumerate((ids - 1).tolist()):
            key = (kind, display_name(kind, model.strings[i]) if i >= 0 else "?")
            local[j] = index.setdefault(key, len(keys))
            if local[j] == len(keys):
                keys.append(key)
        ts = table.ts[sel]
        parts.append((ts, ts + np.maximum(table.dur[sel], 0.0), table.tid[sel] if tid is None else None, local[inv]))
    if not parts:
        z = np.zeros(0)
        return z, z, np.zeros(0, np.int64) if tid is None else None, np.zeros(0, np.int64), keys
    ts, end, tids, name = (np.concatenate([p[i] for p in parts]) if i != 2 or tid is None else None
                           for i in range(4))
    return ts, end, tids, name, keys


def _distinct(x: np.ndarray) -> np.ndarray:
    """np.unique(x) by a sort (numpy 2's hashing unique takes ~0.25 s a call on 600k times)."""
    s = np.sort(x)
    return s[np.r_[True, s[1:] != s[:-1]]] if len(s) else s


def _segments(ts: np.ndarray, end: np.ndarray, probes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One thread's elementary segments [start, end) between consecutive event bounds and `probes`
    (integer ns), and the row of the innermost event running in each (-1: none).

    The bounds in time order (at one time: ends, inner first; probes; starts, outer first). After
    a start its event runs innermost; after an end, what ran just before that event started runs
    again (its caller); a probe changes nothing."""
    live = _live(ts, end)
    return _segments_numpy(live, ts[live], end[live], np.asarray(probes, np.int64))


def _live(ts: np.ndarray, end: np.ndarray) -> np.ndarray:
    """The events that own time (an event of no duration owns none), in start order (outer first)."""
    live = np.flatnonzero(end > ts)
    return live[start_order(ts[live], end[live] - ts[live])]


def _attribute(ts: np.ndarray, end: np.ndarray, name: np.ndarray, none: int, n: int, ws: np.ndarray,
               we: np.ndarray, gs: np.ndarray, ge: np.ndarray,
               use_c: bool | None = None) -> tuple[np.ndarray, np.ndarray]:
    """One thread's time by the name of the event running innermost (`_segments`; `none` where no
    event runs): inside each window (ws, we: sorted, disjoint), an (n, windows) array, and inside
    the gaps (gs, ge: their union), an (n,) array; integer ns. In C (`_hostscan.c`: one sweep)
    where built, else numpy (the reference: `use_c=False`)."""
    P = len(ws)
    live = _live(ts, end)
    S, E, nm = ts[live], end[live], np.asarray(name, np.int64)[live]
    if (_hostscan is not None) if use_c is None else use_c:
        per, idle = np.zeros(n * P, np.int64), np.zeros(n, np.int64)
        c = np.ascontiguousarray
        _hostscan.attribute(c(S, np.int64), c(E, np.int64), c(nm), c(ws, np.int64), c(we, np.int64),
                            np.sort(gs).astype(np.int64), np.sort(ge).astype(np.int64), none, per, idle)
        return per.reshape(n, P), idle
    seg_s, seg_e, pos = _segments_numpy(live, S, E, np.concatenate([ws, we, gs, ge]).astype(np.int64))
    owner = np.where(pos >= 0, name[np.maximum(pos, 0)] if len(name) else none, none)
    # which window and which gap each segment is in: their bounds are segment bounds, so a running
    # count over the bounds says (one cumulative sum, not a search per segment)
    nseg = len(seg_s)

    def running(starts, ends, value=None):
        up = np.bincount(np.searchsorted(seg_s, starts), weights=value, minlength=nseg + 1)
        down = np.bincount(np.searchsorted(seg_s, ends), weights=value, minlength=nseg + 1)
        return np.rint(np.cumsum(up - down)[:nseg]).astype(np.int64)

    length = seg_e - seg_s
    inside = running(ws, we) > 0
    wi = running(ws, we, np.arange(1, P + 1)) - 1    # windows are disjoint: the one open
    per = np.bincount(owner[inside] * P + wi[inside], weights=length[inside], minlength=n * P)
    idle = np.zeros(n)
    if len(gs):
        in_gap = running(gs, ge) > 0
        idle = np.bincount(owner[in_gap], weights=length[in_gap], minlength=n)
    return np.rint(per).astype(np.int64).reshape(n, P), np.rint(idle).astype(np.int64)


def _segments_numpy(live, S, E, probes):
    """`_segments` in numpy: "what ran just before" points back along the bounds, and the chains
    are followed by pointer jumping (each round halves them): one sort of the bounds, a few gathers."""
    m = len(live)
    times = np.concatenate([E[::-1], probes, S])
    kind = np.concatenate([np.zeros(m, np.int64), np.ones(len(probes), np.int64), np.full(m, 2, np.int64)])
    ev = np.concatenate([np.arange(m)[::-1], np.full(len(probes), -1, np.int64), np.arange(m)])
    if len(times) < 2:
        z = np.zeros(0, np.int64)
        return z, z, z
    order = np.argsort(times * 4 + kind, kind="stable")
    t, k, ev = times[order], kind[order], ev[order]
    n = len(t)
    starts = np.flatnonzero(k == 2)
    start_at = np.empty(m, np.int64)
    start_at[ev[starts]] = starts
    ptr = np.arange(n) - 1                     # a probe: the state before it
    ends = np.flatnonzero(k == 0)
    ptr[ends] = start_at[ev[ends]] - 1         # an end: the state before its event started
    val = np.full(n, -1, np.int64)
    val[starts] = ev[starts]
    done = (k == 2) | (ptr < 0)
    todo = np.flatnonzero(~done)
    while len(todo):
        p = ptr[todo]
        hit = done[p]
        val[todo[hit]] = val[p[hit]]
        done[todo[hit]] = True
        todo = todo[~hit]
        ptr[todo] = ptr[ptr[todo]]
        gone = ptr[todo] < 0                   # back before the first bound: nothing ran
        done[todo[gone]] = True
        todo = todo[~gone]
    last = np.flatnonzero(np.r_[t[1:] != t[:-1], True])   # the state after the last bound at each time
    owner = val[last]
    return t[last][:-1], t[last][1:], np.where(owner >= 0, live[np.maximum(owner, 0)] if m else -1, -1)[:-1]


def _host_side(m, phase: str, by_pass: bool = False) -> HostSide:
    k = m.kernels
    tables = (m.cpu_ops, m.python, m.launches)
    # the launching thread: the one that made most launches (the Python thread)
    L = m.launches
    if len(L):
        tids = _distinct(L.tid)
        main_tid = int(tids[np.bincount(np.searchsorted(tids, L.tid)).argmax()])
    else:
        main_tid = next((int(t.tid[0]) for t in tables if len(t)), -1)
    # only the launching thread's events are read (the attribution is on its time)
    ts, end, _, sname, keys = _events(m, main_tid)
    keys = keys + [("none", NO_EVENT)]
    none = len(keys) - 1
    t0 = float(k.ts.min()) if len(k) else 0.0

    def ns(x):
        x = np.subtract(x, t0, dtype=np.float64)
        x *= _NS
        return np.rint(x, out=x).astype(np.int64)

    # the passes' host windows
    rows = np.flatnonzero(compared_mask(m, phase))
    steps = np.unique(k.step[rows])
    steps = steps[steps >= 0].tolist()
    ws = ns([m.steps[s].ts for s in steps])
    we = ns([m.steps[s].ts + max(m.steps[s].dur, 0.0) for s in steps])
    o = np.argsort(ws, kind="stable")
    ws, we = ws[o], we[o]
    # windows made disjoint (a window starts no earlier than the one before it ended): each
    # instant counts in one pass
    we = np.maximum(we, ws)
    if len(ws) > 1:
        ws[1:] = np.maximum(ws[1:], np.maximum.accumulate(we)[:-1])
        we = np.maximum(we, ws)
    # launch-bound gaps on the same clock (launch_bound_closers counts from the first activity too),
    # each read on the thread that launched the kernel ending it: the GPU waited for that thread
    gs, ge, _, closer = launch_bound_closers(m, phase, by_pass=by_pass)
    li = k.launch[closer] if len(closer) else np.zeros(0, np.int64)
    gt = np.where(li >= 0, L.tid[np.maximum(li, 0)] if len(L) else main_tid, main_tid)
    on_main = gt == main_tid
    n = len(keys)
    # integer ns on the GPU gaps' clock: segment bounds are event bounds exactly
    per, idle = _attribute(ns(ts), ns(end), sname, none, n, ws, we, gs[on_main], ge[on_main])
    idle = idle.tolist()
    index = {key: i for i, key in enumerate(keys)}
    for th in _distinct(gt[~on_main]).tolist():
        o_ts, o_end, _, o_name, o_keys = _events(m, th)
        o_keys = o_keys + [("none", NO_EVENT)]
        sel = gt == th
        _, o_idle = _attribute(ns(o_ts), ns(o_end), o_name, len(o_keys) - 1, len(o_keys), ws[:0], we[:0],
                               gs[sel], ge[sel])
        for key, v in zip(o_keys, o_idle.tolist()):
            if v:
                if key not in index:
                    index[key] = len(keys)
                    keys.append(key)
                    idle.append(0)
                idle[index[key]] += v
    # `none` last, after any other thread's names
    if none != len(keys) - 1:
        order = [i for i in range(len(keys)) if i != none] + [none]
        keys = [keys[i] for i in order]
        idle = [idle[i] for i in order]
        per = np.concatenate([per, np.zeros((len(keys) - len(per), per.shape[1]), per.dtype)])[order]
        none = len(keys) - 1
    idle = np.array(idle, np.int64)
    self_ns = per.sum(1)
    # the gaps' time outside their union (gaps of two passes that overlap on the GPU): no host event's
    idle[none] += int((ge - gs).sum()) - int(idle.sum())
    return HostSide(names=keys, self_ns=self_ns, per_pass_ns=per, idle_ns=idle,
                    window_ns=int((we - ws).sum()), idle_total_ns=int((ge - gs).sum()), passes=len(ws),
                    threads=len(_distinct(np.concatenate([t.tid for t in tables]))),
                    gap_threads=len(_distinct(gt)))
