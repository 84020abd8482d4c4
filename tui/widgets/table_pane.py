"""A result table with an optional detail pane that follows the highlighted row."""

from __future__ import annotations

from typing import Any, Callable

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.message import Message
from textual.widgets import Static

from ..text import DIM
from .result_table import ResultTable, Row, TableSpec


class DetailScroll(VerticalScroll):
    """Scrollable detail text; j/k scroll like the tables."""

    BINDINGS = [
        Binding("j", "scroll_down", "Scroll down", show=False),
        Binding("k", "scroll_up", "Scroll up", show=False),
    ]


class TablePane(Vertical):
    """`ResultTable` on top, the highlighted row's detail below (when `detail` is given)."""

    class Ready(Message):
        """The pane is mounted: a screen that mounts its hidden tabs' panes after the first frame
        fills each one then."""

        def __init__(self, pane: TablePane) -> None:
            super().__init__()
            self.pane = pane

    DEFAULT_CSS = """
    TablePane { height: 1fr; }
    TablePane > .hint { height: auto; max-height: 2; color: $text-muted; padding: 0 1; text-wrap: wrap; text-overflow: ellipsis; }
    TablePane > ResultTable { height: 2fr; min-height: 5; }
    TablePane > DetailScroll { height: 1fr; min-height: 3; border-top: solid $primary-darken-2; padding: 0 1; }
    TablePane > DetailScroll:focus { border-top: solid $accent; }
    """

    def __init__(self, table_id: str, detail: Callable[[Row], Any] | None = None, detail_height: str | None = None,
                 hint: Text | str | None = None, empty: str = "nothing to show", fit_rows: bool = False,
                 id: str | None = None) -> None:
        super().__init__(id=id)
        self.fit_rows = fit_rows
        self.table_id = table_id
        self.detail = detail
        self.detail_height = detail_height
        self.hint = hint
        self.empty = empty

    def compose(self) -> ComposeResult:
        if self.hint is not None:
            yield Static(self.hint, classes="hint")
        table = ResultTable(id=self.table_id)
        if self.fit_rows:  # short lists: the table takes its rows' height, the detail the rest
            table.styles.height = "auto"
            table.styles.max_height = "50%"
        yield table
        if self.detail is not None:
            with DetailScroll(classes="detail") as d:
                if self.detail_height:  # share of the pane's height, e.g. "1fr" against the table's 2fr
                    d.styles.height = self.detail_height
                yield Static(Text(""), classes="detail-body")

    def on_mount(self) -> None:
        self.post_message(self.Ready(self))

    @property
    def table(self) -> ResultTable:
        return self.query_one(ResultTable)

    def show(self, spec: TableSpec, keep_cursor: bool = False) -> None:
        self.table.show(spec, keep_cursor=keep_cursor)
        self.update_detail()

    def set_hint(self, hint: Text | str) -> None:
        self.hint = hint
        for s in self.query(".hint"):
            s.update(hint)
            s.display = bool(str(hint))   # an empty hint takes no line

    def on_result_table_row_highlighted(self, event: ResultTable.RowHighlighted) -> None:
        self.update_detail()

    def update_detail(self) -> None:
        if self.detail is None:
            return
        body = self.query_one(".detail-body", Static)
        row = self.table.current_row()
        if row is None:
            body.update(Text(self.empty if not self.table.filter_text else "no row matches the filter", style=DIM))
        else:
            body.update(self.detail(row))
        self.query_one(DetailScroll).scroll_home(animate=False)
