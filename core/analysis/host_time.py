"""One side's host time over a phase's passes: launch calls, sync waits, guard checks, compiled
regions and the rest (Python and dispatch), what stands behind launch-bound idle. A reading of one
model alone, memoised on it, so a side loaded in a forked child computes it there
(`side_readings`); the comparison's `host` divides it by the passes on a per-pass basis
(`kerneldiff.core.compare.ledger.host_time`)."""

from __future__ import annotations

import math
import re
from bisect import bisect_left

import numpy as np

from kerneldiff.core.analysis.cut_work import compared_mask
from kerneldiff.core.analysis.timeline import LAUNCH_RE, SYNC_RE, merge_intervals, name_masks

COMPILED_RE = re.compile(r"^Torch-Compiled Region|^CompiledFunction|^## Call CompiledFxGraph")
COMPILE_ID_RE = re.compile(r"^Torch-Compiled Region: (\d+)/(\d+)")
GUARD_RE = re.compile(r"^TorchDynamo Cache Lookup")


def _union_len(s: np.ndarray, e: np.ndarray) -> float:
    starts, ends = merge_intervals(s, e)
    return float((ends - starts).sum())


def _clip(s, e, ws, we):
    """Intervals [s, e) clipped to the windows [ws, we) (sorted, disjoint), one piece per window hit."""
    if len(s) == 0 or len(ws) == 0:
        return np.zeros(0), np.zeros(0)
    i = np.searchsorted(ws, s, side="right") - 1
    ok = i >= 0
    s, e, i = s[ok], e[ok], i[ok]
    cs, ce = np.maximum(s, ws[i]), np.minimum(e, we[i])
    keep = ce > cs
    return cs[keep], ce[keep]


_LEAD_GAP_US = 20.0   # a guard check ends a few µs before the compiled region it leads into


def _lead_in(m, ws: np.ndarray, we: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Pass windows moved back to where the host began the pass. A pass read from its kernels'
    launches (graph-replayed decode, say) starts inside the compiled region that runs it, after
    that region's guard check: both are this pass's host time (recorded: `TorchDynamo Cache Lookup`
    ends ~2 µs before `Torch-Compiled Region` starts, which encloses the pass's first launch). A
    window never reaches back over the previous one. `rows`: the cpu_ops of guard checks and
    compiled regions."""
    c = m.cpu_ops
    if len(rows) == 0:
        return ws
    ts, end = c.ts[rows], c.ts[rows] + np.maximum(c.dur[rows], 0.0)
    # in start order, a window's candidates [floor, start) are one run, found by bisection, and the
    # earliest hit is the first one in it (a scan of every call per pass: ~10 ms over 512 passes)
    order = np.argsort(ts, kind="stable")
    ts, end = ts[order].tolist(), end[order].tolist()
    out = ws.tolist()
    floors = [-math.inf] + we.tolist()[:-1]
    for i in range(len(out)):
        lo = bisect_left(ts, floors[i])
        while True:   # region enclosing the start, then the guard just before it
            hi, reach = bisect_left(ts, out[i], lo), out[i] - _LEAD_GAP_US
            j = next((j for j in range(lo, hi) if end[j] >= reach), None)
            if j is None:
                break
            out[i] = ts[j]
    return np.array(out, dtype=ws.dtype)


def host_time(model, phase: str = "all") -> dict:
    """One side's host time over the compared passes of `phase`, in total (the comparison divides by
    the passes on a per-pass basis), split by priority so the parts never overlap: launch calls,
    then sync waits, guard checks (TorchDynamo cache lookups), compiled-region calls (their time
    outside the calls above), and the rest (Python and dispatch). Also the compiled regions'
    distinct compile ids: more than one per frame means it was recompiled (a compile id `F/N`
    counts the recompilations of frame F). {} without passes. Memoised on the model."""
    return model.memo(("host_time", phase), lambda: _host_time(model, phase))


def _host_time(m, phase: str) -> dict:
    steps = np.unique(m.kernels.step[np.nonzero(compared_mask(m, phase))[0]])
    steps = steps[steps >= 0].tolist()
    if not steps:
        return {}
    ws = np.array([m.steps[s].ts for s in steps])
    we = ws + np.array([max(m.steps[s].dur, 0.0) for s in steps])
    o = np.argsort(ws)
    ws, we = ws[o], we[o]
    L, c = m.launches, m.cpu_ops
    # each table's distinct names found once for all its patterns
    launch, sync = name_masks(m, L.name, [LAUNCH_RE, SYNC_RE])
    guard, compiled, compile_id = name_masks(m, c.name, [GUARD_RE, COMPILED_RE, COMPILE_ID_RE])
    ws = _lead_in(m, ws, we, np.flatnonzero(guard | compiled))
    span = float((we - ws).sum())

    groups = []
    for table, mask in ((L, launch), (L, sync), (c, guard), (c, compiled)):
        r = np.flatnonzero(mask)
        t = table.ts[r]
        groups.append(_clip(t, t + np.maximum(table.dur[r], 0.0), ws, we))
    parts, acc_s, acc_e, before = [], np.zeros(0), np.zeros(0), 0.0
    for gs, ge in groups:
        acc_s, acc_e = np.concatenate([acc_s, gs]), np.concatenate([acc_e, ge])
        covered = _union_len(acc_s, acc_e)
        parts.append(covered - before)
        before = covered
    compile_ids = sorted({mt.group(0).removeprefix("Torch-Compiled Region: ")
                          for n in np.unique(c.name[compile_id]).tolist()     # each name once
                          if (mt := COMPILE_ID_RE.match(m.strings[n]))})
    frames: dict[str, int] = {}
    for cid in compile_ids:
        f = cid.split("/")[0]
        frames[f] = frames.get(f, 0) + 1
    return {"passes": len(steps), "host_us": span, "launch_calls_us": parts[0],
            "sync_waits_us": parts[1], "guard_checks_us": parts[2],
            "compiled_regions_us": parts[3], "python_dispatch_us": max(span - before, 0.0),
            "compile_ids": compile_ids, "recompiles": sum(n - 1 for n in frames.values())}
