"""The window a comparison's headline and ledger measure: the passes themselves.

A pass is the model forward call's span. Between them `generate()` samples, copies the next input
and (torch.compile) looks up guards; before the first and after the last the run sets up and winds
down. On eager against compiled Llama the 48 passes span 1,309 ms against 1,643 ms (−335 ms) while
the whole traces differ by −527 ms: the rest is the loop around the model, not the model. So the
headline wall clock is the sum of the compared passes' spans (their idle, launch-bound and sync
time likewise), and the ledger accounts for that; `--all-passes` measures the whole window again
(every µs of the trace, the loop included). A trace whose passes hold none of its kernels (a whole
trace read as one step) is measured whole.
"""

from __future__ import annotations

import numpy as np

from kerneldiff.core.analysis.timeline import Timeline, Window
from kerneldiff.core.numbers import median

FIELDS = ("span_us", "busy_us", "idle_us", "launch_bound_us", "sync_us", "other_us", "overlap_us", "kernel_us")


def overlapping(t: Timeline) -> bool:
    """Whether a side's passes run at once on the GPU by more than rounding (over 1 µs and 0.1 % of
    their spans): their spans summed would count that time, idle included, twice."""
    spans = sum(p.span_us for p in t.passes)
    return t.passes_overlap_us > max(1.0, 1e-3 * spans)


def all_passes(ma, mb) -> bool:
    """Whether the comparison was asked to measure every pass and the whole window (--all-passes)."""
    return bool(ma.__dict__.get("all_passes") or mb.__dict__.get("all_passes"))


def separable(ta: Timeline, tb: Timeline) -> bool:
    """Whether both sides' passes can be measured apart from the time around them: both have passes
    and neither side's passes overlap on the GPU."""
    return bool(ta.passes) and bool(tb.passes) and not overlapping(ta) and not overlapping(tb)


def on_passes(ta: Timeline, tb: Timeline, ma, mb) -> bool:
    """Whether a comparison measures the passes: not with --all-passes, only when both sides have
    passes (like with like), and not where a side's passes overlap (the whole window then)."""
    return not all_passes(ma, mb) and separable(ta, tb)


def around_passes(ta: Timeline, tb: Timeline, ma, mb) -> bool:
    """Whether the ledger measures the whole window as the passes plus the time around them (its
    own rows, `outside_parts`): with --all-passes, where the passes are separable."""
    return all_passes(ma, mb) and separable(ta, tb)


OUTSIDE_ROWS = ("before first pass", "between passes", "after last pass")


def outside_parts(t: Timeline) -> dict[str, float]:
    """The whole window's time outside its passes (`OUTSIDE_ROWS`, µs): from the window's first
    activity to the first pass's, the gaps from one pass's last activity to the next one's first,
    and from the last pass's last activity to the window's end. Integer ns underneath: the three sum
    to the whole span less the passes' spans exactly (the gaps take what the other two leave, so a
    sliver of overlap under `overlapping`'s threshold stays counted once)."""
    if not t.passes:
        return {}
    ns = lambda x: round(x * 1000)   # noqa: E731
    w0, w1 = ns(t.whole.start_us), ns(t.whole.start_us) + ns(t.whole.span_us)
    ps = sorted(t.passes, key=lambda p: p.start_us)
    first = ns(ps[0].start_us)
    last = max(ns(p.start_us) + ns(p.span_us) for p in ps)
    total = (w1 - w0) - sum(ns(p.span_us) for p in ps)
    before, after = max(first - w0, 0), max(w1 - last, 0)
    return {"before first pass": before / 1000, "between passes": (total - before - after) / 1000,
            "after last pass": after / 1000}


def window_note(ta: Timeline, tb: Timeline) -> str:
    """Why the whole window is measured although both sides have passes ("" when it is not so)."""
    if not (ta.passes and tb.passes):
        return ""
    sides = [f"{k} {t.passes_overlap_us / 1e3:,.2f} ms" for k, t in (("A", ta), ("B", tb)) if overlapping(t)]
    if not sides:
        return ""
    return (f"the passes overlap on the GPU ({', '.join(sides)} in two passes at once): their spans summed "
            f"would count that time twice, so the wall clock is the whole window")


def headline_window(t: Timeline, passes: bool) -> Window:
    """The passes' windows summed (integer ns underneath: the sums are exact to the ns), or the
    whole window."""
    if not passes:
        return t.whole
    w = Window(kernels=sum(p.kernels for p in t.passes), gaps=sum(p.gaps for p in t.passes))
    for f in FIELDS:
        setattr(w, f, round(sum(round(getattr(p, f) * 1000) for p in t.passes)) / 1000)
    return w


def pass_spread(t: Timeline) -> tuple[float | None, float | None]:
    """(median pass span, robust σ of the spans: 1.4826 × the median absolute deviation), None
    without passes (σ: fewer than 3)."""
    spans = np.array([p.span_us for p in t.passes])
    if not len(spans):
        return None, None
    med = median(spans)
    return med, (float(1.4826 * median(np.abs(spans - med))) if len(spans) >= 3 else None)


def outside_us(t: Timeline, passes: bool) -> float:
    """Wall time of the whole window outside the measured passes (before, between and after them;
    less where pass spans overlap): 0 when the whole window is measured."""
    return t.whole.span_us - headline_window(t, True).span_us if passes else 0.0
