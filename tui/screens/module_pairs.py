"""One module of the module tree: the comparison's kernel pairs its kernels are in, layer by layer
(`Session.module_pairs`), as a slow layer shows its pairs; Enter opens a pair."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.widgets import Static

from kerneldiff.core.session import KernelPair

from .. import module_views as mv
from .. import views
from ..text import DIM, literal
from ..widgets.footer import Footer
from ..widgets.header import Breadcrumb
from ..widgets.result_table import ResultTable
from .base import ExplorerScreen, FilterInput


class ModulePairsScreen(ExplorerScreen):
    DEFAULT_CSS = """
    ModulePairsScreen #module-pairs-summary { height: auto; max-height: 3; padding: 0 1; background: $boost; }
    ModulePairsScreen #module-pair-status { height: 4; padding: 0 1; border-top: solid $primary-darken-2; }
    """

    def __init__(self, session, comparison, node, crumbs: list[str]) -> None:
        super().__init__()
        self.session = session
        self.comparison = comparison
        self.node = node
        self.parent_crumbs = crumbs
        self.found = None

    def crumbs(self) -> list[str]:
        return [*self.parent_crumbs, self.node.name]

    def compose(self) -> ComposeResult:
        yield Breadcrumb(*self.crumbs())
        yield Static(id="module-pairs-summary")
        yield ResultTable(id="module_pairs")
        yield Static(id="module-pair-status")
        yield FilterInput(placeholder="filter kernels by name or category (Enter keeps it, Esc clears)", id="filter")
        yield Footer()

    def on_mount(self) -> None:
        self.found = self.session.module_pairs(self.comparison, self.node.path)
        self.query_one("#module-pairs-summary", Static).update(mv.module_pairs_summary(self.node, self.found))
        table = self.query_one("#module_pairs", ResultTable)
        table.show(mv.module_pairs_spec(self.found))
        table.focus()
        self._update_status()

    def on_result_table_row_highlighted(self, event: ResultTable.RowHighlighted) -> None:
        self._update_status()

    def after_filter(self, table: ResultTable) -> None:
        self._update_status()

    def _update_status(self) -> None:
        table = self.query_one("#module_pairs", ResultTable)
        row = table.current_row()
        status = self.query_one("#module-pair-status", Static)
        if row is None:
            status.update(Text("no kernel matches the filter" if table.filter_text else "", style=DIM))
            return
        layer, pair = row.payload
        t = Text()
        t.append_text(literal(f"layer {layer}: ", DIM))
        t.append_text(views.pair_status(pair, self.size.width - 2, self.comparison, layer))
        t.append("\n")
        t.append("Enter: kernel detail", style=DIM)
        status.update(t)

    def on_result_table_row_selected(self, event: ResultTable.RowSelected) -> None:
        row = self.query_one("#module_pairs", ResultTable).current_row()
        if row is None or not isinstance(row.payload, tuple) or not isinstance(row.payload[1], KernelPair):
            return
        from .kernel import pair_screen

        layer, pair = row.payload
        self.app.push_screen(pair_screen(self.session, self.comparison, pair, layer, self.crumbs(),
                                         self.comparison.alignment(layer)))
