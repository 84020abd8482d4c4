"""One side's timeline as a comparison carries it (`Side.timeline`): wall clock, GPU idle and launch
overhead of the compared phase, its phases, passes and layers (`kerneldiff.core.analysis.timeline`
computes them). Frozen: a result, read by the reports and the explorer by attribute.

The JSON is the one `Timeline` always wrote: the phase's window figures at the top level, each pass
under `"pass"` (its index among all the trace's passes). `pass` is a Python keyword, so a pass is a
msgspec Struct that renames `pass_` (a dataclass would be written by orjson with its field names):
`to_json()` is what `kerneldiff.core.numbers.strict_json` and `json_ready` write for it.
"""

from __future__ import annotations

from dataclasses import field
from kerneldiff.core.lazy_dataclass import dataclass   # methods made on first use (lazy_dataclass.py)
from typing import TYPE_CHECKING, Any

from kerneldiff.core.msgspec_import import msgspec

if TYPE_CHECKING:   # the analysis (numpy) stays out of a reader's imports
    from kerneldiff.core.analysis.timeline import Timeline, Window


@dataclass(frozen=True)
class _Phase:
    phase: str = ""


@dataclass(frozen=True)
class WindowFigures:
    """GPU time in one window (the fields of `timeline.Window`, in its order)."""

    span_us: float = 0.0
    busy_us: float = 0.0
    idle_us: float = 0.0
    launch_bound_us: float = 0.0
    sync_us: float = 0.0
    other_us: float = 0.0
    overlap_us: float = 0.0
    kernel_us: float = 0.0
    same_stream_overlap_us: float = 0.0
    kernels: int = 0
    gaps: int = 0
    start_us: float = 0.0


@dataclass(frozen=True)
class PhaseTimeline(WindowFigures, _Phase):
    """One phase's window (the field order: `phase` first, then the figures)."""


class PassTimeline(msgspec.Struct, frozen=True, rename={"pass_": "pass"}):
    """One forward pass on its own: its index among all the trace's passes, then its figures."""

    pass_: int = 0
    name: str = ""
    phase: str = "unknown"
    kind: str = "steady"         # steady | warmup | capture | compile (kerneldiff.core.analysis.pass_kinds)
    span_us: float = 0.0
    busy_us: float = 0.0
    idle_us: float = 0.0
    launch_bound_us: float = 0.0
    sync_us: float = 0.0
    other_us: float = 0.0
    overlap_us: float = 0.0
    kernel_us: float = 0.0
    same_stream_overlap_us: float = 0.0
    kernels: int = 0
    gaps: int = 0
    start_us: float = 0.0

    def to_json(self) -> dict[str, Any]:
        from kerneldiff.core.numbers import _scalar

        return msgspec.to_builtins(self, enc_hook=_scalar)


@dataclass(frozen=True)
class LayerTimeline:
    """One layer over the passes of the window (the fields of `timeline.LayerIdle`)."""

    layer: int
    passes: int = 0
    span_us: float = 0.0         # summed over the passes: first to last kernel of the layer
    busy_us: float = 0.0
    idle_us: float = 0.0         # the gaps inside the layer
    launch_bound_us: float = 0.0
    sync_us: float = 0.0
    idle_median_us: float = 0.0  # per pass
    idle_max_us: float = 0.0     # the worst pass


@dataclass(frozen=True)
class LaunchTimeline:
    """The window's launch calls (the fields of `timeline.LaunchStats`)."""

    launches: int = 0
    api_p50_us: float | None = None
    api_p95_us: float | None = None
    delay_p50_us: float | None = None
    delay_p95_us: float | None = None
    kernels_launched: int = 0
    kernels_shorter_than_launch: int = 0


@dataclass(frozen=True)
class SideTimeline(WindowFigures, _Phase):
    """The compared phase's window ("all": the whole trace) with its phases, passes and layers.
    Lists, not tuples: the comparison cache gives JSON arrays back as lists."""

    passes: list[PassTimeline] = field(default_factory=list)     # the passes in `phase`, in trace order
    phases: list[PhaseTimeline] = field(default_factory=list)    # "all" and every phase present
    layers: list[LayerTimeline] = field(default_factory=list)    # over the passes in `phase`
    launch: LaunchTimeline = field(default_factory=LaunchTimeline)
    kernels_shorter_than_launch: int = 0
    devices: int = 0
    streams: int = 0
    tolerance_us: float = 0.0

    @classmethod
    def of(cls, t: Timeline) -> SideTimeline:
        return cls(phase=t.phase, **_window(t.whole),
                   passes=[PassTimeline(pass_=p.index, name=p.name, phase=p.phase, kind=p.kind, **_window(p))
                           for p in t.passes],
                   phases=[PhaseTimeline(phase=name, **_window(w)) for name, w in t.phases.items()],
                   layers=[_take(LayerTimeline, l) for l in t.layers], launch=_take(LaunchTimeline, t.launch),
                   kernels_shorter_than_launch=t.launch.kernels_shorter_than_launch,
                   devices=t.devices, streams=t.streams, tolerance_us=t.tolerance_us)


def _take(cls: type, obj: Any) -> Any:
    """`cls` with the same-named fields of `obj`."""
    return cls(**{k: getattr(obj, k) for k in cls.__dataclass_fields__})


def _window(w: Window) -> dict[str, Any]:
    """A window's figures alone (a pass's index, name, phase and kind left out)."""
    return {k: getattr(w, k) for k in _FIGURES}


_FIGURES = tuple(WindowFigures.__dataclass_fields__)
