"""Safe, compact text for the explorer.

Every string that comes from a trace (kernel, cpu_op, Python frame, GPU, file names) goes through
`literal()`: it becomes a `rich.text.Text` (never parsed as markup) with control characters
replaced by visible escapes, so a kernel name holding ESC or "[bold]" cannot restyle the terminal.
"""

from __future__ import annotations

from functools import partial

from rich.text import Text

from kerneldiff.core.session import readable as _readable
from kerneldiff.core.session import distinct_short_names, short_name
from kerneldiff.core.session import visible
from kerneldiff.core.report import format as fmt

from .widgets.table_rows import later

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


def readable(name: str) -> str:
    """A kernel name as people read it: demangled (`_ZN5aiter…` -> `aiter::…<…>`), controls escaped."""
    return clean(_readable(name)) if name.startswith("_Z") else clean(name)


def cut(s: str, width: int) -> str:
    """Plain text (a category, a step name) in `width` cells: cut with an ellipsis, nothing rearranged."""
    s = clean(s)
    if len(s) <= width:
        return s
    return s[: max(width - 1, 0)] + "…" if width > 0 else ""


def shorten(s: str, width: int) -> str:
    """Fit a name into `width` cells for a table (core's short kernel names, then an ellipsis)."""
    s = clean(s)
    if width <= 1:
        return s[: max(width, 0)]
    return short_name(s, width)


# A column of more names than this is first drawn with each name shortened alone (`shorten`); the
# names that would read alike are told apart (`distinct_short_names`, ~10 µs a name: 1-1.5 s at
# 100,000) in a thread after the table's first frame, and the rows drawn again with them.
LATER_NAMES = 20_000


def shortener(names, width: int):
    """`shorten` for the names of one table column: names that would read the same keep the part
    that tells them apart from their neighbours (kerneldiff.core.names.display.distinct_short_names)."""
    if width <= 1:
        return lambda name: shorten(name, width)
    cleaned = [clean(n) for n in names if n]
    table: dict[str, str] = {}
    if not (len(cleaned) > LATER_NAMES and later(partial(distinct_short_names, cleaned, width), table.update,
                                                 f"{len(cleaned):,} names: those that read alike are told apart "
                                                 "in a moment")):
        table.update(distinct_short_names(cleaned, width))
    return lambda name: table.get(clean(name)) or shorten(name, width)


# numbers: one formatter for the reports and the explorer (kerneldiff.core.report.format)
fmt_us = fmt.us
fmt_gap = fmt.gap
fmt_ratio = fmt.ratio
fmt_bytes = fmt.size


def fmt_pct(x: float | None) -> str:
    return fmt.pct(x)


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
