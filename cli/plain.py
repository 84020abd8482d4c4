"""Rich's layout of text and tables, for output that shows no styles, without Rich's console.

Importing Rich's console and table costs ~16 ms, about a seventh of what a dense trace's `info` does
above reading its bytes. Where Rich would print no styles (the stream is not a terminal: a pipe, a
file, CI), `info` lays its lines and tables out here instead, by Rich's rules (`Text.wrap`,
`Table._calculate_column_widths`, the heavy-headed box) and with Rich's own cell widths
(`rich.cells`, ~1.5 ms), so the bytes are the ones Rich prints. A terminal still gets Rich: styles and
colours. tests/unit/test_plain_layout.py draws random documents both ways and compares the bytes,
and the `info` of every real trace at several widths.

Only what the reports that use it need: Text without per-span layout, tables with or without the
heavy-headed box, left/right/center justification, fold/ellipsis/crop overflow.
"""

from __future__ import annotations

import os
import re
import sys

from rich.cells import cell_len, chop_cells, set_cell_size

_STRIP = dict.fromkeys((7, 8, 11, 12, 13))   # the control codes Rich's Text drops
_WORD = re.compile(r"\s*\S+\s*")
_TRAILING_SPACE = re.compile(r"\s+$")


class Text:
    """A line of text; styles are accepted and not drawn (nothing here is shown on a terminal)."""

    __slots__ = ("plain",)

    def __init__(self, text: str = "", style: object = None) -> None:
        self.plain = text.translate(_STRIP)

    def append(self, text: "str | Text", style: object = None) -> "Text":
        self.plain += text.plain if isinstance(text, Text) else text.translate(_STRIP)
        return self

    def __add__(self, other: "str | Text") -> "Text":
        if not isinstance(other, (str, Text)):
            return NotImplemented
        return Text(self.plain).append(other)

    def __str__(self) -> str:
        return self.plain


def _plain(cell: object) -> str:
    return cell.plain if isinstance(cell, Text) else str(cell).translate(_STRIP)


# --- Text.wrap ----------------------------------------------------------------------------------------

def _expand_tabs(line: str, tab_size: int = 8) -> str:
    parts = line.split("\t")
    out, position = [], 0
    for part in parts[:-1]:
        part += " "
        position += cell_len(part)
        spaces = -position % tab_size
        position += spaces
        out.append(part + " " * spaces)
    out.append(parts[-1])
    return "".join(out)


def _breaks(text: str, width: int, fold: bool) -> list[int]:
    """Where a line breaks to fit `width` cells: at words, a word wider than a line folded."""
    breaks: list[int] = []
    offset = 0
    for match in _WORD.finditer(text):
        start, word = match.start(), match.group(0)
        length = cell_len(word.rstrip())
        if width - offset >= length:
            offset += cell_len(word)
        elif length > width:
            pieces = chop_cells(word, width) if fold else [word]
            for i, piece in enumerate(pieces):
                if start:
                    breaks.append(start)
                if i == len(pieces) - 1:
                    offset = cell_len(piece)
                else:
                    start += len(piece)
        elif offset and start:
            breaks.append(start)
            offset = cell_len(word)
    return breaks


def _truncate(line: str, width: int, overflow: str, pad: bool = False) -> str:
    length = cell_len(line)
    if length > width:
        line = set_cell_size(line, width - 1) + "…" if overflow == "ellipsis" else set_cell_size(line, width)
    if pad and length < width:
        line += " " * (width - length)
    return line


def wrap(text: str, width: int, justify: str = "default", overflow: str = "fold", no_wrap: bool = False) -> list[str]:
    """`text` as the lines Rich's `Text.wrap` makes of it."""
    lines: list[str] = []
    for paragraph in text.split("\n"):
        if "\t" in paragraph:
            paragraph = _expand_tabs(paragraph)
        if no_wrap:
            new = [paragraph]
        else:
            cuts = [0, *_breaks(paragraph, width, overflow == "fold"), len(paragraph)]
            new = [_rstrip_end(paragraph[a:b], width) for a, b in zip(cuts, cuts[1:])]
        for line in new:
            if justify == "left":
                line = _truncate(line, width, overflow, pad=True)
            elif justify == "right":
                line = _truncate(line.rstrip(), width, overflow)
                line = " " * (width - cell_len(line)) + line
            elif justify == "center":
                line = _truncate(line.rstrip(), width, overflow)
                line = " " * ((width - cell_len(line)) // 2) + line
                line += " " * (width - cell_len(line))
            lines.append(_truncate(line, width, overflow))
    return lines


def _rstrip_end(line: str, size: int) -> str:
    """Whitespace past `size` characters dropped (Rich counts characters here, not cells)."""
    excess = len(line) - size
    if excess > 0:
        m = _TRAILING_SPACE.search(line)
        if m is not None:
            line = line[:len(line) - min(len(m.group(0)), excess)]
    return line


def _fit(line: str, width: int, pad: bool) -> str:
    """A rendered line cut to `width` cells, or padded to it."""
    length = cell_len(line)
    if length > width:
        return set_cell_size(line, width)
    return line + " " * (width - length) if pad and length < width else line


# --- tables -------------------------------------------------------------------------------------------

class Column:
    def __init__(self, header: object = "", justify: str = "left", style: object = None,
                 overflow: str = "ellipsis", no_wrap: bool = False, width: int | None = None,
                 min_width: int | None = None, max_width: int | None = None) -> None:
        self.header, self.justify, self.style, self.overflow = header, justify, style, overflow
        self.no_wrap, self.width, self.min_width, self.max_width = no_wrap, width, min_width, max_width
        self._cells: list = []
        self._index = 0


# HEAVY_HEAD's characters: top, header row, the rule under the header, body rows, bottom
_TOP, _HEAD, _HEAD_RULE, _BODY, _BOTTOM = "┏━┳┓", "┃┃┃", "┡━╇┩", "│││", "└─┴┘"


class Table:
    """A table as Rich lays it out: heavy-headed box (or `box=None`), padding (0, 1), not expanded."""

    def __init__(self, title: object = None, caption: object = None, *, show_header: bool = True,
                 box: object = "heavy_head", pad_edge: bool = True, title_justify: str = "center",
                 caption_justify: str = "center") -> None:
        self.title, self.caption = title, caption
        self.show_header, self.box, self.pad_edge = show_header, box is not None, pad_edge
        if self.box and not show_header:
            raise ValueError("a boxed table without a header is drawn by Rich only")
        self.title_justify, self.caption_justify = title_justify, caption_justify
        self.columns: list[Column] = []

    def add_column(self, header: object = "", **kwargs) -> None:
        column = Column(header, **kwargs)
        column._index = len(self.columns)
        self.columns.append(column)

    def add_row(self, *cells: object) -> None:
        if len(cells) > len(self.columns):
            raise ValueError("more cells than columns")
        for column, cell in zip(self.columns, (*cells, *[""] * (len(self.columns) - len(cells)))):
            column._cells.append("" if cell is None else cell)

    @property
    def _extra_width(self) -> int:
        return len(self.columns) + 1 if self.box else 0

    def _padding(self, index: int) -> tuple[int, int]:
        left = 0 if not self.pad_edge and index == 0 else 1
        right = 0 if not self.pad_edge and index == len(self.columns) - 1 else 1
        return left, right

    def _get_padding_width(self, index: int) -> int:
        return sum(self._padding(index))

    def _cells(self, column: Column) -> list:
        return [column.header, *column._cells] if self.show_header else list(column._cells)

    def _measure(self, column: Column, most: int) -> tuple[int, int]:
        """Rich's Measurement of a column (padding included) within `most` cells."""
        if most < 1:
            return 0, 0
        pad = self._get_padding_width(column._index)
        if column.width is not None:
            return (min(column.width + pad, most),) * 2
        lows, highs = [], []
        for cell in self._cells(column):
            lo, hi = _measure_padded(_plain(cell), pad, most)
            lows.append(lo)
            highs.append(hi)
        lo, hi = min(max(lows) if lows else 1, most), min(max(highs) if highs else most, most)
        if column.min_width is not None:
            floor = max(0, column.min_width + pad)
            lo, hi = max(lo, floor), max(hi, floor)
        if column.max_width is not None:
            lo, hi = min(lo, column.max_width + pad), min(hi, column.max_width + pad)
        return lo, hi

    def _widths(self, most: int) -> list[int]:
        columns = self.columns
        widths = [self._measure(c, most)[1] or 1 for c in columns]
        if sum(widths) > most:
            widths = _collapse(widths, [c.width is None and not c.no_wrap for c in columns], most)
            if sum(widths) > most:
                widths = _ratio_reduce(sum(widths) - most, [1] * len(widths), widths, widths)
            widths = [self._measure(c, w)[1] or 0 for w, c in zip(widths, columns)]
        return widths

    def lines(self, width: int) -> list[str]:
        """The table's lines at a console `width` (before the console crops them)."""
        if not self.columns:
            return [""]
        widths = self._widths(width - self._extra_width)
        table_width = sum(widths) + self._extra_width
        out: list[str] = []
        if self.title and table_width >= 1:
            out += wrap(_plain(self.title), table_width, self.title_justify)
        rows = list(zip(*(self._cells(c) for c in self.columns)))
        if self.box:
            out.append(_edge(_TOP, widths))
        for index, row in enumerate(rows):
            header = index == 0 and self.show_header
            cells = []
            for w, column, cell in zip(widths, self.columns, row):
                left, right = self._padding(column._index)
                inner = w - left - right   # no room inside the padding: Rich draws nothing there
                text = wrap(_plain(cell), inner, column.justify, column.overflow, column.no_wrap) if inner >= 1 else []
                cells.append([_fit(" " * left + _fit(line, inner, True) + " " * right, w, True) for line in text])
            height = max(1, *(len(c) for c in cells))
            for c, w in zip(cells, widths):
                blank = [" " * w] * (height - len(c))
                c[:] = blank + c if header else c + blank   # a header sits at the bottom of its row
            chars = _HEAD if index == 0 else _BODY
            for line_no in range(height):
                parts = [c[line_no] for c in cells]
                out.append(chars[0] + chars[1].join(parts) + chars[2] if self.box else "".join(parts))
            if self.box and header:
                out.append(_edge(_HEAD_RULE, widths))
        if self.box:
            out.append(_edge(_BOTTOM, widths))
        if self.caption and table_width >= 1:
            out += wrap(_plain(self.caption), table_width, self.caption_justify)
        return out


def _edge(chars: str, widths: list[int]) -> str:
    left, line, cross, right = chars
    return left + cross.join(line * w for w in widths) + right


def _measure_text(plain: str) -> tuple[int, int]:
    lines = plain.splitlines()
    high = max(cell_len(line) for line in lines) if lines else 0
    words = plain.split()
    return (max(cell_len(w) for w in words) if words else high), high


def _normal(lo: int, hi: int) -> tuple[int, int]:
    lo = min(max(0, lo), hi)
    return max(0, lo), max(0, max(lo, hi))


def _measure_padded(plain: str, pad: int, most: int) -> tuple[int, int]:
    """Rich's Measurement.get of a padded cell (Padding around Text) within `most` cells."""
    if most - pad < 1:
        lo = hi = most
    else:
        lo, hi = _normal(*_measure_text(plain))
        lo, hi = min(lo, most), min(hi, most)
        if hi < 1:
            lo = hi = 0
        else:
            lo, hi = _normal(lo, hi)
        lo, hi = min(lo + pad, most), min(hi + pad, most)
    lo, hi = _normal(lo, hi)
    lo, hi = min(lo, most), min(hi, most)
    return (0, 0) if hi < 1 else _normal(lo, hi)


def _collapse(widths: list[int], wrapable: list[bool], most: int) -> list[int]:
    """The widest wrapable columns narrowed, in turn, until the table fits (Rich's rule)."""
    excess = sum(widths) - most
    if any(wrapable):
        while sum(widths) and excess > 0:
            widest = max(w for w, ok in zip(widths, wrapable) if ok)
            second = max(w if ok and w != widest else 0 for w, ok in zip(widths, wrapable))
            ratios = [1 if (w == widest and ok) else 0 for w, ok in zip(widths, wrapable)]
            if not any(ratios) or not widest - second:
                break
            widths = _ratio_reduce(excess, ratios, [min(excess, widest - second)] * len(widths), widths)
            excess = sum(widths) - most
    return widths


def _ratio_reduce(total: int, ratios: list[int], maximums: list[int], values: list[int]) -> list[int]:
    ratios = [r if m else 0 for r, m in zip(ratios, maximums)]
    total_ratio = sum(ratios)
    if not total_ratio:
        return values[:]
    result = []
    for ratio, maximum, value in zip(ratios, maximums, values):
        if ratio and total_ratio > 0:
            given = min(maximum, round(ratio * total / total_ratio))
            result.append(value - given)
            total -= given
            total_ratio -= ratio
        else:
            result.append(value)
    return result


# --- the console --------------------------------------------------------------------------------------

def shows_no_styles(stream) -> bool:
    """Whether Rich would print to `stream` without styles or colours, in UTF-8, on a POSIX system:
    where this module's bytes are Rich's. Rich's own test of a terminal (TTY_COMPATIBLE,
    FORCE_COLOR, then isatty)."""
    if sys.platform == "win32":
        return False
    if not (getattr(stream, "encoding", None) or "utf-8").lower().startswith("utf"):
        return False
    compatible = os.environ.get("TTY_COMPATIBLE", "")
    if compatible in ("0", "1"):
        return compatible == "0"
    force = os.environ.get("FORCE_COLOR")
    if force is not None:
        return force == ""
    try:
        return not stream.isatty()
    except (AttributeError, ValueError):
        return True


def console_width() -> int:
    """The width Rich's Console takes: COLUMNS, else the first of stdin/stdout/stderr that is a
    terminal, else 80."""
    columns = os.environ.get("COLUMNS")
    if columns is not None and columns.isdigit():
        return int(columns)
    for fd in (0, 1, 2):
        try:
            return os.get_terminal_size(fd).columns or 80
        except (AttributeError, ValueError, OSError):
            continue
    return 80


class Console:
    """Prints Text, str and Table as Rich's Console does to a stream that is not a terminal."""

    def __init__(self, stderr: bool = False, file=None, width: int | None = None) -> None:
        self.stderr, self._file, self._width = stderr, file, width

    @property
    def file(self):
        return self._file or (sys.stderr if self.stderr else sys.stdout)

    @property
    def width(self) -> int:
        return console_width() if self._width is None else self._width

    @width.setter
    def width(self, width: int) -> None:
        self._width = width

    def print(self, *objects: object) -> None:
        width = self.width
        if not objects:
            lines = [""]
        elif len(objects) == 1 and isinstance(objects[0], Table):
            lines = objects[0].lines(width)
        elif any(isinstance(o, Table) for o in objects):
            raise TypeError("a table is printed on its own")
        else:
            lines = wrap(" ".join(_plain(o) for o in objects), width)
        self.file.write("".join(_fit(line, width, False) + "\n" for line in lines))
        self.file.flush()
