"""The gap ledger: the wall-clock gap between two traces, accounted for cause by cause.

A side's wall clock (first to last GPU activity, on the comparison's basis) is exactly

    Σ kernel time per operation − stream overlap + idle (launch-bound + sync/host waits + other)

because busy time is the summed kernel time less the time streams ran at once, and idle is the
rest of the span. Every term is taken in integer nanoseconds from the timeline's own clock, so the
entries' gaps sum to the wall gap exactly (up to the division by the pass count on a per-pass basis).

Each operation's gap is split into *more launches* and *slower kernels* like with like
(`kerneldiff.core.compare.split`: by kernel and launching operator, then by operator; extra launches
priced at the extra kernels' own mean); both parts sum to the gap and swapping the sides negates both.

`host_time` breaks each side's host time per pass into launch calls, sync waits, guard checks,
compiled-region calls and the rest (Python and dispatch): what stands behind launch-bound idle.
"""

from __future__ import annotations

import numpy as np

from kerneldiff.core.analysis.host_time import host_time as side_host_time
from kerneldiff.core.analysis.pass_extent import between_host, in_pass_mask
from kerneldiff.core.analysis.timeline import Timeline, merge_intervals
from kerneldiff.core.compare.host_result import HostTime
from kerneldiff.core.compare.pass_basis import OUTSIDE_ROWS, around_passes, headline_window, on_passes, outside_parts
from kerneldiff.core.compare.result import LedgerEntry
from kerneldiff.core.compare.split import PRICING, split, top_parts
from kerneldiff.core.numbers import small_unique

_NS = 1000.0


def _ns(v) -> np.ndarray:
    return np.round(np.maximum(v, 0.0) * _NS).astype(np.int64)


def _groups(v, sel: np.ndarray | None = None) -> dict[tuple[str, str, str], tuple[int, int]]:
    """(family, kernel name, launching operator) -> (launches, time in ns) of one side (of the
    view's positions `sel` selects, when given)."""
    out: dict = {}
    if len(v.rows) == 0 or (sel is not None and not sel.any()):
        return out
    key, ns, un, uo, bound = _row_keys(v)
    if sel is not None:
        key, ns = key[sel], ns[sel]
    uniq, inv = small_unique(key, bound)
    n = np.bincount(inv, minlength=len(uniq))
    t = np.bincount(inv, weights=ns, minlength=len(uniq))
    text = v.m.strings
    wn, wo = len(un), len(uo)
    for u, c, tt in zip(uniq.tolist(), n.tolist(), t.tolist()):
        rest, o = divmod(u, wo)
        g, name = divmod(rest, wn)
        o, name = uo[o], un[name]
        out[(v.groups[g], text[name] if name >= 0 else "", text[o] if o >= 0 else "")] = (c, int(tt))
    return out


def _row_keys(v) -> tuple[np.ndarray, np.ndarray, list, list, int]:
    """Each of the view's kernels as one int64 (family, name, operator) key, its time in ns, the
    distinct names and operators the key's digits index, and the key space: computed once per view
    (a comparison groups a side ~7 times, by the ledger's window and by fusion finding). One key per
    row (np.unique on rows, axis=0, takes ~1 s on a 214k-kernel trace), from the names' and
    operators' ranks: a key space small enough for a table, not a sort (~10 ms a side at 250k
    kernels), and in the same (family, name, operator) order as the ranks among any subset."""
    memo = v.__dict__.get("_row_keys")
    if memo is not None and memo[0] is v.name:   # a copy of the view with other rows has its own
        return memo[1]
    k = v.m.kernels
    op = v._take(k.cpu_op)
    names = v.m.cpu_ops.name
    op_name = (np.where(op >= 0, names[np.maximum(op, 0)], -1) if len(names) else np.full(len(op), -1)).astype(np.int64)
    un, ni = _ranks(v.name)
    uo, oi = _ranks(op_name)
    wn, wo = len(un), len(uo)
    keys = ((v.gcat.astype(np.int64) * wn + ni) * wo + oi, _ns(v.dur), un.tolist(), uo.tolist(),
            len(v.groups) * wn * wo)
    v.__dict__["_row_keys"] = (v.name, keys)
    return keys


def _ranks(ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(the distinct ids, ascending; each id's rank among them) of a non-empty integer array."""
    lo = int(ids.min())
    uniq, rank = small_unique(ids.astype(np.int64) - lo, int(ids.max()) - lo + 1)
    return uniq + lo, rank


def _operations(va, vb, na: int, nb: int, sel_a=None, sel_b=None) -> list[LedgerEntry]:
    sa, sb = _groups(va, sel_a), _groups(vb, sel_b)
    out = []
    for fam in sorted({k[0] for k in sa} | {k[0] for k in sb}):
        ga = {k: v for k, v in sa.items() if k[0] == fam}
        gb = {k: v for k, v in sb.items() if k[0] == fam}
        ta, tb = sum(t for _, t in ga.values()) / na / _NS, sum(t for _, t in gb.values()) / nb / _NS
        ka, kb = sum(c for c, _ in ga.values()) / na, sum(c for c, _ in gb.values()) / nb
        count, speed, parts = split({k[1:]: x for k, x in ga.items()}, {k[1:]: x for k, x in gb.items()}, na, nb, _NS)
        out.append(LedgerEntry(cause=fam, a_us=ta, b_us=tb, gap_us=ta - tb, kind="kernels",
                               count_gap_us=count, speed_gap_us=speed, a_launches=ka, b_launches=kb,
                               split_basis=PRICING, split_parts=top_parts(parts)))
    return out


def window(va, vb, ta: Timeline, tb: Timeline) -> tuple[np.ndarray | None, np.ndarray | None]:
    """The kernels the ledger counts, per side view (None: all of them): the window the headline
    measures (kerneldiff.core.compare.pass_basis), the passes' kernels or the whole trace's."""
    if around_passes(ta, tb, va.m, vb.m) or on_passes(ta, tb, va.m, vb.m):
        # a pass is measured on the kernels launched inside its forward call
        return va._take(in_pass_mask(va.m)), vb._take(in_pass_mask(vb.m))
    return None, None


def build(va, vb, ta: Timeline, tb: Timeline, per_pass: bool) -> list[LedgerEntry]:
    """The ledger of a comparison (largest |gap| first); empty when a side has no work."""
    if len(va.rows) == 0 or len(vb.rows) == 0:
        return []
    na, nb = (va.passes, vb.passes) if per_pass else (1, 1)
    # the window the headline measures (kerneldiff.core.compare.pass_basis): the passes' kernels,
    # overlap and idle, or the whole trace's
    around = around_passes(ta, tb, va.m, vb.m)
    passes = around or on_passes(ta, tb, va.m, vb.m)
    sel_a, sel_b = window(va, vb, ta, tb)
    entries = _operations(va, vb, na, nb, sel_a, sel_b)
    wa, wb = headline_window(ta, passes), headline_window(tb, passes)
    da = va.dur if sel_a is None else va.dur[sel_a]
    db = vb.dur if sel_b is None else vb.dur[sel_b]
    # overlap = summed kernel time − busy, both in ns: exact, never negative
    oa = (int(_ns(da).sum()) - round(wa.busy_us * _NS)) / na / _NS
    ob = (int(_ns(db).sum()) - round(wb.busy_us * _NS)) / nb / _NS
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
    if around:
        entries += _outside_rows(ta, tb, na, nb, va.m, vb.m)
    entries = [e for e in entries if e.a_us or e.b_us]
    entries.sort(key=lambda e: (-abs(e.gap_us), e.cause))
    return entries


_OUTSIDE_DETAIL = {
    "before first pass": "from the window's first GPU activity to the first pass's (set-up, work queued before the "
                         "first forward call)",
    "between passes": "from one pass's last GPU activity to the next one's first: the loop around the model "
                      "(sampling, the next input, guard checks), its kernels and the GPU's idle time",
    "after last pass": "from the last pass's last GPU activity to the window's end (wind-down)",
}


def _outside_rows(ta: Timeline, tb: Timeline, na: int, nb: int, ma, mb) -> list[LedgerEntry]:
    """--all-passes: the whole window is the passes (the rows above, measured on them) plus the time
    around them, a row each (kerneldiff.core.compare.pass_basis.outside_parts): so every µs of the
    window is accounted for and the rows still sum to the wall gap. The row between passes names
    what the host ran there (`between passes (host: _sample)`) when both sides say the same."""
    pa, pb = outside_parts(ta), outside_parts(tb)
    hosts = [between_host(m) for m in (ma, mb)]
    out = []
    for cause in OUTSIDE_ROWS:
        a_us = round(pa.get(cause, 0.0) * _NS) / na / _NS
        b_us = round(pb.get(cause, 0.0) * _NS) / nb / _NS
        detail = _OUTSIDE_DETAIL[cause]
        if cause == "between passes" and any(hosts):
            detail += "; the host ran " + ", ".join(f"{k}: {h or 'not recorded'}" for k, h in zip("AB", hosts))
            if hosts[0] is not None and hosts[0] == hosts[1]:
                cause = f"between passes (host: {hosts[0].rsplit('): ', 1)[-1]})"
        out.append(LedgerEntry(cause, a_us, b_us, a_us - b_us, kind="outside", detail=detail))
    return out


# --- host time -------------------------------------------------------------------------------------

def host_time(v, per_pass: bool) -> HostTime:
    """A side's host time over the compared passes (`kerneldiff.core.analysis.host_time`), per pass
    when `per_pass`."""
    raw = side_host_time(v.m, v.phase)
    div = raw.get("passes", 1) if per_pass else 1
    return HostTime(**{k: x / div if k.endswith("_us") else list(x) if isinstance(x, list) else x
                       for k, x in raw.items()})


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
    from kerneldiff.core.analysis.timeline import timeline

    comm_fams = set()
    masks = []
    # on the headline's window: the passes' kernels only (kerneldiff.core.compare.pass_basis)
    ta, tb = timeline(va.m, va.phase, keep_cut=False), timeline(vb.m, vb.phase, keep_cut=False)
    passes = on_passes(ta, tb, va.m, vb.m) or around_passes(ta, tb, va.m, vb.m)
    for v in (va, vb):
        is_comm = np.array([classifier.role(c) == "comm" for c in v.m.categories] + [False], dtype=bool)
        cat = v._take(v.m.kernels.cat)
        mask = is_comm[np.where(cat >= 0, cat, len(v.m.categories))]
        if passes:
            mask &= v._take(in_pass_mask(v.m))
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
