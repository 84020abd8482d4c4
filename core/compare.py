"""The one entry point for a comparison: `compare(a, b, phase=…) -> Comparison`.

Everything is computed from the two TraceModels with numpy group-bys; only per-layer alignment
works on Python lists, and it is memoised on the layers' kernel sequences (all layers of a model
usually share one sequence, so a 80-layer model costs one alignment, not 80).
"""

from __future__ import annotations

import os
from collections import Counter
from typing import Any

import numpy as np

from .align import align
from .comparison import (Comparison, KernelPair, LayerAlignment, LayerRow, LayerSide, OperationRow,
                         SameKernel, Side, Stats)
from .fusion import find_fusions
from .model import TraceModel

PHASE_CHOICES = ("all", "prefill", "decode", "mixed", "unknown")
TOP_N = 3


def _ratio(a: float, b: float) -> float | None:
    return a / b if a > 0 and b > 0 else None


def stats_of(d: np.ndarray, side_total: float = 0.0) -> Stats:
    if len(d) == 0:
        return Stats()
    q = np.percentile(d, [50, 90, 95])
    t = float(d.sum())
    return Stats(count=int(len(d)), total_us=t, mean_us=t / len(d), median_us=float(q[0]),
                 min_us=float(d.min()), p90_us=float(q[1]), p95_us=float(q[2]), max_us=float(d.max()),
                 share=t / side_total if side_total > 0 else 0.0)


class _View:
    """One side restricted to a phase, with the group-bys the comparison needs."""

    def __init__(self, key: str, model: TraceModel, phase: str, classifier) -> None:
        self.key = key
        self.m = model
        k = model.kernels
        self.rows = np.nonzero(model.phase_mask(phase))[0]
        self.dur = k.dur[self.rows]
        self.name = k.name[self.rows]
        self.total = float(self.dur.sum())
        # compare by family: "Attention (decode)" on one GPU and "Attention" on another are one operation
        families = [classifier.group(c) for c in model.categories]
        self.groups = sorted(set(families) | {"Other"})
        self.gindex = {g: i for i, g in enumerate(self.groups)}
        gmap = np.array([self.gindex[g] for g in families] + [self.gindex["Other"]], dtype=np.int32)
        self.gcat = gmap[k.cat[self.rows]]  # category id -1 (unclassified) indexes the trailing "Other"
        steps = k.step[self.rows]
        self.passes = max(len(np.unique(steps[steps >= 0])), 1)

    def positions(self, group: str) -> np.ndarray:
        """Positions (into self.rows) of the kernels of one category family."""
        g = self.gindex.get(group)
        return np.nonzero(self.gcat == g)[0] if g is not None else np.array([], dtype=np.int64)

    def by_category(self) -> dict[str, np.ndarray]:
        """category family -> positions (into self.rows) of its kernels."""
        if len(self.gcat) == 0:
            return {}
        order = np.argsort(self.gcat, kind="stable")
        cuts = np.flatnonzero(np.diff(self.gcat[order])) + 1
        return {self.groups[int(self.gcat[grp[0]])]: grp for grp in np.split(order, cuts)}

    def top_names(self, pos: np.ndarray, n: int = TOP_N) -> list[str]:
        if len(pos) == 0:
            return []
        ids, inv = np.unique(self.name[pos], return_inverse=True)
        t = np.bincount(inv, weights=self.dur[pos])
        return [self.m.strings[int(ids[i])] for i in np.argsort(-t)[:n]]

    def top_cpu_ops(self, pos: np.ndarray, n: int = TOP_N) -> list[str]:
        k = self.m.kernels
        ops = k.cpu_op[self.rows[pos]]
        ok = ops >= 0
        if not ok.any():
            return []
        names = self.m.cpu_ops.name[ops[ok]]
        ids, inv = np.unique(names, return_inverse=True)
        t = np.bincount(inv, weights=self.dur[pos][ok])
        return [self.m.strings[int(ids[i])] for i in np.argsort(-t)[:n]]


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
    return Side(key=v.key, label=label, path=m.path, gpu=m.info.gpu or "", vendor=m.info.vendor,
                gpu_time_us=v.total, kernels=int(len(v.rows)), steps=len(m.steps),
                layers_per_step=m.num_layers, architecture=m.architecture, phases=m.phases_present())


def _operations(va: _View, vb: _View, phase: str) -> list[OperationRow]:
    ga, gb = va.by_category(), vb.by_category()
    rows = []
    empty = np.array([], dtype=np.int64)
    for cat in sorted(set(ga) | set(gb)):
        pa, pb = ga.get(cat, empty), gb.get(cat, empty)
        sa, sb = stats_of(va.dur[pa], va.total), stats_of(vb.dur[pb], vb.total)
        only = "a" if len(pb) == 0 else "b" if len(pa) == 0 else None
        rows.append(OperationRow(
            category=cat, phase=phase, a=sa, b=sb, ratio=_ratio(sa.total_us, sb.total_us),
            gap_us=sa.total_us - sb.total_us, only_in=only,
            top_cpu_ops={"a": va.top_cpu_ops(pa), "b": vb.top_cpu_ops(pb)},
            examples={"a": va.top_names(pa), "b": vb.top_names(pb)}))
    rows.sort(key=lambda r: -abs(r.gap_us))
    return rows


class _LayerGroups:
    """Kernels of one side grouped by (layer, step), each group in time order."""

    def __init__(self, v: _View) -> None:
        k = v.m.kernels
        self.v = v
        lay = k.layer[v.rows]
        sel = np.nonzero(lay >= 0)[0]
        self.pos = sel
        key = lay[sel].astype(np.int64) * (len(v.m.steps) + 1) + k.step[v.rows[sel]]
        order = np.argsort(key, kind="stable")  # stable: time order kept inside a group
        self.sorted_pos = sel[order]
        skey = key[order]
        cuts = np.flatnonzero(np.diff(skey)) + 1
        self.groups = np.split(self.sorted_pos, cuts) if len(skey) else []
        self.layer_of = [int(lay[g[0]]) for g in self.groups]

    def per_layer(self) -> dict[int, list[np.ndarray]]:
        out: dict[int, list[np.ndarray]] = {}
        for l, g in zip(self.layer_of, self.groups):
            out.setdefault(l, []).append(g)
        return out


def _layer_side(v: _View, groups: list[np.ndarray]) -> LayerSide:
    if not groups:
        return LayerSide()
    per_pass = np.array([float(v.dur[g].sum()) for g in groups])
    return LayerSide(total_us=float(per_pass.sum()), kernels=int(sum(len(g) for g in groups)),
                     passes=len(groups), median_us=float(np.median(per_pass)),
                     p90_us=float(np.percentile(per_pass, 90)))


def _layers(la: dict[int, list], lb: dict[int, list], va: _View, vb: _View) -> list[LayerRow]:
    rows = []
    for l in sorted(set(la) | set(lb)):
        sa, sb = _layer_side(va, la.get(l, [])), _layer_side(vb, lb.get(l, []))
        rows.append(LayerRow(layer=l, a=sa, b=sb, ratio=_ratio(sa.total_us, sb.total_us),
                             gap_us=sa.total_us - sb.total_us))
    rows.sort(key=lambda r: -abs(r.gap_us))
    for i, r in enumerate(rows, 1):
        r.rank = i
    return rows


def _modal(v: _View, groups: list[np.ndarray]) -> tuple[tuple, np.ndarray] | None:
    """The most common kernel sequence of a layer and the duration matrix of its passes."""
    if not groups:
        return None
    sigs = [tuple(v.name[g].tolist()) for g in groups]
    sig, _ = Counter(sigs).most_common(1)[0]
    same = [g for g, s in zip(groups, sigs) if s == sig]
    return sig, np.vstack([v.dur[g] for g in same]), same[0]


def _alignments(la, lb, va: _View, vb: _View, labels: tuple[str, str], classifier) -> list[LayerAlignment]:
    out = []
    memo: dict[tuple, list] = {}
    components = {c: classifier.components(c) for c in set(va.groups) | set(vb.groups)}
    for l in sorted(set(la) | set(lb)):
        ma, mb = _modal(va, la.get(l, [])), _modal(vb, lb.get(l, []))
        sig_a, dur_a, g_a = ma if ma else ((), np.zeros((1, 0)), np.array([], dtype=np.int64))
        sig_b, dur_b, g_b = mb if mb else ((), np.zeros((1, 0)), np.array([], dtype=np.int64))
        cats_a = [va.groups[int(c)] for c in va.gcat[g_a]]
        cats_b = [vb.groups[int(c)] for c in vb.gcat[g_b]]
        key = (sig_a, sig_b)
        if key not in memo:
            names_a = [va.m.strings[i] for i in sig_a]
            names_b = [vb.m.strings[i] for i in sig_b]
            memo[key] = align(cats_a, names_a, cats_b, names_b, components)
        pairs = []
        for p, (i, j) in enumerate(memo[key]):
            sa = stats_of(dur_a[:, i]) if i is not None else Stats()
            sb = stats_of(dur_b[:, j]) if j is not None else Stats()
            ra = int(va.rows[g_a[i]]) if i is not None else -1
            rb = int(vb.rows[g_b[j]]) if j is not None else -1
            na = va.m.strings[sig_a[i]] if i is not None else None
            nb = vb.m.strings[sig_b[j]] if j is not None else None
            pairs.append(KernelPair(
                position=p, a_name=na, b_name=nb,
                a_category=cats_a[i] if i is not None else None,
                b_category=cats_b[j] if j is not None else None,
                a=sa, b=sb, ratio=_ratio(sa.mean_us, sb.mean_us), gap_us=sa.mean_us - sb.mean_us,
                same_kernel=na is not None and na == nb, a_row=ra, b_row=rb,
                a_rule=va.m.rule(ra) if ra >= 0 else "", b_rule=vb.m.rule(rb) if rb >= 0 else ""))
        _annotate_pairs(pairs, labels, components)
        out.append(LayerAlignment(layer=l, pairs=pairs, a_kernels_per_pass=len(sig_a), b_kernels_per_pass=len(sig_b)))
    return out


def _annotate_pairs(pairs: list[KernelPair], labels: tuple[str, str], components: dict[str, list[str]]) -> None:
    """Explain gaps and fused-vs-component pairs in words."""
    for idx, p in enumerate(pairs):
        if p.a_category and p.b_category and p.a_category != p.b_category:
            if p.a_category in components.get(p.b_category, ()):
                p.fusion_note = f"{labels[1]} runs fused {p.b_category}"
            elif p.b_category in components.get(p.a_category, ()):
                p.fusion_note = f"{labels[0]} runs fused {p.a_category}"
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
        else:
            p.fusion_note = f"only on {mine}"


def _by_name(v: _View) -> dict[str, np.ndarray]:
    if len(v.name) == 0:
        return {}
    order = np.argsort(v.name, kind="stable")
    cuts = np.flatnonzero(np.diff(v.name[order])) + 1
    return {v.m.strings[int(v.name[g[0]])]: g for g in np.split(order, cuts)}


def _same_kernels(va: _View, vb: _View) -> list[SameKernel]:
    pa_all, pb_all = _by_name(va), _by_name(vb)
    out = []
    for name in pa_all.keys() & pb_all.keys():
        pa, pb = pa_all[name], pb_all[name]
        sa, sb = stats_of(va.dur[pa], va.total), stats_of(vb.dur[pb], vb.total)
        out.append(SameKernel(name=name, category=va.groups[int(va.gcat[pa[0]])], a=sa, b=sb,
                              ratio=_ratio(sa.mean_us, sb.mean_us), gap_us=sa.total_us - sb.total_us))
    out.sort(key=lambda s: (-abs(s.gap_us), s.name))
    return out


def compare(a: TraceModel, b: TraceModel, phase: str = "all", *, classifier=None,
            fusion_overrides: dict[str, Any] | None = None) -> Comparison:
    """Compare two loaded traces in one phase (all | prefill | decode | mixed | unknown)."""
    if phase not in PHASE_CHOICES:
        raise ValueError(f"phase must be one of {', '.join(PHASE_CHOICES)}")
    if classifier is None:
        from .classify import Classifier

        classifier = Classifier.load()
    labels = _labels(a, b)
    va, vb = _View("a", a, phase, classifier), _View("b", b, phase, classifier)
    ops = _operations(va, vb, phase)
    ga, gb = _LayerGroups(va), _LayerGroups(vb)
    la, lb = ga.per_layer(), gb.per_layer()
    layers = _layers(la, lb, va, vb)
    alignments = _alignments(la, lb, va, vb, labels, classifier)
    fusions = find_fusions(va, vb, labels, classifier, alignments, fusion_overrides)
    warnings = [f"{lab}: {w}" for lab, m in zip(labels, (a, b)) for w in m.warnings]
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
    return Comparison(a=_side(va, labels[0]), b=_side(vb, labels[1]), phase=phase,
                      ratio=_ratio(va.total, vb.total), gap_us=va.total - vb.total, operations=ops,
                      layers=layers, alignments=alignments, fusions=fusions,
                      same_kernels=_same_kernels(va, vb), warnings=warnings)
