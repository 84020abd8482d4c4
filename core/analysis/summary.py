"""Plain summaries of one loaded trace (for `kerneldiff info` and the single-trace view)."""

from __future__ import annotations

from typing import Any

import numpy as np

from kerneldiff.core.analysis.trace_totals import category_totals
from kerneldiff.core.analysis.devices import device_totals
from kerneldiff.core.analysis.pass_kinds import kind_counts
from kerneldiff.core.model import PHASES, TraceModel
from kerneldiff.core.numbers import unique_inverse


def summarize(model: TraceModel) -> dict[str, Any]:
    k = model.kernels
    phase_counts = {}
    if len(k):   # np.unique(k.phase, return_counts=True), by a count per phase id instead of a sort
        ids, inv = unique_inverse(k.phase)
        phase_counts = {PHASES[p]: int(n) for p, n in zip(ids, np.bincount(inv, minlength=len(ids)))}
    step_phases: dict[str, int] = {}
    for s in model.steps:
        step_phases[s.phase] = step_phases.get(s.phase, 0) + 1
    return {
        "path": model.path,
        "gpu": model.label,
        "vendor": model.info.vendor,
        "kernels": int(len(k)),
        "gpu_time_us": model.gpu_time_us,
        "steps": len(model.steps),
        "step_phases": step_phases,
        # steady | warmup | capture | compile: comparisons read the steady passes (--all-passes: every one)
        "pass_kinds": kind_counts(model),
        "kernel_phases": phase_counts,
        "architecture": model.architecture,
        "layers_per_step": model.num_layers,
        "stacks": [{"name": s["name"], "module": s["module"], "layers": s["layers"], "first_layer": s["first_layer"]}
                   for s in model.stacks],
        "sources": {"passes": model.pass_source, "phases": model.phase_source, "layers": model.layer_source},
        "step_shapes": [{"step": s.index, "phase": s.phase, "requests": s.batch, "tokens": s.tokens,
                         "kv_tokens": s.kv_tokens} for s in model.steps
                        if s.batch is not None or s.tokens is not None or s.kv_tokens is not None],
        "cpu_ops": int(len(model.cpu_ops)),
        "launches": int(len(model.launches)),
        "python_frames": int(len(model.python)),
        "dropped_events": model.dropped_events,
        "load_seconds": model.load_seconds,
        # per category, largest first: the browse view's Operations without their details
        "operations": [{"category": c.category, "count": c.count, "total_us": c.total_us, "share": c.share}
                       for c in category_totals(model)],
        "warnings": list(model.warnings),
        # every device of the file (one entry per GPU); the figures above are `device`'s alone
        "device": model.device,
        "devices": [t.to_dict() for t in device_totals(model)],
    }
