"""Number formatting shared by every report and the explorer: one unit choice per quantity and
one mark for a missing value, so the CLI, CSV-free text and the screens agree."""

from __future__ import annotations

import math

ABSENT = "—"   # a value that does not exist (a kernel only one side runs, an empty phase)


def _missing(x) -> bool:
    return x is None or (isinstance(x, float) and (math.isnan(x) or math.isinf(x)))


def us(x: float | None) -> str:
    """A duration given in µs, in the unit that keeps it short: 8.21µs, 812.3µs, 12.34ms, 1.23s."""
    if _missing(x):
        return ABSENT
    if x == 0:
        x = 0.0             # −0.0 (a negated zero gap) reads as 0, not −0.00µs
    a = abs(x)
    if 0 < a < 0.005:       # would read 0.00µs (or −0.00µs): say it is under the last digit
        return ("−" if x < 0 else "") + "<0.01µs"
    if a < 10:
        return f"{x:.2f}µs".replace("-", "−")
    if a < 1000:
        return f"{x:.1f}µs".replace("-", "−")
    if a < 1e6:
        return f"{x / 1e3:.2f}ms".replace("-", "−")
    return f"{x / 1e6:.2f}s".replace("-", "−")


def gap(x: float | None) -> str:
    """A signed difference of durations: +1.20ms, −3.4µs, 0."""
    if _missing(x):
        return ABSENT
    if x == 0:
        return "0"
    return ("+" if x > 0 else "−") + us(abs(x))


def ratio(r: float | None) -> str:
    return ABSENT if _missing(r) else f"{r:.2f}×"


def pct(x: float | None, digits: int = 1) -> str:
    """A fraction (0.25) as a percentage (25.0%)."""
    return ABSENT if _missing(x) else f"{100 * x:.{digits}f}%"


def size(n: float | None) -> str:
    """Bytes in decimal units, as the bandwidths beside them (TB/s, GB/s are 10¹² and 10⁹ bytes a
    second): 812 B, 1.5 kB, 2.3 GB. Binary units under decimal names read 1 MiB as "1.0 MB" beside a
    TB/s that is not 2²⁰-based: a 4.9 % slip at GB, 10 % at TB."""
    if _missing(n):
        return ABSENT
    for unit in ("B", "kB", "MB", "GB", "TB"):
        if abs(n) < 999.95 or unit == "TB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} TB"   # pragma: no cover  (the loop returns at TB)


def num(v: float | int | None, digits: int = 2) -> str:
    """A plain quantity with thousands separators; integers stay integers."""
    if _missing(v):
        return ABSENT
    if isinstance(v, int):
        return f"{v:,}"
    return f"{v:,.{digits}f}"


def cycles(v: float | None) -> str:
    return ABSENT if _missing(v) else f"{round(v):,}"


def rate(v: float | None) -> str:
    """A throughput in its unit's thousands (TFLOP/s, TB/s): 611, 46.7, 3.35, 0.012."""
    if _missing(v):
        return ABSENT
    a = abs(v)
    if a >= 100:
        return f"{v:,.0f}"
    if a >= 10:
        return f"{v:.1f}"
    if a >= 0.01 or a == 0:
        return f"{v:.2f}"
    return "<0.01" if v > 0 else ">−0.01"


def percent(v: float | None) -> str:
    """A percentage already in percent (46.7 -> 46.7%), as the throughput figures give them."""
    return ABSENT if _missing(v) else (f"{v:.1f}%" if abs(v) < 100 else f"{v:.0f}%")


def iterations(detected: int, expected: int | None) -> str:
    """An AIE core's iterations: detected, over the expected count when one was given ("12/10")."""
    return f"{detected}" + (f"/{expected}" if expected is not None else "")


def perf_window(core) -> str:
    """An AIE core's perf iterations as an index range ("2–11"), or ABSENT when it has none."""
    return f"{core.perf_start}–{core.perf_end - 1}" if core.perf_iterations else ABSENT


def t_value(x: float | None) -> str:
    """A test statistic (a gap over its standard error), signed: +126.5; — where none."""
    if _missing(x):
        return ABSENT
    return f"{x:+,.1f}"
