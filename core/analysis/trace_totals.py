"""One trace on its own (the explorer's browse view): where its GPU time goes per operation, per
layer, per kernel and per step. Nothing is compared: these are pure functions from a loaded
`TraceModel` and a phase filter to plain dataclasses, which the explorer formats.

Durations are microseconds; a share is of the trace's GPU time in the phase. Kernels of one name
are one row (as in the comparison's same-kernel table); operations are the model's categories as
the classifier named them (`kerneldiff info` lists the same).
"""

from __future__ import annotations

from dataclasses import field

import numpy as np

from kerneldiff.core.analysis.stats import Stats
from kerneldiff.core.analysis.timeline import Window, timeline
from kerneldiff.core.model import PHASE_FILTERS, TraceModel
# this module's dataclasses are made on first use: a bare `info` uses one of the six
from kerneldiff.core.lazy_dataclass import dataclass
from kerneldiff.core.numbers import stable_argsort

TOP_N = 3   # kernels and cpu_ops named per operation / step


@dataclass
class OperationTotal:
    category: str
    stats: Stats
    kernel_names: int                                   # distinct kernel names in it
    top_kernels: list[str] = field(default_factory=list)   # by total time
    top_cpu_ops: list[str] = field(default_factory=list)


@dataclass
class LayerTotal:
    """One transformer layer over every forward pass (step) that runs it."""

    layer: int
    passes: int
    kernels: int                 # over all passes
    kernels_per_pass: int        # median over passes
    total_us: float
    median_us: float             # per pass
    p90_us: float                # per pass
    share: float


@dataclass
class KernelTotal:
    """Every launch of one kernel name (in a layer: of that layer)."""

    name: str
    category: str
    rule: str
    stats: Stats
    row: int                     # its first kernel row in the model (for the detail view)
    position: int = -1           # in a layer: earliest position within a pass (0 = first kernel)
    per_pass: float = 0.0        # in a layer: launches per pass


@dataclass
class StepTotal:
    """One step / forward pass: the trace's timeline."""

    index: int
    name: str                    # the annotation text, literal
    phase: str
    source: str
    start_us: float              # its first kernel's start, since the trace's first kernel
    span_us: float               # first kernel start to last kernel end (0 without kernels)
    kernels: int
    gpu_us: float                # kernel time launched in the step
    cpu_us: float                # the annotation's own (host) duration
    batch: int | None = None
    tokens: int | None = None
    top_operations: list[tuple[str, float]] = field(default_factory=list)   # (category, µs), largest first

    @property
    def busy(self) -> float | None:
        """Kernel time over the step's GPU span (can pass 1 when streams overlap)."""
        return self.gpu_us / self.span_us if self.span_us > 0 else None


@dataclass
class TraceOverview:
    """Everything the browse view shows of one trace in one phase."""

    path: str
    label: str                   # the GPU, or the file name without one
    vendor: str
    phase: str
    phases: list[str]            # phase filters that select something ("all" first)
    gpu_time_us: float           # in the phase
    kernels: int                 # in the phase
    steps_total: int             # in the whole trace
    layers_per_step: int
    architecture: str
    warnings: list[str]
    operations: list[OperationTotal]
    layers: list[LayerTotal]
    kernel_totals: list[KernelTotal]
    steps: list[StepTotal]
    # the phase's wall clock (first to last GPU activity), busy and idle, as a comparison reads them
    # (a kerneldiff.core.analysis.timeline Window): what browse leads with
    wall: Window | None = None


# --- grouping -------------------------------------------------------------------------------

def _groups(ids: np.ndarray, dur: np.ndarray, total: float) -> tuple[np.ndarray, list[Stats], np.ndarray]:
    """(distinct ids, their Stats, index of each group's first element in `ids`), grouped in
    one sort: percentiles are numpy's linear ones, taken from each group's sorted durations."""
    if len(ids) == 0:
        return np.zeros(0, dtype=ids.dtype), [], np.zeros(0, dtype=np.int64)
    uniq, first, inv, counts = np.unique(ids, return_index=True, return_inverse=True, return_counts=True)
    starts = np.cumsum(counts) - counts
    # totals summed as numpy sums each group's durations in time order (the comparison's and
    # `info`'s figures, to the last digit)
    in_time = dur[np.argsort(inv, kind="stable")]
    sums = [in_time[a:a + n].sum() for a, n in zip(starts.tolist(), counts.tolist())]
    d = dur[np.lexsort((dur, inv))]

    def pct(q: float) -> np.ndarray:
        pos = (counts - 1) * q
        lo = np.floor(pos).astype(np.int64)
        hi = np.minimum(lo + 1, counts - 1)
        frac = pos - lo
        a, b = d[starts + lo], d[starts + hi]
        return a + (b - a) * frac

    med, p90, p95 = pct(0.5), pct(0.9), pct(0.95)
    lo, hi = d[starts], d[starts + counts - 1]
    stats = [Stats(count=int(n), total_us=float(t), mean_us=float(t) / int(n), median_us=float(m),
                       min_us=float(a), p90_us=float(q9), p95_us=float(q95), max_us=float(b),
                       share=float(t) / total if total > 0 else 0.0)
             for n, t, m, a, q9, q95, b in zip(counts, sums, med, lo, p90, p95, hi)]
    return uniq, stats, first


def _top(ids: np.ndarray, weights: np.ndarray, n: int = TOP_N) -> list[int]:
    """The n ids with the largest summed weight (ties: the smaller id first)."""
    if len(ids) == 0:
        return []
    uniq, inv = np.unique(ids, return_inverse=True)
    t = np.bincount(inv, weights=weights)
    return [int(uniq[i]) for i in np.argsort(-t, kind="stable")[:n]]


def _category_name(model: TraceModel, cat: int) -> str:
    return model.categories[cat] if cat >= 0 else "Other"


# --- the tables ---------------------------------------------------------------------------

@dataclass
class CategoryTotal:
    """One operation category's kernels in a phase: how many, their GPU time and share."""

    category: str
    count: int
    total_us: float
    share: float        # of the phase's GPU time


def category_totals(model: TraceModel, phase: str = "all") -> list[CategoryTotal]:
    """Per category: launches, time and share of the phase's GPU time, in `operations`' order and to
    its last digit (each sum in time order), without the percentiles, heaviest kernels and cpu_ops
    that cost `operations` its sorts: `info` prints these (2M random kernels in 25 categories: 0.5 s,
    against 1.5 s for the grouping `operations` sorts for)."""
    k = model.kernels
    mask = model.phase_mask(phase)
    cats = k.cat[mask].astype(np.int64)
    dur = k.dur[mask]
    total = float(dur.sum())
    # each category's durations in time order, as one run of a stable sort by category: the same
    # values in the same order as dur[cats == c], so the same sums, without a pass over every
    # kernel per category
    order = stable_argsort(cats)
    sorted_cats = cats[order]
    starts = np.flatnonzero(np.r_[len(order) > 0, sorted_cats[1:] != sorted_cats[:-1]])
    ids = sorted_cats[starts]
    ends = np.append(starts[1:], len(order))
    by_cat = dur[order]
    out = []
    for c, a, b in zip(ids.tolist(), starts.tolist(), ends.tolist()):
        t = float(by_cat[a:b].sum())
        out.append(CategoryTotal(_category_name(model, c), b - a, t, t / total if total > 0 else 0.0))
    out.sort(key=lambda o: (-o.total_us, o.category))
    return out


def operations(model: TraceModel, phase: str = "all") -> list[OperationTotal]:
    """Per category: count, durations and share, its heaviest kernels and cpu_ops; largest first."""
    k = model.kernels
    rows = np.flatnonzero(model.phase_mask(phase))
    dur = k.dur[rows]
    cats = k.cat[rows].astype(np.int64)
    ids, stats, _first = _groups(cats, dur, float(dur.sum()))
    names = k.name[rows]
    ops_of = k.cpu_op[rows]
    out = []
    for c, s in zip(ids.tolist(), stats):
        sel = cats == c
        ops = ops_of[sel]
        ok = ops >= 0
        op_names = model.cpu_ops.name[ops[ok]]
        out.append(OperationTotal(
            category=_category_name(model, c), stats=s, kernel_names=int(len(np.unique(names[sel]))),
            top_kernels=[model.strings[i] for i in _top(names[sel], dur[sel])],
            top_cpu_ops=[model.strings[i] for i in _top(op_names, dur[sel][ok])]))
    out.sort(key=lambda o: (-o.stats.total_us, o.category))
    return out


def layers(model: TraceModel, phase: str = "all") -> list[LayerTotal]:
    """Per transformer layer: its time over every pass, kernels, and the per-pass median; in layer order."""
    k = model.kernels
    rows = np.flatnonzero(model.phase_mask(phase) & (k.layer >= 0))
    total = float(k.dur[model.phase_mask(phase)].sum())
    if len(rows) == 0:
        return []
    layer = k.layer[rows].astype(np.int64)
    step = k.step[rows].astype(np.int64)
    dur = k.dur[rows]
    # one group per (layer, pass): its kernel time and kernel count
    key = layer * (len(model.steps) + 2) + (step + 1)
    passes, inv, counts = np.unique(key, return_inverse=True, return_counts=True)
    pass_time = np.bincount(inv, weights=dur, minlength=len(passes))
    pass_layer = passes // (len(model.steps) + 2)
    out = []
    for l in np.unique(pass_layer).tolist():
        sel = pass_layer == l
        t, n = pass_time[sel], counts[sel]
        out.append(LayerTotal(layer=int(l), passes=int(sel.sum()), kernels=int(n.sum()),
                              kernels_per_pass=int(np.median(n)), total_us=float(t.sum()),
                              median_us=float(np.median(t)), p90_us=float(np.percentile(t, 90)),
                              share=float(t.sum()) / total if total > 0 else 0.0))
    return out


def _kernel_totals(model: TraceModel, rows: np.ndarray, total: float) -> list[KernelTotal]:
    k = model.kernels
    ids, stats, first = _groups(k.name[rows], k.dur[rows], total)
    out = []
    for i, s, f in zip(ids.tolist(), stats, first.tolist()):
        row = int(rows[f])
        out.append(KernelTotal(name=model.strings[i], category=model.category(row), rule=model.rule(row),
                               stats=s, row=row))
    return out


def kernels(model: TraceModel, phase: str = "all") -> list[KernelTotal]:
    """Per kernel name: category, count, durations and share; largest total first."""
    mask = model.phase_mask(phase)
    rows = np.flatnonzero(mask)
    out = _kernel_totals(model, rows, float(model.kernels.dur[rows].sum()))
    out.sort(key=lambda r: (-r.stats.total_us, r.name))
    return out


def layer_kernels(model: TraceModel, layer: int, phase: str = "all") -> list[KernelTotal]:
    """The kernels of one layer, by name, in the order a pass runs them (earliest position first)."""
    k = model.kernels
    mask = model.phase_mask(phase)
    rows = np.flatnonzero(mask & (k.layer == layer))
    if len(rows) == 0:
        return []
    out = _kernel_totals(model, rows, float(k.dur[mask].sum()))
    # position of each kernel within its pass (rows are in time order, a pass is one step)
    step = k.step[rows]
    new_pass = np.ones(len(rows), dtype=bool)
    new_pass[1:] = step[1:] != step[:-1]
    starts = np.flatnonzero(new_pass)
    position = np.arange(len(rows)) - np.repeat(starts, np.diff(np.append(starts, len(rows))))
    passes = len(np.unique(step))
    names = k.name[rows]
    ids = np.unique(names)
    earliest = np.full(len(ids), np.iinfo(np.int64).max, dtype=np.int64)
    np.minimum.at(earliest, np.searchsorted(ids, names), position)
    where = {model.strings[i]: int(p) for i, p in zip(ids.tolist(), earliest.tolist())}
    for r in out:
        r.position = where[r.name]
        r.per_pass = r.stats.count / passes
    out.sort(key=lambda r: (r.position, -r.stats.total_us, r.name))
    return out


def steps(model: TraceModel, phase: str = "all") -> list[StepTotal]:
    """Every step (forward pass) of the phase in time order, with its kernels' time."""
    k = model.kernels
    if not model.steps:
        return []
    n = len(model.steps)
    has = k.step >= 0
    step_ids = k.step[has].astype(np.int64)
    dur = k.dur[has]
    counts = np.bincount(step_ids, minlength=n)
    gpu = np.bincount(step_ids, weights=dur, minlength=n)
    ts = k.ts[has]
    first = np.full(n, np.inf)
    last = np.full(n, -np.inf)
    np.minimum.at(first, step_ids, ts)
    np.maximum.at(last, step_ids, ts + dur)
    t0 = float(k.ts.min()) if len(k) else 0.0
    # per (step, category) time, for each step's heaviest operations
    cats = k.cat[has].astype(np.int64) + 1                  # -1 (Other) -> 0
    width = len(model.categories) + 1
    by_cat = np.bincount(step_ids * width + cats, weights=dur, minlength=n * width).reshape(n, width)
    out = []
    for i, s in enumerate(model.steps):
        if phase not in (None, "all") and s.phase != phase:
            continue
        top = [c for c in np.argsort(-by_cat[i], kind="stable")[:TOP_N].tolist() if by_cat[i, c] > 0]
        ran = counts[i] > 0
        out.append(StepTotal(index=s.index, name=s.name, phase=s.phase, source=s.source,
                             start_us=float(first[i]) - t0 if ran else float(s.ts) - t0,
                             span_us=float(last[i] - first[i]) if ran else 0.0, kernels=int(counts[i]),
                             gpu_us=float(gpu[i]), cpu_us=float(s.dur), batch=s.batch, tokens=s.tokens,
                             top_operations=[(_category_name(model, c - 1), float(by_cat[i, c])) for c in top]))
    return out


def overview(model: TraceModel, phase: str = "all") -> TraceOverview:
    """The browse view's tables of one trace in one phase (all | prefill | decode | mixed | unknown)."""
    if phase not in PHASE_FILTERS:
        raise ValueError(f"phase must be one of {', '.join(PHASE_FILTERS)}")
    mask = model.phase_mask(phase)
    present = set(model.phases_present())
    warnings = list(model.warnings)
    if not mask.any():
        warnings.append(f"no kernels in phase '{phase}'" if phase != "all" else "no GPU kernels")
    return TraceOverview(
        path=model.path, label=model.label, vendor=getattr(model.info, "vendor", "") or "", phase=phase,
        phases=[p for p in PHASE_FILTERS if p == "all" or p in present],
        gpu_time_us=float(model.kernels.dur[mask].sum()), kernels=int(mask.sum()), steps_total=len(model.steps),
        layers_per_step=model.num_layers, architecture=model.architecture, warnings=warnings,
        operations=operations(model, phase), layers=layers(model, phase), kernel_totals=kernels(model, phase),
        steps=steps(model, phase), wall=timeline(model, phase, keep_cut=False).whole)
