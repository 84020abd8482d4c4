"""Safe, compact text for the explorer.

Every string that comes from a trace (kernel, cpu_op, Python frame, GPU, file names) goes through
`literal()`: it becomes a `rich.text.Text` (never parsed as markup) with control characters
replaced by visible escapes, so a kernel name holding ESC or "[bold]" cannot restyle the terminal.
"""

from __future__ import annotations

import math

from rich.text import Text

from core.names import short_name, visible

# Display styles of the two sides. Colour is a help, never the only signal: sides are also
# named by letter, so everything reads the same with NO_COLOR.
SIDE_STYLE = {"a": "#ff9e64", "b": "#7dcfff"}
SIDE_LETTER = {"a": "A", "b": "B"}
DIM = "dim"


def clean(s: object) -> str:
    """The string with control characters made visible (for places that need a plain str)."""
    return visible(str(s))


def span(s: str, style: str = "", justify=None) -> Text:
    """A Text whose style covers only `s` (a base style would also colour text appended later)."""
    t = Text(justify=justify)
    t.append(s, style or None)
    return t


def literal(s: object, style: str = "") -> Text:
    """A Text showing `s` exactly as written (no markup), controls escaped."""
    return span(clean(s), style)


def shorten(s: str, width: int) -> str:
    """Fit a name into `width` cells for a table (core's short kernel names, then an ellipsis)."""
    s = clean(s)
    if width <= 1:
        return s[: max(width, 0)]
    return short_name(s, width)


def fmt_us(us: float | None) -> str:
    """A duration in the unit that keeps it short: 8.21µs, 812.3µs, 12.34ms, 1.23s."""
    if us is None or (isinstance(us, float) and math.isnan(us)):
        return "—"
    a = abs(us)
    if a < 10:
        return f"{us:.2f}µs"
    if a < 1000:
        return f"{us:.1f}µs"
    if a < 1e6:
        return f"{us / 1e3:.2f}ms"
    return f"{us / 1e6:.2f}s"


def fmt_gap(us: float | None) -> str:
    if us is None:
        return "—"
    if us == 0:
        return "0"
    return ("+" if us > 0 else "−") + fmt_us(abs(us))


def fmt_ratio(r: float | None) -> str:
    if r is None or (isinstance(r, float) and (math.isnan(r) or math.isinf(r))):
        return "—"
    return f"{r:.2f}×"


def fmt_pct(x: float | None) -> str:
    return "—" if x is None else f"{x:.1%}"


def fmt_bytes(n: float | None) -> str:
    if n is None:
        return "—"
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if abs(n) < 1024 or unit == "TB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TB"


def slower_side(gap_us: float) -> str | None:
    """"a" when A takes longer, "b" when B does, None when they tie."""
    if gap_us > 0:
        return "a"
    if gap_us < 0:
        return "b"
    return None


def two_bars(a: float, b: float, scale: float, width: int) -> Text:
    """Two horizontal bars in one row: upper half-blocks for A, lower half-blocks for B.

    A cell is '█' where both bars reach, '▀' where only A does, '▄' where only B does, so the chart
    reads without colour; with colour, A's and B's parts take their side colours.
    """
    if scale <= 0 or width <= 0:
        return Text(" " * max(width, 0))
    na = min(width, round(width * a / scale))
    nb = min(width, round(width * b / scale))
    t = Text()
    both = min(na, nb)
    t.append("█" * both)
    if na > nb:
        t.append("▀" * (na - nb), style=SIDE_STYLE["a"])
    elif nb > na:
        t.append("▄" * (nb - na), style=SIDE_STYLE["b"])
    t.append(" " * (width - max(na, nb)))
    return t


def one_bar(x: float, scale: float, width: int, style: str = "") -> Text:
    """A single horizontal bar with eighth-block resolution."""
    if scale <= 0 or width <= 0:
        return Text(" " * max(width, 0))
    eighths = min(width * 8, round(width * 8 * x / scale))
    full, part = divmod(eighths, 8)
    s = "█" * full + (" ▏▎▍▌▋▊▉"[part] if part else "")
    return span(s.ljust(width), style)
