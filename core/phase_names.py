"""The names of phases, apart from the model so that checking a `--phase` argument (before the
explorer's first frame) does not import numpy (~45 ms)."""

PHASES = ("unknown", "prefill", "decode", "mixed")   # what a step can be; the one list of phases
# what a comparison can be restricted to: everything, or the steps of one phase
PHASE_FILTERS = ("all", "prefill", "decode", "mixed", "unknown")
