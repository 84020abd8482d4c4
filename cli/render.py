"""Small helpers shared by the text reports: literal text, short names, durations."""

from __future__ import annotations

from typing import NamedTuple

from kerneldiff.core.session import short_name
from kerneldiff.core.session import visible
from kerneldiff.core.report import format as fmt


FALLBACK_WIDTH = 80   # when the environment's width is unusable (COLUMNS=0 printed nothing at all)
NARROWEST = 40


def console(stderr: bool = False):
    """Rich's console for the standard output (or error)."""
    from rich.console import Console

    # soft_wrap off + highlight off: trace strings are printed exactly, never re-coloured
    return _usable_width(Console(stderr=stderr, highlight=False, emoji=False, markup=False))


def _usable_width(c):
    if c.width < NARROWEST:
        c.width = FALLBACK_WIDTH
    return c


def _visible(s: object, max_len: int | None) -> str:
    s = visible(str(s))
    return short_name(s, max_len) if max_len is not None and len(s) > max_len else s


def literal(s: object, max_len: int | None = None):
    """Trace strings as plain (Rich) Text: never markup, control characters made visible."""
    from rich.text import Text

    return Text(_visible(s, max_len))


class Kit(NamedTuple):
    """A console with the Text and Table it prints: Rich's, or where the output shows no styles
    the plain layout's (`cli/plain.py`: Rich's bytes without importing Rich's console)."""

    console: object
    Text: type
    Table: type

    def literal(self, s: object, max_len: int | None = None):
        """`literal` in this kit's Text."""
        return self.Text(_visible(s, max_len))


def kit(stderr: bool = False) -> Kit:
    import sys

    from . import plain

    if plain.shows_no_styles(sys.stderr if stderr else sys.stdout):
        return Kit(_usable_width(plain.Console(stderr=stderr)), plain.Text, plain.Table)
    from rich.table import Table
    from rich.text import Text

    return Kit(console(stderr), Text, Table)


us = fmt.us        # one number formatter for every report and the explorer
size = fmt.size


# --- tables that fit: numbers whole or not at all ---------------------------------------------------
# At 80 columns Rich shrank every column evenly once the names had given what they could, and cut
# figures mid-number (`0.…` for an A/B ratio, `−527.32…`, `31,443 (9…`). A report's numeric
# (right-justified) column keeps the width of its widest cell; what does not fit is made room for by
# the text columns (labels wrap, names shorten), and failing that by leaving out numeric columns
# from the right (or in the order the table's `drop_order` gives: groups of headers, least
# telling first, so an A column goes with its B column), which the table's caption names.

MIN_TEXT = 8   # a text column narrower than this says nothing
MAX_WORD = 24  # a wrapping column is given room for its longest word up to this (labels break at spaces)


def _text(cell) -> str:
    """A cell's characters, whichever kit's Text (or str) it is."""
    return cell if isinstance(cell, str) else getattr(cell, "plain", None) or str(cell)


def _cell_width(cell) -> int:
    from rich.cells import cell_len

    plain = _text(cell)
    return max((cell_len(line) for line in plain.split("\n")), default=0)


def _longest_word(c) -> int:
    from rich.cells import cell_len

    words = [w for x in (c.header, *c._cells) for w in _text(x).split()]
    return max((cell_len(w) for w in words), default=0)


def natural_width(table) -> int:
    """The cells `table` takes with every column at its widest cell: what fits without wrapping."""
    pad = sum(table._get_padding_width(i) for i in range(len(table.columns)))
    return table._extra_width + pad + sum(max([_cell_width(c.header), *(_cell_width(x) for x in c._cells)])
                                          for c in table.columns)


def fit_table(table, width: int):
    """`table` (a rich Table) laid out in `width` cells without cutting a number."""
    cols = list(table.columns)
    if not cols:
        return table

    def widest(c) -> int:
        return max([_cell_width(c.header), *(_cell_width(x) for x in c._cells)])

    place = {id(c): i for i, c in enumerate(cols)}
    dropped: list = []
    order = [list(g) for g in getattr(table, "drop_order", ())]
    while True:
        numeric = [c for c in table.columns if c.justify == "right"]
        text = [c for c in table.columns if c.justify != "right"]
        pad = sum(table._get_padding_width(i) for i in range(len(table.columns)))
        room = width - table._extra_width - pad - sum(widest(c) for c in numeric)
        need = sum(min(widest(c), max(MIN_TEXT, min(_longest_word(c), MAX_WORD)) if _wraps(c) else MIN_TEXT)
                   for c in text)
        if room >= need or len(numeric) <= 1:
            break
        named = {_cell_text(c.header): c for c in table.columns}
        while order and not any(h in named for h in order[0]):
            order.pop(0)
        drops = [named[h] for h in order.pop(0) if h in named] if order else [numeric[-1]]
        for drop in drops:
            dropped.append(drop)
            table.columns.remove(drop)
        for i, c in enumerate(table.columns):
            c._index = i
    for c in numeric:
        c.width, c.min_width, c.no_wrap = widest(c), None, True
    # the text columns share what is left: each at least MIN_TEXT (or its widest), then equal shares
    # of the rest up to what it wants (its widest, within the max_width it was given); labels wrap
    want = {id(c): min(widest(c), c.max_width or widest(c)) for c in text}
    shares = {id(c): min(want[id(c)], max(MIN_TEXT, min(_longest_word(c), MAX_WORD)) if _wraps(c) else MIN_TEXT)
              for c in text}
    spare = max(room, 0) - sum(shares.values())
    hungry = [c for c in text if shares[id(c)] < want[id(c)]]
    while spare > 0 and hungry:
        each = max(spare // len(hungry), 1)
        for c in list(hungry):
            give = min(each, want[id(c)] - shares[id(c)], spare)
            shares[id(c)] += give
            spare -= give
            if shares[id(c)] >= want[id(c)]:
                hungry.remove(c)
            if spare <= 0:
                break
    for i, c in enumerate(text):
        label = i == 0 and c.max_width is None   # names (kernels, operations) were given a max_width
        c.width, c.max_width, c.min_width = shares[id(c)], None, None
        if label:
            c.no_wrap, c.overflow = False, "fold"
    left_out = [_cell_text(c.header) or "(unnamed)" for c in sorted(dropped, key=lambda c: place[id(c)])]
    if left_out:
        note = f"left out at {width} columns: {', '.join(left_out)} (--width or a wider terminal shows them)"
        table.caption = f"{table.caption}\n{note}" if table.caption else note
        table.caption_justify = "left"
    return table


def _wraps(c) -> bool:
    return not c.no_wrap and (c.max_width is None or c.overflow == "fold")


def _cell_text(cell) -> str:
    return _text(cell).strip()


class FittingConsole:
    """A Console whose `print` lays tables out with `fit_table` first (the text reports print
    through it); everything else is the console's."""

    def __init__(self, console: Console) -> None:
        self._console = console

    def print(self, *objects, **kwargs) -> None:
        from rich.table import Table

        self._console.print(*(fit_table(o, self._console.width) if isinstance(o, Table) else o for o in objects),
                            **kwargs)

    def __getattr__(self, name):
        return getattr(self._console, name)
