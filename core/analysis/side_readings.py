"""What a comparison reads from one side alone (each kernel's work, the timeline), apart from
the engine: a side loaded in a forked child computes these there, in parallel with the other."""

from __future__ import annotations


def prepare_side(model, phase: str = "all") -> None:
    """Compute the readings a comparison needs from one side alone (each kernel's work, the
    timeline of `phase`), memoised on the model. A side loaded in a forked child does this there,
    while this process does the other side: ~40% of a comparison's time, run on both cores."""
    from kerneldiff.core.analysis.flops import work_of
    from kerneldiff.core.analysis.timeline import timeline

    work_of(model)
    timeline(model, phase, keep_cut=False)
