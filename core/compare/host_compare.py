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
    ia = {k: i for i, k in enumerate(ha.names)}
    ib = {k: i for i, k in enumerate(hb.names)}
    keys = sorted(set(ia) | set(ib))

    def value(h, idx, key, arr, d):
        i = idx.get(key)
        return float(arr[i]) / _NS / d if i is not None else 0.0

    def rows(arr_a, arr_b, per=False) -> list[HostOp]:
        out = []
        for key in keys:
            x, y = value(ha, ia, key, arr_a, da), value(hb, ib, key, arr_b, db)
            if not (x or y):
                continue
            op = HostOp(key[1], key[0], x, y, x - y)
            if per:
                if key in ia:
                    op.a_per_pass_us = (ha.per_pass_ns[ia[key]] / _NS).tolist()
                if key in ib:
                    op.b_per_pass_us = (hb.per_pass_ns[ib[key]] / _NS).tolist()
            out.append(op)
        return out

    self_rows = rows(ha.self_ns, hb.self_ns, per=True)
    top_a = sorted(self_rows, key=lambda r: (-r.a_us, r.kind, r.name))
    top_b = sorted(self_rows, key=lambda r: (-r.b_us, r.kind, r.name))
    idle = sorted(rows(ha.idle_ns, hb.idle_ns), key=lambda r: (-abs(r.gap_us), r.kind, r.name))
    notes = []
    for lab, h in (("A", ha), ("B", hb)):
        if len(h.names) <= 1:
            notes.append(f"{lab} records no host events (CPU operators, Python frames, runtime calls)")
        elif not any(k == "python" for k, _ in h.names):
            notes.append(f"{lab} records no Python frames (no with_stack): its host time is by operator "
                         f"and runtime call only")
    return HostHotspots(basis="per_pass" if per_pass else "total", passes={"a": na, "b": nb},
                        top={"a": _fold(top_a, top), "b": _fold(top_b, top)},
                        idle_by_op=_fold(idle, top),
                        idle_us={"a": ha.idle_total_ns / _NS / da, "b": hb.idle_total_ns / _NS / db},
                        window_us={"a": ha.window_ns / _NS / da, "b": hb.window_ns / _NS / db}, notes=notes)
