"""What each side's kernels achieve: GEMM and attention shapes compared shape by shape, and the
throughput (TFLOP/s, TB/s, % of peak, roofline bound) of every operation.

`attach(cmp, va, vb, peaks)` fills the Comparison's `peaks`, `throughput`, `gemm_shapes` and
`attention_shapes` from the engine's two phase views; it is the one call the engine makes. The work
of each kernel comes from its launching operator's recorded shapes
(`kerneldiff.core.analysis.flops.model_work`), the peaks from the table
(`kerneldiff.core.analysis.peaks`). See `work_result` for the fields and conventions.

A shape's time is the GPU time of every kernel its operator calls launched in the phase (the GEMM
kernel and, on cuBLAS, its workspace memset): the figure an independent reading of the trace gets
by joining kernels to operators through their External id and summing durations per shape.
"""

from __future__ import annotations

from dataclasses import fields, replace
from typing import Any

import numpy as np

from kerneldiff.core.analysis.trace_totals import _groups
from kerneldiff.core.analysis.stats import Stats
from kerneldiff.core.analysis.flops import ATTENTION, GEMM, OpWork, work_of
from kerneldiff.core.analysis.peaks import PeakTable, Peaks, default_table
from kerneldiff.core.compare.work_result import (AttentionShape, GemmShape, KernelShare, ShapeSide, ThroughputRow,
                                                 ThroughputSide)
from kerneldiff.core.numbers import TINY, finite, ratio, stable_argsort

TOP_KERNELS = 4
_DURATIONS = [f.name for f in fields(Stats)]   # a kernel's figures, copied into its KernelShare


def _distinct(ids: np.ndarray, group: np.ndarray, groups: int) -> list[int]:
    """[len(np.unique(ids[group == g])) for g in range(groups)], from one sort of (group, id)."""
    if len(ids) == 0:
        return [0] * groups
    ids = ids.astype(np.int64)
    lo = int(ids.min())
    width = int(ids.max()) - lo + 1
    key = np.sort(group * width + (ids - lo))
    first = np.ones(len(key), dtype=bool)
    first[1:] = key[1:] != key[:-1]
    return np.bincount(key[first] // width, minlength=groups).tolist()


def _pct(x: float | None, of: float | None) -> float | None:
    r = ratio(x, of)
    return finite(100.0 * r) if r is not None else None


def _roof(flops: float, nbytes: float, seconds: float, p: Peaks | None, cls: str) -> dict[str, Any]:
    """Achieved rates of `flops` and `nbytes` done in `seconds`, against one GPU's peaks."""
    if not seconds >= TINY:   # 0, or kernels of 1e-320 µs: every rate would be inf
        return {}
    pf = p.flops(cls) if p is not None else None
    bw = p.bandwidth() if p is not None else None
    fps, bps = ratio(flops, seconds), ratio(nbytes, seconds)
    out: dict[str, Any] = {"tflops": fps and fps / 1e12, "tbps": bps and bps / 1e12,
                           "pct_peak": _pct(fps, pf), "pct_peak_bw": _pct(bps, bw),
                           "peak_tflops": pf / 1e12 if pf else None}
    if pf and bw and nbytes > 0:
        ideal_c, ideal_m = flops / pf, nbytes / bw
        out["bound"] = "compute" if ideal_c >= ideal_m else "memory"
        out["pct_roofline"] = _pct(max(ideal_c, ideal_m), seconds)
    return out


class _Side:
    """One side's phase view with each kernel's work and the GPU's peaks."""

    def __init__(self, v, peaks: Peaks | None) -> None:
        self.v = v
        self.m = v.m
        self.peaks = peaks
        w = work_of(v.m)
        self.work = w
        # the view's rows of each column (read-only views, no copies, when the phase keeps every kernel)
        self.kw = v._take(w.kernel_work)
        self.share = v._take(w.share)
        self.flops = v._take(w.flops)
        self.bytes = v._take(w.bytes)
        self.op = self.work.call_of(v._take(v.m.kernels.cpu_op))   # an eager attention triple is one call
        pk = np.array([(peaks.flops(x.peak) if peaks is not None else None) or np.nan for x in w.works] + [np.nan])
        self.peak = pk[np.where(self.kw >= 0, self.kw, len(w.works))]   # FLOP/s per kernel, NaN unknown

    def shape_positions(self, kind: str) -> list[tuple[tuple, list[int], np.ndarray]]:
        """(shape key, its work ids, the positions of its kernels, ascending) for every shape of one
        kind that has kernels in the view, in the order of the works: what
        np.flatnonzero(np.isin(self.kw, wids)) gives per shape, from one sort by shape (a pass over
        every kernel per shape cost ~10 ms on a trace of ~100 shapes)."""
        works = self.work.works
        groups: dict[tuple, list[int]] = {}
        for i, x in enumerate(works):
            if x.kind == kind:
                groups.setdefault(_key(x), []).append(i)
        if not groups:
            return []
        shape_of = np.full(len(works) + 1, -1, dtype=np.int64)     # the last: kernels without work
        for g, wids in enumerate(groups.values()):
            shape_of[wids] = g
        shape = shape_of[self.kw]
        mine = np.flatnonzero(shape >= 0)
        order = mine[stable_argsort(shape[mine])]
        counts = np.bincount(shape[mine], minlength=len(groups))
        parts = np.split(order, np.cumsum(counts)[:-1])
        return [(key, wids, pos) for (key, wids), pos in zip(groups.items(), parts) if len(pos)]

    def kernels(self, shapes: list[np.ndarray]) -> list[list[KernelShare]]:
        """For the kernels at each array of positions (one shape's): its kernels by name, longest
        first, with durations, TFLOP/s and a row of each. All shapes grouped at once, by (shape,
        kernel name): each group's figures are what grouping that shape alone gives, bit for bit
        (sums in time order, percentiles of its own durations), without ~100 µs of numpy calls
        per shape."""
        if not shapes:
            return []
        pos = np.concatenate(shapes)
        shape = np.repeat(np.arange(len(shapes)), [len(p) for p in shapes])
        name = self.v.name[pos].astype(np.int64)
        lo = int(name.min())
        width = int(name.max()) - lo + 1
        ids = shape * width + (name - lo)                  # (shape, name) as one integer, in that order
        uniq, stats, first = _groups(ids, self.v.dur[pos], self.v.total)
        inv = np.searchsorted(uniq, ids)
        flops = np.bincount(inv, weights=self.flops[pos], minlength=len(uniq))
        math = np.bincount(inv, weights=self.share[pos], minlength=len(uniq)) > 0
        tot = np.array([s.total_us for s in stats])
        names = uniq % width + lo
        bounds = np.searchsorted(uniq // width, np.arange(len(shapes) + 1)).tolist()
        out = []
        for a, b in zip(bounds[:-1], bounds[1:]):
            mine = []
            for i in (a + np.lexsort((names[a:b], -tot[a:b]))[:TOP_KERNELS]).tolist():
                s = stats[i]
                fps = ratio(float(flops[i]), s.total_us * 1e-6) if math[i] else None
                tf = fps / 1e12 if fps is not None else None
                mine.append(KernelShare(self.m.strings[int(names[i])], tflops=tf, row=int(self.v.rows[pos[first[i]]]),
                                        **{f: getattr(s, f) for f in _DURATIONS}))
            out.append(mine)
        return out

    def shapes(self, kind: str) -> dict[tuple, tuple[OpWork, ShapeSide]]:
        """Shape key -> (a representative work, this side's figures), for the works of one kind."""
        works = self.work.works
        found = self.shape_positions(kind)
        out = {}
        if not found:
            return out
        every = np.concatenate([pos for _, _, pos in found])
        shape = np.repeat(np.arange(len(found)), [len(pos) for _, _, pos in found])
        calls = _distinct(self.op[every], shape, len(found))
        names = _distinct(self.v.name[every], shape, len(found))
        kernels = self.kernels([pos for _, _, pos in found])
        for (key, wids, pos), n, n_names, ks in zip(found, calls, names, kernels):
            total = float(self.v.dur[pos].sum())
            w0 = _alike(works[wids[0]], [works[i] for i in wids])
            side = ShapeSide(calls=n, total_us=total, mean_us=total / n,
                             ops=sorted({works[i].op for i in wids}), kernels=ks, kernel_names=n_names)
            for f, val in _roof(n * w0.flops, n * w0.bytes, total * 1e-6, self.peaks, w0.peak).items():
                setattr(side, f, val)
            out[key] = (w0, side)
        return out

    def throughput(self, pos: np.ndarray) -> ThroughputSide:
        d = self.v.dur[pos]
        carried = pos[self.share[pos] > 0]
        covered = float(self.v.dur[carried].sum())
        fl, by = self.flops[carried], self.bytes[carried]
        out = ThroughputSide(time_us=float(d.sum()), covered_us=covered, kernels=int(len(pos)),
                             covered_kernels=int(len(carried)), flops=float(fl.sum()), bytes=float(by.sum()))
        sec = covered * 1e-6
        if not sec >= TINY:    # nothing covered, or kernels of 1e-320 µs: no rate exists
            return out
        out.tflops, out.tbps = finite(out.flops / sec / 1e12), finite(out.bytes / sec / 1e12)
        pk = self.peak[carried]
        bw = self.peaks.bandwidth() if self.peaks is not None else None
        known = np.isfinite(pk)
        if known.any() and (known.all() or not (fl[~known] > 0).any()):
            # (no peak known at all: no share of one, not 0 %)
            ideal_c = float((fl[known] / pk[known]).sum())
            out.pct_peak = _pct(ideal_c, sec)
        else:
            ideal_c = None
        if bw:
            ideal_m = out.bytes / bw
            out.pct_peak_bw = _pct(ideal_m, sec)
            if ideal_c is not None and (ideal_c > 0 or ideal_m > 0):
                out.bound = "compute" if ideal_c >= ideal_m else "memory"
                out.pct_roofline = _pct(max(ideal_c, ideal_m), sec)
        return out


def _key(w: OpWork) -> tuple:
    """Shapes that are the same on both sides: GEMMs by operator, shape and dtype; attention by
    shape and dtype whatever the back end (flash on one GPU, cuDNN or CK on the other)."""
    if w.kind == GEMM:
        return (w.op, w.get("m"), w.get("n"), w.get("k"), w.get("batch"), w.dtype)
    # scale and dropout leave the work as it is (scale recorded or defaulted reads alike)
    return tuple(v for k, v in w.shape if k not in ("causal_read", "scale", "dropout")) + (w.dtype,)


def _rows(sa: _Side, sb: _Side, kind: str, per_pass: bool) -> list:
    A, B = sa.shapes(kind), sb.shapes(kind)
    na, nb = (sa.v.passes, sb.v.passes) if per_pass else (1, 1)
    rows = []
    for key in set(A) | set(B):
        w, side_a = A.get(key, (None, ShapeSide()))
        w2, side_b = B.get(key, (None, ShapeSide()))
        w = w or w2
        ta, tb = side_a.total_us / na, side_b.total_us / nb
        common = dict(a=side_a, b=side_b, ratio=ratio(ta, tb) if ta > 0 and tb > 0 else None, gap_us=ta - tb)
        if kind == GEMM:
            rows.append(GemmShape(op=w.op, m=w.get("m"), n=w.get("n"), k=w.get("k"), batch=w.get("batch"),
                                  dtype=w.dtype, flops=w.flops, bytes=w.bytes, **common))
        else:
            g = w.get
            rows.append(AttentionShape(op="attention_backward" if g("backward") else "attention", batch=g("batch"),
                                       heads=g("heads"), kv_heads=g("kv_heads"), seq_q=g("seq_q"), seq_k=g("seq_k"),
                                       head_dim=g("head_dim"), head_dim_v=g("head_dim_v"), causal=bool(g("causal")),
                                       dtype=w.dtype, flops=w.flops, bytes=w.bytes, **common,
                                       batch_heads=g("batch_heads") if g("batch_heads") is not None
                                       else g("batch") * g("heads"), causal_read=bool(g("causal_read")),
                                       dropout=_agreed(w, w2, "dropout"), scale=_agreed(w, w2, "scale")))
    rows.sort(key=lambda r: (-abs(r.gap_us), -(r.a.total_us + r.b.total_us), repr(_sort_key(r))))
    return rows


def _alike(w0: OpWork, ws: list) -> OpWork:
    """w0, with a recorded argument its key leaves out (scale, dropout) cleared where the works of
    that key were given different values: the row says only what all its calls were given."""
    if w0.kind == GEMM:
        return w0
    clear = {key for key in ("scale", "dropout") if len({w.get(key) for w in ws}) > 1}
    if not clear:
        return w0
    return replace(w0, shape=tuple((k, None if k in clear else v) for k, v in w0.shape))


def _agreed(w, w2, key: str):
    """A recorded argument both sides' ops were given alike (one side's where the other has none
    of that shape); None where they differ or neither recorded it."""
    va, vb = (x.get(key) if x is not None else None for x in (w, w2))
    if w is None or w2 is None:
        return va if va is not None else vb
    return va if va == vb else None


def _sort_key(r) -> tuple:
    if isinstance(r, GemmShape):
        return (r.op, r.m, r.n, r.k, r.batch, r.dtype)
    return (r.op, r.batch, r.heads, r.seq_q, r.seq_k, r.head_dim, r.dtype)


def _throughput(sa: _Side, sb: _Side, order: list[str]) -> list[ThroughputRow]:
    pa, pb = sa.v.by_category(), sb.v.by_category()
    empty = np.array([], dtype=np.int64)
    rows = []
    names = [c for c in order if c in pa or c in pb] + sorted((set(pa) | set(pb)) - set(order))
    for cat in names:
        ta, tb = sa.throughput(pa.get(cat, empty)), sb.throughput(pb.get(cat, empty))
        if ta.covered_us > 0 or tb.covered_us > 0:
            rows.append(ThroughputRow(category=cat, a=ta, b=tb))
    return rows


def attach(cmp, va, vb, peaks: PeakTable | None = None) -> None:
    """Fill cmp.peaks, cmp.throughput, cmp.gemm_shapes and cmp.attention_shapes (and warn about what
    they cannot say) from the engine's two phase views."""
    table = peaks if peaks is not None else default_table()
    labels = (cmp.a.label, cmp.b.label)
    sides = []
    for key, v, label in zip(("a", "b"), (va, vb), labels):
        p = table.match(v.m.info, key)
        sides.append(_Side(v, p))
        if p is None:
            cmp.warnings.append(f"{label}: no peak figures for GPU '{v.m.info.gpu or 'unknown'}' in the table: % of "
                                f"peak and the roofline bound are not given (name one with --peak {key}.gpu=KEY, or "
                                f"give figures with --peaks FILE or --peak {key}.bf16=… {key}.hbm=…)")
        recorded = bool((v.m.cpu_ops.dims >= 0).any())
        getattr(cmp, key).shapes_recorded = recorded
        if len(v.rows) and not recorded:
            cmp.warnings.append(f"{label}: no operator input shapes recorded (record_shapes=False): FLOPs, bytes and "
                                f"the GEMM and attention shapes are unknown")
    sa, sb = sides
    cmp.peaks = {"a": sa.peaks, "b": sb.peaks}
    per_pass = cmp.basis == "per_pass"
    cmp.gemm_shapes = _rows(sa, sb, GEMM, per_pass)
    cmp.attention_shapes = _rows(sa, sb, ATTENTION, per_pass)
    cmp.throughput = _throughput(sa, sb, [o.category for o in cmp.operations])
    _refuse_beyond_peak(cmp, labels)


PEAK_LIMIT = 100.0      # % of a peak: no kernel runs faster than its GPU can
_RATES = ("tflops", "tbps", "pct_peak", "pct_peak_bw", "bound", "pct_roofline")


def _beyond(side, peaks: Peaks | None) -> tuple[float, str] | None:
    """(how far, which figure) when a side's achieved rates exceed its GPU's peaks, else None."""
    worst = []
    for f, what in (("pct_peak", "of peak"), ("pct_peak_bw", "of peak bandwidth"), ("pct_roofline", "of its roof")):
        v = getattr(side, f, None)
        if v is not None and v > PEAK_LIMIT:
            worst.append((v, what))
    if peaks is not None:
        bw, top = peaks.bandwidth(), max(peaks.tflops.values(), default=None)
        if bw and side.tbps is not None and side.tbps * 1e12 > bw:
            worst.append((100.0 * side.tbps * 1e12 / bw, "of peak bandwidth"))
        if top and side.tflops is not None and side.tflops > top:
            worst.append((100.0 * side.tflops / top, "of the highest peak"))
    return max(worst) if worst else None


def _refuse(side) -> None:
    for f in _RATES:
        setattr(side, f, None)
    if isinstance(side, ShapeSide):             # a shape's kernels share its (wrong) work
        for k in side.kernels:
            k.tflops = None
    side.beyond_peak = True


def _gemm_label(r) -> str:
    return f"{r.op} {r.m}×{r.n}×{r.k}" + (f" ×{r.batch}" if r.batch > 1 else "")


def _attention_label(r) -> str:
    return f"{r.op} b{r.batch} h{r.heads} q{r.seq_q} k{r.seq_k} d{r.head_dim}"


def _category_label(r) -> str:
    return f"{r.category} (all its kernels)"


def _refuse_beyond_peak(cmp, labels) -> None:
    """The last guard: an achieved rate above the GPU's peak is a wrong reading, not a fast kernel
    (the recorded shapes are not what the kernels moved or computed: logits recorded for every
    token but computed for the last one, kernels of another call joined to it, or the peak is
    another part's). Such a side's rates are not shown at all (`beyond_peak` says why they are
    missing) and the comparison says so once per side, naming the worst case. The byte and FLOP
    models are meant to keep every real figure under the peak; this only stops what they miss."""
    rows = ((cmp.gemm_shapes, _gemm_label), (cmp.attention_shapes, _attention_label), (cmp.throughput, _category_label))
    for key, label in zip(("a", "b"), labels):
        peaks = cmp.peaks.get(key)
        top = max(peaks.tflops.values(), default=None) if peaks is not None else None
        over = []
        for table, name in rows:
            for r in table:
                side = getattr(r, key)
                hit = _beyond(side, peaks)
                if hit:
                    over.append((hit, name(r)))
                    _refuse(side)
                for k in side.kernels if isinstance(side, ShapeSide) else ():   # a kernel's own rate too
                    if top and k.tflops is not None and k.tflops > top:
                        k.tflops = None
        if over:
            (pct, what_pct), what = max(over)
            shown = f"{pct:,.0f}%" if pct < 1e6 else f"{pct:.1e}%"     # a nonsense shape can claim 1e30%
            cmp.warnings.append(f"{label}: {len(over)} figure(s) above the GPU's peak not shown (worst: {what} at "
                                f"{shown} {what_pct}): its recorded shapes cannot be what its kernels moved or "
                                "computed in the time they took, so no TFLOP/s, TB/s or % of peak is given for it")
