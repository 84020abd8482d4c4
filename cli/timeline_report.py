"""The text report's timeline section: kernel time against wall time, GPU idle and launch overhead."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.table import Table
from rich.text import Text

from kerneldiff.core.report import format as fmt
from kerneldiff.core.report.labels import share as _share

from .render import us

if TYPE_CHECKING:
    from kerneldiff.core.compare.side_timeline import SideTimeline

TOP = 5




def headline(cmp) -> Text | None:
    """One line: kernel-time ratio and wall-time ratio side by side, and what the idle gap explains."""
    w = getattr(cmp, "wall", None)
    if w is None:
        return None
    per = " per pass" if w.basis == "per_pass" else ""
    t = Text()
    t.append(f"kernel time A/B{per} {fmt.ratio(w.kernel_ratio)}   ", style="bold")
    t.append(f"wall time A/B{per} {fmt.ratio(w.wall_ratio)}", style="bold")
    t.append(f" ({us(w.a_wall_us)} vs {us(w.b_wall_us)}, gap {fmt.gap(w.wall_gap_us)})")
    if w.idle_share is not None and 0 <= w.idle_share <= 1:
        t.append(f"   idle is {_share(w.idle_share)} of the wall gap")
        if w.launch_bound_share is not None and 0 <= w.launch_bound_share <= 1:
            t.append(f" (launch-bound: {_share(w.launch_bound_share)} of that)")
    elif w.wall_gap_us != 0:   # idle and wall gaps of opposite signs (or idle beyond the wall gap): the values
        t.append(f"   idle gap {fmt.gap(w.idle_gap_us)} (launch-bound {fmt.gap(w.launch_bound_gap_us)})")
    return t


def render_timeline(cmp, out) -> None:
    ta, tb = getattr(cmp.a, "timeline", None), getattr(cmp.b, "timeline", None)
    if not ta or not tb:
        return
    line = headline(cmp)
    if line is not None and not cmp.ledger:   # the ledger's headline says it otherwise
        out.print(line)
    per_pass = cmp.basis == "per_pass"
    na, nb = (max(cmp.a.passes, 1), max(cmp.b.passes, 1)) if per_pass else (1, 1)
    t = Table(title="Timeline: wall clock, GPU idle, launches" + (" (per pass)" if per_pass else ""),
              title_justify="left")
    for col, just in (("", "left"), ("A", "right"), ("B", "right"), ("A/B", "right"), ("gap", "right")):
        t.add_column(col, justify=just, no_wrap=True)

    def time_row(label: str, key: str) -> None:
        a, b = getattr(ta, key) / na, getattr(tb, key) / nb
        t.add_row(label, us(a), us(b), fmt.ratio(a / b if a > 0 and b > 0 else None), fmt.gap(a - b))

    time_row("wall (first to last GPU activity)", "span_us")
    time_row("GPU busy (any stream)", "busy_us")
    time_row("kernel time (summed)", "kernel_us")
    time_row("idle", "idle_us")
    time_row("  launch-bound", "launch_bound_us")
    time_row("  sync / host waits", "sync_us")
    time_row("  other", "other_us")
    time_row("stream overlap", "overlap_us")
    la, lb = ta.launch, tb.launch
    for label, key in (("launch call p50", "api_p50_us"), ("launch → start p50", "delay_p50_us"),
                       ("launch → start p95", "delay_p95_us")):
        a, b = getattr(la, key), getattr(lb, key)
        t.add_row(label, us(a), us(b), fmt.ratio(a / b if a and b else None),
                  fmt.gap(a - b) if a is not None and b is not None else fmt.ABSENT)

    def shorter(l) -> str:
        n, of = l.kernels_shorter_than_launch, l.kernels_launched
        return f"{n:,} ({fmt.pct(n / of, 0)})" if of else fmt.ABSENT

    t.add_row("kernels shorter than their launch", shorter(la), shorter(lb), "", "")
    out.print(t)

    _layers(ta, tb, out)
    _passes(ta, tb, out)


def _layers(ta: SideTimeline, tb: SideTimeline, out) -> None:
    """The layers with the most idle inside them (either side), when there are layers."""
    la, lb = {l.layer: l for l in ta.layers}, {l.layer: l for l in tb.layers}
    if not la and not lb:
        return
    rows = sorted(set(la) | set(lb), key=lambda i: -max(la[i].idle_us if i in la else 0.0,
                                                          lb[i].idle_us if i in lb else 0.0))[:TOP]
    t = Table(title="Idle inside layers (most first; all passes)", title_justify="left")
    for col in ("layer", "A busy", "B busy", "A idle", "B idle", "idle gap"):
        t.add_column(col, justify="right", no_wrap=True)

    def get(d: dict, i: int, key: str):
        return getattr(d[i], key) if i in d else None

    for i in rows:
        ia, ib = get(la, i, "idle_us"), get(lb, i, "idle_us")
        t.add_row(str(i), us(get(la, i, "busy_us")), us(get(lb, i, "busy_us")), us(ia), us(ib),
                  fmt.gap(ia - ib) if ia is not None and ib is not None else fmt.ABSENT)
    out.print(t)


def _passes(ta: SideTimeline, tb: SideTimeline, out) -> None:
    """Pass against pass (when both sides hold as many): the largest wall-clock gaps."""
    pa, pb = ta.passes, tb.passes
    if len(pa) < 2 or len(pa) != len(pb):
        return
    order = sorted(range(len(pa)), key=lambda i: -abs(pa[i].span_us - pb[i].span_us))[:TOP]
    t = Table(title="Passes (largest wall gap first)", title_justify="left")
    for col in ("pass", "phase", "A wall", "B wall", "A idle", "B idle", "wall gap"):
        t.add_column(col, justify="right", no_wrap=True)
    for i in order:
        a, b = pa[i], pb[i]
        t.add_row(str(a.pass_), a.phase, us(a.span_us), us(b.span_us), us(a.idle_us), us(b.idle_us),
                  fmt.gap(a.span_us - b.span_us))
    out.print(t)
