"""What a comparison reads from one side alone (each kernel's work, the timeline, the fusion
model's launch costs, the tokens per pass, the host time, the layer groups), apart from the
engine: a side loaded in a forked child computes these there, in parallel with the other."""

from __future__ import annotations


def prepare_side(model, phase: str = "all") -> None:
    """Compute the readings a comparison needs from one side alone (each kernel's work, the
    timeline of `phase`, its launch costs, the tokens per pass, the host time, the kernels grouped
    by layer and pass), memoised on the model. A side loaded in a forked child does this there,
    while this process does the other side: ~40% of a comparison's time, run on both cores."""
    from kerneldiff.core.analysis.flops import work_of
    from kerneldiff.core.analysis.host_time import host_time
    from kerneldiff.core.analysis.passes import pass_tokens
    from kerneldiff.core.analysis.timeline import timeline
    from kerneldiff.core.analysis.layer_groups import layer_groups

    work_of(model)
    timeline(model, phase, keep_cut=False)
    launch_costs(model, phase)
    pass_tokens(model)
    host_time(model, phase)
    layer_groups(model, phase)


def launch_costs(model, phase: str = "all") -> tuple[tuple[float | None, int], float | None]:
    """(`dispatch_gap`, `kernel_floor`) over the kernels a comparison of `phase` reads (what the
    fusion model prices a launch at on this trace), memoised on the model (~5 ms a side at 250k
    kernels: a percentile and a median over all of them)."""
    def make():
        import numpy as np

        from kerneldiff.core.analysis.cut_work import compared_mask
        from kerneldiff.core.analysis.timeline import dispatch_gap, kernel_floor

        rows = np.nonzero(compared_mask(model, phase))[0]
        return dispatch_gap(model, rows), kernel_floor(model, rows)

    return model.memo(("launch_costs", phase), make)
