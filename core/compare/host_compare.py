"""Host hotspots side by side: each side's host operations by self time over its compared passes,
and the launch-bound idle of each side split by the host operation running during it
(`kerneldiff.core.analysis.host_hotspots`).

Figures are on the comparison's basis (per pass when the sides hold different numbers of passes).
Each list keeps its largest rows and folds the rest into one `(other host operations)` row, so a
side's `idle_by_op` parts sum to its `idle: launch-bound` ledger row and its self times to its
passes' windows.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np

from kerneldiff.core.analysis.cut_work import compared_mask
from kerneldiff.core.analysis.host_hotspots import host_side

TOP = 20
OTHER = "(other host operations)"
_NS = 1000.0


@dataclass
class HostOp:
    name: str
    kind: str                 # operator | python | runtime | none | other
    a_us: float
    b_us: float
    gap_us: float             # a - b
    a_per_pass_us: list[float] = field(default_factory=list)   # self time in each pass (top lists)
    b_per_pass_us: list[float] = field(default_factory=list)


@dataclass
class HostHotspots:
    basis: str
    passes: dict[str, int]
    top: dict[str, list[HostOp]]     # "a", "b": that side's largest self times, the other side beside
    idle_by_op: list[HostOp]         # launch-bound idle by host operation, largest |gap| first
    idle_us: dict[str, float]        # each side's launch-bound idle (the ledger row; the parts' sum)
    window_us: dict[str, float]      # each side's passes' host windows
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return asdict(self)


def _passes(m, phase: str) -> int:
    steps = m.kernels.step[compared_mask(m, phase)]
    steps = steps[steps >= 0]
    return max(int(np.count_nonzero(np.bincount(steps))) if len(steps) else 0, 1)


def _fold(rows: list[HostOp], keep: int) -> list[HostOp]:
    if len(rows) <= keep:
        return rows
    rest = rows[keep:]
    a, b = sum(r.a_us for r in rest), sum(r.b_us for r in rest)
    return rows[:keep] + [HostOp(f"{OTHER} ({len(rest)})", "other", a, b, a - b)]


def compare_host(a, b, phase: str = "all", top: int = TOP) -> HostHotspots:
    from kerneldiff.core.analysis.timeline import timeline
    from kerneldiff.core.compare.pass_basis import on_passes

    # the window the comparison's ledger measures: the passes, or the whole trace
    passes = on_passes(timeline(a, phase, keep_cut=False), timeline(b, phase, keep_cut=False), a, b)
    ha, hb = host_side(a, phase, passes), host_side(b, phase, passes)
    na, nb = _passes(a, phase), _passes(b, phase)
    per_pass = na != nb
    da, db = (na, nb) if per_pass else (1, 1)
    # both sides' names on one axis: each side's figures as an array over the union of names
    keys = sorted(set(ha.names) | set(hb.names))
    pos = {k: i for i, k in enumerate(keys)}
    ia = np.array([pos[k] for k in ha.names], np.int64)
    ib = np.array([pos[k] for k in hb.names], np.int64)

    def spread(idx, arr, d):
        out = np.zeros(len(keys))
        out[idx] = np.asarray(arr, np.float64) / _NS / d
        return out

    def rows(x, y) -> list[HostOp]:
        return [HostOp(keys[i][1], keys[i][0], float(x[i]), float(y[i]), float(x[i] - y[i]))
                for i in np.flatnonzero((x != 0) | (y != 0)).tolist()]

    self_rows = rows(spread(ia, ha.self_ns, da), spread(ib, hb.self_ns, db))
    top_a = _fold(sorted(self_rows, key=lambda r: (-r.a_us, r.kind, r.name)), top)
    top_b = _fold(sorted(self_rows, key=lambda r: (-r.b_us, r.kind, r.name)), top)
    # each pass's self time, for the rows the lists keep
    ra = {k: i for i, k in enumerate(ha.names)}
    rb = {k: i for i, k in enumerate(hb.names)}
    for op in {id(r): r for r in top_a + top_b if r.kind != "other"}.values():
        key = (op.kind, op.name)
        if key in ra:
            op.a_per_pass_us = (ha.per_pass_ns[ra[key]] / _NS).tolist()
        if key in rb:
            op.b_per_pass_us = (hb.per_pass_ns[rb[key]] / _NS).tolist()
    idle = sorted(rows(spread(ia, ha.idle_ns, da), spread(ib, hb.idle_ns, db)),
                  key=lambda r: (-abs(r.gap_us), r.kind, r.name))
    notes = []
    for lab, h in (("A", ha), ("B", hb)):
        if len(h.names) <= 1:
            notes.append(f"{lab} records no host events (CPU operators, Python frames, runtime calls)")
        elif not any(k == "python" for k, _ in h.names):
            notes.append(f"{lab} records no Python frames (no with_stack): its host time is by operator "
                         f"and runtime call only")
        if h.gap_threads > 1:
            notes.append(f"{lab}'s launch-bound gaps end with kernels launched from {h.gap_threads} threads: "
                         f"each gap is read on the thread that launched its kernel")
    return HostHotspots(basis="per_pass" if per_pass else "total", passes={"a": na, "b": nb},
                        top={"a": top_a, "b": top_b},
                        idle_by_op=_fold(idle, top),
                        idle_us={"a": ha.idle_total_ns / _NS / da, "b": hb.idle_total_ns / _NS / db},
                        window_us={"a": ha.window_ns / _NS / da, "b": hb.window_ns / _NS / db}, notes=notes)
