"""The one entry point for a comparison: `compare(a, b, phase=…) -> Comparison`.

Everything is computed from the two TraceModels with numpy group-bys; only per-layer alignment
works on Python lists, and it is memoised on the layers' kernel sequences (all layers of a model
usually share one sequence, so a 80-layer model costs one alignment, not 80). Per-pass and
per-column figures are computed for all groups at once, in a way that keeps numpy's pairwise
summation, so they are bit-identical to summing each group on its own.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from kerneldiff.core.compare.align import align, coarse
from kerneldiff.core.analysis.cut_work import compared_mask, compared_phases, cut_work, passes_left_out
from kerneldiff.core.analysis.timeline import Timeline, timeline
from kerneldiff.core.compare.result import (Comparison, Excluded, KernelPair, LayerAlignment, LayerRow, LayerSide,
                         LeftOutPasses, OperationRow, SameKernel, SteadyPasses, Side, Stats, WallClock)
from kerneldiff.core.compare.comparability import check as check_comparability
from kerneldiff.core.compare.fusion import find_fusions
from kerneldiff.core.analysis.layer_groups import layer_groups
from kerneldiff.core.analysis.stacks import stack_of_layer
from kerneldiff.core.compare import layer_significance, ledger_fusions
from kerneldiff.core.compare.layer_significance import slower_by
from kerneldiff.core.compare.ledger import build as build_ledger, exposed_communication, host_time
from kerneldiff.core.compare.op_fusion import gemm_op_keys
from kerneldiff.core.compare.same_work import shape_difference
from kerneldiff.core.compare.side_timeline import SideTimeline
from kerneldiff.core.compare.host_result import HostTimes
from kerneldiff.core.compare.pass_basis import headline_window, on_passes, outside_us, pass_spread, window_note
from kerneldiff.core.compare.throughput import attach as attach_throughput
from kerneldiff.core.model import PHASE_FILTERS, TraceModel
from kerneldiff.core.numbers import median, percentile, ratio, row_percentiles, stable_argsort

PHASE_CHOICES = PHASE_FILTERS
TOP_N = 3


def _ratio(a: float, b: float) -> float | None:
    # None also for a subnormal b (kernels of 1e-320 µs): a / b would overflow to inf
    return ratio(a, b) if a > 0 and b > 0 else None


def stats_of(d: np.ndarray, side_total: float = 0.0) -> Stats:
    if len(d) == 0:
        return Stats()
    # the percentiles from one sort (row_percentiles: np.percentile's figures, bit for bit): numpy's
    # sort is ~4x faster than the partition np.percentile makes on 100,000 values (the dense pair's
    # 14 operation groups spent ~10 ms there)
    q = row_percentiles(d.reshape(1, -1), [50, 90, 95]) if d.dtype == np.float64 else \
        [[float(x)] for x in np.percentile(d, [50, 90, 95])]
    t = float(d.sum())
    return Stats(count=int(len(d)), total_us=t, mean_us=t / len(d), median_us=q[0][0],
                 min_us=float(d.min()), p90_us=q[1][0], p95_us=q[2][0], max_us=float(d.max()),
                 share=t / side_total if side_total > 0 else 0.0)


def _top_ids(ids: np.ndarray, weights: np.ndarray, n: int) -> list[int]:
    """The n ids with the largest summed weight. Sums and tie order are those of np.unique +
    np.bincount + argsort over the ids present, but bincount on the raw ids needs no sort."""
    size = int(ids.max()) + 1
    # bincount's arrays span every id up to the largest: for a few ids among many (one kernel's
    # launches in a trace of 120,000 names, asked once per name) sorting the few is cheaper
    if ids.min() >= 0 and size <= 4 * len(ids) + 4096:
        present = np.flatnonzero(np.bincount(ids, minlength=size))
        t = np.bincount(ids, weights=weights, minlength=size)[present]
    else:
        present, inv = np.unique(ids, return_inverse=True)
        t = np.bincount(inv, weights=weights)
    return [int(present[i]) for i in np.argsort(-t)[:n]]


class _View:
    """One side restricted to a phase, with the group-bys the comparison needs."""

    def __init__(self, key: str, model: TraceModel, phase: str, classifier) -> None:
        self.key = key
        self.m = model
        self.phase = phase
        k = model.kernels
        mask = compared_mask(model, phase)   # like with like: work cut by the profiler's window left out
        self.rows = np.nonzero(mask)[0]
        self.all_rows = len(self.rows) == len(mask)
        self.dur = self._take(k.dur)
        self.name = self._take(k.name)
        self.total = float(self.dur.sum())
        # compare by family: "Attention (decode)" on one GPU and "Attention" on another are one operation
        families = [classifier.group(c) for c in model.categories]
        self.groups = sorted(set(families) | {"Other"})
        self.gindex = {g: i for i, g in enumerate(self.groups)}
        gmap = np.array([self.gindex[g] for g in families] + [self.gindex["Other"]], dtype=np.int32)
        self.gcat = gmap[self._take(k.cat)]  # category id -1 (unclassified) indexes the trailing "Other"
        self._cpu_op: np.ndarray | None = None
        self._by_category: dict[str, np.ndarray] | None = None
        steps = self._take(k.step)
        steps = steps[steps >= 0]
        self.passes = max(int(np.count_nonzero(np.bincount(steps))) if len(steps) else 0, 1)

    def _take(self, column: np.ndarray) -> np.ndarray:
        """column[self.rows], without the copy when the phase keeps every kernel (read-only then)."""
        if not self.all_rows:
            return column[self.rows]
        view = column.view()
        view.flags.writeable = False
        return view

    def positions(self, group: str) -> np.ndarray:
        """Positions (into self.rows) of the kernels of one category family."""
        g = self.gindex.get(group)
        return np.nonzero(self.gcat == g)[0] if g is not None else np.array([], dtype=np.int64)

    def by_category(self) -> dict[str, np.ndarray]:
        """category family -> positions (into self.rows) of its kernels (computed once: the
        operations and the throughput both read it; read-only)."""
        if self._by_category is None:
            self._by_category = {}
            if len(self.gcat):
                order = stable_argsort(self.gcat)
                order.flags.writeable = False
                cuts = np.flatnonzero(np.diff(self.gcat[order])) + 1
                self._by_category = {self.groups[int(self.gcat[grp[0]])]: grp for grp in np.split(order, cuts)}
        return self._by_category

    def top_names(self, pos: np.ndarray, n: int = TOP_N) -> list[str]:
        if len(pos) == 0:
            return []
        return [self.m.strings[i] for i in _top_ids(self.name[pos], self.dur[pos], n)]

    def top_cpu_ops(self, pos: np.ndarray, n: int = TOP_N) -> list[str]:
        if self._cpu_op is None:
            self._cpu_op = self._take(self.m.kernels.cpu_op)
        ops = self._cpu_op[pos]
        ok = ops >= 0
        if not ok.any():
            return []
        names = self.m.cpu_ops.name[ops[ok]]
        return [self.m.strings[i] for i in _top_ids(names, self.dur[pos][ok], n)]


def _labels(a: TraceModel, b: TraceModel) -> tuple[str, str]:
    ga, gb = (a.info.gpu or "").strip(), (b.info.gpu or "").strip()
    if ga and gb and ga != gb:
        return ga, gb
    fa, fb = os.path.basename(a.path), os.path.basename(b.path)
    if fa != fb:
        return fa, fb
    return f"A: {fa}", f"B: {fb}"


def _side(v: _View, label: str) -> Side:
    m = v.m
    cut = cut_work(m)
    odd = passes_left_out(m)
    return Side(passes_left_out=None if odd is None else LeftOutPasses(odd.passes, dict(odd.kinds), odd.kernels,
                                                                      odd.time_us, odd.line),
                excluded=Excluded(cut.kernels, cut.time_us, cut.why, cut.passes) if cut else None,key=v.key, label=label, path=m.path, gpu=m.info.gpu or "", vendor=m.info.vendor,
                gpu_time_us=v.total, kernels=int(len(v.rows)), steps=len(m.steps),
                layers_per_step=m.num_layers, architecture=m.architecture, phases=compared_phases(m),
                passes=v.passes, per_pass_us=v.total / v.passes, pass_source=m.pass_source,
                phase_source=m.phase_source, layer_source=m.layer_source)


def _operations(va: _View, vb: _View, phase: str, per_pass: bool = False) -> list[OperationRow]:
    ga, gb = va.by_category(), vb.by_category()
    na, nb = (va.passes, vb.passes) if per_pass else (1, 1)
    rows = []
    empty = np.array([], dtype=np.int64)
    for cat in sorted(set(ga) | set(gb)):
        pa, pb = ga.get(cat, empty), gb.get(cat, empty)
        sa, sb = stats_of(va.dur[pa], va.total), stats_of(vb.dur[pb], vb.total)
        only = "a" if len(pb) == 0 else "b" if len(pa) == 0 else None
        rows.append(OperationRow(
            category=cat, phase=phase, a=sa, b=sb, ratio=_ratio(sa.total_us / na, sb.total_us / nb),
            gap_us=sa.total_us / na - sb.total_us / nb, only_in=only,
            top_cpu_ops={"a": va.top_cpu_ops(pa), "b": vb.top_cpu_ops(pb)},
            examples={"a": va.top_names(pa), "b": vb.top_names(pb)}))
    rows.sort(key=lambda r: -abs(r.gap_us))
    return rows


def _column_stats(mat: np.ndarray) -> list[Stats]:
    """stats_of(mat[:, i]) for every column, in one pass per statistic.

    Each column is made a contiguous row first: numpy then sums it pairwise exactly as it sums a
    1-D array, so the figures are bit-identical to per-column stats_of calls."""
    n, cols = mat.shape
    if n == 0:
        return [Stats() for _ in range(cols)]
    rows = np.ascontiguousarray(mat.T)
    tot = rows.sum(axis=1).tolist()
    q = row_percentiles(rows, [50, 90, 95])
    lo, hi = rows.min(axis=1).tolist(), rows.max(axis=1).tolist()
    return [Stats(count=n, total_us=tot[i], mean_us=tot[i] / n, median_us=q[0][i], min_us=lo[i],
                  p90_us=q[1][i], p95_us=q[2][i], max_us=hi[i]) for i in range(cols)]


def _column_stats_many(mats: list[np.ndarray]) -> list[list[Stats]]:
    """[_column_stats(m) for m in mats], bit for bit, with one call per distinct row count: the
    columns of matrices with as many rows are stats of independent contiguous rows either way (a
    trace whose ~80 layers each hold a different kernel sequence spent ~45 ms in np.percentile's
    per-call overhead)."""
    out: list[list[Stats]] = [[] for _ in mats]
    by_rows: dict[int, list[int]] = {}
    for i, m in enumerate(mats):
        by_rows.setdefault(m.shape[0], []).append(i)
    for idx in by_rows.values():
        stats = _column_stats(np.hstack([mats[i] for i in idx]))
        at = 0
        for i in idx:
            out[i] = stats[at:at + mats[i].shape[1]]
            at += mats[i].shape[1]
    return out


class _LayerGroups:
    """Kernels of one side grouped by (layer, step) (`layer_groups.LayerGroupArrays`: segments of
    `sorted_pos`, positions into the view's rows), with each layer's statistics and modal pass."""

    def __init__(self, v: _View) -> None:
        self.v = v
        g = layer_groups(v.m, v.phase)   # memoised: a side loaded in a forked child grouped its kernels there
        self.sorted_pos, self.start, self.length, self.layer = g.sorted_pos, g.start, g.length, g.layer
        self.dur, self.total, self.names, self.sig = g.dur, g.total, g.names, g.sig
        cuts = np.flatnonzero(np.diff(self.layer)) + 1
        bounds = np.concatenate(([0], cuts, [len(self.layer)])).tolist()
        self.ranges = {int(self.layer[a]): (a, b) for a, b in zip(bounds[:-1], bounds[1:]) if b > a}
        self._sides: dict[int, LayerSide] | None = None

    def side(self, l: int) -> LayerSide:
        if l not in self.ranges:
            return LayerSide()
        if self._sides is None:
            self._sides = self._all_sides()
        return self._sides[l]

    def _all_sides(self) -> dict[int, LayerSide]:
        """Every layer's LayerSide, the layers with as many passes taken as the rows of one matrix:
        one numpy call per statistic and pass count, not per layer (numpy sums, medians and
        percentiles of a contiguous matrix's rows are those of each row on its own, bit for bit)."""
        by_passes: dict[int, list[int]] = {}
        for l, (a, b) in self.ranges.items():
            by_passes.setdefault(b - a, []).append(l)
        out = {}
        for n, ls in by_passes.items():
            mat = np.stack([self.total[slice(*self.ranges[l])] for l in ls])
            tot, med = mat.sum(axis=1).tolist(), np.median(mat, axis=1)
            p90 = np.percentile(mat, 90, axis=1).tolist()
            spread = (1.4826 * np.median(np.abs(mat - med[:, None]), axis=1)).tolist() \
                if n >= MIN_SPREAD_PASSES else [None] * len(ls)
            steady = layer_significance.steady(mat, med) if n >= MIN_SPREAD_PASSES else None
            for i, l in enumerate(ls):
                a, b = self.ranges[l]
                out[l] = LayerSide(total_us=tot[i], kernels=int(self.length[a:b].sum()), passes=n,
                                   median_us=float(med[i]), p90_us=p90[i], spread_us=spread[i],
                                   steady=SteadyPasses(steady[0][i], steady[1][i], steady[2][i])
                                   if steady else None)
        return out

    def modal(self, l: int) -> tuple[tuple, np.ndarray, np.ndarray] | None:
        """The most common kernel-name sequence of a layer (the earliest on a tie), the duration
        matrix of the passes that run it, and the positions of the first such pass."""
        if l not in self.ranges:
            return None
        a, b = self.ranges[l]
        sig = self.sig[a:b]
        ids, first, count = np.unique(sig, return_index=True, return_counts=True)
        top = np.flatnonzero(count == count.max())
        same = a + np.flatnonzero(sig == ids[top[np.argmin(first[top])]])
        s0, n = int(self.start[same[0]]), int(self.length[same[0]])
        cells = self.start[same, None] + np.arange(n)
        return tuple(self.names[s0:s0 + n].tolist()), self.dur[cells], self.sorted_pos[s0:s0 + n]


# A layer's rank among layers means something only when its gap stands out from the others' by more
# than the gap varies from pass to pass: the 16 layers of the H100/H200 Llama pair all lose 815-856 µs
# over 48 passes, while one pass's layer varies by ~1.1 µs (σ), i.e. ±51 µs over the passes.
MIN_SPREAD_PASSES = 3   # fewer passes say nothing about the spread


def _spread(per_pass: np.ndarray) -> float | None:
    """Robust σ of a layer's time per pass (1.4826 × the median absolute deviation): the one prefill
    pass among 47 decode passes is a different workload, not spread."""
    if len(per_pass) < MIN_SPREAD_PASSES:
        return None
    return float(1.4826 * median(np.abs(per_pass - median(per_pass))))


def _outside(v: _View) -> LayerSide:
    """The kernels outside every layer (embedding, lm_head, sampling, between passes), per pass."""
    k = v.m.kernels
    pos = np.flatnonzero(v._take(k.layer) < 0)
    if len(pos) == 0:
        return LayerSide()
    d, steps = v.dur[pos], v._take(k.step)[pos]
    ok = steps >= 0
    per = np.bincount(steps[ok], weights=d[ok])[np.bincount(steps[ok]) > 0] if ok.any() else np.zeros(0)
    return LayerSide(total_us=float(d.sum()), kernels=int(len(pos)), passes=int(len(per)),
                     median_us=median(per) if len(per) else 0.0,
                     p90_us=percentile(per, 90) if len(per) else 0.0, spread_us=_spread(per))


def _name_stacks(rows: list[LayerRow], a: TraceModel, b: TraceModel, layers_from: str) -> None:
    """Each layer's stack (`vision 7`), when the model has several: layer indexes run stack after
    stack, so index i is the same stack's layer on both sides when both read the same stacks
    (comparability calls the models different otherwise, and the rows then keep bare indexes)."""
    sig = [[(s["name"], s["layers"]) for s in m.stacks] for m in (a, b)]
    stacks = a.stacks if layers_from == "a" else b.stacks if layers_from == "b" else a.stacks if sig[0] == sig[1] else []
    if len(stacks) < 2:
        return
    for r in rows:
        s, i = stack_of_layer(stacks, r.layer)
        if s is not None:
            r.stack, r.stack_layer = s["name"], i


def _layers(ga: _LayerGroups, gb: _LayerGroups, compared: bool = True) -> list[LayerRow]:
    """One row per layer; `compared` False when only one side has layers (ratio None: nothing to compare)."""
    rows = []
    for l in sorted(set(ga.ranges) | set(gb.ranges)):
        sa, sb = ga.side(l), gb.side(l)
        rows.append(LayerRow(layer=l, a=sa, b=sb, ratio=_ratio(sa.total_us, sb.total_us) if compared else None,
                             gap_us=sa.total_us - sb.total_us))
    if compared:
        layer_significance.mark(rows)
    rows.sort(key=lambda r: -abs(r.gap_us))
    for i, r in enumerate(rows, 1):
        r.rank = i
    return rows


def _alignments(ga: _LayerGroups, gb: _LayerGroups, labels: tuple[str, str], classifier,
                notes: list[str]) -> list[LayerAlignment]:
    va, vb = ga.v, gb.v
    coarse_layers = []
    out = []
    memo: dict[tuple, list] = {}
    sims: dict[tuple[str, str], float] = {}   # name similarities, shared by the layers' alignments
    components = {c: classifier.components(c) for c in set(va.groups) | set(vb.groups)}
    empty = ((), np.zeros((1, 0)), np.array([], dtype=np.int64))
    layers = sorted(set(ga.ranges) | set(gb.ranges))
    modal = [(ga.modal(l) or empty, gb.modal(l) or empty) for l in layers]
    stats = _column_stats_many([m[1] for pair in modal for m in pair])
    for n, l in enumerate(layers):
        (sig_a, dur_a, g_a), (sig_b, dur_b, g_b) = modal[n]
        cats_a = [va.groups[int(c)] for c in va.gcat[g_a]]
        cats_b = [vb.groups[int(c)] for c in vb.gcat[g_b]]
        key = (sig_a, sig_b)
        if coarse(len(sig_a), len(sig_b)):
            coarse_layers.append((l, len(sig_a), len(sig_b)))
        if key not in memo:
            names_a = [va.m.strings[i] for i in sig_a]
            names_b = [vb.m.strings[i] for i in sig_b]
            memo[key] = align(cats_a, names_a, cats_b, names_b, components,
                              gemm_op_keys(va, g_a, cats_a, classifier), gemm_op_keys(vb, g_b, cats_b, classifier),
                              sims)
        # each side's kernels of the layer as lists: (stats, name, category, row, rule) by index
        side_a = list(zip(stats[2 * n], *_kernel_fields(va, sig_a, g_a), cats_a))
        side_b = list(zip(stats[2 * n + 1], *_kernel_fields(vb, sig_b, g_b), cats_b))
        pairs = []
        for p, (i, j) in enumerate(memo[key]):
            sa, na, ra, rla, ca = side_a[i] if i is not None else (Stats(), None, -1, "", None)
            sb, nb, rb, rlb, cb = side_b[j] if j is not None else (Stats(), None, -1, "", None)
            pairs.append(KernelPair(
                position=p, a_name=na, b_name=nb, a_category=ca, b_category=cb,
                a=sa, b=sb, ratio=_ratio(sa.mean_us, sb.mean_us), gap_us=sa.mean_us - sb.mean_us,
                same_kernel=na is not None and na == nb, a_row=ra, b_row=rb, a_rule=rla, b_rule=rlb))
        _annotate_pairs(pairs, labels, components)
        out.append(LayerAlignment(layer=l, pairs=pairs, a_kernels_per_pass=len(sig_a), b_kernels_per_pass=len(sig_b),
                                  a_passes=len(dur_a) if sig_a else 0, b_passes=len(dur_b) if sig_b else 0))
    if coarse_layers:
        l, m, n = max(coarse_layers, key=lambda x: x[1] * x[2])
        notes.append(f"{len(coarse_layers)} layer(s) too large for the full kernel alignment (largest: layer {l}, "
                     f"{m:,} × {n:,} kernels): their kernel pairs are matched by category and name in a band "
                     "around the diagonal, without name similarity")
    return out


def _kernel_fields(v: _View, sig: tuple, pos: np.ndarray) -> tuple[list[str], list[int], list[str]]:
    """(names, kernel rows, classification rules) of a layer's kernels at positions `pos`."""
    m = v.m
    rows = v.rows[pos]
    return ([m.strings[i] for i in sig], rows.tolist(),
            [m.rules[r] if r >= 0 else "" for r in m.kernels.rule[rows].tolist()])


def _annotate_pairs(pairs: list[KernelPair], labels: tuple[str, str], components: dict[str, list[str]]) -> None:
    """Explain gaps and fused-vs-component pairs in words."""
    for idx, p in enumerate(pairs):
        if p.a_category and p.b_category and p.a_category != p.b_category:
            if p.a_category in components.get(p.b_category, ()):
                p.fusion_note = f"{labels[1]} runs fused {p.b_category}"
                p.fusion_kind = "fused_category"
            elif p.b_category in components.get(p.a_category, ()):
                p.fusion_note = f"{labels[0]} runs fused {p.a_category}"
                p.fusion_kind = "fused_category"
            continue
        if p.a_name is not None and p.b_name is not None:
            continue
        here, other_key, other_label, mine = ("a", "b", labels[1], labels[0]) if p.a_name is not None else ("b", "a", labels[0], labels[1])
        cat = p.a_category if here == "a" else p.b_category
        near = pairs[max(0, idx - 3): idx + 4]
        fused = [getattr(q, f"{other_key}_category") for q in near]
        host = next((f for f in fused if f and cat in components.get(f, ())), None)
        if host:
            p.fusion_note = f"fused into {host} on {other_label}"
            p.fusion_kind = "fused_into"
        else:
            p.fusion_note = f"only on {mine}"
            p.fusion_kind = "only_on"


def _by_name(v: _View) -> dict[str, np.ndarray]:
    if len(v.name) == 0:
        return {}
    order = stable_argsort(v.name)
    cuts = np.flatnonzero(np.diff(v.name[order])) + 1
    return {v.m.strings[int(v.name[g[0]])]: g for g in np.split(order, cuts)}


def _grouped_stats(d: np.ndarray, groups: list[np.ndarray], side_total: float) -> list[Stats]:
    """[stats_of(d[g], side_total) for g in groups], bit for bit, with one numpy call per distinct
    group size instead of one per group: a trace of 100,000 distinct kernel names spent 15 s in
    np.percentile, one name at a time."""
    out: list[Stats] = [Stats()] * len(groups)
    by_size: dict[int, list[int]] = {}
    for i, g in enumerate(groups):
        by_size.setdefault(len(g), []).append(i)
    for n, idx in by_size.items():
        if n == 0:
            continue
        mat = d[np.stack([groups[i] for i in idx], axis=1)]          # (n, groups of this size)
        for i, st in zip(idx, _column_stats(mat)):
            st.share = st.total_us / side_total if side_total > 0 else 0.0
            out[i] = st
    return out


def _same_kernels(va: _View, vb: _View) -> list[SameKernel]:
    pa_all, pb_all = _by_name(va), _by_name(vb)
    names = list(pa_all.keys() & pb_all.keys())
    stats_a = _grouped_stats(va.dur, [pa_all[n] for n in names], va.total)
    stats_b = _grouped_stats(vb.dur, [pb_all[n] for n in names], vb.total)
    out = []
    for name, sa, sb in zip(names, stats_a, stats_b):
        pa, pb = pa_all[name], pb_all[name]
        # one name can be booked apart on the two sides (a softmax kernel: eager attention's on one,
        # sampling's on the other): both, in an order that does not depend on which side is A
        ca, cb = va.groups[int(va.gcat[pa[0]])], vb.groups[int(vb.gcat[pb[0]])]
        out.append(SameKernel(name=name, category=ca if ca == cb else " / ".join(sorted((ca, cb))), a=sa, b=sb,
                              ratio=_ratio(sa.mean_us, sb.mean_us), gap_us=sa.total_us - sb.total_us,
                              shapes_differ=shape_difference(va, pa, vb, pb)))
    out.sort(key=lambda s: (-abs(s.gap_us), s.name))
    return out


SHARE_FLOOR = 0.01   # of the longer wall time: gaps below it are not divided by (see _wall)


def _wall(ta: Timeline, tb: Timeline, va: _View, vb: _View, per_pass: bool, kernel_ratio: float | None) -> WallClock:
    """The headline's wall-clock line, on the comparison's basis (one average pass when per_pass)."""
    na, nb = (va.passes, vb.passes) if per_pass else (1, 1)
    passes = on_passes(ta, tb, va.m, vb.m)
    wa, wb = headline_window(ta, passes), headline_window(tb, passes)
    (ma, sa), (mb, sb) = pass_spread(ta), pass_spread(tb)

    # A share says how much of one gap another explains; it is None when the gap divided is
    # under 1% of the longer wall time (both sides about equal there: a launch-bound gap over
    # an idle gap near zero read as 130 on a real pair, a number that means nothing).
    floor = SHARE_FLOOR * max(wa.span_us / na, wb.span_us / nb)

    def share(part: float, whole: float) -> float | None:
        return ratio(part, whole) if abs(whole) >= floor else None

    wall_gap = wa.span_us / na - wb.span_us / nb
    idle_gap = wa.idle_us / na - wb.idle_us / nb
    lb_gap = wa.launch_bound_us / na - wb.launch_bound_us / nb
    return WallClock(basis="per_pass" if per_pass else "total", kernel_ratio=kernel_ratio,
                     wall_ratio=_ratio(wa.span_us / na, wb.span_us / nb),
                     a_wall_us=wa.span_us / na, b_wall_us=wb.span_us / nb, wall_gap_us=wall_gap,
                     a_busy_us=wa.busy_us / na, b_busy_us=wb.busy_us / nb,
                     a_idle_us=wa.idle_us / na, b_idle_us=wb.idle_us / nb, idle_gap_us=idle_gap,
                     launch_bound_gap_us=lb_gap, sync_gap_us=wa.sync_us / na - wb.sync_us / nb,
                     idle_share=share(idle_gap, wall_gap), launch_bound_share=share(lb_gap, idle_gap),
                     window="passes" if passes else "whole",
                     window_note="" if passes or va.m.__dict__.get("all_passes") or vb.m.__dict__.get("all_passes")
                     else window_note(ta, tb),
                     a_outside_us=outside_us(ta, passes) / na, b_outside_us=outside_us(tb, passes) / nb,
                     a_pass_median_us=ma, b_pass_median_us=mb, a_pass_spread_us=sa, b_pass_spread_us=sb)


def _layer_idle(rows: list[LayerRow], ta: Timeline, tb: Timeline) -> None:
    """Each layer row's idle and wall time inside the layer (the timelines' per-layer gaps)."""
    for r in rows:
        for side, t in ((r.a, ta), (r.b, tb)):
            l = t.layer(r.layer) if side.passes else None
            if l is not None:
                side.idle_us, side.wall_us = l.idle_us, l.span_us
        if r.a.passes and r.b.passes:
            # the headline leads with the wall clock: a layer's span (first to last kernel, what the
            # user waits) beside its kernel time, each saying who is slower by it
            r.span_gap_us = r.a.wall_us - r.b.wall_us
            r.slower_by = slower_by(r.gap_us, r.span_gap_us, r.a, r.b)


# When the kernel pairs and fusions are worth a forked child: the fork, the pages both processes
# then write (copied, ~8k each) and the pickled result cost ~15-20 ms, so the child must have more
# than that to do. Its work grows with the layers' distinct kernel sequences (each aligned once)
# and with the kernels. Measured, the step alone, one process against a child (best of 7): the
# dense 2x60 MB pair (500k layer kernels, 150 distinct sequences) 136 -> 103 ms; the recorded
# H100/H200 graph-replay pair (145k, 12) 50 -> 52 ms; graphs against compiled (145k, 21) 68 -> 66
# ms; the real eager H100/H200 pair (63k, 4) 26 -> 31 ms.
BESIDE_KERNELS = 100_000
BESIDE_SEQUENCES = 64


def _worth_a_child(ga: "_LayerGroups", gb: "_LayerGroups") -> bool:
    if len(ga.sorted_pos) + len(gb.sorted_pos) < BESIDE_KERNELS:
        return False
    return len(np.unique(ga.sig)) + len(np.unique(gb.sig)) >= BESIDE_SEQUENCES


def _pairs_and_fusions(ga: "_LayerGroups", gb: "_LayerGroups", labels: tuple[str, str], classifier,
                       fusion_overrides) -> tuple[list[LayerAlignment], list, list[str]]:
    """The kernel pairs (and the alignment's notes) and the fusions: what a forked child computes
    beside the rest (`compare(beside=True)`)."""
    notes: list[str] = []
    alignments = _alignments(ga, gb, labels, classifier, notes)
    fusions = find_fusions(ga.v, gb.v, labels, classifier, alignments, fusion_overrides)
    return alignments, fusions + _other_phases_fusions(ga, gb, fusions, labels, classifier, fusion_overrides), notes


def _other_phases_fusions(ga: "_LayerGroups", gb: "_LayerGroups", fusions: list, labels, classifier,
                          fusion_overrides) -> list:
    """Phase `all` over prefill and decode: each layer's kernels are aligned on its most common
    sequence, decode's (47 passes against 1), so the op-level fusions read decode alone and left
    prefill's out (eager vs compiled Llama: its ~1 ms RMSNorm saving). The op-level findings of
    `fusions` are tagged with the phase they read; each other phase is aligned on its own and its
    op-level findings added, tagged (the category-level findings already read every phase)."""
    if ga.v.phase != "all":
        return []
    pb = compared_phases(gb.v.m)
    phases = [p for p in compared_phases(ga.v.m) if p in pb and p != "unknown"]
    if len(phases) < 2:
        return []
    out, covered, apart = [], [], 0
    for p in phases:
        pa, pb_ = _LayerGroups(_View("a", ga.v.m, p, classifier)), _LayerGroups(_View("b", gb.v.m, p, classifier))
        layers = sorted(set(pa.ranges) & set(pb_.ranges))
        if not layers:
            continue
        same = sum(all((g.modal(l) or ((),))[0] == (h.modal(l) or ((),))[0] for g, h in ((ga, pa), (gb, pb_)))
                   for l in layers)
        if 2 * same > len(layers):    # the sequences `all` aligned are this phase's: counted there
            covered.append(p)
            continue
        apart += 1
        al_p = _alignments(pa, pb_, labels, classifier, [])
        for f in find_fusions(pa.v, pb_.v, labels, classifier, al_p, fusion_overrides):
            if f.kind == "op_fusion":
                f.phase = p
                out.append(f)
    for f in fusions:
        if f.kind == "op_fusion" and apart:
            f.phase = "+".join(covered)    # the phases whose passes run the sequence `all` aligned
    return out


def compare(a: TraceModel, b: TraceModel, phase: str = "all", *, classifier=None,
            fusion_overrides: dict[str, Any] | None = None, peaks=None, beside: bool = False) -> Comparison:
    """Compare two loaded traces in one phase (all | prefill | decode | mixed | unknown).

    `beside`: the caller may fork (one thread, `processes.fork_child.can_fork`); the kernel pairs and the
    fusions, which read nothing the rest of the comparison computes, are then computed in a forked
    child while this process computes the rest, on a pair large enough to gain by it."""
    if phase not in PHASE_CHOICES:
        raise ValueError(f"phase must be one of {', '.join(PHASE_CHOICES)}")
    if classifier is None:
        from kerneldiff.core.analysis.classify import Classifier

        classifier = Classifier.load()
    labels = _labels(a, b)
    va, vb = _View("a", a, phase, classifier), _View("b", b, phase, classifier)
    # like with like: 48 passes against 10 compare an average pass, not the sums
    per_pass = va.passes != vb.passes and len(va.rows) > 0 and len(vb.rows) > 0
    ga, gb = _LayerGroups(va), _LayerGroups(vb)
    child = None
    if beside and _worth_a_child(ga, gb):
        from kerneldiff.core.processes.fork_child import Beside

        child = Beside(lambda: _pairs_and_fusions(ga, gb, labels, classifier, fusion_overrides))
    try:
        cmp = _rest(a, b, phase, labels, va, vb, ga, gb, per_pass, peaks, classifier)
    except BaseException:
        if child is not None:
            child.cancel()
        raise
    found = None
    if child is not None:
        try:
            found = child.result()
        except RuntimeError:   # the child died: compute here (a failure then says what it is)
            found = None
    alignments, fusions, coarse_notes = found or _pairs_and_fusions(ga, gb, labels, classifier, fusion_overrides)
    cmp.alignments, cmp.fusions = alignments, fusions
    cmp.ledger = ledger_fusions.regroup(cmp.ledger, fusions, alignments, va, vb, cmp.basis == "per_pass",
                                        classifier.group)
    # the warnings in the order one process gives them: the sides', the alignment's, then the rest
    cmp.warnings[:0] = [f"{lab}: {w}" for lab, m in zip(labels, (a, b)) for w in m.warnings] + coarse_notes
    cmp.comparability = check_comparability(cmp, va, vb)
    return cmp


def _rest(a, b, phase, labels, va, vb, ga, gb, per_pass, peaks, classifier) -> Comparison:
    """Everything but the kernel pairs, the fusions and the comparability (which reads the fusions)."""
    ops = _operations(va, vb, phase, per_pass)
    layers_from = "both" if ga.ranges and gb.ranges else "a" if ga.ranges else "b" if gb.ranges else ""
    layers = _layers(ga, gb, compared=layers_from == "both")
    _name_stacks(layers, a, b, layers_from)
    ta, tb = timeline(a, phase, keep_cut=False), timeline(b, phase, keep_cut=False)
    _layer_idle(layers, ta, tb)
    outside = None
    if layers_from:
        oa, ob = _outside(va), _outside(vb)
        if oa.kernels or ob.kernels:
            outside = LayerRow(layer=-1, a=oa, b=ob, gap_us=oa.total_us - ob.total_us,
                               ratio=_ratio(oa.total_us, ob.total_us) if layers_from == "both" else None,
                               spread_us=layer_significance.gap_spread(oa, ob) if layers_from == "both" else None)
    warnings: list[str] = []
    for lab, v in zip(labels, (va, vb)):
        if len(v.rows) == 0:
            warnings.append(f"{lab}: no kernels in phase '{phase}'" if phase != "all" else f"{lab}: no GPU kernels")
    if len(va.rows) and len(vb.rows):
        if not any(r.only_in is None for r in ops):
            warnings.append("the traces have no operation in common: nothing comparable")
        if a.num_layers and b.num_layers and a.num_layers != b.num_layers:
            warnings.append(f"layer counts differ: {labels[0]} has {a.num_layers}, {labels[1]} has {b.num_layers}")
        if not layers:
            warnings.append("no layers on either side: layer views are empty")
        elif layers_from != "both":
            have, lack = (0, 1) if layers_from == "a" else (1, 0)
            m = (a, b)[lack]
            why = next((w.split(": ", 1)[-1] for w in m.warnings if w.startswith("layers not detected")),
                       "no decoder-layer module calls and no attention/SSM kernels recognised")
            warnings.append(f"layers only on {labels[have]}: none found on {labels[lack]} ({why}); the layer rows "
                            f"show {labels[have]} alone and compare nothing")
        if per_pass:
            warnings.append(f"the traces hold different numbers of passes in phase '{phase}' "
                            f"({labels[0]}: {va.passes}, {labels[1]}: {vb.passes}): totals, ratios and gaps "
                            f"of the headline and operations are per pass")
    ka, kb = (va.total / va.passes, vb.total / vb.passes) if per_pass else (va.total, vb.total)
    side_a, side_b = _side(va, labels[0]), _side(vb, labels[1])
    side_a.timeline, side_b.timeline = SideTimeline.of(ta), SideTimeline.of(tb)
    cmp = Comparison(a=side_a, b=side_b, phase=phase,
                      ratio=_ratio(ka, kb), gap_us=ka - kb, basis="per_pass" if per_pass else "total",
                      wall=_wall(ta, tb, va, vb, per_pass, _ratio(ka, kb)),
                      operations=ops,
                      layers=layers, alignments=[], fusions=[],
                      same_kernels=_same_kernels(va, vb), warnings=warnings,
                      outside_layers=outside, layers_from=layers_from)
    attach_throughput(cmp, va, vb, peaks)   # FLOPs, bytes, % of peak; GEMM and attention shapes
    cmp.ledger = exposed_communication(build_ledger(va, vb, ta, tb, per_pass), va, vb, per_pass, classifier)
    cmp.host = HostTimes(host_time(va, per_pass), host_time(vb, per_pass))
    return cmp
