"""The noise floor of a gated metric: how much it could move between two traces of the same code
by chance, read from the traces themselves.

A trace repeats the same pass many times (47 decode passes in a generate() call, every step of a
serving trace). Within each phase, the spread of a metric across those repeats is its noise; the
figure a gate compares is the mean (or median) of n such passes, whose own noise is the spread over
√n. The floor of a change (new − base) is Z standard errors of that difference:

    d = x[i+1] − x[i] (successive passes of one phase)
    σ (per phase)   = 1.4826 · median|d − median(d)| / √2
    SE (per side)   = √(Σ n_phase · σ_phase²) / n          (× 1.2533 for a median)
    floor           = Z · √(SE_base² + SE_new²)

The spread is read from *successive* passes, around their typical step, not from the distance to
the median: a decode pass grows as its KV cache does, a steady trend that is not noise and would
inflate a plain MAD (on the H100 Llama trace the two agree within 4% on wall clock). A robust
median keeps one slow outlier pass (a sync, a recompile) from setting the floor. A phase with too
few repeats to read its own spread (one prefill among 47 decodes) takes the relative spread of the
side's other phases at its own size. A side with no phase of MIN_REPEATS passes (a serving trace of
one long step) reads its spread from the layers of its passes instead, each layer a repeat of the
same work (`SideData.layer_spread`): SE = figure × σ_layer / median_layer / √(layer cells). That
assumes the layers vary independently, so it misses what moves a whole pass at once (a clock
change); the check says which floor it used. Without either, there is no floor: the check is
inconclusive.
"""

from __future__ import annotations

import math

import numpy as np

from kerneldiff.core.gate.series import MIN_REPEATS, PassSeries

Z = 3.0              # standard errors: a change beyond 3 SE is noise about 0.3% of the time
_MAD_SIGMA = 1.4826  # the MAD of a normal distribution times this is its σ
_MEDIAN_SE = math.sqrt(math.pi / 2)   # the standard error of a median over that of a mean


def _sigma(x: np.ndarray) -> float:
    d = np.diff(x)
    return _MAD_SIGMA * float(np.median(np.abs(d - np.median(d)))) / math.sqrt(2)


def standard_error(s: PassSeries) -> float | None:
    """The standard error of one side's figure, None when no phase has MIN_REPEATS passes."""
    if len(s.per_pass) == 0:
        return None
    phases = np.array(s.phases)
    measured: dict[str, tuple[int, float]] = {}
    small: dict[str, tuple[int, float]] = {}
    rel = []
    for ph in dict.fromkeys(s.phases):
        x = s.per_pass[phases == ph]
        med = float(np.median(np.abs(x)))
        if len(x) >= MIN_REPEATS:
            sig = _sigma(x)
            measured[ph] = (len(x), sig)
            if med > 0:
                rel.append(sig / med)
        else:
            small[ph] = (len(x), med)
    if not measured:
        if s.fallback_se is None:
            return None
        return s.fallback_se * (_MEDIAN_SE if s.estimator == "median" else 1.0)
    r = float(np.median(rel)) if rel else 0.0
    var = sum(n * sig ** 2 for n, sig in measured.values()) + sum(n * (r * med) ** 2 for n, med in small.values())
    n = len(s.per_pass)
    se = math.sqrt(var) / n
    return se * (_MEDIAN_SE if s.estimator == "median" else 1.0)


def source(s: PassSeries) -> str:
    """What a side's standard error was read from: "passes", the layers (`fallback_from`) or ""."""
    if len(s.per_pass) and any(s.phases.count(ph) >= MIN_REPEATS for ph in set(s.phases)):
        return "passes"
    return s.fallback_from if s.fallback_se is not None else ""


def floor(base: PassSeries, new: PassSeries) -> float | None:
    """Z standard errors of new − base; None when either side has too few passes to tell."""
    sa, sb = standard_error(base), standard_error(new)
    if sa is None or sb is None:
        return None
    return Z * math.sqrt(sa ** 2 + sb ** 2)
