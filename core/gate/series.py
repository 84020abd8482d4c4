"""Each gated metric of one trace as a figure per pass, and the same metric pass by pass (the
repeats the noise floor is read from).

Every figure is taken over the work a comparison counts (the phase's kernels less the work the
profiler's window cut, `kerneldiff.core.analysis.cut_work`) and divided by the passes that run it,
so a base of 48 passes and a new trace of 20 compare one average pass. `wall`, `kernels` and `idle`
are the comparison's own timeline figures (the headline's wall clock per pass); `op`, `layer` and
`comm` are read from the kernels here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from kerneldiff.core.analysis.cut_work import compared_mask

if TYPE_CHECKING:
    from kerneldiff.core.compare.side_timeline import SideTimeline

MIN_REPEATS = 4      # passes of one phase needed to read their spread (3 successive differences)
MIN_LAYERS = 4       # layers of one pass needed to read their spread (the same)


@dataclass
class PassSeries:
    """One side's metric: `value` (per pass; None when the side cannot say, with `missing` saying
    why), and the metric in each pass with that pass's phase, in trace order. `estimator` says
    whether `value` is a mean per pass or a median (the noise floor of a median is wider)."""

    value: float | None
    per_pass: np.ndarray = field(default_factory=lambda: np.zeros(0))
    phases: list[str] = field(default_factory=list)
    estimator: str = "mean"
    missing: str = ""
    # when too few passes repeat: the standard error read from the layers instead (see
    # SideData.layer_spread), and what it was read from
    fallback_se: float | None = None
    fallback_from: str = ""


class SideData:
    """One trace restricted to the compared work of a phase, with what the metrics share."""

    def __init__(self, model, phase: str, timeline: SideTimeline | None, classifier) -> None:
        self.m, self.tl, self.classifier = model, timeline, classifier
        k = model.kernels
        self.rows = np.flatnonzero(compared_mask(model, phase))
        self.step = k.step[self.rows].astype(np.int64)
        self.dur = k.dur[self.rows]
        present = np.unique(self.step[self.step >= 0])
        self.steps = present                         # the compared passes, in trace order
        self.passes = max(len(present), 1)
        self.phases = [model.steps[int(s)].phase for s in present.tolist()]
        self._cells: tuple | None = None
        self._spread: dict[str, tuple[float, int] | None] = {}

    def per_step(self, mask: np.ndarray) -> np.ndarray:
        """The duration of the masked kernels summed per compared pass (0 where a pass runs none)."""
        out = np.zeros(len(self.steps))
        sel = mask & (self.step >= 0)
        if sel.any():
            idx = np.searchsorted(self.steps, self.step[sel])
            np.add.at(out, idx, self.dur[sel])
        return out

    def layer_spread(self, what: str) -> tuple[float, int] | None:
        if what not in self._spread:     # every check of a side asks: read once
            self._spread[what] = self._layer_spread(what)
        return self._spread[what]

    def _layer_spread(self, what: str) -> tuple[float, int] | None:
        """The relative spread of one layer's `busy` (kernel time) or `span` (first kernel's start to
        last kernel's end) across the layers of a pass, and how many layer cells it was read from;
        None without MIN_LAYERS layers in a pass.

        The layers of a decoder run the same kernels on the same shapes: within one pass they are
        repeats of one piece of work, as successive passes are. A trace that holds one long pass
        (a serving step of 36 layers) has no repeated passes but has these."""
        layer, p, busy = self._layer_cells()
        if len(busy) == 0:
            return None
        if what == "span":
            lay = self.m.kernels.layer[self.rows].astype(np.int64)
            sel = (lay >= 0) & (self.step >= 0)
            key = lay[sel] * len(self.steps) + np.searchsorted(self.steps, self.step[sel])
            uniq, inv = np.unique(key, return_inverse=True)
            inv = inv.reshape(-1)
            ts = self.m.kernels.ts[self.rows][sel]
            lo = np.full(len(uniq), np.inf)
            hi = np.full(len(uniq), -np.inf)
            np.minimum.at(lo, inv, ts)
            np.maximum.at(hi, inv, ts + np.maximum(self.dur[sel], 0.0))
            cells = hi - lo
        else:
            cells = busy
        diffs = []
        for i in np.unique(p).tolist():
            x = cells[p == i]                # this pass's layers, in layer order
            if len(x) >= MIN_LAYERS:
                diffs.append(np.diff(x))
        if not diffs:
            return None
        d = np.concatenate(diffs)
        med = float(np.median(np.abs(cells)))
        if med <= 0:
            return None
        sigma = 1.4826 * float(np.median(np.abs(d - np.median(d)))) / np.sqrt(2)
        return sigma / med, len(cells)

    def _with_layers(self, s: PassSeries, what: str, scale: float | None = None) -> PassSeries:
        """`s` with a standard error from the layers' spread: the figure (or `scale`) times the
        relative spread over √(layer cells), as if each layer were an independent repeat."""
        if s.value is None or any(s.phases.count(ph) >= MIN_REPEATS for ph in set(s.phases)):
            return s     # the passes repeat: their spread is the floor's
        spread = self.layer_spread(what)
        if spread is not None:
            rel, n = spread
            s.fallback_se = abs(scale if scale is not None else s.value) * rel / np.sqrt(n)
            s.fallback_from = f"{n} layer repeats ({'wall' if what == 'span' else 'kernel'} time)"
        return s

    # --- the metrics ----------------------------------------------------------------------------
    def timeline_metric(self, key: str) -> PassSeries:
        """`span_us` (wall), `kernel_us` (kernels) or `idle_us` (idle): the timeline's whole window per
        pass, and its passes one by one."""
        if len(self.rows) == 0 or not self.tl:
            return PassSeries(None, missing="no GPU work in the phase")
        whole = getattr(self.tl, key)
        passes = self.tl.passes
        vals = np.array([getattr(p, key) for p in passes], dtype=float)
        s = PassSeries(whole / self.passes, vals, [p.phase for p in passes])
        if key == "kernel_us":
            return self._with_layers(s, "busy")
        # idle is what is left of the wall clock: its noise is the wall clock's, in µs
        return self._with_layers(s, "span", scale=self.tl.span_us / self.passes)

    def operation(self, name: str) -> PassSeries:
        """An operation's time per pass: the kernels whose category or category family is `name`
        (case-insensitive)."""
        want = name.strip().lower()
        cats = self.m.categories
        hit = np.array([c.lower() == want or self.classifier.group(c).lower() == want for c in cats] + [False])
        mask = hit[self.m.kernels.cat[self.rows]]   # category -1 (unclassified) indexes the trailing False
        return self._with_layers(PassSeries(float(self.dur[mask].sum()) / self.passes, self.per_step(mask),
                                            self.phases), "busy")

    def operations(self) -> set[str]:
        """The category families of the compared kernels (what op:NAME may name)."""
        cats = np.unique(self.m.kernels.cat[self.rows])
        return {self.classifier.group(self.m.categories[c]) for c in cats.tolist() if c >= 0}

    def _layer_cells(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(layer, pass index, time) of every layer in every compared pass."""
        if self._cells is None:
            self._cells = self._make_cells()
        return self._cells

    def _make_cells(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        lay = self.m.kernels.layer[self.rows].astype(np.int64)
        sel = (lay >= 0) & (self.step >= 0)
        if not sel.any():
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), np.zeros(0)
        p = np.searchsorted(self.steps, self.step[sel])
        key = lay[sel] * len(self.steps) + p
        uniq, inv = np.unique(key, return_inverse=True)
        t = np.bincount(inv.reshape(-1), weights=self.dur[sel])
        return uniq // len(self.steps), uniq % len(self.steps), t

    def layer(self, which: str) -> PassSeries:
        """`median`: the median time of one layer in one pass, over every layer and pass (each pass's
        repeat: the median over its layers); an index: that layer's median time per pass."""
        layer, p, t = self._layer_cells()
        if len(t) == 0:
            return PassSeries(None, missing="no layers found")
        if which == "median":
            order = np.lexsort((t, p))
            cuts = np.flatnonzero(np.diff(p[order])) + 1
            groups = np.split(order, cuts)
            per = np.array([float(np.median(t[g])) for g in groups])
            ph = [self.phases[int(p[g[0]])] for g in groups]
            return self._with_layers(PassSeries(float(np.median(t)), per, ph, estimator="median"), "busy")
        sel = layer == int(which)
        if not sel.any():
            return PassSeries(None, missing=f"no layer {which} (layers 0–{int(layer.max())})")
        return self._with_layers(PassSeries(float(np.median(t[sel])), t[sel], [self.phases[int(i)] for i in p[sel]],
                                            estimator="median"), "busy")

    def exposed_comm(self) -> PassSeries:
        """Exposed communication per pass: the time collective kernels (role `comm`) run while no
        compute kernel does (copies and memsets are neither), on this trace's GPU timeline. Each stretch of communication counts to
        the pass of the collective that starts it."""
        k = self.m.kernels
        cats = self.m.categories
        comm_cat = np.array([self.classifier.role(c) == "comm" for c in cats] + [False])
        is_comm = comm_cat[k.cat[self.rows]]
        ts = k.ts[self.rows]
        te = ts + np.maximum(self.dur, 0.0)
        if not is_comm.any():
            return PassSeries(0.0, np.zeros(len(self.steps)), self.phases)
        # compute hides communication; copies and memsets do not (one definition with the ledger's
        # `exposed communication` and collectives.overlap)
        from kerneldiff.core.model import KIND_KERNEL

        compute = ~is_comm & (k.kind[self.rows] == KIND_KERNEL)
        cs, ce = _union(ts[compute], te[compute])
        covered_to = np.concatenate(([0.0], np.cumsum(ce - cs)))

        def covered(x: np.ndarray) -> np.ndarray:   # compute time before x
            i = np.searchsorted(cs, x, side="right") - 1
            ok = i >= 0
            out = np.zeros(len(x))
            j = i[ok]
            out[ok] = covered_to[j] + np.minimum(x[ok], ce[j]) - cs[j]
            return out

        order = np.argsort(ts[is_comm], kind="stable")
        s, e = ts[is_comm][order], te[is_comm][order]
        st = self.step[is_comm][order]
        ms, me, first = _union(s, e, with_first=True)
        exposed = (me - ms) - (covered(me) - covered(ms))
        step = st[first]
        mask_steps = step >= 0
        per = np.zeros(len(self.steps))
        if mask_steps.any():
            np.add.at(per, np.searchsorted(self.steps, step[mask_steps]), exposed[mask_steps])
        return PassSeries(float(exposed.sum()) / self.passes, per, self.phases)


def _union(s: np.ndarray, e: np.ndarray, with_first: bool = False):
    """The union of intervals [s, e) as sorted disjoint intervals (and, with_first, the index into the
    sorted input of each one's first interval; the input must then be sorted by start)."""
    if len(s) == 0:
        z = np.zeros(0)
        return (z, z, np.zeros(0, dtype=np.int64)) if with_first else (z, z)
    o = np.arange(len(s)) if with_first else np.argsort(s, kind="stable")
    s, e = s[o], e[o]
    cm = np.maximum.accumulate(e)
    new = np.ones(len(s), dtype=bool)
    new[1:] = s[1:] > cm[:-1]
    starts = np.flatnonzero(new)
    ends = np.append(starts[1:], len(s)) - 1
    if with_first:
        return s[starts], cm[ends], starts
    return s[starts], cm[ends]
