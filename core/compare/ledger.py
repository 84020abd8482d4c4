"""The gap ledger: the wall-clock gap between two traces, accounted for cause by cause.

A side's wall clock (first to last GPU activity, on the comparison's basis) is exactly

    Σ kernel time per operation − stream overlap + idle (launch-bound + sync/host waits + other)

because busy time is the summed kernel time less the time streams ran at once, and idle is the
rest of the span. Every term is taken in integer nanoseconds from the timeline's own clock, so the
entries' gaps sum to the wall gap exactly (up to the division by the pass count on a per-pass basis).

Each operation's gap is split into *more launches* and *slower kernels*, symmetrically (swapping the
sides negates both): kernels are matched by name, then (across vendors) by launching operator, then as one group; each
matched group contributes (count difference × mean of the two means) to the first and (mean
difference × mean of the two counts) to the second; a group only one side runs counts wholly as
launches. Both parts are per kernel, never a category's whole gap.

`host_time` breaks each side's host time per pass into launch calls, sync waits, guard checks,
compiled-region calls and the rest (Python and dispatch): what stands behind launch-bound idle.
"""

from __future__ import annotations

import math
import re
from bisect import bisect_left

import numpy as np

from kerneldiff.core.analysis.timeline import LAUNCH_RE, SYNC_RE, Timeline, merge_intervals, name_masks
from kerneldiff.core.compare.result import LedgerEntry
from kerneldiff.core.numbers import small_unique

_NS = 1000.0
COMPILED_RE = re.compile(r"^Torch-Compiled Region|^CompiledFunction|^## Call CompiledFxGraph")
COMPILE_ID_RE = re.compile(r"^Torch-Compiled Region: (\d+)/(\d+)")
GUARD_RE = re.compile(r"^TorchDynamo Cache Lookup")


def _ns(v) -> np.ndarray:
    return np.round(np.maximum(v, 0.0) * _NS).astype(np.int64)


def _groups(v) -> dict[tuple[str, str, str], tuple[int, int]]:
    """(family, kernel name, launching operator) -> (launches, time in ns) of one side."""
    out: dict = {}
    if len(v.rows) == 0:
        return out
    k = v.m.kernels
    op = v._take(k.cpu_op)
    names = v.m.cpu_ops.name
    op_name = (np.where(op >= 0, names[np.maximum(op, 0)], -1) if len(names) else np.full(len(op), -1)).astype(np.int64)
    # one int64 key per row (np.unique on rows, axis=0, took ~1 s on a 214k-kernel trace), from the
    # names' and operators' ranks among those present: a key space small enough for a table, not a
    # sort (~10 ms a side at 250k kernels), and in the same (family, name, operator) order
    bound = len(v.m.strings) + 1
    un, ni = small_unique(v.name.astype(np.int64) + 1, bound)
    uo, oi = small_unique(op_name + 1, bound)
    wn, wo = len(un), len(uo)
    uniq, inv = small_unique((v.gcat.astype(np.int64) * wn + ni) * wo + oi, len(v.groups) * wn * wo)
    n = np.bincount(inv, minlength=len(uniq))
    t = np.bincount(inv, weights=_ns(v.dur), minlength=len(uniq))
    text = v.m.strings
    un, uo = (un - 1).tolist(), (uo - 1).tolist()
    for u, c, tt in zip(uniq.tolist(), n.tolist(), t.tolist()):
        rest, o = divmod(u, wo)
        g, name = divmod(rest, wn)
        o, name = uo[o], un[name]
        out[(v.groups[g], text[name] if name >= 0 else "", text[o] if o >= 0 else "")] = (c, int(tt))
    return out


def _parts(ca: float, ta: float, cb: float, tb: float) -> tuple[float, float]:
    """(more launches, slower kernels) of a group: counts and times per basis unit."""
    if ca == 0 or cb == 0:
        return ta - tb, 0.0
    ma, mb = ta / ca, tb / cb
    return (ca - cb) * (ma + mb) / 2, (ma - mb) * (ca + cb) / 2


def _matched(ga: dict, gb: dict, na: int, nb: int) -> tuple[float, float]:
    """(more launches, slower kernels) of one operation's kernel groups on both sides, matched level by
    level: the same kernel name (the same kernel, launched by any operator); then, across vendors
    whose kernels are named differently, the same launching operator (aten::copy_ against
    aten::copy_: a cuBLAS workspace memset launched by aten::mm matches nothing on a side without
    one, and so counts as launches only); then the rest as one group."""
    count = speed = 0.0
    for level in (lambda key: key[1], lambda key: key[2] or None, lambda key: ""):
        by_a: dict = {}
        by_b: dict = {}
        for side, groups in ((by_a, ga), (by_b, gb)):
            for key, (c, t) in groups.items():
                lk = level(key)
                if lk is None:
                    continue
                side.setdefault(lk, []).append(key)
        for lk in sorted(by_a.keys() & by_b.keys()):   # sorted: sums in one order, the same digits every run
            ka, kb = by_a[lk], by_b[lk]
            ca, ta = sum(ga[x][0] for x in ka), sum(ga[x][1] for x in ka)
            cb, tb = sum(gb[x][0] for x in kb), sum(gb[x][1] for x in kb)
            c, s = _parts(ca / na, ta / na / _NS, cb / nb, tb / nb / _NS)
            count, speed = count + c, speed + s
            for x in ka:
                del ga[x]
            for x in kb:
                del gb[x]
    # what is left runs on one side only
    count += sum(t for _, t in ga.values()) / na / _NS - sum(t for _, t in gb.values()) / nb / _NS
    return count, speed


def _operations(va, vb, na: int, nb: int) -> list[LedgerEntry]:
    sa, sb = _groups(va), _groups(vb)
    out = []
    for fam in sorted({k[0] for k in sa} | {k[0] for k in sb}):
        ga = {k: v for k, v in sa.items() if k[0] == fam}
        gb = {k: v for k, v in sb.items() if k[0] == fam}
        ta, tb = sum(t for _, t in ga.values()) / na / _NS, sum(t for _, t in gb.values()) / nb / _NS
        ka, kb = sum(c for c, _ in ga.values()) / na, sum(c for c, _ in gb.values()) / nb
        count, speed = _matched(ga, gb, na, nb)
        out.append(LedgerEntry(cause=fam, a_us=ta, b_us=tb, gap_us=ta - tb, kind="kernels",
                               count_gap_us=count, speed_gap_us=speed, a_launches=ka, b_launches=kb))
    return out


def build(va, vb, ta: Timeline, tb: Timeline, per_pass: bool) -> list[LedgerEntry]:
    """The ledger of a comparison (largest |gap| first); empty when a side has no work."""
    if len(va.rows) == 0 or len(vb.rows) == 0:
        return []
    na, nb = (va.passes, vb.passes) if per_pass else (1, 1)
    entries = _operations(va, vb, na, nb)
    wa, wb = ta.whole, tb.whole
    # overlap = summed kernel time − busy, both in ns: exact, never negative
    oa = (int(_ns(va.dur).sum()) - round(wa.busy_us * _NS)) / na / _NS
    ob = (int(_ns(vb.dur).sum()) - round(wb.busy_us * _NS)) / nb / _NS
    entries.append(LedgerEntry("overlap", oa, ob, -(oa - ob), kind="overlap",
                               detail="time two or more activities ran at once (on several streams, or overlapping on one): summed kernel time the wall clock "
                                      "does not pay, so it counts against the side that has more"))
    for cause, field, detail in (
            ("idle: launch-bound", "launch_bound_us", "the GPU waited for the host to launch the next kernel"),
            ("idle: sync waits", "sync_us", "the host waited on the GPU (synchronise, blocking or D2H copy)"),
            ("idle: other", "other_us", "work was queued and the GPU still stood idle (event waits, graph gaps)")):
        a_us = round(getattr(wa, field) * _NS) / na / _NS
        b_us = round(getattr(wb, field) * _NS) / nb / _NS
        entries.append(LedgerEntry(cause, a_us, b_us, a_us - b_us, kind="idle", detail=detail))
    entries = [e for e in entries if e.a_us or e.b_us]
    entries.sort(key=lambda e: (-abs(e.gap_us), e.cause))
    return entries


# --- host time -------------------------------------------------------------------------------------

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


def host_time(v, per_pass: bool) -> dict:
    """Each side's host time over the compared passes (per pass when `per_pass`), split by priority
    so the parts never overlap: launch calls, then sync waits, guard checks (TorchDynamo cache
    lookups), compiled-region calls (their time outside the calls above), and the rest (Python and
    dispatch). Also the compiled regions' distinct compile ids: more than one per frame means it was
    recompiled (a compile id `F/N` counts the recompilations of frame F)."""
    m = v.m
    steps = np.unique(v._take(m.kernels.step))
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
        groups.append(_clip(table.ts[r], table.ts[r] + np.maximum(table.dur[r], 0.0), ws, we))
    parts, acc_s, acc_e, before = [], np.zeros(0), np.zeros(0), 0.0
    for gs, ge in groups:
        acc_s, acc_e = np.concatenate([acc_s, gs]), np.concatenate([acc_e, ge])
        covered = _union_len(acc_s, acc_e)
        parts.append(covered - before)
        before = covered
    div = len(steps) if per_pass else 1
    compile_ids = sorted({mt.group(0).removeprefix("Torch-Compiled Region: ")
                          for r in np.flatnonzero(compile_id).tolist()
                          if (mt := COMPILE_ID_RE.match(m.strings[int(c.name[r])]))})
    frames: dict[str, int] = {}
    for cid in compile_ids:
        f = cid.split("/")[0]
        frames[f] = frames.get(f, 0) + 1
    return {"passes": len(steps), "host_us": span / div, "launch_calls_us": parts[0] / div,
            "sync_waits_us": parts[1] / div, "guard_checks_us": parts[2] / div,
            "compiled_regions_us": parts[3] / div, "python_dispatch_us": max(span - before, 0.0) / div,
            "compile_ids": compile_ids, "recompiles": sum(n - 1 for n in frames.values())}


# --- exposed communication ---------------------------------------------------------------------------

def _exposed_ns(v, comm: np.ndarray) -> tuple[int, int]:
    """(communication kernel time, the part of it no compute kernel overlaps) of a view, in ns: the
    union of communication and compute kernels less the union of compute kernels."""
    from kerneldiff.core.model import KIND_KERNEL

    k = v.m.kernels
    s = _ns(v._take(k.ts) - float(k.ts.min()) if len(k) else v.dur)
    e = s + _ns(v.dur)
    kern = v._take(k.kind) == KIND_KERNEL
    compute = kern & ~comm
    c_ns = int((e - s)[comm].sum())
    # |compute ∪ comm| − |compute| is the comm union's length less what of it the compute union
    # covers: one merge of the ~all compute kernels, not two (integer ns: the same number exactly)
    cs, ce = merge_intervals(s[compute], e[compute])
    ms, me = merge_intervals(s[comm], e[comm])
    return c_ns, int((me - ms).sum()) - _covered(ms, me, cs, ce)


def _covered(s: np.ndarray, e: np.ndarray, cs: np.ndarray, ce: np.ndarray) -> int:
    """How much of the disjoint sorted intervals [s, e) the disjoint sorted intervals [cs, ce) cover."""
    if len(s) == 0 or len(cs) == 0:
        return 0
    before = np.concatenate(([0], np.cumsum(ce - cs)))   # covered length before each covering interval

    def upto(x: np.ndarray) -> np.ndarray:               # covered length below x
        j = np.searchsorted(cs, x, side="right") - 1
        inside = np.minimum(ce[np.maximum(j, 0)], x) - cs[np.maximum(j, 0)]
        return np.where(j >= 0, before[np.maximum(j, 0)] + inside, 0)

    return int((upto(e) - upto(s)).sum())


def exposed_communication(entries: list[LedgerEntry], va, vb, per_pass: bool, classifier) -> list[LedgerEntry]:
    """The ledger with the communication kernels' entries (registry role `comm`: All-Reduce, All-Gather,
    Communication…) replaced by one *exposed communication* entry: the communication time during
    which no compute kernel ran. The hidden rest ran at once with compute, and so joins the overlap
    entry; the sum of the entries, the wall gap, is unchanged. Unchanged when neither side communicates."""
    comm_fams = set()
    masks = []
    for v in (va, vb):
        is_comm = np.array([classifier.role(c) == "comm" for c in v.m.categories] + [False], dtype=bool)
        cat = v._take(v.m.kernels.cat)
        mask = is_comm[np.where(cat >= 0, cat, len(v.m.categories))]
        masks.append(mask)
        comm_fams |= {v.groups[int(g)] for g in np.unique(v.gcat[mask]).tolist()}
    if not any(m.any() for m in masks):
        return entries
    na, nb = (va.passes, vb.passes) if per_pass else (1, 1)
    (ca, ea), (cb, eb) = _exposed_ns(va, masks[0]), _exposed_ns(vb, masks[1])
    a_us, b_us = ea / na / _NS, eb / nb / _NS
    ha, hb = (ca - ea) / na / _NS, (cb - eb) / nb / _NS     # hidden behind compute
    out = [e for e in entries if not (e.kind == "kernels" and e.cause in comm_fams)]
    for i, e in enumerate(out):
        if e.kind == "overlap":
            oa, ob = e.a_us - ha, e.b_us - hb
            out[i] = LedgerEntry(e.cause, oa, ob, -(oa - ob), kind=e.kind,
                                 detail=e.detail + "; communication hidden behind compute is counted in "
                                                   "'exposed communication' instead")
    out.append(LedgerEntry("exposed communication", a_us, b_us, a_us - b_us, kind="communication",
                           detail=f"communication kernels ({', '.join(sorted(comm_fams))}) while no compute kernel "
                                  f"ran on the device; A hid {ha:,.1f} µs of {ca / na / _NS:,.1f} behind compute, "
                                  f"B {hb:,.1f} of {cb / nb / _NS:,.1f}"))
    out = [e for e in out if e.a_us or e.b_us]
    out.sort(key=lambda e: (-abs(e.gap_us), e.cause))
    return out
