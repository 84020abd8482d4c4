"""A DataTable of result rows that knows how to filter, sort and export itself.

Rows carry their raw values (for sorting and export, names in full) next to the rendered cells
(Text, names shortened to the column). The table is rebuilt from `rows` on every filter/sort
change, which stays cheap because result tables are small (layers, operations, kernel pairs).
Drawing is independent of the row count and draws rows itself (see "fast rendering").
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual._segment_tools import line_crop
from textual.actions import SkipAction
from textual.binding import Binding
from textual.cache import LRUCache
from textual.coordinate import Coordinate
from textual.geometry import Region, Size
from textual.strip import Strip
from textual.widgets import DataTable
from textual.widgets._data_table import RowKey


@dataclass
class _Frame:
    """What drawing a line of the table needs, read once a frame."""
    fast: bool
    base_style: Style
    widths: list[int]
    keys: list
    width: int
    header: int
    offsets: list
    scroll: Any
    cursor_row: int
    hover_row: int
    show_cursor: bool
    show_hover: bool
    css_fg: bool
    css_bg: bool
    fixed: int = 0        # fixed columns (drawn in place, the rest scrolls under them)
    state: tuple = ()     # everything above a drawn row depends on (strip cache key)


NUMERIC = ("num", "us", "gap", "ratio", "pct", "int")


@dataclass
class Column:
    key: str
    label: str
    kind: str = "text"           # text | name | int | num | us | gap | ratio | pct | bar
    width: int | None = None     # fixed width; None: fit content; "name" columns share what is left
    min_width: int = 12          # for flexible columns ("name", and "bar" without a width)
    max_width: int = 96          # a name column never grows past its longest value (views set it)


@dataclass
class Row:
    key: str
    values: tuple                # raw values, one per column (None = absent)
    cells: tuple                 # renderables, one per column
    payload: Any = None          # the result object the row shows (for drill-down)
    style: str = ""              # whole-row style (e.g. the slower side's colour)
    search: str = ""             # lowercase text matched by the filter (name and category)
    height: int | None = 1       # lines; None: as many as its cells wrap to


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


class ResultTable(DataTable):
    """Rows of one result table with `/` filtering, `s` sorting and export."""

    BINDINGS = [
        Binding("j", "cursor_down", "Down", show=False),
        Binding("k", "cursor_up", "Up", show=False),
        Binding("g", "scroll_top", "First row", show=False),
        Binding("G", "scroll_bottom", "Last row", show=False),
    ]

    DEFAULT_CSS = """
    ResultTable { height: 1fr; }
    """

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        # drawing (see 'fast rendering'); set first: DataTable's constructor may clear caches
        self._component_style_cache: dict[tuple, Style] = {}
        self._combined_style_cache: dict[tuple, Style] = {}
        self._row_cells_cache: LRUCache[tuple, list[list[tuple[str, Style]]]] = LRUCache(4096)
        self._strip_cache: LRUCache[tuple, Strip] = LRUCache(1024)
        self._frame: _Frame | None = None   # set while drawing
        self._prefetched = None              # scroll offset the pages around were drawn for
        super().__init__(id=id, classes=classes, cursor_type="row", zebra_stripes=True)
        self.spec: TableSpec | None = None
        self.rows_all: list[Row] = []
        self.rows_shown: list[Row] = []
        self.filter_text = ""
        self.sort_column: int | None = None
        self.sort_name: str | None = None   # a named order (spec.sorts) instead of a column
        self.sort_reverse = False
        self._built_width = 0
        self._widths: dict[str, int] = {}

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

    def _name_widths(self) -> dict[str, int]:
        """Widths of the flexible columns (names, and bars without a fixed width) for this table's width."""
        assert self.spec is not None
        total = self.size.width or self.app.size.width
        self._built_width = total
        return flexible_widths(self.spec.columns, total)

    def _build_rows(self) -> None:
        assert self.spec is not None
        self._widths = self._name_widths()
        self.rows_all = self.spec.build(self._widths)

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

    def on_data_table_header_selected(self, event: DataTable.HeaderSelected) -> None:
        event.stop()
        col = event.column_index
        if self.sort_column == col:
            self.sort_by(col, not self.sort_reverse)
        else:
            self.sort_by(col, self.spec.columns[col].kind in NUMERIC)

    def _visible(self) -> list[Row]:
        rows = self.rows_all
        if self.filter_text:
            rows = [r for r in rows if self.filter_text in r.search]
        if self.sort_name is not None:
            sort = self.spec.sorts[self.sort_name]
            keyed = [(sort.key(r), r) for r in rows]
            present = [(k, r) for k, r in keyed if k is not None]
            absent = [r for k, r in keyed if k is None]
            present.sort(key=lambda kr: kr[0], reverse=self.sort_reverse)
            rows = [r for _k, r in present] + absent
        elif self.sort_column is not None:
            kind = self.spec.columns[self.sort_column].kind
            i = self.sort_column
            present = [r for r in rows if r.values[i] is not None]
            absent = [r for r in rows if r.values[i] is None]
            present.sort(key=lambda r: _sort_key(r.values[i], kind), reverse=self.sort_reverse)
            rows = present + absent
        return rows

    def _refill(self, select: str | None) -> None:
        assert self.spec is not None
        self.clear(columns=True)
        arrow = "▼" if self.sort_reverse else "▲"
        named = self.spec.sorts[self.sort_name].columns if self.sort_name is not None else ()
        for i, c in enumerate(self.spec.columns):
            label = c.label
            if i == self.sort_column or c.key in named:
                label += arrow
            justify = "right" if c.kind in NUMERIC else "left"
            width = c.width
            if c.key in self._widths:
                width = self._widths[c.key]
            self.add_column(Text(label, justify=justify), width=width, key=c.key)
        self.rows_shown = self._visible()
        for r in self.rows_shown:
            cells = r.cells
            if r.style:  # bars keep their own side colours
                cells = tuple(c if col.kind == "bar" else self._styled(c, r.style)
                              for c, col in zip(cells, self.spec.columns))
            self.add_row(*cells, key=r.key, height=r.height)
        if select is not None:
            for idx, r in enumerate(self.rows_shown):
                if r.key == select:
                    self.move_cursor(row=idx, animate=False, scroll=True)
                    break

    @staticmethod
    def _styled(cell, style: str):
        if isinstance(cell, Text):
            c = cell.copy()
            c.stylize_before(style)
            return c
        return cell

    # --- fast rendering -------------------------------------------------------------------
    # DataTable renders every cell through Rich (Styled(Padding(cell)) -> console.render_lines) and
    # reads the widget's and the row's CSS styles and a dozen reactive attributes on every line: a
    # page of rows never drawn before (page down) cost 20 ms of CPU at 80x24 and 60 ms at 200x60,
    # and scrolling by one line redrew every row. For the rows this table holds (one line high,
    # Text cells that fit their column, row cursor) `render_line` draws the same strip DataTable
    # would, from (1) each row's cells laid out once, unstyled (`_row_cells`), (2) styles combined
    # once per (row style, cursor/hover, cell style) and (3) the row/column meta the mouse handling
    # reads; strips are cached per row, so a scroll by one line draws the rows that changed, and
    # the pages above and below are drawn once a frame is out (`_prefetch`). Everything else (the
    # header, other renderables, overlong, centred or multi-line cells) takes DataTable's own path;
    # tests/test_tui_table.py compares both drawings cell by cell.

    def _update_dimensions(self, new_rows) -> None:
        """Every column here has its width and every row its height, so DataTable's measuring of
        each new cell with Rich (only needed for auto-sized columns) is skipped: it cost ~30 s
        for a table of 200,000 rows, on the UI thread. Only the virtual size changes."""
        if self._labelled_row_exists or any(c.auto_width for c in self.columns.values()) or \
                any(r.auto_height for r in self.rows.values()):
            super()._update_dimensions(new_rows)
            return
        width = sum(c.get_render_width(self) for c in self.columns.values()) + self._row_label_column_width
        self.virtual_size = Size(width, self._total_row_height + (self.header_height if self.show_header else 0))

    def _clear_caches(self) -> None:  # DataTable's, on new data, a new cursor type, ...
        super()._clear_caches()
        self._row_cells_cache.clear()
        self._strip_cache.clear()
        self._prefetched = None

    def notify_style_update(self) -> None:  # new CSS, theme, focus
        self._component_style_cache.clear()
        self._combined_style_cache.clear()
        self._strip_cache.clear()
        super().notify_style_update()

    def _component_style(self, name: str) -> Style:
        key = (name, self._pseudo_class_state)
        style = self._component_style_cache.get(key)
        if style is None:
            style = self._component_style_cache[key] = self.get_component_styles(name).rich_style
        return style

    def _get_row_style(self, row_index: int, base_style: Style) -> Style:
        # DataTable's, with the component styles looked up once per focus state, not once per line
        if row_index == -1:
            return self._component_style("datatable--header")
        if row_index < self.fixed_rows:
            return self._component_style("datatable--fixed")
        if self.zebra_stripes:
            return self._component_style("datatable--odd-row" if row_index % 2 else "datatable--even-row")
        return base_style

    def _make_frame(self) -> _Frame:
        """What every line needs, read once a frame (reactive attributes are slow to read)."""
        columns = self.ordered_columns
        f = _Frame(
            fast=(self.cursor_type == "row" and not self.fixed_rows and not self._should_render_row_labels),
            base_style=self.rich_style, widths=[c.get_render_width(self) for c in columns],
            keys=[c.key for c in columns], width=self.size.width,
            header=self.header_height if self.show_header else 0, offsets=self._y_offsets,
            scroll=self.scroll_offset, cursor_row=self.cursor_coordinate.row, hover_row=self.hover_coordinate.row,
            show_cursor=self.show_cursor, show_hover=self._show_hover_cursor,
            css_fg=self.cursor_foreground_priority == "css", css_bg=self.cursor_background_priority == "css",
            fixed=min(self.fixed_columns, len(columns)))
        f.state = (f.base_style, f.width, tuple(f.widths), f.show_cursor, f.show_hover, f.css_fg, f.css_bg,
                   f.fixed, self.get_pseudo_class_state(), self._update_count)
        return f

    def render_lines(self, crop):
        self._frame = f = self._make_frame()
        try:
            lines = super().render_lines(crop)
        finally:
            self._frame = None
        if f.fast and f.scroll != self._prefetched:
            # once the frame is out, draw the pages above and below, so that the next page
            # up/down (or a scroll into them) finds its rows drawn
            self._prefetched = f.scroll
            self.call_later(self._prefetch)
        return lines

    def _prefetch(self) -> None:
        f = self._make_frame()
        if not f.fast:
            return
        self._pseudo_class_state = f.state[-2]  # as DataTable.render_lines sets it for the row styles
        top, page = f.scroll.y, max(self.scrollable_content_region.height - f.header, 1)
        for index in (*range(top + page, min(top + 2 * page, len(f.offsets))), *range(max(top - page, 0), top)):
            self._row_strip(index, f)

    def render_line(self, y: int) -> Strip:
        f = self._frame
        if f is None or not f.fast or y < f.header:
            return self._whole_cells(super().render_line(y))
        x, scroll_y = f.scroll
        index = y - f.header + scroll_y
        if index >= len(f.offsets):
            return Strip.blank(f.width, f.base_style)
        strip = self._row_strip(index, f)
        if strip is None:
            strip = self._render_line(y + scroll_y, x, x + f.width, f.base_style)
        return self._whole_cells(strip)

    # --- whole cells only -------------------------------------------------------------------
    # Scrolled sideways, a column half in view showed the end of its numbers ("98µs" for 2.98µs)
    # or the start ("0.…" at the right edge) and read as another number. A column is drawn whole
    # or not at all: ← → move by whole columns, and a column that still straddles an edge (the
    # last scroll position, a narrow window) is blanked, keeping its background (cursor, stripes).

    def _scroll_stops(self) -> list[int]:
        """The sideways offsets at which a scrolling column starts right after the fixed ones."""
        widths = [c.get_render_width(self) for c in self.ordered_columns]
        fixed = min(self.fixed_columns, len(widths))
        stops, x = [], 0
        for w in widths[fixed:]:
            stops.append(x)
            x += w
        return stops

    def _whole_cells(self, strip: Strip) -> Strip:
        columns = self.ordered_columns
        if not columns:
            return strip
        widths = [c.get_render_width(self) for c in columns]
        fixed = min(self.fixed_columns, len(widths))
        x1, width = int(self.scroll_offset.x), self.size.width
        lo, hi = x1 + sum(widths[:fixed]), x1 + width
        cuts: list[tuple[int, int]] = []
        start = sum(widths[:fixed])
        for w in widths[fixed:]:
            end = start + w
            if start < hi and end > lo and (start < lo or end > hi):
                cuts.append((max(start, lo) - x1, min(end, hi) - x1))
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

    def action_cursor_right(self) -> None:
        self._scroll_by_column(+1)

    def action_cursor_left(self) -> None:
        self._scroll_by_column(-1)

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

    def _row_strip(self, index: int, f: _Frame) -> Strip | None:
        """The strip of the row at line `index` of the table (None: DataTable has to draw it)."""
        row_key, _ = f.offsets[index]
        row_index = self._row_locations.get(row_key)
        # a row's strip changes with its position (zebra stripe, meta), the cursor or the mouse
        # coming onto it or leaving it, and the frame's state: not when the table scrolls by a line
        key = (row_key, row_index, row_index == f.cursor_row, row_index == f.hover_row, f.scroll.x, f.state)
        strip = self._strip_cache.get(key)
        if strip is None:
            cells = None if row_index is None else self._row_cells(row_key, f.widths, f.keys)
            if cells is None:
                return None
            strip = self._strip_cache[key] = self._draw_row(row_index, cells, f.scroll.x, f)
        return strip

    # DataTable finds a row's y by summing the heights of all rows above it, on every cursor move
    # (twice: old and new row) and scroll: O(rows). Rows here are one line high, so y is the index.
    def _one_line_rows(self) -> bool:
        return self._total_row_height == self.row_count

    def _get_row_region(self, row_index: int) -> Region:
        if not self._one_line_rows() or not self.is_valid_row_index(row_index):
            return super()._get_row_region(row_index)
        width = sum(c.get_render_width(self) for c in self.columns.values()) + self._row_label_column_width
        y = row_index + (self.header_height if self.show_header else 0)
        return Region(0, y, max(self.size.width, width), 1)

    def _get_cell_region(self, coordinate: Coordinate) -> Region:
        if not self._one_line_rows() or not self.is_valid_coordinate(coordinate):
            return super()._get_cell_region(coordinate)
        region = super()._get_cell_region(Coordinate(0, coordinate.column))  # no rows above row 0 to sum
        return region._replace(y=region.y + coordinate.row)

    def _cell_segments(self, cell: object, width: int) -> list[Segment] | None:
        """The unstyled line of a one-line Text cell padded to `width`, as DataTable lays it out
        through Rich; None when the cell needs Rich (not Text, several lines, tabs, wider than
        the column, centred or fully justified)."""
        if not isinstance(cell, Text):
            return None
        pad = self.cell_padding
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
        console = self.app.console
        base = console.get_style(cell.style) if cell.style else None
        if cell.spans:
            segments = list(cell.render(console))
        else:
            segments = [Segment(plain, base)] if plain else []
        if used < inner:
            fill = " " * (inner - used)
            if justify == "right":
                segments.insert(0, Segment(fill, base))
            else:  # "left" pads inside the text (its base style), "default" outside it
                segments.append(Segment(fill, base if justify == "left" else None))
        if pad:
            edge = Segment(" " * pad)
            segments = [edge, *segments, edge]
        return segments

    def _row_cells(self, row_key: RowKey, widths: list[int], columns: list) -> list[list[tuple[str, Style]]] | None:
        """Each cell of the row as (text, style) runs, consecutive runs of one style merged."""
        key = (row_key, self._update_count, *widths)
        cells = self._row_cells_cache.get(key)
        if cells is None:
            row, data = self.rows.get(row_key), self._data.get(row_key)
            if row is None or data is None or row.height != 1:
                return None
            cells = []
            for column_key, width in zip(columns, widths):
                segments = self._cell_segments(data.get(column_key), width)
                if segments is None:
                    return None
                runs: list[tuple[str, Style]] = []
                for text, style, _ in segments:
                    if runs and runs[-1][1] == style:
                        runs[-1] = (runs[-1][0] + text, style)
                    else:
                        runs.append((text, style))
                cells.append(runs)
            self._row_cells_cache[key] = cells
        return cells

    def _draw_row(self, row_index: int, cells: list[list[tuple[str, Style]]], x1: int, f: _Frame) -> Strip:
        """The strip DataTable would draw for this row (same segments, styles and meta), from its cached cells."""
        # DataTable's styles for a cell: row style + cursor/hover component, then the cell's own
        # style, the CSS colour priority as post style, and the (row, column) meta
        cursor = row_index == f.cursor_row
        hover = row_index == f.hover_row
        component, post = self._get_styles_to_render_cell(
            False, False, False, hover, cursor, f.show_cursor, f.show_hover, f.css_fg, f.css_bg)
        row_style = self._get_row_style(row_index, f.base_style)
        combined = self._combined_style_cache

        def draw(pre: Style, post: Style, columns) -> list[Segment]:
            segments: list[Segment] = []
            append = segments.append
            for column_index in columns:
                meta = Style.from_meta({"row": row_index, "column": column_index})
                last = None
                for text, style in cells[column_index]:
                    key = (pre, style, post)
                    final = combined.get(key)
                    if final is None:
                        final = pre + style
                        final = combined[key] = final + post if post else final
                    if final == last:  # what Strip.simplify would merge
                        segments[-1] = Segment(segments[-1].text + text, segments[-1].style)
                    else:
                        append(Segment(text, final + meta))
                    last = final
            return segments

        segments = draw(row_style + component, post, range(len(cells)))
        # the rest of the line, as DataTable extends it
        extend, _ = self._get_styles_to_render_cell(False, False, False, hover, cursor, f.show_cursor, f.show_hover,
                                                   False, False)
        width = f.width
        table_width = sum(f.widths[f.fixed:]) + self._row_label_column_width
        remaining = max(0, width - table_width)
        segments.append(Segment(" " * remaining, row_style + extend
                                + Style.from_meta({"row": row_index, "column": 0, "out_of_bounds": True})))
        total = sum(f.widths) + self._row_label_column_width + remaining
        if f.fixed:
            # DataTable draws the fixed cells in their own style, then the whole row cropped past them
            fixed_width = sum(f.widths[:f.fixed])
            fixed_style = self._component_style("datatable--fixed") + Style.from_meta({"fixed": True})
            fcomp, fpost = self._get_styles_to_render_cell(
                False, False, True, hover, cursor, f.show_cursor, f.show_hover, f.css_fg, f.css_bg)
            head = draw(fixed_style + fcomp, fpost, range(f.fixed))
            tail = line_crop(segments, x1 + fixed_width, x1 + width, total)
            strip = Strip(head + tail)
            return strip if strip.cell_length == width else strip.adjust_cell_length(width, f.base_style)
        x2 = x1 + width
        if x1 or x2 < total:
            segments = line_crop(segments, x1, x2, total)
            strip = Strip(segments, max(0, min(x2, total) - x1))
            return strip if strip.cell_length == width else strip.adjust_cell_length(width, f.base_style)
        return Strip(segments, total)

    # --- data out ---------------------------------------------------------------------------
    def current_row(self) -> Row | None:
        if not self.rows_shown or self.cursor_row < 0 or self.cursor_row >= len(self.rows_shown):
            return None
        return self.rows_shown[self.cursor_row]

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

