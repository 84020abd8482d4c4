"""Whether two traces ran the same work, before any of their gaps is read as a platform's loss.

Checked on every comparison, from what the traces record: the model's signature (decoder layers per
pass, architecture, the GEMMs' weight shapes n×k where shapes are recorded), the work per pass (phases
present, query tokens per pass in each phase), pass counts, work left out (cut by the profiler's
window) and operations that only one side runs with no fusion finding to explain them.

Verdicts: `not comparable` (another model or no common work: layer ranks and gaps mean nothing),
`partly` (the same model, but the work differs in a way the figures only partly correct for: the
reasons say how), `comparable`. Each reason has a code (`codes`, in the same order): layers,
architecture, gemm_shapes, no_common_work, empty (not comparable; gemm_shapes may also be partly),
phases, tokens, one_sided, recording (partly: wall clock and idle time inconclusive,
kerneldiff.core.compare.recording). `notes` say what was done to keep it like with like (work left out,
per-pass basis) without lowering the verdict.
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from kerneldiff.core.analysis.passes import pass_tokens
from kerneldiff.core.compare.result import Comparability, Comparison

# GEMM weight shapes: at least this share of each side's GEMM time must run shapes the other side
# runs too (the same model's GEMMs share every n×k; two different models share almost none)
SHARED_GEMM_TIME = 0.5
# ... unless one side spends this much of its GEMM time on the other's shapes (its GEMMs are a subset)
SUBSET_GEMM_TIME = 0.9
# a one-sided operation no fusion explains lowers the verdict when it holds this share of a side's time
ONE_SIDED_SHARE = 0.05


def _fmt_tokens(values: list[int]) -> str:
    vals = sorted(set(values))
    return ", ".join(f"{v:,}" for v in vals[:4]) + (" …" if len(vals) > 4 else "")


def _tokens_by_phase(view) -> dict[str, list[int]]:
    """Known query-token counts of the passes the view compares, by phase."""
    m = view.m
    tokens = pass_tokens(m)
    steps = np.unique(view._take(m.kernels.step))
    out: dict[str, list[int]] = {}
    for s in steps[steps >= 0].tolist():
        t = tokens[s] if s < len(tokens) else None
        if t is not None:
            out.setdefault(m.steps[s].phase, []).append(t)
    return out


def gemm_coverage(cmp: Comparison) -> dict[str, tuple[float, float]]:
    """Per side, (GEMM time whose work the recorded shapes give, all GEMM time): the Dense GEMM
    operation's throughput coverage (kernels whose operator recorded no input shapes are in the
    second only); (0, 0) without GEMM time."""
    for r in cmp.throughput:
        if r.category == "Dense GEMM":
            return {s: (getattr(r, s).covered_us, getattr(r, s).time_us) for s in ("a", "b")}
    return {"a": (0.0, 0.0), "b": (0.0, 0.0)}


def _gemm_shared(cmp: Comparison) -> tuple[tuple[float, float], tuple[float, float]] | None:
    """Share of each side's GEMM time spent on weight shapes (n×k) the other side also runs: of the
    time with recorded shapes (what the verdict reads), and of all its GEMM time (what it says)."""
    time = {"a": Counter(), "b": Counter()}
    for g in cmp.gemm_shapes:
        if g.op.endswith("bmm") or g.batch > 1:
            continue   # batched products are attention's, not weights
        for side in ("a", "b"):
            st = getattr(g, side)
            if st.calls:
                time[side][(g.n, g.k)] += st.total_us
    ta, tb = sum(time["a"].values()), sum(time["b"].values())
    if ta <= 0 or tb <= 0:
        return None
    both = time["a"].keys() & time["b"].keys()
    sa, sb = sum(time["a"][s] for s in both), sum(time["b"][s] for s in both)
    cov = gemm_coverage(cmp)
    # of all GEMM time: at most the share of the time with shapes (a side without a GEMM row: that)
    return (sa / ta, sb / tb), tuple(x / max(t, cov[s][1]) for x, t, s in ((sa, ta, "a"), (sb, tb, "b")))


def check(cmp: Comparison, va, vb) -> Comparability:
    la, lb = cmp.a.label, cmp.b.label
    fatal: list[tuple[str, str]] = []     # (code, reason): codes let readers (the gate) tell reasons apart
    partial: list[tuple[str, str]] = []
    notes: list[str] = []
    a, b = va.m, vb.m
    if len(va.rows) == 0 or len(vb.rows) == 0:
        empty = [lab for lab, v in ((la, va), (lb, vb)) if len(v.rows) == 0]
        fatal.append(("empty", f"no GPU work to compare on {' and '.join(empty)} in phase '{cmp.phase}'"))
        return _verdict(fatal, partial, notes)
    if not any(r.only_in is None for r in cmp.operations):
        fatal.append(("no_common_work", "the traces have no operation in common"))
    if a.num_layers and b.num_layers and a.num_layers != b.num_layers:
        fatal.append(("layers", f"different models: {a.num_layers} decoder layers per pass on {la}, "
                                f"{b.num_layers} on {lb}"))
    elif [(s["name"], s["layers"]) for s in a.stacks] != [(s["name"], s["layers"]) for s in b.stacks] and \
            len(a.stacks) + len(b.stacks) > 2 and a.stacks and b.stacks:
        def said(m):
            return ", ".join(f"{s['name']} {s['layers']}" for s in m.stacks)
        fatal.append(("layers", f"different models: layer stacks {said(a)} on {la}, {said(b)} on {lb}"))
    if a.architecture != b.architecture and "unknown" not in (a.architecture, b.architecture):
        fatal.append(("architecture", f"different architectures: {a.architecture} on {la}, {b.architecture} on {lb}"))
    found = _gemm_shared(cmp)
    shared, of_all = found if found is not None else (None, None)
    if shared is not None and min(shared) < SHARED_GEMM_TIME:
        cov = gemm_coverage(cmp)
        unknown = [f"{lab} {cov[s][0] / 1000:,.1f} of {cov[s][1] / 1000:,.1f} ms" for s, lab in (("a", la), ("b", lb))
                   if cov[s][0] < 0.995 * cov[s][1]]
        text = (f"different GEMM weight shapes (n×k): only {of_all[0]:.0%} of {la}'s GEMM time and "
                f"{of_all[1]:.0%} of {lb}'s run shapes both sides run"
                + (f" (shapes recorded for {', '.join(unknown)} of GEMM time; the rest is unknown)" if unknown else ""))
        # one side's GEMMs all among the other's: the same model doing more (or less) work
        (partial if max(shared) >= SUBSET_GEMM_TIME else fatal).append(("gemm_shapes", text))
    pa, pb = set(cmp.a.phases) - {"unknown"}, set(cmp.b.phases) - {"unknown"}
    if cmp.phase == "all" and pa != pb:
        partial.append(("phases", f"different phases: {la} has {', '.join(sorted(pa)) or 'none known'}, "
                       f"{lb} has {', '.join(sorted(pb)) or 'none known'}"))
    ta, tb = _tokens_by_phase(va), _tokens_by_phase(vb)
    for phase in sorted(ta.keys() & tb.keys()):
        if sorted(set(ta[phase])) != sorted(set(tb[phase])):
            partial.append(("tokens", f"different tokens per {phase} pass: {_fmt_tokens(ta[phase])} on {la}, "
                                      f"{_fmt_tokens(tb[phase])} on {lb}"))
    from kerneldiff.core.compare import recording

    diffs = recording.differences(a, b, (la, lb))
    if diffs:
        partial.append(("recording", recording.reason(diffs)))
    if va.passes != vb.passes:
        notes.append(f"different pass counts ({va.passes} on {la}, {vb.passes} on {lb}): compared per pass")
    explained = set()
    for f in cmp.fusions:
        explained.add(f.fused_category)
        explained.update(f.component_categories)
    for r in cmp.operations:
        if r.only_in is None or r.category in explained:
            continue
        side, lab = (r.a, la) if r.only_in == "a" else (r.b, lb)
        if side.share >= ONE_SIDED_SHARE:
            partial.append(("one_sided", f"{r.category} runs only on {lab} ({side.share:.0%} of its kernel time) "
                                         "and no fusion finding explains it"))
    for lab, s in ((la, cmp.a), (lb, cmp.b)):
        if s.excluded is not None:
            notes.append(f"{s.excluded.kernels:,} kernels ({s.excluded.time_us / 1000:.2f} ms) of {lab} left out: "
                         f"{s.excluded.why}")
        if getattr(s, "passes_left_out", None):
            notes.append(f"{lab}: {s.passes_left_out.line}")
    return _verdict(fatal, partial, notes)


def _verdict(fatal: list[tuple[str, str]], partial: list[tuple[str, str]], notes: list[str]) -> Comparability:
    verdict = "not comparable" if fatal else "partly" if partial else "comparable"
    return Comparability(verdict, [r for _, r in fatal + partial], notes, [c for c, _ in fatal + partial])
