"""The noise floor of a run's checks from the spread across its ranks, where its passes give none.

A run of one step (a serving step, one training iteration) has no repeated passes and often no
layers to read a floor from, so every check of its representative rank would be inconclusive. Its
ranks, though, run the same work at the same time (data- or tensor-parallel shards of one model): the
spread of a figure across them is how much one rank's figure moves by chance and imbalance. The
representative rank is one rank, not a mean over ranks, so its standard error is the ranks' standard
deviation itself (not over √n):

    SE (per run) = sd over ranks of the figure per pass (ddof 1)
    floor        = Z · √(SE_base² + SE_new²)          (as noise.floor)

Imbalance between ranks (a straggler computing longer) widens it: such a floor errs towards
inconclusive, never towards a false regression. Figures the rank summaries carry: wall clock, kernel
time, GPU idle and exposed communication per pass; `op` and `layer` are not in them (said so).
`skew` is the ranks' spread itself: with fewer than MIN_REPEATS passes it has no repeat to read its
noise from, and `late` and `wait` (per validated collective) judge the ranks' meeting instead.
"""

from __future__ import annotations

import numpy as np

from kerneldiff.core.gate.series import MIN_REPEATS, PassSeries

# each metric's figure per pass, from a rank summary
_FIGURE = {
    "wall": lambda r: r.wall_us,
    "kernels": lambda r: r.gpu_time_us,
    "idle": lambda r: r.idle_us,
    "comm": lambda r: r.exposed_comm_us,
}


def rank_sd(metric: str, ranks: list) -> tuple[float | None, str]:
    """(sd over ranks of the metric per pass, "") or (None, why not)."""
    if metric not in _FIGURE:
        return None, f"{metric}: the rank summaries do not carry it, so the ranks cannot give its floor"
    if len(ranks) < 2:
        return None, "one rank: no spread across ranks"
    x = np.array([_FIGURE[metric](r) / max(r.passes, 1) for r in ranks], dtype=float)
    return float(np.std(x, ddof=1)), ""


def series_from_ranks(value: float, metric: str, ranks: list) -> tuple[PassSeries | None, str]:
    """One run's figure as a series whose standard error is the ranks' spread; (None, why) when the
    ranks cannot give one."""
    sd, why = rank_sd(metric, ranks)
    if sd is None:
        return None, why
    return PassSeries(value, np.array([value]), ["one pass"], fallback_se=sd,
                      fallback_from=f"the spread across {len(ranks)} ranks"), ""


def few_passes(ranks: list) -> int | None:
    """The fewest passes a rank of the run holds, when under MIN_REPEATS (else None)."""
    n = min((len(r.pass_compute_us) for r in ranks), default=0)
    return n if n < MIN_REPEATS else None
