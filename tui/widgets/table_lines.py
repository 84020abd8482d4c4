"""The lines of a result table: each cell laid out once, unstyled, then styled per row state.

A table line is what Textual's DataTable draws for it (the snapshots were taken of DataTable):
each cell is `Padding(cell, (0, 1))` rendered by Rich at its column's width under a pre-style
(row or header style, the (row, column) meta the mouse reads, the cursor or hover component) and a
post-style (the cursor's colours win over the cell's own), then the rest of the line in the row
style. Laying a cell out through Rich costs ~50 µs, so one-line Text cells that fit their column
(every cell the explorer shows) are laid out here directly, from their spans, into (text, style)
runs that are styled per row state with a few cached `Style` additions; any other cell (several
lines, tabs, overlong, centred, not Text) goes through Rich as DataTable sends it.
"""

from __future__ import annotations

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, RenderableType
from rich.padding import Padding
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.renderables.styled import Styled
from textual.strip import Strip

Runs = list[tuple[str, Style | None]]   # one line of a cell: text and its own style, unstyled by the table


def one_line_runs(console: Console, cell: object, width: int, pad: int) -> Runs | None:
    """The unstyled line of a one-line Text cell padded to `width`, as Rich lays it out inside
    `Padding(cell, (0, pad))`; None when the cell needs Rich (not Text, several lines, tabs, wider
    than the column, centred or fully justified)."""
    if not isinstance(cell, Text):
        return None
    inner = width - 2 * pad
    plain = cell.plain
    if inner <= 0 or "\n" in plain or "\t" in plain:
        return None
    used = cell_len(plain)
    justify = cell.justify or "default"
    if used > inner or justify not in ("default", "left", "right"):
        return None
    if justify == "right" and plain != plain.rstrip():
        return None  # Rich strips trailing spaces before right-justifying
    base = console.get_style(cell.style) if cell.style else None
    if cell.spans:
        segments = [(s.text, s.style) for s in cell.render(console) if s.text]
    else:
        segments = [(plain, base)] if plain else []
    if used < inner:
        fill = " " * (inner - used)
        if justify == "right":
            segments.insert(0, (fill, base))
        else:  # "left" pads inside the text (its base style), "default" outside it
            segments.append((fill, base if justify == "left" else None))
    if pad:
        edge = (" " * pad, None)
        segments = [edge, *segments, edge]
    runs: Runs = []
    for text, style in segments:   # consecutive runs of one style merged
        if runs and runs[-1][1] == style:
            runs[-1] = (runs[-1][0] + text, style)
        else:
            runs.append((text, style))
    return runs


def rich_cell_lines(console: Console, options: ConsoleOptions, cell: RenderableType, width: int, height: int,
                    pad: int, pre: Style, post: Style) -> list[list[Segment]]:
    """A cell laid out by Rich as DataTable lays it out: `height` 0 for as many lines as it wraps to."""
    if height:
        opts = options.update_dimensions(width, height)
        if height == 1:
            opts = opts.update(no_wrap=True)
    else:
        opts = options.update_width(width)
    return console.render_lines(Styled(Padding(cell, (0, pad)), pre_style=pre, post_style=post), opts)


class StyleSums:
    """`pre + style (+ post)` for the few distinct combinations a table draws, added once."""

    def __init__(self) -> None:
        self._sums: dict[tuple, Style] = {}

    def clear(self) -> None:
        self._sums.clear()

    def styled(self, runs: Runs, pre: Style, post: Style, meta: Style, out: list[Segment]) -> None:
        """Append the runs of one cell, styled, to `out` (runs of one final style merged, as
        `Strip.simplify` would)."""
        sums = self._sums
        last = None
        for text, style in runs:
            key = (pre, style, post)
            final = sums.get(key)
            if final is None:
                final = pre + style
                final = sums[key] = final + post if post else final
            if final == last:
                out[-1] = Segment(out[-1].text + text, out[-1].style)
            else:
                out.append(Segment(text, final + meta))
            last = final


def whole_columns(strip: Strip, widths: list[int], fixed: int, scroll_x: int, width: int) -> Strip:
    """The line with every scrolling column that straddles an edge of the view blanked (keeping its
    background): scrolled sideways, a column half in view showed the end of its numbers ("98µs"
    for 2.98µs) or the start ("0.…" at the right edge) and read as another number."""
    fixed = min(fixed, len(widths))
    start = sum(widths[:fixed])
    lo, hi = scroll_x + start, scroll_x + width
    cuts: list[tuple[int, int]] = []
    for w in widths[fixed:]:
        end = start + w
        if start < hi and end > lo and (start < lo or end > hi):
            cuts.append((max(start, lo) - scroll_x, min(end, hi) - scroll_x))
        start = end
    if not cuts:
        return strip
    length = strip.cell_length
    for a, b in cuts:
        a, b = min(a, length), min(b, length)
        if a >= b:
            continue
        head, middle, tail = strip.divide([a, b, length]) if b < length else (*strip.divide([a, length]), Strip([]))
        blank = Strip([Segment(" " * cell_len(seg.text), seg.style) for seg in middle if not seg.control])
        strip = Strip.join([head, blank, tail])
    return strip
