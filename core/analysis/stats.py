"""Stats: the durations of a group of kernels (one operation, one layer, one kernel name, one side of
a comparison's row), the one type every reading of durations returns and every view reads."""

from __future__ import annotations

from kerneldiff.core.lazy_dataclass import dataclass   # methods made on first use: a bare `info` uses few


@dataclass
class Stats:
    """Durations of a group of kernels, in microseconds."""

    count: int = 0
    total_us: float = 0.0
    mean_us: float = 0.0
    median_us: float = 0.0
    min_us: float = 0.0
    p90_us: float = 0.0
    p95_us: float = 0.0
    max_us: float = 0.0
    share: float = 0.0       # of the GPU time it is measured against in the phase (the trace's, the side's)
