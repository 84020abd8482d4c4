"""The explorer's result table: rows a view built, `/` filtered, `s` sorted, exported as shown.

A `ScrollView` that draws only the lines in view (`render_line`), on Textual's public API, as
toolong's log view does: the rows stay as the view built them and the table shows a list of
indices into them (table_rows.RowOrder: a filter is a subset, a sort a permutation), so a refill
of 100,000 rows costs a sort over ints, and a frame costs the rows in view whatever the row count.
Lines look exactly as Textual's DataTable drew them (its CSS, component classes, keys, mouse
meta and messages' names), which the snapshots hold it to (table_lines.py says how).
"""

from __future__ import annotations

import bisect
import gc
from functools import wraps
from itertools import accumulate
from typing import Any, ClassVar

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events
from textual.actions import SkipAction
from textual.binding import Binding, BindingType
from textual.cache import LRUCache
from textual.geometry import Region, Size, Spacing
from textual.message import Message
from textual.render import measure
from textual.scroll_view import ScrollView
from textual.strip import Strip

from .table_lines import StyleSums, one_line_runs, rich_cell_lines, whole_columns
from .table_rows import (NUMERIC, Column, Row, RowOrder, ShownRows, Sort, TableSpec, collecting_later,
                         column_title, flexible_widths, sort_words)

__all__ = ["NUMERIC", "Column", "ResultTable", "Row", "Sort", "TableSpec", "column_title", "flexible_widths",
           "sort_words"]

_PAD = 1   # cells of padding each side of a cell, as DataTable's default


def _collector_paused(method):
    """`method` of a table run without the cyclic garbage collector, which comes back after the
    next refresh. Building and ordering 100,000 rows makes about a million small objects and no
    cycles: each of the collector's passes walked the whole growing heap again (half of a kernels
    view's first frame), and its first pass over the new rows (~0.3 s at 100,000) would fall in the
    frame that shows them. It comes after that frame instead, for what the app makes later."""
    @wraps(method)
    def paused(self, *args, **kwargs):
        was = gc.isenabled()
        gc.disable()
        try:
            return method(self, *args, **kwargs)
        finally:
            # (a table not running yet, or closing, refreshes no more: the collector back now)
            if was and not (self.is_running and self.call_after_refresh(gc.enable)):
                gc.enable()
    return paused


class ResultTable(ScrollView, can_focus=True):
    """Rows of one result table with `/` filtering, `s` sorting and export."""

    ALLOW_SELECT = False

    # DataTable's keys (the help screen lists them from here), then ours
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "select_cursor", "Select", show=False),
        Binding("up", "cursor_up", "Cursor up", show=False),
        Binding("down", "cursor_down", "Cursor down", show=False),
        Binding("right", "cursor_right", "Cursor right", show=False),
        Binding("left", "cursor_left", "Cursor left", show=False),
        Binding("pageup", "page_up", "Page up", show=False),
        Binding("pagedown", "page_down", "Page down", show=False),
        Binding("ctrl+home", "scroll_top", "Top", show=False),
        Binding("ctrl+end", "scroll_bottom", "Bottom", show=False),
        Binding("home", "scroll_home", "Home", show=False),
        Binding("end", "scroll_end", "End", show=False),
        Binding("j", "cursor_down", "Down", show=False),
        Binding("k", "cursor_up", "Up", show=False),
        Binding("g", "scroll_top", "First row", show=False),
        Binding("G", "scroll_bottom", "Last row", show=False),
    ]

    # DataTable's component classes and CSS, so the theme and the app's .tcss style it as before
    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "datatable--cursor", "datatable--hover", "datatable--fixed", "datatable--fixed-cursor",
        "datatable--header", "datatable--header-cursor", "datatable--header-hover",
        "datatable--odd-row", "datatable--even-row",
    }

    DEFAULT_CSS = """
    ResultTable {
        background: $surface;
        color: $foreground;
        height: 1fr;
        max-height: 100%;
        &.datatable--fixed-cursor {
            background: $block-cursor-blurred-background;
        }
        &:focus {
            background-tint: $foreground 5%;
            & > .datatable--cursor {
                background: $block-cursor-background;
                color: $block-cursor-foreground;
                text-style: $block-cursor-text-style;
            }
            & > .datatable--header {
                background-tint: $foreground 5%;
            }
            & > .datatable--fixed-cursor {
                color: $block-cursor-foreground;
                background: $block-cursor-background;
            }
        }
        &:dark {
            & > .datatable--even-row {
                background: $surface-darken-1 40%;
            }
        }
        & > .datatable--header {
            text-style: bold;
            background: $panel;
            color: $foreground;
        }
        &:ansi > .datatable--header {
            background: ansi_bright_blue;
            color: ansi_default;
        }
        & > .datatable--fixed {
            background: $secondary-muted;
            color: $foreground;
        }
        & > .datatable--even-row {
            background: $surface-lighten-1 50%;
        }
        & > .datatable--cursor {
            background: $block-cursor-blurred-background;
            color: $block-cursor-blurred-foreground;
            text-style: $block-cursor-blurred-text-style;
        }
        & > .datatable--fixed-cursor {
            background: $block-cursor-blurred-background;
            color: $foreground;
        }
        & > .datatable--header-cursor {
            background: $accent-darken-1;
            color: $foreground;
        }
        & > .datatable--header-hover {
            background: $accent 30%;
        }
        & > .datatable--hover {
            background: $block-hover-background;
        }
    }
    """

    class _RowMessage(Message):
        """A row of the table: which table, the cursor's row and that row's key."""

        def __init__(self, table: ResultTable, cursor_row: int, row_key: str) -> None:
            super().__init__()
            self.table, self.cursor_row, self.row_key = table, cursor_row, row_key

        @property
        def control(self) -> ResultTable:
            return self.table

    class RowHighlighted(_RowMessage):
        """The cursor came onto a row (also after every refill with rows)."""

    class RowSelected(_RowMessage):
        """Enter on a row, or a click on the row under the cursor."""

    header_height = 1
    show_header = True
    show_cursor = True

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.spec: TableSpec | None = None
        self.rows_all: list[Row] = []
        self.rows_shown: ShownRows = ShownRows([], [])
        self.filter_text = ""
        self.sort_column: int | None = None
        self.sort_name: str | None = None   # a named order (spec.sorts) instead of a column
        self.sort_reverse = False
        self.fixed_columns = 0
        self._built_width = 0
        self._widths: dict[str, int] = {}
        self._order = RowOrder([], [], {})
        self._positions: dict[str, int] | None = None   # row key -> index in rows_all
        # what is drawn
        self._labels: list[Text] = []       # header cells
        self._col_widths: list[int] = []    # render widths, padding included
        self._heights: list[int] | None = None   # per shown row; None: every row is one line
        self._one_line = True               # every row built is one line high
        self._tops: list[int] = []          # first line of each shown row (when heights vary)
        self._cursor = 0
        self._hover = 0                     # row under the mouse (-1: the header)
        self._show_hover = False
        self._generation = 0                # bumped on every refill: cached lines are stale
        self._runs: LRUCache[tuple, list] = LRUCache(4096)    # (generation, row) -> cells laid out
        self._strips: LRUCache[tuple, Strip] = LRUCache(1024)  # one per drawn row state
        self._sums = StyleSums()
        self._component: dict[tuple, tuple[Style, Style]] = {}
        self._frame: tuple | None = None    # what every line of a frame depends on
        self._prefetched = None             # the scroll offset the pages around were drawn for
        self._builds = 0                    # bumped on every build of the rows: work left for later is stale
        self.later_pending = False          # what the rows show is still being finished (`_run_later`)

    # --- data in --------------------------------------------------------------------------
    def show(self, spec: TableSpec, keep_cursor: bool = False) -> None:
        current = self.current_row()
        self.spec = spec
        if self.sort_name is not None and self.sort_name not in spec.sorts:
            self.sort_name = None
        if spec.default_sort is not None and not keep_cursor:
            if isinstance(spec.default_sort, str):
                self.sort_column, self.sort_name = None, spec.default_sort
                self.sort_reverse = spec.sorts[spec.default_sort].reverse
            else:
                (self.sort_column, self.sort_reverse), self.sort_name = spec.default_sort, None
        elif not keep_cursor:
            self.sort_column, self.sort_name, self.sort_reverse = None, None, False
        self.fixed_columns = spec.fixed
        self._build_rows()
        select = current.key if (keep_cursor and current is not None) else spec.select
        self._refill(select)

    def clear(self, columns: bool = False) -> None:
        """No rows (and, with `columns`, no columns either)."""
        self.rows_all = []
        self._builds += 1
        self.later_pending = False
        self._order = RowOrder(self.spec.columns if self.spec and not columns else [], [], {})
        self.rows_shown = ShownRows([], [])
        self._positions = None
        if columns:
            self._labels, self._col_widths = [], []
        self._heights, self._tops = None, []
        self._cursor = 0
        self._lines_stale()
        self.virtual_size = Size(sum(self._col_widths), self.header_height)
        self.scroll_to(0, 0, animate=False, immediate=True)
        self.refresh()

    def _lines_stale(self) -> None:
        """What is drawn changed (rows, their order, their cells): the lines and cells laid out so
        far, and the pages drawn ahead, are drawn again."""
        self._generation += 1
        self._strips.clear()
        self._prefetched = None

    def _name_widths(self) -> dict[str, int]:
        """Widths of the flexible columns (names, and bars without a fixed width) for this table's width."""
        assert self.spec is not None
        total = self.size.width or self.app.size.width
        self._built_width = total
        return flexible_widths(self.spec.columns, total)

    @_collector_paused
    def _build_rows(self) -> None:
        assert self.spec is not None
        self._widths = self._name_widths()
        with collecting_later() as pending:
            self.rows_all = self.spec.build(self._widths)
        self._builds += 1
        self._order = RowOrder(self.spec.columns, self.rows_all, self.spec.sorts)
        self._positions = None
        self._one_line = all(r.height == 1 for r in self.rows_all)
        self.later_pending = bool(pending)
        if pending:   # once the first frame is out: before, the thread would share the GIL with it
            self.call_after_refresh(self._run_later, pending, self._builds)

    def _run_later(self, pending: list, build: int) -> None:
        """What this build's rows left for after the first frame (`table_rows.later`: telling
        100,000 names apart), computed in a thread; then the rows drawn again with it."""
        if build != self._builds:
            return
        notes = "; ".join(dict.fromkeys(note for *_, note in pending if note))
        if notes:
            self._say("later", notes)

        def work() -> None:
            try:
                values = [compute() for compute, *_ in pending]
            except Exception:   # a bug: the rows keep what they show now, nothing is lost
                values = None
            try:
                self.app.call_from_thread(self._later_done, build, pending, values)
            except RuntimeError:   # the app has ended meanwhile
                pass
        self.run_worker(work, thread=True, group="table-later", exit_on_error=False, name=f"{self.spec.name} later")

    def _say(self, topic: str, note: str | None) -> None:
        """A notification about this table's state (None: withdraw it), one per topic where the app
        keeps them (tui.app's notify_about), else a short one."""
        app, topic = self.app, f"table-{id(self)}-{topic}"
        if hasattr(app, "notify_about"):
            if note is None:
                app.withdraw(topic)
            else:
                app.notify_about(topic, note, markup=False)
        elif note is not None:
            app.notify(note, markup=False, timeout=3)

    def _later_done(self, build: int, pending: list, values: list | None) -> None:
        if build != self._builds:   # rebuilt meanwhile (a resize, another view): that build has its own
            return
        self.later_pending = False
        self._say("later", None)
        if values is None:
            return
        for (_, apply, _note), value in zip(pending, values):
            apply(value)
        for r in self.rows_all:
            r.forget_cells()
        self._lines_stale()
        self._layout_columns()
        self.refresh()

    def on_resize(self) -> None:
        # names were shortened for the old width: rebuild when it changes noticeably
        if self.spec is not None and self.size.width and abs(self.size.width - self._built_width) >= 4:
            self._build_rows()
            cur = self.current_row()
            self._refill(cur.key if cur else None)

    # --- filter / sort ----------------------------------------------------------------------
    def set_filter(self, text: str) -> None:
        text = text.strip().lower()
        if text == self.filter_text:
            return
        self.filter_text = text
        cur = self.current_row()
        self._refill(cur.key if cur else None)

    def cycle_sort(self) -> str:
        """Sort by the next column (numbers largest first); returns a description."""
        assert self.spec is not None
        n = len(self.spec.columns)
        nxt = 0 if self.sort_column is None else (self.sort_column + 1) % n
        while self.spec.columns[nxt].kind == "bar" and nxt != self.sort_column:
            nxt = (nxt + 1) % n
        return self.sort_by(nxt, self.spec.columns[nxt].kind in NUMERIC)

    def reverse_sort(self) -> str:
        if self.sort_name is not None:
            return self.sort_named(self.sort_name, not self.sort_reverse)
        if self.sort_column is None:
            return self.cycle_sort()
        return self.sort_by(self.sort_column, not self.sort_reverse)

    def sort_by(self, column: int, reverse: bool) -> str:
        self.sort_column, self.sort_name, self.sort_reverse = column, None, reverse
        cur = self.current_row()
        self._refill(cur.key if cur else None)
        col = self.spec.columns[column]
        return f"sorted by {column_title(col)} {'▼' if reverse else '▲'}"

    def sort_named(self, name: str, reverse: bool | None = None) -> str:
        """Sort by one of the spec's named orders ("gap", "time", "name"); the same key again flips
        it. Returns a description (or why not)."""
        assert self.spec is not None
        sort = self.spec.sorts.get(name)
        if sort is None:
            return f"this table has no {name} to sort by"
        if reverse is None:
            reverse = (not self.sort_reverse) if self.sort_name == name else sort.reverse
        self.sort_column, self.sort_name, self.sort_reverse = None, name, reverse
        cur = self.current_row()
        self._refill(cur.key if cur else None)
        return sort_words(sort, reverse)

    def _header_clicked(self, col: int) -> None:
        if self.spec is None or not 0 <= col < len(self.spec.columns):
            return
        if self.sort_column == col:
            self.sort_by(col, not self.sort_reverse)
        else:
            self.sort_by(col, self.spec.columns[col].kind in NUMERIC)

    @_collector_paused
    def _refill(self, select: str | None) -> None:
        assert self.spec is not None
        sort = self.sort_name if self.sort_name is not None else self.sort_column
        order = self._order.order(self.filter_text, sort, self.sort_reverse)
        self.rows_shown = ShownRows(self.rows_all, order)
        self._lines_stale()
        self._layout_columns()
        self._layout_rows()
        self.virtual_size = Size(sum(self._col_widths), self._total_height() + self.header_height)
        # as DataTable's clear(): cursor on the first row, scrolled home; then onto `select`
        self._cursor = 0
        self.scroll_x = self.scroll_y = 0
        self.scroll_target_x = self.scroll_target_y = 0
        position = self._position_of(select) if select is not None else None
        if position is not None:
            self._cursor = position
            self.call_after_refresh(self._scroll_cursor_into_view)
        self.refresh()
        if order:
            self.post_message(self.RowHighlighted(self, self._cursor, self.rows_shown[self._cursor].key))

    def _position_of(self, key: str) -> int | None:
        """Where the row with `key` is shown (None: filtered out, or no such row)."""
        if self._positions is None:
            self._positions = {r.key: i for i, r in enumerate(self.rows_all)}
        index = self._positions.get(key)
        if index is None:
            return None
        try:
            return self.rows_shown.order.index(index)
        except ValueError:
            return None

    def _layout_columns(self) -> None:
        """Header cells (the sort arrow on the sorted columns) and each column's width: fixed,
        flexible (names, shortened to it) or, without either, its widest cell shown."""
        spec = self.spec
        arrow = "▼" if self.sort_reverse else "▲"
        named = spec.sorts[self.sort_name].columns if self.sort_name is not None else ()
        console = self.app.console
        self._labels, self._col_widths = [], []
        for i, c in enumerate(spec.columns):
            label = c.label + arrow if (i == self.sort_column or c.key in named) else c.label
            text = Text(label, justify="right" if c.kind in NUMERIC else "left")
            self._labels.append(text)
            width = self._widths.get(c.key, c.width)
            if width is None:
                width = measure(console, text, 1)
                for r in self.rows_shown:
                    cell = r.cells[i]
                    if isinstance(cell, Text):
                        plain = cell.plain
                        w = max(map(cell_len, plain.splitlines())) if "\n" in plain else cell_len(plain)
                    else:
                        w = measure(console, cell, 1)
                    width = max(width, w)
            self._col_widths.append(width + 2 * _PAD)

    def _layout_rows(self) -> None:
        """Line heights of the shown rows: one each, unless a row asks for more (or for as many as
        its cells wrap to, as warnings do)."""
        if self._one_line:
            self._heights, self._tops = None, []
            return
        console, options = self.app.console, self.app.console_options
        heights = []
        for r in self.rows_shown:
            if r.height is not None:
                heights.append(r.height)
                continue
            h = 0
            for cell, width in zip(r.cells, self._col_widths):
                h = max(h, len(rich_cell_lines(console, options, _cell(cell), width, 0, _PAD, Style(), Style())))
            heights.append(h)
        self._heights = heights
        self._tops = [0, *accumulate(heights)][:-1]

    def _total_height(self) -> int:
        return len(self.rows_shown) if self._heights is None else sum(self._heights)

    def _row_top(self, pos: int) -> int:
        return pos if self._heights is None else self._tops[pos]

    def _row_height(self, pos: int) -> int:
        return 1 if self._heights is None else self._heights[pos]

    def _row_at(self, line: int) -> tuple[int, int]:
        """The shown row at content line `line` and the line within it."""
        if self._heights is None:
            return line, 0
        pos = bisect.bisect_right(self._tops, line) - 1
        return pos, line - self._tops[pos]

    # --- cursor -----------------------------------------------------------------------------
    @property
    def row_count(self) -> int:
        return len(self.rows_shown)

    @property
    def cursor_row(self) -> int:
        return self._cursor

    def move_cursor(self, *, row: int | None = None, animate: bool = False, scroll: bool = True) -> None:
        if row is None:
            return
        row = max(0, min(row, self.row_count - 1))
        old, self._cursor = self._cursor, row
        if old != row:
            self._refresh_row(old)
            self._refresh_row(row)
            if row < self.row_count:
                self.post_message(self.RowHighlighted(self, row, self.rows_shown[row].key))
        if scroll:
            self._scroll_cursor_into_view(animate=animate)

    def _refresh_row(self, pos: int) -> None:
        if pos == -1:
            self.refresh(Region(0, 0, self.size.width, self.header_height))
        elif 0 <= pos < self.row_count:
            self.refresh_lines(self.header_height + self._row_top(pos), self._row_height(pos))

    def _scroll_cursor_into_view(self, animate: bool = False) -> None:
        """As DataTable scrolls its row cursor into view (below the header, right of the fixed columns)."""
        if not self.row_count:
            return
        left = sum(self._col_widths[:self.fixed_columns])
        top = self.header_height
        width = max(self.size.width, sum(self._col_widths))
        region = Region(int(self.scroll_x) + left, top + self._row_top(self._cursor), width - left,
                        self._row_height(self._cursor))
        self.scroll_to_region(region, animate=animate, spacing=Spacing(top, 0, 0, left), force=True)

    def _set_hover_cursor(self, active: bool) -> None:
        self._show_hover = active
        self._refresh_row(self._hover)

    def _set_hover(self, pos: int) -> None:
        if pos != self._hover:
            old, self._hover = self._hover, pos
            self._refresh_row(old)
            self._refresh_row(pos)

    def action_cursor_up(self) -> None:
        self._set_hover_cursor(False)
        self.move_cursor(row=self._cursor - 1)

    def action_cursor_down(self) -> None:
        self._set_hover_cursor(False)
        self.move_cursor(row=self._cursor + 1)

    def _page_height(self) -> int:
        return self.scrollable_content_region.height - self.header_height

    def action_page_down(self) -> None:
        # DataTable's: scroll a page, then the cursor onto the row a page below (rows counted by height)
        self._set_hover_cursor(False)
        height, offset, rows = self._page_height(), 0, 0
        for pos in range(self._cursor, self.row_count):
            offset += self._row_height(pos)
            rows += 1
            if offset > height:
                break
        self.scroll_relative(y=height, animate=False, force=True)
        self.move_cursor(row=self._cursor + rows - 1, scroll=False)

    def action_page_up(self) -> None:
        self._set_hover_cursor(False)
        height, offset, rows = self._page_height(), 0, 0
        for pos in range(0, self._cursor + 1):   # DataTable counts from the top row
            offset += self._row_height(pos)
            rows += 1
            if offset > height:
                break
        self.scroll_relative(y=-height, animate=False)
        self.move_cursor(row=self._cursor - rows + 1, scroll=False)

    def action_page_left(self) -> None:
        self._set_hover_cursor(False)
        super().action_page_left()

    def action_page_right(self) -> None:
        self._set_hover_cursor(False)
        super().action_page_right()

    def action_scroll_top(self) -> None:
        self._set_hover_cursor(False)
        self.move_cursor(row=0)

    def action_scroll_bottom(self) -> None:
        self._set_hover_cursor(False)
        self.move_cursor(row=self.row_count - 1)

    def action_scroll_home(self) -> None:
        self._set_hover_cursor(False)
        self.scroll_x = 0

    def action_scroll_end(self) -> None:
        self._set_hover_cursor(False)
        self.scroll_x = self.max_scroll_x

    def action_select_cursor(self) -> None:
        self._set_hover_cursor(False)
        if self.row_count:
            self.post_message(self.RowSelected(self, self._cursor, self.rows_shown[self._cursor].key))

    # ← → move by whole columns (a column is drawn whole or not at all; the fixed ones stay)
    def action_cursor_right(self) -> None:
        self._scroll_by_column(+1)

    def action_cursor_left(self) -> None:
        self._scroll_by_column(-1)

    def _scroll_stops(self) -> list[int]:
        """The sideways offsets at which a scrolling column starts right after the fixed ones."""
        stops, x = [], 0
        for w in self._col_widths[min(self.fixed_columns, len(self._col_widths)):]:
            stops.append(x)
            x += w
        return stops

    def _scroll_by_column(self, step: int) -> None:
        if not self.allow_horizontal_scroll:
            raise SkipAction()
        self._set_hover_cursor(False)
        x = int(self.scroll_target_x)
        stops = self._scroll_stops()
        if step > 0:
            nxt = next((s for s in stops if s > x), None)
            target = self.max_scroll_x if nxt is None else min(nxt, self.max_scroll_x)
        else:
            target = max((s for s in stops if s < x), default=0)
        self.scroll_to(x=target, animate=False, immediate=True)

    # --- mouse ------------------------------------------------------------------------------
    def on_mouse_move(self, event: events.MouseMove) -> None:
        self._set_hover_cursor(True)
        meta = event.style.meta
        if not meta:
            self._set_hover_cursor(False)
            return
        if "row" in meta:
            self._set_hover(meta["row"])

    def on_leave(self, event: events.Leave) -> None:
        self._set_hover_cursor(False)

    def on_click(self, event: events.Click) -> None:
        self._set_hover_cursor(True)
        meta = event.style.meta
        if "row" not in meta or "column" not in meta:
            return
        row = meta["row"]
        if row == -1:   # a header: sort by its column (again: reversed)
            self._header_clicked(meta["column"])
            return
        again = row == self._cursor
        self.move_cursor(row=row)
        if again:
            self.action_select_cursor()
        self._scroll_cursor_into_view(animate=True)
        event.stop()

    # --- drawing ----------------------------------------------------------------------------
    def notify_style_update(self) -> None:   # new CSS, theme, focus
        super().notify_style_update()
        self._component.clear()
        self._sums.clear()
        self._strips.clear()
        self._prefetched = None
        self.refresh()

    def _styles(self, header: bool, fixed: bool, hover: bool, cursor: bool, state) -> tuple[Style, Style]:
        """The component style over a cell and the post-style after it (the cursor's colours win
        over the cell's own), as DataTable's `_get_styles_to_render_cell` (CSS colour priority)."""
        key = (header, fixed, hover, cursor, state)
        got = self._component.get(key)
        if got is None:
            get = self.get_component_rich_style
            component = Style()
            if hover:
                component += get("datatable--hover")
                if header:
                    component += get("datatable--header-hover")
            if cursor:
                component += get("datatable--cursor")
                if header:
                    component += get("datatable--header-cursor")
                elif fixed:
                    component += get("datatable--fixed-cursor")
            post = Style.from_color(color=component.color) + Style.from_color(bgcolor=component.bgcolor)
            got = self._component[key] = (component, post)
        return got

    def _row_style(self, pos: int, state) -> Style:
        name = "datatable--header" if pos == -1 else ("datatable--odd-row" if pos % 2 else "datatable--even-row")
        return self._styles_of(name, state)

    def _styles_of(self, name: str, state) -> Style:
        key = (name, state)
        got = self._component.get(key)
        if got is None:
            # as DataTable reads row, header and fixed styles (not through the widget's style
            # cache, which a focus change clears later than it restyles the header)
            got = self._component[key] = self.get_component_styles(name).rich_style
        return got

    def _make_frame(self) -> tuple:
        """What every line of a frame depends on (reading reactives per line is slow)."""
        return (self.get_pseudo_class_state(), self.rich_style, self.size.width, tuple(self._col_widths),
                self._show_hover, self._generation, min(self.fixed_columns, len(self._col_widths)))

    def render_lines(self, crop: Region) -> list[Strip]:
        self._frame = self._make_frame()
        try:
            lines = super().render_lines(crop)
        finally:
            self._frame = None
        if self.scroll_offset != self._prefetched:
            # once the frame is out, draw the pages above and below, so that the next Page
            # Up/Down (or a scroll into them) finds its rows drawn
            self._prefetched = self.scroll_offset
            self.call_later(self._prefetch)
        return lines

    def _prefetch(self) -> None:
        frame = self._make_frame()
        if not frame[3]:
            return
        top, page = int(self.scroll_offset.y), max(self._page_height(), 1)
        total = self._total_height()
        for content in (*range(top + page, min(top + 2 * page, total)), *range(max(top - page, 0), top)):
            self._content_strip(frame, *self._row_at(content))

    def render_line(self, y: int) -> Strip:
        frame = self._frame or self._make_frame()   # on its own (tests): as render_lines reads it
        if not frame[3]:
            return Strip.blank(frame[2], frame[1])
        if y < self.header_height:
            return self._content_strip(frame, -1, y)
        content = y - self.header_height + int(self.scroll_offset.y)
        if content >= self._total_height():
            return Strip.blank(frame[2], frame[1])
        return self._content_strip(frame, *self._row_at(content))

    def _content_strip(self, frame: tuple, pos: int, line: int) -> Strip:
        """Line `line` of the row at `pos` (-1: the header) as the view shows it, drawn once per state."""
        _state, _base, width, widths, show_hover, _generation, fixed = frame
        scroll_x = int(self.scroll_offset.x)
        hover = show_hover and pos == self._hover
        cursor = pos == self._cursor and pos != -1
        # a row's strip changes with its place (zebra stripe, meta), the cursor or the mouse coming
        # onto it or leaving it, and the frame: not when the table scrolls by a line
        key = (pos, line, hover, cursor, scroll_x, frame)
        strip = self._strips.get(key)
        if strip is None:
            strip = self._strips[key] = whole_columns(self._draw_line(frame, pos, line, hover, cursor, scroll_x),
                                                      list(widths), fixed, scroll_x, width)
        return strip

    def _cells_of(self, pos: int) -> list:
        """The renderables of a row (-1: the header); a whole-row style goes under each cell's own,
        bars keeping their side colours."""
        if pos == -1:
            return self._labels
        row = self.rows_shown[pos]
        cells = [_cell(c) for c in row.cells]
        if row.style:
            kinds = [c.kind for c in self.spec.columns]
            cells = [_under(c, row.style) if kind != "bar" else c for c, kind in zip(cells, kinds)]
        return cells

    def _laid_out(self, pos: int) -> list | None:
        """Each cell of a one-line row as unstyled runs (None: a cell needs Rich)."""
        index = -1 if pos == -1 else self.rows_shown.order[pos]
        key = (self._generation, index)
        runs = self._runs.get(key, False)
        if runs is False:
            if pos != -1 and self._row_height(pos) != 1:
                runs = None
            else:
                console = self.app.console
                runs = []
                for cell, width in zip(self._cells_of(pos), self._col_widths):
                    r = one_line_runs(console, cell, width, _PAD)
                    if r is None:
                        runs = None
                        break
                    runs.append(r)
            self._runs[key] = runs
        return runs

    def _draw_cells(self, pos: int, line: int, columns: range, pre: Style, post: Style, out: list[Segment],
                    runs: list | None) -> None:
        """Append the cells `columns` of line `line` of the row at `pos`, styled, to `out`."""
        cells = None if runs is not None else self._cells_of(pos)
        height = self.header_height if pos == -1 else self._row_height(pos)
        auto = pos != -1 and self.rows_shown[pos].height is None
        for c in columns:
            meta = Style.from_meta({"row": pos, "column": c})
            if runs is not None:
                self._sums.styled(runs[c], pre, post, meta, out)
                continue
            width = self._col_widths[c]
            lines = rich_cell_lines(self.app.console, self.app.console_options, cells[c], width,
                                    0 if auto else height, _PAD, pre + meta, post)
            if line < len(lines):
                out.extend(lines[line])
            else:   # a shorter cell of a row sized to its tallest one, as DataTable pads it
                out.append(Segment(" " * width, lines[0][0].style if lines and lines[0] else None))

    def _draw_line(self, frame: tuple, pos: int, line: int, hover: bool, cursor: bool, x1: int) -> Strip:
        """The line DataTable draws for line `line` of the row at `pos` (-1: the header), cropped to the view."""
        state, base, width, widths, _show_hover, _generation, fixed = frame
        header = pos == -1
        row_style = self._row_style(pos, state)
        component, post = self._styles(header, False, hover, cursor, state)
        runs = self._laid_out(pos) if line == 0 else None
        segments: list[Segment] = []
        self._draw_cells(pos, line, range(len(widths)), row_style + component, post, segments, runs)
        # the rest of the line, in the row's style
        extend, _ = self._styles(header, False, hover, cursor, state)
        remaining = max(0, width - sum(widths[fixed:]))
        segments.append(Segment(" " * remaining, row_style + extend
                                + Style.from_meta({"row": pos, "column": 0, "out_of_bounds": True})))
        scrolling = Strip(segments)
        if fixed:
            # the fixed cells in their own style, then the whole row cropped past them
            fixed_width = sum(widths[:fixed])
            if header:
                fixed_style = row_style
            else:
                fixed_style = self._styles_of("datatable--fixed", state) + Style.from_meta({"fixed": True})
            fcomp, fpost = self._styles(header, True, hover, cursor, state)
            head: list[Segment] = []
            self._draw_cells(pos, line, range(fixed), fixed_style + fcomp, fpost, head, runs)
            strip = Strip(head + list(scrolling.crop(x1 + fixed_width, x1 + width)))
        else:
            strip = scrolling.crop(x1, x1 + width)
        if strip.cell_length != width:
            strip = strip.adjust_cell_length(width, base)
        return strip.simplify()

    # --- data out ---------------------------------------------------------------------------
    def current_row(self) -> Row | None:
        if not self.rows_shown or self._cursor < 0 or self._cursor >= len(self.rows_shown):
            return None
        return self.rows_shown[self._cursor]

    def get_row_at(self, row_index: int) -> list:
        """The cells of the row shown at `row_index` (as DataTable's method of that name)."""
        return list(self.rows_shown[row_index].cells)

    def export_records(self) -> tuple[list[str], list[list[Any]]]:
        """Column keys (µs columns suffixed _us) and raw values of the rows as shown (filter and sort applied, names in full)."""
        assert self.spec is not None
        idx = [i for i, c in enumerate(self.spec.columns) if c.kind != "bar"]
        header = []
        for i in idx:
            c = self.spec.columns[i]
            unit = "_us" if c.kind in ("us", "gap") and not c.key.endswith("_us") else ""
            header.append(c.key + unit)
        return header, [[r.values[i] for i in idx] for r in self.rows_shown]


def _under(cell, style: str):
    if isinstance(cell, Text):
        cell = cell.copy()
        cell.stylize_before(style)
    return cell


_EMPTY = Text()


def _cell(cell: object):
    """What a cell shows: renderables as they are, absent as nothing, anything else as its text,
    literally (never parsed as markup)."""
    if cell is None:
        return _EMPTY
    if isinstance(cell, str):
        return Text(cell, end="")
    if hasattr(cell, "__rich_console__") or hasattr(cell, "__rich__"):
        return cell
    return Text(str(cell), end="")
