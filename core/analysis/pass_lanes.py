"""One pass's kernels on its own time axis, grouped by stream (the explorer's pass timeline draws
them), and the launch-duration statistics of one kernel name."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kerneldiff.core.analysis.stats import Stats
from kerneldiff.core.model import PHASE_ID


@dataclass
class PassKernels:
    """One side's kernels in one pass, by start time (µs from the pass's first kernel)."""

    side: str
    label: str
    rows: np.ndarray        # kernel rows of the model
    start: np.ndarray
    end: np.ndarray
    stream: np.ndarray      # stream id per kernel
    launch: np.ndarray      # launch call start, µs from the same origin (nan: unknown)
    streams: list[int]      # every stream of the pass, by id
    lanes: dict[int, np.ndarray]   # stream -> its kernels (indexes into rows), by start time
    busiest: list[int]      # streams by kernel time, most first
    busy_us: dict[int, float]

    @property
    def span_us(self) -> float:
        return float(self.end.max()) if len(self.end) else 0.0

    @property
    def idle_us(self) -> float:
        """The pass's span that no stream runs a kernel in (the union of the kernels, subtracted)."""
        if not len(self.start):
            return 0.0
        order = np.argsort(self.start, kind="stable")
        st, en = self.start[order], self.end[order]
        reach = np.maximum.accumulate(en)
        gaps = st[1:] - reach[:-1]
        return float(gaps[gaps > 0].sum() + max(float(st[0]), 0.0))

    def share_outside(self, streams) -> float:
        """The fraction of the pass's kernel time on streams other than `streams` (those not drawn)."""
        total = sum(self.busy_us.values()) or 1.0
        return 1.0 - sum(self.busy_us[x] for x in streams if x in self.busy_us) / total


def pass_kernels(model, side: str, label: str, step: int, phase: str) -> PassKernels:
    """The kernels of pass `step` (those of `phase` only, unless "all"), one lane per stream: those
    launched inside its forward call, as the timeline measures it (kerneldiff.core.analysis.pass_extent)."""
    from kerneldiff.core.analysis.pass_extent import in_pass_mask

    k = model.kernels
    sel = (k.step == step) & in_pass_mask(model)
    if phase != "all" and phase in PHASE_ID:
        sel &= k.phase == PHASE_ID[phase]
    rows = np.flatnonzero(sel)
    rows = rows[np.argsort(k.ts[rows], kind="stable")]
    t0 = float(k.ts[rows].min()) if len(rows) else 0.0
    start = k.ts[rows] - t0
    end = start + np.maximum(k.dur[rows], 0.0)
    li = k.launch[rows].astype(np.int64)
    launch = np.full(len(rows), np.nan)
    ok = (li >= 0) & (li < len(model.launches.ts))
    launch[ok] = model.launches.ts[li[ok]] - t0
    stream = k.stream[rows].astype(np.int64)
    order = np.argsort(stream, kind="stable")       # grouped once: one pass over the kernels
    ids, first = np.unique(stream[order], return_index=True)
    lanes = dict(zip(ids.tolist(), np.split(order, first[1:]))) if len(order) else {}
    busy = {s: float((end[g] - start[g]).sum()) for s, g in lanes.items()}
    busiest = sorted(busy, key=lambda s: (-busy[s], s))
    return PassKernels(side, label, rows, start, end, stream, launch, ids.tolist(), lanes, busiest, busy)


def name_durations(model, row: int, phase: str = "all") -> Stats:
    """Every launch of kernel row `row`'s name in `phase` ("all": the whole trace), as the rest of the
    explorer's figures for that phase are counted."""
    k = model.kernels
    d = k.dur[(k.name == k.name[row]) & model.phase_mask(phase)]
    if len(d) == 0:     # the row itself lies outside the phase: it is still one launch of its name
        d = k.dur[row:row + 1]
    return Stats(count=len(d), total_us=float(d.sum()), mean_us=float(d.mean()),
                     median_us=float(np.median(d)), min_us=float(d.min()), p90_us=float(np.percentile(d, 90)),
                     p95_us=float(np.percentile(d, 95)), max_us=float(d.max()))
