"""The names of phases, apart from the model so that checking a `--phase` argument (before the
explorer's first frame) does not import numpy (~45 ms)."""

# what a step can be; the one list of phases. `forward`: a pass of a model that never generates
# (a detector, a classifier: analysis.forward_phase), neither a prompt's prefill nor a decode
PHASES = ("unknown", "prefill", "decode", "mixed", "forward")
# what a comparison can be restricted to: everything, or the steps of one phase
PHASE_FILTERS = ("all", "prefill", "decode", "mixed", "forward", "unknown")
