"""GPU work the profiler's window cut: kernels whose launch happened before the trace began.

A profiler started in the middle of a forward pass records the tail of that pass on the GPU (the
GPU runs behind the CPU), but not the CPU calls that launched it: those kernels carry a correlation
id whose runtime call is not in the trace. Such work is told apart per stream, by correlation
order and timing: its correlation id is below every launch the trace recorded (correlation ids
count up), and it ends before the first kernel launched in the trace starts on its own stream
(a stream runs its work in turn). A stream that kept working on old launches while another stream
ran new ones (`v100_test`: 614 activities, 56.5 ms, on the compute stream while the first in-trace
launches ran elsewhere) is read by its own first launched kernel, not by the trace's. Compared with a complete pass on the other side they are unequal work (on the
MI300X/H100 Qwen pair, 31% of each side's kernel time), so comparisons leave them out and say so.

A pass that holds such a kernel is itself cut (its beginning is missing): all of its kernels are
left out with it. Kernels without any correlation id are not called cut: the trace cannot say
where they were launched (a trace stripped of ids keeps every kernel).

Passes that are not steady (kerneldiff.core.analysis.pass_kinds: warm-up, graph capture, compile)
are left out of comparisons too, unless the model's `all_passes` is set (`--all-passes`), or no
pass is steady.
"""

from __future__ import annotations

import numpy as np

from kerneldiff.core.lazy_dataclass import dataclass   # methods made on first use: a bare `info` uses few
from kerneldiff.core.numbers import distinct

WHY = ("launched before the profiler's window: no CPU launch in the trace, a correlation id below "
       "every recorded launch, run before its stream's first kernel launched in the trace")


@dataclass
class CutWork:
    """What `cut_mask` leaves out of a trace, for reports."""

    kernels: int
    time_us: float
    passes: int          # forward passes left out whole because their start was cut
    why: str


@dataclass
class PassesLeftOut:
    """The passes `cut_mask` leaves out for their kind, for reports."""

    passes: int
    kinds: dict[str, int]
    kernels: int
    time_us: float

    @property
    def line(self) -> str:
        """"2 passes left out: capture, compile"."""
        kinds = ", ".join(f"{k}" if n == 1 else f"{k} ×{n}" for k, n in self.kinds.items())
        return (f"{self.passes} pass{'es' if self.passes != 1 else ''} left out: {kinds} "
                f"({self.kernels:,} kernels, {self.time_us / 1000:.2f} ms; --all-passes keeps them)")


def cut_mask(model) -> np.ndarray:
    """Boolean mask over the model's kernel rows: True where the work was launched before the
    trace's window, or belongs to a pass that is not steady (see the module docstring). Memoised
    on the model."""
    return model.memo(("cut_work",), lambda: prewindow_mask(model) | unsteady_mask(model))


def prewindow_mask(model) -> np.ndarray:
    """True where the work was launched before the trace's window. Memoised on the model."""
    return model.memo(("prewindow",), lambda: _cut(model))


def unsteady_mask(model) -> np.ndarray:
    """True on the kernels of passes that are not steady, unless every pass is kept."""
    k = model.kernels
    kinds = [getattr(s, "kind", "steady") for s in model.steps]
    if model.__dict__.get("all_passes") or "steady" not in kinds or all(x == "steady" for x in kinds):
        return np.zeros(len(k), dtype=bool)
    odd = np.flatnonzero(np.array([x != "steady" for x in kinds]))
    return np.isin(k.step, odd)


def passes_left_out(model) -> PassesLeftOut | None:
    m = unsteady_mask(model) & ~prewindow_mask(model)
    if not m.any():
        return None
    k = model.kernels
    kinds: dict[str, int] = {}
    for i in np.unique(k.step[m]).tolist():
        kind = getattr(model.steps[i], "kind", "steady")
        kinds[kind] = kinds.get(kind, 0) + 1
    return PassesLeftOut(sum(kinds.values()), kinds, int(m.sum()), float(k.dur[m].sum()))


def _cut(model) -> np.ndarray:
    cut = before_window(model)
    k = model.kernels
    steps = distinct(k.step[cut & (k.step >= 0)])
    if len(steps):
        cut |= np.isin(k.step, steps)
    return cut


def before_window(model) -> np.ndarray:
    """The activities launched before the window themselves (not the passes they begin)."""
    k = model.kernels
    linked = k.launch >= 0
    if linked.any():
        L = model.launches
        lowest = int(L.corr[L.corr >= 0].min())
    else:
        # no runtime events: kernels that name an operator of the trace (External id) were launched
        # in it, and correlation ids still count up in launch order
        linked = (k.cpu_op >= 0) & (k.corr >= 0)
        if not linked.any():
            return np.zeros(len(k), dtype=bool)
        lowest = int(k.corr[linked].min())
    cut = ~linked & (k.corr >= 0) & (k.corr < lowest)
    if cut.any():
        # per stream (device, stream): its first kernel launched in the trace; none: +inf
        key = k.device.astype(np.int64) * (1 << 32) + (k.stream.astype(np.int64) & 0xFFFFFFFF)
        streams, inv = np.unique(key, return_inverse=True)
        first = np.full(len(streams), np.inf)
        np.minimum.at(first, inv[linked], k.ts[linked])
        cut &= k.ts + np.maximum(k.dur, 0.0) <= first[inv]
    return cut


def cut_work(model) -> CutWork | None:
    """The work of a trace launched before its window, None when there is none."""
    m = prewindow_mask(model)
    if not m.any():
        return None
    k = model.kernels
    steps = np.unique(k.step[m & (k.step >= 0)])
    return CutWork(kernels=int(m.sum()), time_us=float(k.dur[m].sum()), passes=int(len(steps)), why=WHY)


def compared_mask(model, phase: str | None) -> np.ndarray:
    """The kernels a comparison counts in a phase: the phase's, less the cut work."""
    return model.phase_mask(phase) & ~cut_mask(model)


def compared_phases(model) -> list[str]:
    """The phases that hold compared (not cut) work."""
    from kerneldiff.core.model import PHASES

    return [PHASES[i] for i in np.unique(model.kernels.phase[~cut_mask(model)]).tolist()]


def unknown_reason(model) -> str | None:
    """Why work launched before the profiler's window cannot be told apart on this trace (None when
    it can): no kernel links to a runtime launch or to an operator, yet kernels carry correlation
    ids (a recording without runtime events, from a Kineto whose kernels name no operator)."""
    k = model.kernels
    if len(k) == 0 or (k.launch >= 0).any() or (k.cpu_op >= 0).any() or not (k.corr >= 0).any():
        return None
    return ("no kernel links to a CPU launch or operator (runtime events not recorded): work launched before "
            "the profiler's window cannot be told apart")
