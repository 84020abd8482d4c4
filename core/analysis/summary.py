"""One loaded trace in summary, whole (for `kerneldiff info`): what was read (events, devices, how
long the load took), the structure found in it (passes, phases, layers, stacks and where each was
read from), its wall clock, and its operations without their percentiles. The explorer's browse
view shows one phase in detail instead (`kerneldiff.core.analysis.trace_totals.TraceOverview`).

Every field is typed, in the order `info --json` writes it (a dataclass is written field by field)."""

from __future__ import annotations

import numpy as np

from kerneldiff.core.analysis.trace_totals import CategoryTotal, category_totals
from kerneldiff.core.analysis.devices import DeviceTotal, device_totals
from kerneldiff.core.analysis.pass_kinds import kind_counts
from kerneldiff.core.analysis.timeline import whole_window
from kerneldiff.core.lazy_dataclass import dataclass   # made on first use (start-up)
from kerneldiff.core.model import PHASES, TraceModel


@dataclass(frozen=True)
class StackSummary:
    """One stack of layer blocks (kerneldiff.core.analysis.stacks): its block class, the module
    path holding it, how many layers and the first one's number."""

    name: str
    module: str | None
    layers: int
    first_layer: int


@dataclass(frozen=True)
class StructureSources:
    """What the forward passes, their phases and the layers were read from."""

    passes: str
    phases: str
    layers: str


@dataclass(frozen=True)
class StepShape:
    """A pass's recorded shapes: requests, tokens and KV tokens (None: not recorded)."""

    step: int
    phase: str
    requests: int | None
    tokens: int | None
    kv_tokens: int | None


@dataclass(frozen=True)
class WallTime:
    """First to last GPU activity of the whole trace, and how much of it no stream ran anything (and
    why, as far as the host shows), as `compare` reads it."""

    wall_us: float
    busy_us: float
    idle_us: float
    launch_bound_us: float
    sync_us: float
    other_us: float


@dataclass
class TraceSummary:
    """One trace, whole, in summary: what `kerneldiff info` prints."""

    path: str
    gpu: str
    vendor: str
    kernels: int
    gpu_time_us: float
    steps: int
    step_phases: dict[str, int]        # passes per phase
    # steady | warmup | capture | compile: comparisons read the steady passes (--all-passes: every one)
    pass_kinds: dict[str, int]
    kernel_phases: dict[str, int]      # kernels per phase
    architecture: str
    layers_per_step: int
    stacks: list[StackSummary]
    sources: StructureSources
    step_shapes: list[StepShape]       # the passes that recorded any shape
    cpu_ops: int
    launches: int
    python_frames: int
    dropped_events: int
    load_seconds: float
    operations: list[CategoryTotal]    # per category, largest first: browse's Operations without their details
    warnings: list[str]
    device: int | None                 # the device read, of a file holding several (None: one)
    devices: list[DeviceTotal]         # every device of the file: the figures above are `device`'s alone
    wall: WallTime


def summarize(model: TraceModel) -> TraceSummary:
    k = model.kernels
    phase_counts = {}
    if len(k):   # np.unique(k.phase, return_counts=True), by a count per phase id instead of a sort
        lo = int(k.phase.min())
        n_of = np.bincount(k.phase - lo if lo else k.phase)
        phase_counts = {PHASES[lo + p]: int(n_of[p]) for p in np.flatnonzero(n_of).tolist()}
    step_phases: dict[str, int] = {}
    for s in model.steps:
        step_phases[s.phase] = step_phases.get(s.phase, 0) + 1
    w = whole_window(model)
    return TraceSummary(
        path=model.path,
        gpu=model.label,
        vendor=model.info.vendor,
        kernels=int(len(k)),
        gpu_time_us=model.gpu_time_us,
        steps=len(model.steps),
        step_phases=step_phases,
        pass_kinds=kind_counts(model),
        kernel_phases=phase_counts,
        architecture=model.architecture,
        layers_per_step=model.num_layers,
        stacks=[StackSummary(s["name"], s["module"], s["layers"], s["first_layer"]) for s in model.stacks],
        sources=StructureSources(model.pass_source, model.phase_source, model.layer_source),
        step_shapes=[StepShape(s.index, s.phase, s.batch, s.tokens, s.kv_tokens) for s in model.steps
                     if s.batch is not None or s.tokens is not None or s.kv_tokens is not None],
        cpu_ops=int(len(model.cpu_ops)),
        launches=int(len(model.launches)),
        python_frames=int(len(model.python)),
        dropped_events=model.dropped_events,
        load_seconds=model.load_seconds,
        operations=category_totals(model),
        warnings=list(model.warnings),
        device=model.device,
        devices=device_totals(model),
        wall=WallTime(w.span_us, w.busy_us, w.idle_us, w.launch_bound_us, w.sync_us, w.other_us),
    )
