"""What every explorer screen shares: back, filter by name or category, sort, export."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.lazy import Lazy
from textual.screen import Screen
from textual.widgets import Input, TabbedContent, TabPane
from textual.widget import Widget

from ..export import table_export, write_table
from ..messages import Exported
from ..widgets.footer import Footer
from ..widgets.header import Breadcrumb
from ..widgets.result_table import ResultTable
from ..widgets.table_pane import DetailScroll, TablePane


class FilterInput(Input):
    """The `/` prompt: filters the current table by name or category as you type."""

    DEFAULT_CSS = """
    FilterInput, FilterInput:focus { dock: bottom; height: 1; border: none; padding: 0 1; margin-bottom: 1;
                                     display: none; background: $boost; }
    FilterInput.-shown { display: block; }
    """


class ExplorerScreen(Screen):
    BINDINGS = [
        Binding("escape", "back", "Back",
                tooltip="Back one level (closes the filter, leaves a detail pane; the top level stays: q quits)"),
        Binding("slash", "filter", "Filter", key_display="/",
                tooltip="Filter the table by name or category as you type (/gemm: every GEMM kernel)"),
        Binding("s", "sort_named('gap')", "Sort",
                tooltip="Sort by gap: largest |gap| first, the slowest relative to the other side (again: reverse)"),
        Binding("t", "sort_named('time')", "By time", show=False,
                tooltip="Sort by time: largest first (A + B in a comparison; again: reverse)"),
        Binding("n", "sort_named('name')", "By name", show=False, tooltip="Sort by name, A to Z (again: reverse)"),
        Binding("o", "sort", "Next column", show=False, tooltip="Sort by the next column (numbers largest first)"),
        Binding("S", "reverse_sort", "Reverse sort", show=False, tooltip="Reverse the sort direction"),
        Binding("e", "export('csv')", "Export", tooltip="Export the table as CSV (current dir or $KERNELDIFF_EXPORT_DIR)"),
        Binding("E", "export('json')", "Export JSON", show=False, tooltip="Export the table as JSON"),
    ]

    def current_table(self) -> ResultTable | None:
        """The table the table actions apply to (subclasses pick the visible one)."""
        focused = self.focused
        if isinstance(focused, ResultTable):
            return focused
        tables = [t for t in self.query(ResultTable) if t.display and t.region.area]
        return tables[0] if tables else None

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("filter", "sort", "sort_named", "reverse_sort", "export"):
            return self.current_table() is not None
        return True

    # --- back ---------------------------------------------------------------------------------
    def action_back(self) -> None:
        focused = self.focused
        if isinstance(focused, FilterInput):
            self.close_filter(clear=True)
            return
        if isinstance(focused, DetailScroll):
            table = focused.parent.query(ResultTable) if focused.parent else None
            if table:
                table.first().focus()
                return
        table = self.current_table()
        if table is not None and table.filter_text:  # a filtered table: Esc clears the filter first
            self._filter_target = table
            self.close_filter(clear=True)
            self._notify_about("filter", "filter cleared", timeout=2)
            return
        self.go_back()

    def _notify_about(self, topic: str, message: str, **kwargs) -> None:
        """A notice that a newer one on `topic` replaces (KernelDiffApp.notify_about)."""
        about = getattr(self.app, "notify_about", None)
        if about is not None:
            about(topic, message, **kwargs)
        else:
            self.notify(message, **kwargs)

    top_level = False   # the comparison (or one trace) itself: nothing above it to go back to

    def go_back(self) -> None:
        if self.top_level:
            # the start screen lies below, but going there would drop what is shown: say what to do
            self.notify("this is the top level: q quits", timeout=3)
            return
        if len(self.app.screen_stack) > 1:
            self.app.pop_screen()

    # --- filter -------------------------------------------------------------------------------
    def action_filter(self) -> None:
        table = self.current_table()
        if table is None:
            return
        self._filter_target = table
        inp = self.query_one(FilterInput)
        inp.value = table.filter_text
        inp.add_class("-shown")
        inp.focus()

    def on_input_changed(self, event: Input.Changed) -> None:
        if isinstance(event.input, FilterInput):
            table = getattr(self, "_filter_target", None) or self.current_table()
            if table is not None:
                table.set_filter(event.value)
                self.after_filter(table)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if isinstance(event.input, FilterInput):
            self.close_filter(clear=False)

    def close_filter(self, clear: bool) -> None:
        inp = self.query_one(FilterInput)
        table = getattr(self, "_filter_target", None) or self.current_table()
        if clear:
            withdraw = getattr(self.app, "withdraw", None)
            if withdraw is not None:
                withdraw("filter")
            inp.value = ""
            if table is not None:
                table.set_filter("")
                self.after_filter(table)
        inp.remove_class("-shown")
        if table is not None:
            table.focus()
            if not clear and table.filter_text:
                self._notify_about("filter", f"filter {table.filter_text!r}: {len(table.rows_shown)} of "
                                      f"{len(table.rows_all)} rows · Esc clears", timeout=3, markup=False)

    def after_filter(self, table: ResultTable) -> None:
        """Hook: a table's visible rows changed."""

    # --- sort / export ------------------------------------------------------------------------
    def action_sort(self) -> None:
        table = self.current_table()
        if table is not None and table.spec is not None:
            self.notify(table.cycle_sort(), timeout=2)

    def action_sort_named(self, name: str) -> None:
        table = self.current_table()
        if table is None or table.spec is None:
            return
        if not table.spec.sorts:   # a table without named orders (AIE runs): s walks the columns
            self.notify(table.cycle_sort() if name == "gap" else f"this table has no {name} to sort by", timeout=2)
            return
        if name == "gap" and "gap" not in table.spec.sorts and "time" in table.spec.sorts:
            name = "time"   # one trace (browse): nothing to compare, the slowest is the longest
        self.notify(table.sort_named(name), timeout=2)

    def action_reverse_sort(self) -> None:
        table = self.current_table()
        if table is not None and table.spec is not None:
            self.notify(table.reverse_sort(), timeout=2)

    def export_name(self, table: ResultTable) -> str:
        phase = getattr(self.app, "phase", "all")
        return f"{table.spec.name}-{phase}"

    def action_export(self, fmt: str = "csv") -> None:
        table = self.current_table()
        if table is None or table.spec is None:
            self.notify("nothing to export on this screen", severity="warning")
            return
        header, rows = table_export(getattr(self, "comparison", None), table)
        try:
            path = write_table(self.export_name(table), header, rows, fmt)
        except OSError as e:
            self.notify(f"export failed: {e.strerror or e}", severity="error", markup=False)
            return
        self.post_message(Exported(path))
        self.notify(f"{len(rows)} rows → {path}", title="Exported", markup=False, timeout=6)


# a tab's shorter title, used (longest first) when the full titles do not fit the tab bar
SHORT_TITLES = {"Same kernels": "Same", "Operations": "Ops", "Warnings": "Warn", "Timeline": "Time",
                "Summary": "Sum", "Modules": "Mods", "Kernels": "Kern", "Layers": "Lay", "Shapes": "Shp"}
TAB_PAD = 2      # a Tab's padding (0 1)


def tab_labels(tabs, counts: dict[str, int], width: int) -> dict[str, str]:
    """key -> label: the title and its count (a zero count left out: the header says it), shortened
    (longest title first) until the bar fits `width` cells; what fits is never cut mid-word."""
    titles = dict(tabs)

    def label(key: str) -> str:
        n = counts.get(key)
        return f"{titles[key]} {n}" if n else titles[key]

    def total() -> int:
        return sum(len(label(k)) + TAB_PAD for k in titles)

    for full in sorted((t for t in titles.values() if t in SHORT_TITLES), key=len, reverse=True):
        if total() <= width:
            break
        titles = {k: (SHORT_TITLES[t] if t == full else t) for k, t in titles.items()}
    return {k: label(k) for k in titles}


class TabbedExplorerScreen(ExplorerScreen):
    """An explorer screen whose tables sit in tabs, one `TablePane` (id `pane-<key>`) per tab.

    Subclasses set `tabs` ((key, title), …), `crumb_root` and implement `_pane(key)` and
    `_header()`; they handle their own drill-downs in `open_row`, returning False to fall back
    to focusing the row's detail pane."""

    tabs: tuple[tuple[str, str], ...] = ()
    crumb_root = ""
    top_level = True
    # the hidden tabs' panes are mounted after the first frame (textual.lazy.Lazy): the first frame
    # waits for one table instead of all of them. A screen that sets this fills each pane when it
    # posts TablePane.Ready, and meanwhile finds no pane for a tab not mounted yet (`pane`)
    lazy_panes = False

    def compose(self) -> ComposeResult:
        yield Breadcrumb(*self._crumbs())
        yield self._header()
        with TabbedContent(id="tabs"):
            for i, (key, title) in enumerate(self.tabs):
                with TabPane(title, id=f"tab-{key}"):
                    yield Lazy(self._pane(key)) if self.lazy_panes and i else self._pane(key)
        yield FilterInput(placeholder="filter by name or category (Enter keeps it, Esc clears)", id="filter")
        yield Footer()

    def _header(self) -> Widget:
        raise NotImplementedError

    def _pane(self, key: str) -> TablePane:
        raise NotImplementedError

    def _crumbs(self) -> list[str]:
        first = self.tabs[0][1]
        title = dict(self.tabs).get(self._active_key(), first) if self.is_mounted else first
        return [self.crumb_root, title]

    def _active_key(self) -> str:
        active = self.query_one(TabbedContent).active or f"tab-{self.tabs[0][0]}"
        return active.removeprefix("tab-")

    tab_offset = 0      # tabs before the one the key 1 names
    _tab_counts: dict[str, int] | None = None

    def label_tabs(self, counts: dict[str, int]) -> None:
        """Each tab's title with its count, in words short enough that the tab bar fits the screen's
        width (`tab_labels`); again on every resize."""
        self._tab_counts = counts
        tabs = self.query_one(TabbedContent)
        for key, label in tab_labels(self.tabs, counts, self.size.width or self.app.size.width).items():
            tabs.get_tab(f"tab-{key}").label = label

    def on_resize(self, event) -> None:
        if self._tab_counts is not None:
            self.label_tabs(self._tab_counts)

    def action_show_tab(self, index: int) -> None:
        index += self.tab_offset
        if 0 <= index < len(self.tabs):
            self.query_one(TabbedContent).active = f"tab-{self.tabs[index][0]}"

    def on_tabbed_content_tab_activated(self, event: TabbedContent.TabActivated) -> None:
        self.query_one(Breadcrumb).set_parts(*self._crumbs())
        self.call_after_refresh(self.focus_active_table)

    def pane(self, key: str) -> TablePane | None:
        """The pane of tab `key`; None while a lazily mounted one is not yet (`lazy_panes`)."""
        found = self.query(f"#pane-{key}")
        return found.first(TablePane) if found else None

    def focus_active_table(self) -> None:
        """Focus the table of the tab active *now*: a deferred focus decided earlier could land on a
        tab the user has already left (a key pressed while the first frame was still drawing)."""
        pane = self.pane(self._active_key())
        if pane is not None:   # (else it is focused when it is mounted: `on_table_pane_ready`)
            pane.table.focus()

    def on_table_pane_ready(self, event: TablePane.Ready) -> None:
        if self.lazy_panes and event.pane.id == f"pane-{self._active_key()}":
            self.call_after_refresh(self.focus_active_table)   # (its tab may have been opened before it was there)

    def current_table(self) -> ResultTable | None:
        focused = self.focused
        if isinstance(focused, ResultTable):
            return focused
        pane = self.pane(self._active_key())
        return pane.table if pane is not None else None

    def on_result_table_row_selected(self, event: ResultTable.RowSelected) -> None:
        table = event.table
        if not isinstance(table, ResultTable):
            return
        row = table.current_row()
        if row is None or self.open_row(table, row):
            return
        details = table.parent.query(DetailScroll) if table.parent is not None else None
        if details:
            details.first().focus()

    def open_row(self, table: ResultTable, row) -> bool:
        """Drill down from `row`; False when the row has nowhere to go."""
        return False
