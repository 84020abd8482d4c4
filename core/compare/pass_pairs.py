"""Both sides' kernels in chosen forward passes on one time axis, and the kernel pairs the
comparison's layer alignments matched: what the Perfetto file draws, and the one pass the HTML
report draws to scale.

Each place (a pass of A and the pass of B at the same place) gets a slot on the axis as long as the
longer of the two, and both start at its beginning: neither side's passes overlap each other however
much slower one side is. The kernels are those the comparison counts (its phase, less the work cut
by the profiler's window: `kerneldiff.core.analysis.cut_work.compared_mask`). Passes pair up by their order in the phase, as
the explorer's Timeline pairs them, and a pass has one number everywhere: its index among all the
trace's passes, from 0 (side A's; B's where A has no pass at that place). The alignment of a layer
is made on its most common kernel sequence (`LayerAlignment`), so a layer in a pass that runs that
very sequence on both sides maps position by position; a layer-pass that runs another sequence (a
prefill pass among decode passes runs other kernels) gets no pairs, and is counted in
`unpaired_groups`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from kerneldiff.core.analysis.cut_work import compared_mask


@dataclass
class PassInfo:
    number: int              # the pass's one number (see the module's docstring)
    step: int                # this side's step index (the model's)
    place: int               # its place among the phase's passes (pass `place` of A goes with B's)
    name: str
    phase: str
    start_us: float          # its first kernel's start, in the trace's own clock
    span_us: float           # first kernel's start to the last kernel's end
    shift_us: float = 0.0    # added to every kernel of the pass to put it on the common axis


@dataclass
class SideKernels:
    """One side's chosen kernels, in time order, on the common time axis (µs)."""

    key: str                 # "a" | "b"
    label: str
    gpu: str
    passes: list[PassInfo]
    rows: np.ndarray         # kernel rows of the side's model
    ts: np.ndarray           # start on the common axis
    dur: np.ndarray
    stream: np.ndarray
    layer: np.ndarray        # -1 outside layers
    pass_of: np.ndarray      # index into `passes`, -1 for a kernel outside every chosen pass
    names: list[str]
    categories: list[str]

    def __len__(self) -> int:
        return len(self.rows)

    @property
    def total_us(self) -> float:
        return float(self.dur.sum())


@dataclass
class KernelMatch:
    """A kernel of A and the kernel of B the alignment pairs it with, in one layer of one pass."""

    a: int                   # index into SideKernels a
    b: int
    layer: int
    position: int            # the aligned position in the layer (KernelPair.position)
    ratio: float | None      # the aligned pair's mean A / B (KernelPair.ratio)
    gap_us: float            # the aligned pair's mean A − B (KernelPair.gap_us)


@dataclass
class PassPairs:
    phase: str
    numbers: list[int]                   # the passes chosen (empty: every kernel of the phase)
    a: SideKernels
    b: SideKernels
    matches: list[KernelMatch] = field(default_factory=list)
    unpaired_groups: int = 0             # layer-passes whose sequence is not the aligned one


def pass_steps(model, phase: str) -> list[int]:
    """The model's steps that hold compared kernels in `phase`, in trace order."""
    k = model.kernels
    sel = compared_mask(model, phase) & (k.step >= 0)
    return np.unique(k.step[sel]).tolist()


def pass_numbers(steps_a: list[int], steps_b: list[int]) -> list[int]:
    """The number of each place: A's step index, B's where A has no pass there."""
    return [steps_a[i] if i < len(steps_a) else steps_b[i] for i in range(max(len(steps_a), len(steps_b)))]


def parse_passes(spec: str, numbers: list[int]) -> list[int]:
    """`3` or `2-5` (inclusive) -> the pass numbers among `numbers` it names; ValueError saying what
    is wrong (the numbers the traces hold, when it names none)."""
    text = spec.strip()
    lo_s, sep, hi_s = text.partition("-")
    try:
        lo, hi = int(lo_s), int(hi_s) if sep else int(lo_s)
    except ValueError:
        raise ValueError(f"--pass wants N or N-M (a pass's number, as the Timeline shows it), got {spec!r}") from None
    if not numbers:
        raise ValueError("neither trace has forward passes in this phase: leave out --pass")
    chosen = [n for n in numbers if lo <= n <= hi]
    if lo > hi or not chosen:
        held = (f"{numbers[0]}-{numbers[-1]}" if numbers == list(range(numbers[0], numbers[-1] + 1))
                else ", ".join(map(str, numbers[:12])) + (", …" if len(numbers) > 12 else ""))
        raise ValueError(f"--pass {spec}: no such pass; the traces hold passes {held} in this phase")
    return chosen


def _side(cmp_side, model, phase: str, steps: list[int], places: list[int] | None,
          numbers: list[int]) -> SideKernels:
    """The side's kernels of the passes at `places` (every compared kernel of the phase when None),
    in time order, still in the trace's clock."""
    k = model.kernels
    mask = compared_mask(model, phase)
    chosen = [i for i in (range(len(steps)) if places is None else places) if i < len(steps)]
    step_index = {steps[i]: j for j, i in enumerate(chosen)}
    if places is not None:
        lut = np.zeros(int(k.step.max()) + 2 if len(k.step) else 1, dtype=bool)   # the last cell: step -1
        for st in step_index:
            lut[st] = True
        mask &= lut[np.where(k.step >= 0, k.step, len(lut) - 1)]
    rows = np.flatnonzero(mask)
    rows = rows[np.argsort(k.ts[rows], kind="stable")]
    pass_of = np.full(len(rows), -1, dtype=np.int64)
    st = k.step[rows]
    for step, j in step_index.items():
        pass_of[st == step] = j
    ts, dur = k.ts[rows].astype(np.float64), np.maximum(k.dur[rows], 0.0).astype(np.float64)
    passes = []
    for j, i in enumerate(chosen):
        sel = pass_of == j
        start = float(ts[sel].min()) if sel.any() else 0.0
        end = float((ts[sel] + dur[sel]).max()) if sel.any() else 0.0
        info = model.steps[steps[i]] if steps[i] < len(model.steps) else None
        passes.append(PassInfo(number=numbers[i], step=steps[i], place=i, name=info.name if info else "",
                               phase=info.phase if info else "unknown", start_us=start, span_us=end - start))
    strings = model.strings
    names = [strings[int(i)] if i >= 0 else "" for i in k.name[rows].tolist()]
    return SideKernels(key=cmp_side.key, label=cmp_side.label, gpu=cmp_side.gpu, passes=passes, rows=rows,
                       ts=ts, dur=dur, stream=k.stream[rows].astype(np.int64), layer=k.layer[rows].astype(np.int64),
                       pass_of=pass_of, names=names, categories=_categories(model, rows))


def _categories(model, rows: np.ndarray) -> list[str]:
    table = list(model.categories) + ["Other"]          # category id -1 indexes the trailing "Other"
    return [table[c] for c in model.kernels.cat[rows].tolist()]


def _owner(side: SideKernels) -> np.ndarray:
    """Each kernel's pass (index into `passes`): its own, or for a kernel outside the chosen passes
    the pass that started last before it (the first pass, before any)."""
    starts = np.array([p.start_us for p in side.passes])
    order = np.argsort(starts, kind="stable")
    idx = side.pass_of.copy()
    out = idx < 0
    if out.any():
        before = np.searchsorted(starts[order], side.ts[out], side="right") - 1
        idx[out] = order[np.maximum(before, 0)]
    return idx


def _extents(side: SideKernels, owner: np.ndarray) -> dict[int, tuple[float, float]]:
    """place -> (before, after): how far the side's kernels of that pass reach before its first
    kernel's start and after it, the latter to the next place's pass start at least (the side's
    own idle between two consecutive passes is kept)."""
    ends = side.ts + side.dur
    by_place = {p.place: i for i, p in enumerate(side.passes)}
    out = {}
    for i, p in enumerate(side.passes):
        sel = owner == i
        lo = min(p.start_us, float(side.ts[sel].min())) if sel.any() else p.start_us
        hi = max(p.start_us + p.span_us, float(ends[sel].max())) if sel.any() else p.start_us + p.span_us
        nxt = by_place.get(p.place + 1)
        if nxt is not None:
            hi = max(hi, side.passes[nxt].start_us)
        out[p.place] = (p.start_us - lo, hi - p.start_us)
    return out


def _slots(a: SideKernels, b: SideKernels, oa: np.ndarray, ob: np.ndarray) -> dict[int, float]:
    """place -> where both sides' passes of that place start on the common axis. Each place gets a
    slot as long as the longer side's pass (with what reaches before and after it), so a slower
    side's passes never run into each other and a pass's kernels never share time with another
    pass's on any track."""
    ea, eb = _extents(a, oa), _extents(b, ob)
    at, t = {}, 0.0
    for place in sorted(set(ea) | set(eb)):
        before = max(ea.get(place, (0.0, 0.0))[0], eb.get(place, (0.0, 0.0))[0])
        after = max(ea.get(place, (0.0, 0.0))[1], eb.get(place, (0.0, 0.0))[1])
        at[place] = t + before
        t = at[place] + after
    return at


def _place(side: SideKernels, owner: np.ndarray, at: dict[int, float]) -> None:
    """Move each pass of the side (and the kernels it owns) to start at its place's slot; a side
    without passes starts at 0."""
    if not side.passes:
        side.ts = side.ts - (float(side.ts.min()) if len(side) else 0.0)
        return
    shifts = np.array([at[p.place] - p.start_us for p in side.passes])
    side.ts = side.ts + shifts[owner]
    for p, s in zip(side.passes, shifts.tolist()):
        p.shift_us = s


def pass_pairs(cmp, model_a, model_b, numbers: list[int] | None = None) -> PassPairs:
    """The chosen passes (by number; None: every compared kernel of the phase) of both sides on one
    time axis: each place's passes of A and B start together, in a slot as long as the longer of the
    two, the first slot at 0; and the matched kernel pairs."""
    phase = cmp.phase
    steps_a, steps_b = pass_steps(model_a, phase), pass_steps(model_b, phase)
    every = pass_numbers(steps_a, steps_b)
    places = None if numbers is None else [i for i, n in enumerate(every) if n in set(numbers)]
    a = _side(cmp.a, model_a, phase, steps_a, places, every)
    b = _side(cmp.b, model_b, phase, steps_b, places, every)
    pa = {p.place: i for i, p in enumerate(a.passes)}
    pb = {p.place: i for i, p in enumerate(b.passes)}
    oa = _owner(a) if a.passes else a.pass_of
    ob = _owner(b) if b.passes else b.pass_of
    at = _slots(a, b, oa, ob)
    _place(a, oa, at)
    _place(b, ob, at)
    pairs = PassPairs(phase=phase, numbers=[every[i] for i in places] if places is not None else [], a=a, b=b)
    _match(cmp, pairs, pa, pb)
    return pairs


def _groups(side: SideKernels) -> dict[tuple[int, int], np.ndarray]:
    """(pass index, layer) -> the side's kernel indices in it, in time order."""
    sel = np.flatnonzero((side.pass_of >= 0) & (side.layer >= 0))
    if len(sel) == 0:
        return {}
    width = int(side.layer[sel].max()) + 1
    key = side.pass_of[sel] * width + side.layer[sel]
    order = np.argsort(key, kind="stable")          # stable: time order inside each group
    key, sel = key[order], sel[order]
    cuts = np.flatnonzero(np.diff(key)) + 1
    return {(int(g[0]) // width, int(g[0]) % width): s for g, s in zip(np.split(key, cuts), np.split(sel, cuts))}


def _match(cmp, pairs: PassPairs, pa: dict[int, int], pb: dict[int, int]) -> None:
    ga, gb = _groups(pairs.a), _groups(pairs.b)
    both = sorted(set(pa) & set(pb))
    for al in cmp.alignments:
        seq_a = [p.a_name for p in al.pairs if p.a_name is not None]
        seq_b = [p.b_name for p in al.pairs if p.b_name is not None]
        index, i, j = [], 0, 0
        for p in al.pairs:      # positions -> (i into A's sequence, j into B's), pairs only
            if p.a_name is not None and p.b_name is not None:
                index.append((i, j, p))
            i += p.a_name is not None
            j += p.b_name is not None
        for n in both:
            ka, kb = ga.get((pa[n], al.layer)), gb.get((pb[n], al.layer))
            if ka is None or kb is None:
                continue
            if [pairs.a.names[x] for x in ka] != seq_a or [pairs.b.names[x] for x in kb] != seq_b:
                pairs.unpaired_groups += 1
                continue
            pairs.matches += [KernelMatch(a=int(ka[i]), b=int(kb[j]), layer=al.layer, position=p.position,
                                          ratio=p.ratio, gap_us=p.gap_us) for i, j, p in index]


def busy_spans(side: SideKernels) -> tuple[np.ndarray, np.ndarray]:
    """The union of the side's kernel intervals on the common axis (starts, ends; sorted, disjoint):
    where any stream ran something. What lies between is the side's idle time."""
    if len(side) == 0:
        return np.zeros(0), np.zeros(0)
    o = np.argsort(side.ts, kind="stable")   # shifting passes by different amounts may reorder them
    s, e = side.ts[o], (side.ts + side.dur)[o]
    reach = np.maximum.accumulate(e)
    new = np.ones(len(s), dtype=bool)
    new[1:] = s[1:] > reach[:-1]
    first = np.flatnonzero(new)
    last = np.append(first[1:], len(s)) - 1
    return s[first], reach[last]
