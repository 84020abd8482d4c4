"""How each trace was recorded, and whether two recordings differ in a way that moves wall clock.

Profiler options cost host time: Python stacks (`with_stack`) and shapes (`record_shapes`) are
written at every operator, memory profiling at every allocation. On a launch-bound run the GPU then
waits longer for its launches: one workload (34,889 kernels, 115.3 ms of GPU time either way)
recorded with and without stacks differed by 15 % in wall clock. Kernel time does not move; wall
clock and idle time do, so they are inconclusive between two recordings that differ.

Each option is read from what the trace holds (a stripped or converted trace can keep a metadata
flag its events no longer bear out), the metadata only where the events cannot tell.
"""

from __future__ import annotations

from kerneldiff.core.model import TraceModel

# the activity kinds a recording selects show as runtime events and CPU operators present or not
# (a workload without copies records none, so copies and memsets tell nothing)
OPTIONS = ("with_stack", "record_shapes", "profile_memory", "runtime events", "CPU operators")


def recording(model: TraceModel) -> dict[str, bool | None]:
    """Each recording option: True, False, or None where the trace cannot tell."""
    c = model.cpu_ops
    info = model.info
    return {
        "with_stack": len(model.python) > 0,
        # shapes hang on CPU operators: without operators nothing tells
        "record_shapes": bool((c.dims >= 0).any()) if len(c) else None,
        "profile_memory": getattr(info, "profile_memory", None),
        "runtime events": len(model.launches) > 0,
        "CPU operators": len(c) > 0,
    }


def differences(a: TraceModel, b: TraceModel, labels: tuple[str, str]) -> list[str]:
    """One phrase per option recorded on one side and not the other ("with_stack on A, not on B")."""
    ra, rb = recording(a), recording(b)
    out = []
    for opt in OPTIONS:
        x, y = ra[opt], rb[opt]
        if x is None or y is None or x == y:
            continue
        on, off = (labels[0], labels[1]) if x else (labels[1], labels[0])
        out.append(f"{opt} on {on}, not on {off}")
    return out


def reason(diffs: list[str]) -> str:
    return ("recorded differently (" + "; ".join(diffs) + "): profiler overhead moves the host's launches, so "
            "wall clock and idle time are inconclusive; kernel time is still compared")
