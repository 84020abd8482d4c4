"""ResultTable draws its rows itself (for speed): every line must be what DataTable would draw.

Compared cell by cell — character, colour, attributes and the row/column meta the mouse handling
reads — on a table of awkward cells (styles, justification, wide and escaped characters, cells that
do not fit, bars, whole-row styles), with the cursor, focus, mouse hover and horizontal scrolling,
and on the explorer's own tables. Also: the table stays O(1) per key at 100k rows.
"""

from __future__ import annotations

import pytest
import time

from rich.text import Text
from textual.app import App, ComposeResult
from textual.coordinate import Coordinate
from textual.widgets import DataTable

from kerneldiff.tui.testing import demo_app, wait_for_main
from kerneldiff.tui.text import literal, one_bar, span, two_bars
from kerneldiff.tui.widgets.result_table import Column, ResultTable, Row, TableSpec


def cells_of(strip) -> list[tuple[str, object]]:
    """(character, style) per terminal cell; styles compare colours, attributes, links and meta."""
    out = []
    for text, style, _ in strip:
        for ch in text:
            out.append((ch, style))
    return out


def check_lines(table: ResultTable) -> int:
    """Compare every visible line of `table` with DataTable's own drawing; returns how many rows ResultTable drew."""
    table._pseudo_class_state = table.get_pseudo_class_state()
    frame = table._make_frame()
    drawn = 0
    for y in range(table.size.height):
        table._frame = frame
        try:
            mine = table.render_line(y)
        finally:
            table._frame = None
        theirs = table._whole_cells(DataTable.render_line(table, y))  # both show whole columns only
        assert cells_of(mine) == cells_of(theirs), f"line {y}: {list(mine)!r} != {list(theirs)!r}"
        assert mine.cell_length == theirs.cell_length == table.size.width
        index = y - frame.header + frame.scroll.y
        drawn += y >= frame.header and index < table.row_count and table._row_strip(index, frame) is not None
    return drawn


AWKWARD = [
    Text("plain"), Text("right", justify="right"), Text("left", justify="left"), Text("centre", justify="center"),
    Text("based", style="bold"), Text("based left", style="italic", justify="left"),
    Text("based right", style="underline", justify="right"), span("spanned", "#ff9e64"),
    span("12.3µs", "dim", "right"), literal("evil\x1b[31m[bold]x"), Text("漢字かな wide"), Text(""),
    Text("trailing   ", justify="right"), Text("x" * 80), Text("tab\there"), Text("two\nlines"),
    Text.assemble(("A", "bold #7dcfff"), " and ", ("B", "italic")), two_bars(3.0, 2.0, 4.0, 10),
    one_bar(2.5, 4.0, 10, "#ff9e64"),
]


def awkward_spec() -> TableSpec:
    cols = [Column("a", "A", "text", 12), Column("b", "B", "name"), Column("n", "N", "num", 9),
            Column("bar", "Bar", "bar", 10), Column("c", "C", "text", 30)]  # wider than the terminal

    def build(widths):
        rows = []
        for i in range(60):
            a = AWKWARD[i % len(AWKWARD)]
            b = AWKWARD[(i * 7 + 3) % len(AWKWARD)]
            n = span(f"{i * 1.5:.1f}", "", "right") if i % 3 else Text(str(i), justify="right")
            style = ["", "#ff9e64", "#7dcfff"][i % 3]
            c = AWKWARD[(i * 5 + 1) % len(AWKWARD)]
            rows.append(Row(str(i), (str(a), str(b), i, None, str(c)), (a, b, n, two_bars(i % 5, 2, 4, 10), c),
                            style=style, search=str(i)))
        return rows
    return TableSpec("awkward", cols, build)


class OneTable(App):
    def compose(self) -> ComposeResult:
        yield ResultTable(id="t")

    def on_mount(self) -> None:
        self.query_one(ResultTable).show(awkward_spec())


async def test_rows_are_drawn_exactly_as_datatable_draws_them():
    app = OneTable()
    async with app.run_test(size=(70, 20)) as pilot:
        table = app.query_one(ResultTable)
        await pilot.pause()
        assert check_lines(table) >= 3  # unfocused, cursor on row 0; rows with a centred, multi-line,
        # tabbed or overlong cell are left to DataTable
        table.focus()
        await pilot.press("down", "down", "down")
        await pilot.pause()
        assert table.cursor_row == 3
        check_lines(table)  # focused: the cursor's own style
        await pilot.press("pagedown")
        await pilot.pause()
        check_lines(table)
        table._set_hover_cursor(True)
        table.hover_coordinate = Coordinate(table.cursor_row + 2, 1)
        await pilot.pause()
        check_lines(table)  # mouse hover
        table.scroll_x = 7
        await pilot.pause()
        assert table.scroll_offset.x == 7
        check_lines(table)  # scrolled sideways: lines cropped the same way
        table.sort_by(2, True)
        await pilot.pause()
        check_lines(table)  # new order: nothing stale from the caches


async def test_explorer_tables_draw_as_datatable_does(demo_models):
    app = demo_app(demo_models)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for_main(pilot)
        for _ in range(3):
            table = app.screen.current_table()
            await pilot.pause()
            visible = min(table.row_count - table.scroll_offset.y, table.size.height - table.header_height)
            assert check_lines(table) == visible > 0  # the explorer's rows all take the fast path
            await pilot.press("enter")  # layers -> kernel pairs -> kernel detail (no table: stops)
            await pilot.pause()
            if app.screen.current_table() is None:
                break


class Numbers(App):
    """Numbers whose tails read as other numbers (2.98µs -> "98µs") in columns narrower than the screen."""

    def compose(self) -> ComposeResult:
        yield ResultTable(id="t")

    def on_mount(self) -> None:
        cols = [Column("n", "#", "int", 3), Column("name", "Kernel", "name", min_width=14, max_width=14),
                *(Column(f"c{j}", f"Col {j}", "us", 8 + j % 3) for j in range(9))]
        self.query_one(ResultTable).show(TableSpec("numbers", cols, lambda w: [
            Row(str(i), (i, f"k{i}", *range(9)),
                (Text(str(i), justify="right"), Text(f"kernel_{i}"),
                 *(Text(f"{(i + 1) * (j + 1) * 1.19:.2f}µs", justify="right") for j in range(9))))
            for i in range(12)], fixed=2))


def screen_lines(table: ResultTable) -> list[str]:
    table._pseudo_class_state = table.get_pseudo_class_state()
    return ["".join(t for t, _s, _c in table.render_line(y)) for y in range(table.size.height)]


async def test_sideways_scroll_shows_numbers_whole_or_not_at_all():
    for width in (44, 57, 80):
        app = Numbers()
        async with app.run_test(size=(width, 16)) as pilot:
            table = app.query_one(ResultTable)
            table.focus()
            await pilot.pause()
            whole = {c.plain for r in table.rows_all for c in r.cells} | {c.label for c in table.spec.columns}
            seen_x = set()
            for key in ["right"] * 12 + ["left"] * 12:
                await pilot.press(key)
                await pilot.pause()
                seen_x.add(table.scroll_offset.x)
                for line in screen_lines(table):
                    words = line.split("  ")  # cells are separated by at least two cells of padding
                    for w in (w.strip() for w in words):
                        if w:
                            assert w in whole or w.split(" ")[0] in whole, (width, table.scroll_offset.x, line)
            assert len(seen_x) > 3 and 0 in seen_x   # it did scroll, by columns, and back


class Big(App):
    def compose(self) -> ComposeResult:
        yield ResultTable(id="t")

    def on_mount(self) -> None:
        cols = [Column("i", "#", "int", 7), Column("name", "Kernel", "name")]
        self.query_one(ResultTable).show(TableSpec("big", cols, lambda w: [
            Row(str(i), (i, f"k{i}"), (Text(str(i), justify="right"), Text(f"kernel_{i}")), search=f"k{i}")
            for i in range(100_000)]))


@pytest.mark.slow
async def test_keys_at_the_end_of_100k_rows_cost_what_they_cost_at_the_top():
    app = Big()
    async with app.run_test(size=(80, 24)) as pilot:
        table = app.query_one(ResultTable)
        table.focus()
        await pilot.pause()

        async def cost(row: int) -> float:
            table.move_cursor(row=row)
            await pilot.pause()
            t0 = time.thread_time()
            for key in ("up", "down", "pagedown", "pageup") * 5:
                await pilot.press(key)
            await pilot.pause()
            return time.thread_time() - t0

        top, end = min([await cost(30) for _ in range(2)]), min([await cost(99_950) for _ in range(2)])
        assert table.cursor_row > 99_000
        assert end < 2 * top + 0.05, (top, end)  # DataTable summed the heights of all rows above the cursor
        check_lines(table)


async def test_mouse_clicks_reach_rows_and_headers():
    app = OneTable()
    async with app.run_test(size=(70, 20)) as pilot:
        table = app.query_one(ResultTable)
        await pilot.pause()
        await pilot.click(ResultTable, offset=(3, 5))  # line 0 is the header: row 4
        await pilot.pause()
        assert table.cursor_row == 4
        await pilot.click(ResultTable, offset=(20, 0))  # header of the name column: sort by it
        await pilot.pause()
        assert table.sort_column == 1
        table.scroll_to(y=30, animate=False)
        await pilot.pause()
        await pilot.click(ResultTable, offset=(3, 2))
        await pilot.pause()
        assert table.cursor_row == 31
