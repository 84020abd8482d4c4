"""The lines at the top of every screen: where you are, and what is being compared."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text
from textual.widgets import Static

if TYPE_CHECKING:  # the start screen uses the breadcrumb before any comparison exists
    from kerneldiff.core.session import TraceOverview
    from kerneldiff.core.session import Comparison

from ..text import DIM, SIDE_STYLE, fmt_gap, fmt_ratio, fmt_us, literal, span


class Breadcrumb(Static):
    """kerneldiff › Layers › Layer 5 › #12"""

    DEFAULT_CSS = """
    Breadcrumb { height: 1; background: $panel; color: $text; padding: 0 1; text-wrap: nowrap; text-overflow: ellipsis; }
    """

    def __init__(self, *parts: str, id: str | None = None) -> None:
        super().__init__(id=id)
        self.parts = list(parts)

    def on_mount(self) -> None:
        self.set_parts(*self.parts)

    def set_parts(self, *parts: str) -> None:
        self.parts = list(parts)
        t = span("kerneldiff", "bold")
        for p in parts:
            t.append(" › ", style=DIM)
            t.append(literal(p))
        self.update(t)


def _side_line(comp: Comparison, key: str) -> Text:
    side = getattr(comp, key)
    t = span(f"{key.upper()} ", f"bold {SIDE_STYLE[key]}")
    t.append(literal(side.label, f"bold {SIDE_STYLE[key]}"))
    w = comp.wall
    if w is not None:   # what the user waits for first, the kernels' sum beside it
        t.append(f"  wall {fmt_us(getattr(w, f'{key}_wall_us'))}")
        t.append(f"  kernels {fmt_us(side.gpu_time_us / max(side.passes, 1) if comp.basis == 'per_pass' else side.gpu_time_us)}")
    else:
        t.append(f"  {fmt_us(side.gpu_time_us)}")
        t.append(f"  {side.kernels:,} kernels", style=DIM)
    if side.passes:
        t.append(f"  {side.passes} pass{'es' if side.passes != 1 else ''}", style=DIM)
    return t


def _phase_and_warnings(t: Text, phase: str, warnings: list[str], phases: list[str] | None) -> None:
    """The phase (with the `p` cycle when there is a choice) and the warning count."""
    t.append(phase)
    if phases and len(phases) > 1:
        t.append(" (p: " + "/".join(phases) + ")", style=DIM)
    n = len(warnings)
    t.append("  ")
    # the ⚠ sign only when there is something to heed
    t.append(f"⚠ {n} warning{'s' if n != 1 else ''}" if n else "no warnings", style="bold yellow" if n else DIM)


class ComparisonHeader(Static):
    """Both GPUs with their wall clock and kernel time, the wall and kernel ratios (and whether they
    disagree), the comparability verdict when it is not plain, the phase filter and the warning count."""

    DEFAULT_CSS = """
    ComparisonHeader { height: auto; max-height: 3; padding: 0 1; background: $boost; }
    """

    def show(self, comp: Comparison, phases: list[str] | None = None) -> None:
        t = _side_line(comp, "a")
        t.append("\n")
        t.append_text(_side_line(comp, "b"))
        t.append("\n")
        per = "/pass" if getattr(comp, "basis", "total") == "per_pass" else ""
        w = comp.wall
        if w is not None:
            t.append(f"wall{per} A/B ", style="bold")
            t.append(f"{fmt_ratio(w.wall_ratio)} {fmt_gap(w.wall_gap_us)}")
            t.append("  kernels ", style="bold")
            t.append(fmt_ratio(comp.ratio))
            if (w.wall_gap_us > 0) != (comp.gap_us > 0) and w.wall_gap_us and comp.gap_us:
                t.append(" (disagree)", style="bold yellow")
        else:
            t.append(f"A/B{per} ", style="bold")
            t.append(fmt_ratio(comp.ratio))
            t.append(f"  gap{per} ", style="bold")
            t.append(fmt_gap(comp.gap_us))
        c = getattr(comp, "comparability", None)
        if c is not None and c.verdict != "comparable":
            t.append(f"  {c.verdict}", style="bold red" if c.verdict == "not comparable" else "bold yellow")
        t.append("  phase ", style="bold")
        # the phases `p` cycles through only where the line has room for them (the footer names `p`)
        room = self.app.size.width >= len(t.plain.split("\n")[-1]) + 44
        _phase_and_warnings(t, comp.phase, comp.warnings, phases if room else None)
        self.update(t)


class TraceHeader(Static):
    """Browse mode: one trace's GPU, GPU time, size of the run, phase and warnings."""

    DEFAULT_CSS = """
    TraceHeader { height: auto; max-height: 3; padding: 0 1; background: $boost; }
    """

    def show(self, ov: TraceOverview, side: str = "a") -> None:
        t = literal(ov.label, f"bold {SIDE_STYLE[side]}")
        w = ov.wall
        if w is not None and w.span_us > 0:   # what compare leads with: the wall clock, then its idle
            t.append(f"  wall {fmt_us(w.span_us)}", style="bold")
            t.append(f"  idle {fmt_us(w.idle_us)} ({100 * w.idle_us / w.span_us:.0f}%)")
            t.append(f"  {fmt_us(ov.gpu_time_us)} in {ov.kernels:,} kernels")
        else:
            t.append(f"  {fmt_us(ov.gpu_time_us)}  {ov.kernels:,} kernels")
        t.append("\n")
        steps = f"{ov.steps_total:,} step{'' if ov.steps_total == 1 else 's'}"
        t.append(f"{steps} · {ov.layers_per_step} layers/step · {ov.architecture}", style=DIM)
        t.append("\nphase ", style="bold")
        _phase_and_warnings(t, ov.phase, ov.warnings, ov.phases)
        self.update(t)
