"""Whether a layer's gap is real, and whether it stands out from the other layers: two tests on the
per-pass times of each layer.

Each side's layer is read over its steady passes: those within 5 robust σ (1.4826 × MAD) of the
median pass, so the one prefill pass among 47 decode passes, another workload, is neither mean nor
noise. Over those n passes, mean m and standard deviation σ; the per-pass gap (mA − mB) has
standard error √(σa²/na + σb²/nb), the Welch form, and

- `t`: the per-pass gap over its standard error: is this layer's difference real at all (H100 vs
  H200: every layer, t in the hundreds);
- `departure_t`: (this layer's per-pass gap − the median layer's) over the same standard error:
  does this layer differ from the typical layer. A layer *departs* when |departure_t| exceeds the
  two-sided normal quantile at 5 % / number of layers (Bonferroni: with 16 layers, one of them
  would pass an uncorrected 5 % test by chance about half the time).

The spread of the whole-phase gap (`LayerRow.spread_us`) is √(na·σa² + nb·σb²) (robust σ): it
grows with √passes, as a sum's noise does, not with the passes.
"""

from __future__ import annotations

import math
from statistics import NormalDist, median
from typing import TYPE_CHECKING

if TYPE_CHECKING:   # numpy only where `steady` runs: the explorer's screens use `critical` before any trace is loaded
    import numpy as np

ALPHA = 0.05
STEADY_SIGMAS = 5.0


def steady(mat: np.ndarray, med: np.ndarray) -> tuple[list, list, list]:
    """(passes, mean, σ) of each row of `mat` (layers × passes, µs) over its steady passes: within
    STEADY_SIGMAS robust σ of the row's median `med` (where that σ is 0, the passes equal to it)."""
    import numpy as np

    dev = np.abs(mat - med[:, None])
    rs = 1.4826 * np.median(dev, axis=1)
    keep = dev <= STEADY_SIGMAS * rs[:, None]
    n = keep.sum(axis=1)
    mean = np.where(keep, mat, 0.0).sum(axis=1) / np.maximum(n, 1)
    var = np.where(keep, (mat - mean[:, None]) ** 2, 0.0).sum(axis=1) / np.maximum(n - 1, 1)
    return n.tolist(), mean.tolist(), np.sqrt(var).tolist()


def critical(n_layers: int) -> float:
    """|z| a layer must exceed to depart from the typical layer, Bonferroni-corrected over the layers."""
    return NormalDist().inv_cdf(1 - ALPHA / 2 / max(n_layers, 1))


def standard_error(a, b) -> float | None:
    """Standard error of the steady per-pass gap of one layer (`LayerSide` a, b); None without one."""
    if a.steady is None or b.steady is None or a.steady.passes < 2 or b.steady.passes < 2:
        return None
    return math.sqrt(a.steady.sigma_us ** 2 / a.steady.passes + b.steady.sigma_us ** 2 / b.steady.passes)


def per_pass_gap(a, b) -> float | None:
    if a.steady is None or b.steady is None:
        return None
    return a.steady.mean_us - b.steady.mean_us


def _ratio(x: float, se: float) -> float | None:
    if se > 0:
        return x / se
    return 0.0 if x == 0 else None     # no spread at all: an exact zero is no difference; else unbounded


def mark(rows: list) -> None:
    """Fill each compared `LayerRow`'s gap_per_pass_us, se_us, t, departure_t, departs, spread_us
    and noise (noise: it does not depart from the typical layer)."""
    if not rows:
        return
    gaps = [per_pass_gap(r.a, r.b) for r in rows]
    known = [g for g in gaps if g is not None]
    if not known:
        return
    typical = median(known)
    z = critical(len(known))
    for r, g in zip(rows, gaps):
        se = standard_error(r.a, r.b)
        if g is None or se is None:
            continue
        r.gap_per_pass_us = g
        r.se_us = se
        # ten significant digits: a statistic, not a measurement; the last float digits of a ratio
        # of two scaled times would otherwise move when the clock is scaled
        r.t = _sig(_ratio(g, se))
        d = _sig(_ratio(g - typical, se))
        r.departure_t = d
        r.departs = d is None or abs(d) > z
        r.spread_us = gap_spread(r.a, r.b)
        r.noise = not r.departs


def gap_spread(a, b) -> float | None:
    """The spread of the gap between two sides' totals over their passes: √(na·σa² + nb·σb²) with
    the robust σ, the standard error of a sum of independent passes (it grows with √passes)."""
    if a.spread_us is None or b.spread_us is None:
        return None
    return math.sqrt(a.passes * a.spread_us ** 2 + b.passes * b.spread_us ** 2)


EVEN = 0.005   # under 0.5 % of the larger side: even, as the headline reads the wall clock


def _side(gap: float, a: float, b: float) -> str:
    if abs(gap) < EVEN * max(abs(a), abs(b)):
        return "="
    return "A" if gap > 0 else "B"


def slower_by(kernel_gap: float, span_gap: float, a, b) -> str:
    """Who is slower in a layer, by kernel time and by span (the wall clock the headline leads
    with): one letter where they agree, else both named ("A kernels, B span")."""
    k = _side(kernel_gap, a.total_us, b.total_us)
    w = _side(span_gap, a.wall_us, b.wall_us)
    return k if k == w else f"{k} kernels, {w} span"


def _sig(x: float | None) -> float | None:
    return None if x is None else float(f"{x:.10g}")
