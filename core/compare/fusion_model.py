"""What a fusion would save: launches, sync points, device traffic and host read-back, priced in ns.

    saving = launches_saved · dispatch + syncs_saved · round_trip
           + device_bytes_saved / memory_bw + readback_bytes_saved / readback_bw

with a minimum-gain gate. On unified-memory parts (MI300A, GH200/GB200 in coherent mode) the host
reads device memory in place, so read-back costs nothing and that term is zero — not "divide by
zero bandwidth". Bandwidths are bytes/ns (= GB/s).

The cost of a launch is the trace's own (`with_measured_dispatch`): on a launch-bound side (the GPU
waits for the host at least half its wall clock) the median recorded launch call, what the host
spends on each kernel (6.0 µs on eager Llama, 90 % launch-bound, where the GPU's own gap priced it
at 1.15 µs); else the median gap the GPU leaves between a kernel and the one queued behind it
(`timeline.dispatch_gap`) plus the time the trace's shortest kernels take whatever their work
(`timeline.kernel_floor`), not a fixed figure; a family default only where too few kernels were
queued to measure it (then said so). Every estimate is capped at what the component kernels took. A fixed 3 µs
charged more per launch than the small decode kernels of a real pair took, so every estimate
came out at its cap and told nothing.

Device traffic saved comes from the recorded shapes where they give it: the bytes the component
kernels must move (`kerneldiff.core.analysis.flops`) minus those of the fused kernels, i.e. the
intermediates the fused kernel keeps in registers (32 KB tensors save kilobytes, not the 31.5 MB
that time × bandwidth claimed for a launch-latency-bound decode RMSNorm). Without shapes,
no byte count is given (a figure the shapes cannot bound is not shown) and the traffic is priced
from the memory-bound component kernels' measured time (`device_bytes_basis` says which).
"""

from __future__ import annotations

from dataclasses import fields, replace
from typing import Any

from kerneldiff.core.compare.fusion_params import FusionParams
from kerneldiff.core.compare.result import SavingEstimate
from kerneldiff.core.numbers import number


# Defaults per GPU family: peak HBM bandwidth from the vendors' data sheets; dispatch cost from
# back-to-back launch gaps typical of eager PyTorch on each stack (ROCm's are larger than CUDA's).
FAMILY_DEFAULTS: dict[str, FusionParams] = {
    "mi300": FusionParams(dispatch_ns=5000, memory_bw=5300, readback_bw=50),
    "mi300a": FusionParams(dispatch_ns=5000, memory_bw=5300, readback_bw=50, unified_memory=True),
    "mi350": FusionParams(dispatch_ns=5000, memory_bw=8000, readback_bw=50),
    "mi250": FusionParams(dispatch_ns=6000, memory_bw=3277, readback_bw=25),
    "b200": FusionParams(dispatch_ns=3000, memory_bw=8000, readback_bw=50),
    "gh200": FusionParams(dispatch_ns=3000, memory_bw=4000, readback_bw=450, unified_memory=True),
    "h100": FusionParams(dispatch_ns=3000, memory_bw=3350, readback_bw=50),
    "a100": FusionParams(dispatch_ns=3500, memory_bw=2039, readback_bw=25),
    "v100": FusionParams(dispatch_ns=4000, memory_bw=900, readback_bw=12),
    "default": FusionParams(),
}

# Matched in order against the lower-cased GPU name (and the gfx/sm description of the probe).
_FAMILY_KEYS = (
    ("mi300a", "mi300a"), ("mi300", "mi300"), ("gfx942", "mi300"), ("mi325", "mi300"),
    ("mi350", "mi350"), ("mi355", "mi350"), ("gfx950", "mi350"), ("mi250", "mi250"), ("mi210", "mi250"),
    ("gfx90a", "mi250"), ("gh200", "gh200"), ("gb200", "b200"), ("b200", "b200"), ("blackwell", "b200"),
    ("h100", "h100"), ("h200", "h100"), ("hopper", "h100"), ("a100", "a100"), ("ampere", "a100"),
    ("v100", "v100"), ("volta", "v100"),
)


# What each parameter may be (number() bounds). Costs may be 0 (leave that term out) but not
# negative; bandwidths divide, so they must be positive and not so small that bytes / bandwidth
# overflows; a fraction of peak is a fraction. The upper bounds (1 s per launch, 1 PB/s) are far
# beyond any GPU and keep every product finite.
BOUNDS: dict[str, dict[str, Any]] = {
    "dispatch_ns": dict(lo=0, hi=1e9),
    "roundtrip_ns": dict(lo=0, hi=1e9),
    "memory_bw": dict(lo=1e-3, hi=1e6),
    "readback_bw": dict(lo=1e-3, hi=1e6),
    "achieved_fraction": dict(lo=0, lo_excl=True, hi=1),
    "min_gain_ns": dict(lo=0, hi=1e12),
}
_TRUE, _FALSE = ("true", "1", "yes"), ("false", "0", "no")


def check_overrides(overrides: dict[str, Any]) -> dict[str, float | bool]:
    """Overrides (values as typed, or numbers) checked against the parameters' meaning: an unknown
    key, a non-number, NaN, infinity or a value out of bounds raises ValueError naming the key."""
    known = [f.name for f in fields(FusionParams) if f.name != "dispatch_basis"]
    out: dict[str, float | bool] = {}
    for key, value in overrides.items():
        if key not in known:
            raise ValueError(f"{key}: unknown parameter; known: {', '.join(sorted(known))}")
        if key == "unified_memory":
            word = str(value).strip().lower()
            if isinstance(value, bool) or word in _TRUE + _FALSE:
                out[key] = value if isinstance(value, bool) else word in _TRUE
                continue
            if isinstance(value, (int, float)) and value in (0, 1):
                out[key] = bool(value)
                continue
            raise ValueError(f"{key}: must be true or false (or 1/0, yes/no), got {value!r}")
        try:
            out[key] = float(number(value, **BOUNDS[key]))
        except ValueError as e:
            raise ValueError(f"{key}: {e}") from None
    return out


def family_of(gpu: str) -> str:
    g = (gpu or "").lower()
    for key, fam in _FAMILY_KEYS:
        if key in g:
            return fam
    return "default"


def params_for(gpu: str, overrides: dict[str, float] | None = None) -> FusionParams:
    p = FAMILY_DEFAULTS[family_of(gpu)]
    if overrides:
        p = replace(p, **check_overrides(overrides))
        if "dispatch_ns" in overrides:
            p = replace(p, dispatch_basis="override")
    return p


# a side whose wall clock is at least this share launch-bound idle: the GPU waits for each launch,
# so a launch fewer saves what the host spends launching it, not the GPU's own gap between kernels
LAUNCH_BOUND_SHARE = 0.5


def with_measured_dispatch(p: FusionParams, gap_us: float | None, kernels: int,
                           floor_us: float | None, *, launch_call_us: float | None = None,
                           launch_calls: int = 0, launch_bound: float | None = None) -> FusionParams:
    """`p` with the trace's measured cost per launch unless the user gave one. Where the side is
    launch-bound (`launch_bound`: the share of its wall clock the GPU waited for a launch, at least
    LAUNCH_BOUND_SHARE) and its launch calls are recorded: the median launch call
    (`launch_call_us`, over `launch_calls`), what the host spends on each kernel while the GPU
    waits. Otherwise the GPU's gap between a kernel and the one queued behind it
    (`timeline.dispatch_gap`) plus the time any kernel takes whatever its work
    (`timeline.kernel_floor`): what a launch fewer saves a GPU that is not waiting. The basis says
    which it is, and why a default stayed."""
    if p.dispatch_basis == "override":
        return p
    if launch_call_us is not None and launch_calls >= MIN_LAUNCH_CALLS and launch_bound is not None \
            and launch_bound >= LAUNCH_BOUND_SHARE:
        return replace(p, dispatch_ns=round(launch_call_us * 1000.0, 1),
                       dispatch_basis=(f"measured: {launch_call_us:.2f} µs median launch call over {launch_calls:,} "
                                       f"launches (the host's cost per kernel: the run is {launch_bound:.0%} "
                                       f"launch-bound, the GPU waits for each launch)"))
    if gap_us is None or floor_us is None:
        return replace(p, dispatch_basis=f"default: {kernels} queued kernel{'s' if kernels != 1 else ''} "
                                         "in the trace, too few to measure the gap between them")
    why = ""
    if launch_bound is not None:
        why = (f"; the run is {launch_bound:.0%} launch-bound, so the GPU's own gap, not the launch call"
               if launch_calls >= MIN_LAUNCH_CALLS else "; no launch calls recorded")
    return replace(p, dispatch_ns=round((gap_us + floor_us) * 1000.0, 1),
                   dispatch_basis=(f"measured: {gap_us:.2f} µs median gap between {kernels:,} queued kernels "
                                   f"+ {floor_us:.2f} µs shortest kernels (5th percentile){why}"))


MIN_LAUNCH_CALLS = 20


def estimate(params: FusionParams, *, kernels_before: int, kernels_after: int, occurrences: int,
             memory_bound_us: float, syncs_before: int = 0, syncs_after: int = 0,
             readback_bytes_before: float = 0.0, readback_bytes_after: float = 0.0,
             device_bytes: float | None = None) -> SavingEstimate:
    """Saving per occurrence of fusing `kernels_before` kernels into `kernels_after`.

    `device_bytes`: the device traffic the fusion removes per occurrence, from the recorded shapes
    (component bytes − fused bytes), priced at `achieved_fraction` of peak bandwidth; None when the
    shapes do not give it. Then no byte count is given (`device_bytes_saved` None) and the traffic
    is priced from `memory_bound_us`, the measured time per occurrence of the memory-bound
    component kernels: `achieved_fraction` of what their launches' fixed cost leaves of it."""
    launches = max(kernels_before - kernels_after, 0)
    syncs = max(syncs_before - syncs_after, 0)
    mb_ns = max(memory_bound_us, 0.0) * 1000.0
    launch_ns = launches * params.dispatch_ns
    if device_bytes is not None:
        device_bytes = max(float(device_bytes), 0.0)
        traffic_ns = device_bytes / max(params.memory_bw * params.achieved_fraction, 1e-9)
        basis = "shapes"
    else:
        # no byte count (a number the shapes cannot bound is not given): the memory-bound kernels'
        # time beyond their launches' fixed cost, at the share such kernels spend moving data
        device_bytes = None
        traffic_ns = max(mb_ns - launch_ns, 0.0) * params.achieved_fraction
        basis = "time"
    readback = max(readback_bytes_before - readback_bytes_after, 0.0)
    sync_ns = syncs * params.roundtrip_ns
    readback_ns = 0.0 if params.unified_memory else readback / max(params.readback_bw, 1e-9)
    total_ns = launch_ns + sync_ns + traffic_ns + readback_ns
    return SavingEstimate(
        launches_saved=launches, sync_points_saved=syncs, device_bytes_saved=device_bytes,
        readback_bytes_saved=readback, launch_ns=launch_ns, sync_ns=sync_ns, traffic_ns=traffic_ns,
        readback_ns=readback_ns, total_us=total_ns / 1000.0,
        total_all_us=total_ns / 1000.0 * max(occurrences, 0),
        passes_gate=total_ns >= params.min_gain_ns, params=params, device_bytes_basis=basis,
        model_all_us=total_ns / 1000.0 * max(occurrences, 0))
