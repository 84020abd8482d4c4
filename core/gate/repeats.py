"""The gate's noise floor between runs: several recordings of the same workload on each side.

The floor read inside one trace (`noise.py`) is pass-to-pass spread: it cannot see what moves a whole
recording (another process on the machine, clocks, a different allocation). With k recordings a
side, each recording's figure (its mean or median per pass) is one sample of the run-to-run
spread, and the figure compared is their mean:

    s (per side)  = the recordings' standard deviation (ddof 1); with one recording on a side, the
                    other side's (the same workload, one spread)
    floor         = Z · √(s_base²/k_base + s_new²/k_new)

and the check's floor is the larger of that and the within-run floor. With one recording a side there
is no run-to-run spread to read: the gate says its floor is within-run only.
"""

from __future__ import annotations

import math

import numpy as np

from kerneldiff.core.gate.noise import Z

WITHIN_ONLY = ("noise floor from within each trace only (pass-to-pass spread): the same workload recorded "
               "twice can differ more; give several recordings a side (gate BASE... --new NEW...) for a "
               "floor from the spread between runs")


def between_floor(base: list[float], new: list[float]) -> float | None:
    """Z standard errors of mean(new) − mean(base) from the recordings' spread; None with one
    recording a side."""
    sa = float(np.std(base, ddof=1)) if len(base) >= 2 else None
    sb = float(np.std(new, ddof=1)) if len(new) >= 2 else None
    if sa is None and sb is None:
        return None
    sa = sb if sa is None else sa
    sb = sa if sb is None else sb
    return Z * math.sqrt(sa ** 2 / len(base) + sb ** 2 / len(new))
