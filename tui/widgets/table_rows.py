"""What a result table holds: its columns, its rows, and the order it shows them in.

The rows a view builds stay as built (`rows_all`); what the table shows is a list of indices into
them: filtering picks a subset, sorting permutes it. Sort keys are read out once per column (or
named order) into a plain list, the column's values held as a column, so a new filter or a second
sort on 100,000 rows is a list comprehension and a `sorted` over ints, not a rebuild of the rows.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Callable

NUMERIC = ("num", "us", "gap", "ratio", "pct", "int")


@dataclass
class Column:
    key: str
    label: str
    kind: str = "text"           # text | name | int | num | us | gap | ratio | pct | bar
    width: int | None = None     # fixed width; None: fit content; "name" columns share what is left
    min_width: int = 12          # for flexible columns ("name", and "bar" without a width)
    max_width: int = 96          # a name column never grows past its longest value (views set it)


class Row:
    """One row: raw values (for sorting and export, names in full) and the cells shown.

    `cells` may be given as a function that makes them (a view of 100,000 rows passes one): it is
    called when the row is first drawn or measured, so a table builds the cells of the rows it
    shows on screen, not of all of them; read, `row.cells` is always the tuple."""

    __slots__ = ("key", "values", "_cells", "_make", "payload", "style", "_search", "height")

    def __init__(self, key: str, values: tuple, cells: tuple | Callable[[], tuple], payload: Any = None,
                 style: str = "", search: str | Callable[[], str] = "", height: int | None = 1) -> None:
        self.key = key
        self.values = values          # raw values, one per column (None = absent)
        self._cells = cells           # renderables, one per column (or what makes them)
        self._make = cells if callable(cells) else None   # made again after work left for later
        self.payload = payload        # the result object the row shows (for drill-down)
        self.style = style            # whole-row style (e.g. the slower side's colour)
        self._search = search         # lowercase text matched by the filter (or what makes it, at the first filter)
        self.height = height          # lines; None: as many as its cells wrap to

    @property
    def cells(self) -> tuple:
        cells = self._cells
        if callable(cells):
            cells = self._cells = tuple(cells())
        return cells

    def forget_cells(self) -> None:
        """Make the cells again when next drawn (what they show was finished after the first frame)."""
        if self._make is not None:
            self._cells = self._make

    @property
    def search(self) -> str:
        search = self._search
        if callable(search):
            search = self._search = search()
        return search

    def __repr__(self) -> str:
        return f"Row({self.key!r}, {self.values!r})"


# --- work left for after a table's first frame ------------------------------------------------

_later: ContextVar[list | None] = ContextVar("kerneldiff_table_later", default=None)


def later(compute: Callable[[], Any], apply: Callable[[Any], object], note: str = "") -> bool:
    """While a table builds its rows (`collecting_later`): leave `compute` (slow and pure: it runs in
    a thread once the first frame is out) for later, and `apply(its value)` to run on the app's
    thread before the rows are drawn again; `note` says on screen, meanwhile, what will change.
    False anywhere else: the caller does the work now."""
    pending = _later.get()
    if pending is None:
        return False
    pending.append((compute, apply, note))
    return True


@contextmanager
def collecting_later() -> Iterator[list[tuple[Callable[[], Any], Callable[[Any], object], str]]]:
    """What the rows built inside leave for later (`later`), as (compute, apply, note)."""
    pending: list = []
    token = _later.set(pending)
    try:
        yield pending
    finally:
        _later.reset(token)


@dataclass
class Sort:
    """A named order of a table's rows (the `s`, `t`, `n` keys): `key(row)` gives the value (None
    sorts last), `columns` the column keys whose headers show the arrow."""

    label: str                   # "gap", "time", "name" as the notification says it
    key: Callable[[Row], Any]
    columns: tuple[str, ...] = ()
    reverse: bool = True         # the first press: largest first (names: A to Z)
    words: str = ""              # what the order means ("largest |gap| first")


@dataclass
class TableSpec:
    name: str                    # used for export file names
    columns: list[Column]
    build: Callable[[dict[str, int]], list[Row]]   # name-column widths -> rows
    select: str | None = None    # row key to put the cursor on first
    default_sort: tuple[int, bool] | str | None = None   # (column index, reverse) or a name in `sorts`
    sorts: dict[str, Sort] = field(default_factory=dict)   # "gap" | "time" | "name" -> Sort
    fixed: int = 0               # leading columns that stay in view when the table scrolls sideways


def flexible_widths(cols: list[Column], total: int) -> dict[str, int]:
    """Widths of the flexible columns (names, and bars without a fixed width) in a table `total` cells wide."""
    flex = [c for c in cols if c.width is None and c.kind in ("name", "bar")]
    fixed = sum((c.width or len(c.label)) + 2 for c in cols if c not in flex)
    # 2 cells per column for padding, 2 for the vertical scrollbar
    left = total - fixed - 2 * len(flex) - 2
    names = [c for c in flex if c.kind == "name"]
    bars = [c for c in flex if c.kind == "bar"]
    out: dict[str, int] = {}
    for c in names:
        out[c.key] = max(c.min_width, min(left // len(names), c.max_width))
    for c in bars:  # a bar grows into what names leave, but not so far that it turns into a line
        out[c.key] = c.min_width if names else max(c.min_width, min(left // len(bars), 48))
    return out


def column_title(col: Column) -> str:
    """A column's name in words (its label; the key for a column without one)."""
    return col.label.strip() or col.key.replace("_", " ")


def sort_words(sort: Sort, reverse: bool) -> str:
    if reverse == sort.reverse:
        return f"sorted by {sort.label}: {sort.words}" if sort.words else f"sorted by {sort.label}"
    return f"sorted by {sort.label}, reversed"


def _sort_key(v: Any, kind: str):
    # None (a side with no data) always sorts after real values
    if v is None:
        return (1, 0)
    if kind in NUMERIC:
        try:
            return (0, float(v))
        except (TypeError, ValueError):
            return (1, 0)
    return (0, str(v).lower())


class ShownRows(Sequence):
    """The rows a table shows, in order: a view of `rows` through `order` (indices into them)."""

    __slots__ = ("rows", "order")

    def __init__(self, rows: list[Row], order: list[int]) -> None:
        self.rows, self.order = rows, order

    def __len__(self) -> int:
        return len(self.order)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self.rows[j] for j in self.order[i]]
        return self.rows[self.order[i]]

    def __iter__(self):
        rows = self.rows
        return (rows[j] for j in self.order)

    def __eq__(self, other) -> bool:
        return list(self) == list(other) if isinstance(other, Sequence) else NotImplemented


class RowOrder:
    """Which of `rows` a table shows and in what order, for a filter text and a sort."""

    def __init__(self, columns: list[Column], rows: list[Row], sorts: dict[str, Sort]) -> None:
        self.columns, self.rows, self.sorts = columns, rows, sorts
        self._search: list[str] | None = None
        self._keys: dict[Any, tuple[list, list[bool]]] = {}   # column index or sort name -> (keys, present)

    def _sort_column(self, what: int | str) -> tuple[list, list[bool]]:
        """Sort keys of every row for a column index or a named order, and whether each has a value."""
        got = self._keys.get(what)
        if got is None:
            if isinstance(what, str):
                key = self.sorts[what].key
                keys = [key(r) for r in self.rows]
                present = [k is not None for k in keys]
            else:
                kind = self.columns[what].kind
                values = [r.values[what] for r in self.rows]
                keys = [_sort_key(v, kind) for v in values]
                present = [v is not None for v in values]
            got = self._keys[what] = (keys, present)
        return got

    def order(self, filter_text: str, sort: int | str | None, reverse: bool) -> list[int]:
        """Indices of the rows shown: those whose search text holds `filter_text`, sorted by
        `sort` (a column index or a named order; rows without a value last, in build order)."""
        if filter_text:
            if self._search is None:
                self._search = [r.search for r in self.rows]
            idx = [i for i, s in enumerate(self._search) if filter_text in s]
        else:
            idx = list(range(len(self.rows)))
        if sort is None:
            return idx
        keys, present = self._sort_column(sort)
        # sorted() is stable in both directions: equal keys keep the build order, as before
        shown = sorted((i for i in idx if present[i]), key=keys.__getitem__, reverse=reverse)
        if len(shown) < len(idx):
            shown += [i for i in idx if not present[i]]
        return shown
