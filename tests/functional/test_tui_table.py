"""ResultTable draws its lines itself on Textual's public API: every line must be what Textual's
stock DataTable draws for the same columns and cells (the snapshots were taken of a DataTable).

Compared cell by cell — character, colour, attributes and the row/column meta the mouse handling
reads — against a DataTable beside it holding the same header, widths and cells, on a table of
awkward cells (styles, justification, wide and escaped characters, cells that do not fit, bars,
whole-row styles, rows several lines high), with the cursor, focus, mouse hover and sideways
scrolling, and on the explorer's own tables. Also: keys, sorting and filtering at 100k rows.
"""

from __future__ import annotations

import pytest
from rich.text import Text
from textual.app import App, ComposeResult
from textual.widgets import DataTable

from tui_driver import demo_app, wait_for_main, wait_until
from kerneldiff.tui.text import literal, one_bar, span, two_bars
from kerneldiff.tui.widgets.result_table import Column, ResultTable, Row, TableSpec
from kerneldiff.tui.widgets.table_lines import whole_columns


def cells_of(strip) -> list[tuple[str, object]]:
    """(character, style) per terminal cell; styles compare colours, attributes, links and meta."""
    out = []
    for text, style, _ in strip:
        for ch in text:
            out.append((ch, style))
    return out


def fill_twin(twin: DataTable, table: ResultTable) -> None:
    """`twin` holding what `table` shows: its header cells, column widths, rows and cursor."""
    twin.clear(columns=True)
    for label, width, col in zip(table._labels, table._col_widths, table.spec.columns):
        twin.add_column(label, width=width - 2, key=col.key)
    for pos, row in enumerate(table.rows_shown):
        twin.add_row(*table._cells_of(pos), key=row.key, height=row.height)
    twin.fixed_columns = table.fixed_columns


def compare_lines(table: ResultTable, twin: DataTable) -> int:
    """Every line of `table` against the twin's; returns how many data rows were compared."""
    assert table.size == twin.size
    assert table.scroll_offset == twin.scroll_offset
    widths = table._col_widths
    compared = 0
    for y in range(table.size.height):
        mine = table.render_line(y)
        theirs = whole_columns(twin.render_line(y), widths, table.fixed_columns, table.scroll_offset.x,
                               table.size.width)
        assert cells_of(mine) == cells_of(theirs), f"line {y}: {list(mine)!r} != {list(theirs)!r}"
        assert mine.cell_length == table.size.width
        compared += y >= 1 and y - 1 + table.scroll_offset.y < table._total_height()
    return compared


AWKWARD = [
    Text("plain"), Text("right", justify="right"), Text("left", justify="left"), Text("centre", justify="center"),
    Text("based", style="bold"), Text("based left", style="italic", justify="left"),
    Text("based right", style="underline", justify="right"), span("spanned", "#ff9e64"),
    span("12.3µs", "dim", "right"), literal("evil\x1b[31m[bold]x"), Text("漢字かな wide"), Text(""),
    Text("trailing   ", justify="right"), Text("x" * 80), Text("tab\there"), Text("two\nlines"),
    Text.assemble(("A", "bold #7dcfff"), " and ", ("B", "italic")), two_bars(3.0, 2.0, 4.0, 10),
    one_bar(2.5, 4.0, 10, "#ff9e64"), literal("zero\u200bwidth\u200d"), literal("[link=x]not a link[/link]"),
]


def awkward_spec(tall: bool = False, fixed: int = 0) -> TableSpec:
    cols = [Column("a", "A", "text", 12), Column("b", "B", "name"), Column("n", "N", "num", 9),
            Column("bar", "Bar", "bar", 10), Column("c", "C", "text", 30),   # wider than the terminal
            Column("d", "D", "text")]                                          # as wide as its widest cell

    def build(widths):
        rows = []
        for i in range(60):
            a = AWKWARD[i % len(AWKWARD)]
            b = AWKWARD[(i * 7 + 3) % len(AWKWARD)]
            n = span(f"{i * 1.5:.1f}", "", "right") if i % 3 else Text(str(i), justify="right")
            style = ["", "#ff9e64", "#7dcfff"][i % 3]
            c = AWKWARD[(i * 5 + 1) % len(AWKWARD)]
            d = Text(f"d{i}" * (i % 4))
            height = (None if i % 4 == 1 else 2 if i % 4 == 2 else 1) if tall else 1
            rows.append(Row(str(i), (str(a), str(b), i, None, str(c), str(d)),
                            (a, b, n, two_bars(i % 5, 2, 4, 10), c, d), style=style, search=str(i), height=height))
        return rows
    return TableSpec("awkward", cols, build, fixed=fixed)


class Twins(App):
    """A ResultTable above a stock DataTable of the same size."""

    CSS = "ResultTable, DataTable { height: 1fr; }"
    AUTO_FOCUS = None   # focus changes the styles: each is compared in the same state

    def __init__(self, spec: TableSpec) -> None:
        super().__init__()
        self.spec = spec

    def compose(self) -> ComposeResult:
        yield ResultTable(id="t")
        yield DataTable(id="d", cursor_type="row", zebra_stripes=True)

    def on_mount(self) -> None:
        self.query_one(ResultTable).show(self.spec)


async def twins(pilot):
    app = pilot.app
    table, twin = app.query_one(ResultTable), app.query_one(DataTable)
    await pilot.pause()
    fill_twin(twin, table)
    await pilot.pause()
    return table, twin


async def check_states(pilot, table: ResultTable, twin: DataTable) -> None:
    """Compare unfocused, each focused in turn, after cursor moves, a page down and a sideways scroll."""
    assert compare_lines(table, twin) > 3
    for steps in (["down"] * 3, ["pagedown"], ["down"]):
        table.focus()
        await pilot.press(*steps)
        twin.move_cursor(row=table.cursor_row)
        twin.scroll_to(y=table.scroll_offset.y, animate=False)
        await pilot.pause()
        mine = [table.render_line(y) for y in range(table.size.height)]
        twin.focus()
        await pilot.pause()
        assert twin.cursor_row == table.cursor_row
        table.focus()   # compare each while it has the focus
        await pilot.pause()
        assert [cells_of(s) for s in mine] == [cells_of(table.render_line(y)) for y in range(table.size.height)]
        twin.focus()
        await pilot.pause()
        theirs = [whole_columns(twin.render_line(y), table._col_widths, table.fixed_columns, table.scroll_offset.x,
                                table.size.width) for y in range(table.size.height)]
        assert [cells_of(s) for s in mine] == [cells_of(s) for s in theirs]
    pilot.app.screen.set_focus(None)   # blur() would hand the focus on to the other table
    await pilot.pause()
    for x in (7, 12):
        table.scroll_to(x=x, animate=False)
        twin.scroll_to(x=x, animate=False)
        await pilot.pause()
        assert table.scroll_offset.x == x
        compare_lines(table, twin)   # scrolled sideways: cropped, and half-shown columns blanked, alike


@pytest.mark.slow
@pytest.mark.parametrize("fixed", [0, 1], ids=["scrolling", "fixed-first-column"])
async def test_lines_are_what_datatable_draws(fixed):
    app = Twins(awkward_spec(fixed=fixed))
    async with app.run_test(size=(70, 40)) as pilot:
        table, twin = await twins(pilot)
        await check_states(pilot, table, twin)
        table.sort_by(2, True)   # new order, new arrow in the header: nothing stale
        await pilot.pause()
        fill_twin(twin, table)
        twin.move_cursor(row=table.cursor_row, scroll=False)
        twin.scroll_to(y=table.scroll_offset.y, animate=False)
        await pilot.pause()
        compare_lines(table, twin)


async def test_rows_several_lines_high_are_what_datatable_draws():
    app = Twins(awkward_spec(tall=True))
    async with app.run_test(size=(70, 40)) as pilot:
        table, twin = await twins(pilot)
        assert table._total_height() == twin.virtual_size.height - 1 > table.row_count
        assert compare_lines(table, twin) > 3


@pytest.mark.slow
async def test_mouse_hover_is_what_datatable_draws():
    app = Twins(awkward_spec())
    async with app.run_test(size=(70, 40)) as pilot:
        table, twin = await twins(pilot)
        for offset in ((3, 4), (20, 0)):   # a row; the header
            await pilot.hover(ResultTable, offset=offset)
            await pilot.pause()
            mine = [table.render_line(y) for y in range(table.size.height)]
            await pilot.hover(DataTable, offset=offset)
            await pilot.pause()
            assert table._hover == offset[1] - 1 == twin.hover_row
            theirs = [whole_columns(twin.render_line(y), table._col_widths, 0, 0, table.size.width)
                      for y in range(table.size.height)]
            # on the header, DataTable redraws its hovered header only when something else refreshes it
            start = 1 if offset[1] == 0 else 0
            assert [cells_of(s) for s in mine][start:] == [cells_of(s) for s in theirs][start:]


# a DataTable the explorer's stylesheet styles as it styles ResultTable (rules select by class name)
ExplorerTwin = type("ResultTable", (DataTable,), {})


@pytest.mark.slow
async def test_explorer_tables_draw_as_datatable_does(demo_models):
    app = demo_app(demo_models)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for_main(pilot)
        for _ in range(3):
            table = app.screen.current_table()
            table.focus()
            await pilot.pause()
            mine = [table.render_line(y) for y in range(table.size.height)]
            twin = ExplorerTwin(cursor_type="row", zebra_stripes=True)
            await table.parent.mount(twin, after=table)
            twin.styles.height, twin.styles.width = table.size.height, table.size.width
            fill_twin(twin, table)
            twin.move_cursor(row=table.cursor_row, scroll=False)
            twin.focus()
            await pilot.pause()
            twin.scroll_to(y=table.scroll_offset.y, animate=False)
            await pilot.pause()
            assert twin.size == table.size and twin.scroll_offset == table.scroll_offset
            theirs = [whole_columns(twin.render_line(y), table._col_widths, table.fixed_columns,
                                    table.scroll_offset.x, table.size.width) for y in range(table.size.height)]
            assert [cells_of(s) for s in mine] == [cells_of(s) for s in theirs]
            await twin.remove()
            table.focus()
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
    return ["".join(t for t, _s, _c in table.render_line(y)) for y in range(table.size.height)]


@pytest.mark.slow
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
    def __init__(self, n: int = 100_000) -> None:
        super().__init__()
        self.n = n

    def compose(self) -> ComposeResult:
        yield ResultTable(id="t")

    def on_mount(self) -> None:
        cols = [Column("i", "#", "int", 7), Column("name", "Kernel", "name")]
        self.query_one(ResultTable).show(TableSpec("big", cols, lambda w: [
            Row(str(i), (i, f"k{i}"), (Text(str(i), justify="right"), Text(f"kernel_{i}")), search=f"k{i}")
            for i in range(self.n)]))


def shown_names(table: ResultTable) -> list[str]:
    return [line.split()[1] for line in screen_lines(table)[1:] if line.strip()]


@pytest.mark.slow
async def test_keys_sort_and_filter_at_100k_rows():
    app = Big()
    async with app.run_test(size=(80, 24)) as pilot:
        table = app.query_one(ResultTable)
        table.focus()
        await pilot.pause()
        assert table.row_count == 100_000 and table.virtual_size.height == 100_001
        assert shown_names(table)[:3] == ["kernel_0", "kernel_1", "kernel_2"]
        await pilot.press("G")
        await pilot.pause()
        assert table.cursor_row == 99_999 and shown_names(table)[-1] == "kernel_99999"
        await pilot.press("up", "pageup", "pagedown", "down")
        await pilot.pause()
        assert table.cursor_row == 99_999
        assert table.current_row().key == "99999"
        table.sort_by(1, True)   # names, Z to A: the cursor stays on its row
        await pilot.pause()
        assert table.current_row().key == "99999"
        assert [r.values[1] for r in table.rows_shown[:3]] == ["k99999", "k99998", "k99997"]
        assert table.rows_shown[table.cursor_row].key == "99999"
        table.set_filter("k9999")
        await pilot.pause()
        assert [r.key for r in table.rows_shown] == ["99999", *(str(99990 + i) for i in range(8, -1, -1)), "9999"]
        assert shown_names(table)[0] == "kernel_99999"
        table.set_filter("")
        await pilot.pause()
        assert table.row_count == 100_000


class Clicks(Twins):
    def __init__(self, spec: TableSpec) -> None:
        super().__init__(spec)
        self.selected: list[int] = []

    def on_result_table_row_selected(self, event: ResultTable.RowSelected) -> None:
        self.selected.append(event.cursor_row)


async def test_mouse_clicks_reach_rows_and_headers():
    app = Clicks(awkward_spec())
    async with app.run_test(size=(70, 40)) as pilot:
        table = app.query_one(ResultTable)
        await pilot.pause()
        selected = app.selected
        await pilot.click(ResultTable, offset=(3, 5))  # line 0 is the header: row 4
        await pilot.pause()
        assert table.cursor_row == 4
        await pilot.click(ResultTable, offset=(3, 5))  # again: selected
        await pilot.pause()
        assert selected == [4]
        await pilot.click(ResultTable, offset=(20, 0))  # header of the name column: sort by it
        await pilot.pause()
        assert table.sort_column == 1
        table.scroll_to(y=30, animate=False)
        await pilot.pause()
        await pilot.click(ResultTable, offset=(3, 2))
        await pilot.pause()
        assert table.cursor_row == 31


async def test_trace_strings_are_shown_literally():
    names = ["[bold red]x[/]", "esc\x1b[31mred", "tab\tand\nnewline", "zero\u200bwidth\u200d", "",
             "漢字かな", "e\u0301\u0301combining", "\u202eright-to-left", "x" * 300]
    cols = [Column("name", "Kernel", "name", max_width=40)]

    class Names(App):
        def compose(self) -> ComposeResult:
            yield ResultTable(id="t")

        def on_mount(self) -> None:
            self.query_one(ResultTable).show(TableSpec("names", cols, lambda w: [
                Row(str(i), (n,), (literal(n),), search=n) for i, n in enumerate(names)]))

    app = Names()
    async with app.run_test(size=(60, 14)) as pilot:
        table = app.query_one(ResultTable)
        await pilot.pause()
        lines = [table.render_line(y) for y in range(table.size.height)]
        assert all(s.cell_length == 60 for s in lines)
        text = ["".join(seg.text for seg in s) for s in lines]
        assert text[1].strip() == "[bold red]x[/]"        # markup shown, not applied
        assert "\x1b" not in "".join(text) and "\t" not in "".join(text) and "\n" not in "".join(text)
        assert all(not seg.style or not seg.style.link for s in lines for seg in s)
        assert text[6].strip() == "漢字かな"


class Collected(App):
    """A table whose rows, and whose sort key, record whether the cyclic collector was on."""

    def __init__(self, fail: bool = False) -> None:
        super().__init__()
        self.fail = fail
        self.seen: list[tuple[str, bool]] = []

    def compose(self) -> ComposeResult:
        yield ResultTable(id="t")

    def spec(self) -> TableSpec:
        import gc

        from kerneldiff.tui.widgets.result_table import Sort

        def build(widths):
            self.seen.append(("build", gc.isenabled()))
            if self.fail:
                raise RuntimeError("a view that fails to build")
            return [Row(str(i), (i, f"k{i}"), (Text(str(i)), Text(f"k{i}"))) for i in range(50)]

        def key(row):
            self.seen.append(("order", gc.isenabled()))
            return row.values[0]
        return TableSpec("collected", [Column("i", "#", "int", 4), Column("name", "Kernel", "name")], build,
                         default_sort="i", sorts={"i": Sort("i", key, ("i",)), "name": Sort("name", key, ("name",))})


async def test_rows_are_built_and_ordered_without_the_collector_which_comes_back_after():
    """100,000 rows are about a million objects and no cycles: the collector's passes over the growing
    heap were half of a kernels view's first frame. It is paused while a table builds and orders its
    rows, and on again after the next refresh (its first pass over the new rows comes after the frame
    that shows them), also when a view fails to build."""
    import gc

    assert gc.isenabled()
    app = Collected()
    async with app.run_test(size=(80, 24)) as pilot:
        table = app.query_one(ResultTable)
        table.show(app.spec())
        assert not gc.isenabled()            # until the frame that shows the rows is out
        await pilot.pause()
        assert {what for what, _ in app.seen} == {"build", "order"}
        assert not any(on for _, on in app.seen), app.seen
        assert gc.isenabled()
        app.seen.clear()
        table.sort_named("name", reverse=False)   # ordered again: paused again
        assert app.seen and not any(on for _, on in app.seen)
        await pilot.pause()
        assert gc.isenabled()
        assert table.current_row() is not None
    app = Collected(fail=True)
    async with app.run_test(size=(80, 24)) as pilot:
        with pytest.raises(RuntimeError):
            app.query_one(ResultTable).show(app.spec())
        assert app.seen == [("build", False)]
        await pilot.pause()
        assert gc.isenabled()
    # a table that is not running (never mounted) has no refresh to wait for: the collector is back at once
    table = ResultTable()
    with pytest.raises(RuntimeError):
        table.show(Collected(fail=True).spec())
    assert gc.isenabled()


class Named(App):
    def compose(self) -> ComposeResult:
        yield ResultTable(id="t")


def named_spec(names: list[str]) -> TableSpec:
    from kerneldiff.tui.text import shortener

    def build(widths):
        short = shortener(names, widths["name"])
        return [Row(str(i), (i, n), lambda n=n, i=i: (Text(str(i)), literal(short(n)))) for i, n in enumerate(names)]
    return TableSpec("named", [Column("i", "#", "int", 5), Column("name", "Kernel", "name", max_width=60)], build)


async def test_a_long_name_column_tells_alike_names_apart_after_its_first_frame(monkeypatch):
    """Past text.LATER_NAMES names (100,000 take 1-1.5 s to tell apart), a table's first frame shows
    each name shortened alone, and the names that read alike are told apart in a thread after it,
    then drawn again: the end is what `distinct_short_names` gives, as for a short column. A build
    replaced meanwhile (a resize, another view) leaves its names to the build that replaced it."""
    from kerneldiff.core.names.display import distinct_short_names, short_name
    from kerneldiff.tui import text

    monkeypatch.setattr(text, "LATER_NAMES", 50)
    names = [f"void vllm::rms_norm_kernel<c10::BFloat16, {i}, 2>" for i in range(200)]
    app = Named()
    async with app.run_test(size=(40, 12)) as pilot:
        table = app.query_one(ResultTable)
        table.show(named_spec(names))
        width = table._widths["name"]
        assert table.later_pending
        first = [c[1].plain for c in map(table._cells_of, range(5))]
        assert first == [short_name(n, width) for n in names[:5]] and len(set(first)) == 1   # alike, for now
        table.show(named_spec(names[::-1]))   # rebuilt before the first build's names came
        await pilot.pause()
        # said on screen meanwhile: these names will change
        assert [n.message for n in app._notifications] == ["200 names: those that read alike are told apart in a moment"]
        await wait_until(pilot, lambda: not table.later_pending)
        await pilot.pause()
        final = distinct_short_names(names, width)
        shown = [table._cells_of(i)[1].plain for i in range(len(names))]
        assert shown == [final[n] for n in names[::-1]]
        assert len(set(shown)) == len(names)
        assert [ln.split()[1] for ln in screen_lines(table)[1:4]] == [final[n] for n in names[::-1][:3]]
    # outside a table's build (a report, a detail pane) the names are told apart at once
    short = text.shortener(names, 30)
    assert [short(n) for n in names] == [distinct_short_names(names, 30)[n] for n in names]
