"""AMD AIE (NPU) traces in the explorer: the cores → a core's iterations, the system aggregate,
and (two runs) the comparison, with the keys of every other explorer screen.

`AieScreen` holds tabs (Cores, System, [Compare, Per iteration], Notes); Enter on a core opens
`AieCoreScreen` with that core's iterations. Tables are `ResultTable`s, so `/` filters, `s` sorts and
`e` exports like everywhere else; the detail pane under each table follows the highlighted row and
carries the notes (why iterations are missing or merged).
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import Static, TabbedContent

from ..widgets.footer import Footer
from ..widgets.header import Breadcrumb
from ..widgets.result_table import ResultTable
from ..widgets.table_pane import DetailScroll, TablePane
from . import aie_views as v
from .aie_views import AieView
from .base import ExplorerScreen, FilterInput, TabbedExplorerScreen

SINGLE_TABS = (("cores", "Cores"), ("system", "System"), ("notes", "Notes"))
COMPARE_TABS = (("cores", "Cores"), ("system", "System"), ("compare", "Compare"), ("paired", "Per iteration"),
                ("notes", "Notes"))


class AieHeader(Static):
    DEFAULT_CSS = """
    AieHeader { height: auto; max-height: 3; padding: 0 1; background: $boost; text-wrap: nowrap;
                text-overflow: ellipsis; }
    """


class AieScreen(TabbedExplorerScreen):
    """One AIE run (or two side by side) in tabs."""

    BINDINGS = [
        Binding("1", "show_tab(0)", "Tab 1", show=False, tooltip="AIE: Cores tab"),
        Binding("2", "show_tab(1)", "Tab 2", show=False, tooltip="AIE: System tab"),
        Binding("3", "show_tab(2)", "Tab 3", show=False, tooltip="AIE: Notes tab (two runs: Compare)"),
        Binding("4", "show_tab(3)", "Tab 4", show=False, tooltip="AIE two runs: Per iteration tab"),
        Binding("5", "show_tab(4)", "Tab 5", show=False, tooltip="AIE two runs: Notes tab"),
        Binding("a", "show_system", "System", tooltip="AIE: the system aggregate (perf iterations on every core)"),
    ]

    def __init__(self, view: AieView) -> None:
        super().__init__()
        self.view = view
        self.tabs = COMPARE_TABS if view.compare else SINGLE_TABS

    @property
    def crumb_root(self) -> str:
        return "aie compare" if self.view.compare else "aie"

    def _header(self) -> AieHeader:
        return AieHeader(id="header")

    def _pane(self, key: str) -> TablePane:
        s = self.view
        if key == "cores":
            return TablePane("cores", detail=lambda r: v.core_detail(s, *r.payload), detail_height="1fr",
                             hint=v.cores_hint(s), empty="the trace has no compute cores", fit_rows=True,
                             id="pane-cores")
        if key == "system":
            return TablePane("system", detail=lambda r: v.system_detail(s, *r.payload), detail_height="1fr",
                             hint=v.system_hint(s), empty="no perf iteration is present on every core (see Notes)",
                             fit_rows=True, id="pane-system")
        if key == "compare":
            return TablePane("compare", hint=v.compare_hint(s), id="pane-compare")
        if key == "paired":
            return TablePane("paired", hint=v.paired_hint(), empty="no common perf iterations", id="pane-paired")
        return TablePane("notes", detail=lambda r: v.note_detail(*r.payload), detail_height="1fr",
                         empty="no notes: every core paired cleanly", fit_rows=True, id="pane-notes")

    def on_mount(self) -> None:
        s = self.view
        self.query_one("#header", AieHeader).update(v.header_text(s))
        specs = {"cores": v.cores_spec, "system": v.system_spec, "notes": v.notes_spec}
        if s.compare:
            specs |= {"compare": v.compare_spec, "paired": v.paired_spec}
        for key, build in specs.items():
            self.query_one(f"#pane-{key}", TablePane).show(build(s))
        counts = {"cores": sum(len(r.cores) for r in s.runs), "notes": len(s.notes())}
        for key, title in self.tabs:
            if key in counts:
                self.query_one(TabbedContent).get_tab(f"tab-{key}").label = f"{title} {counts[key]}"
        self.query_one("#cores", ResultTable).focus()

    def action_show_system(self) -> None:
        self.query_one(TabbedContent).active = "tab-system"

    def export_name(self, table: ResultTable) -> str:
        return f"aie-{table.spec.name}"

    # --- drill-down ---------------------------------------------------------------------------
    def open_row(self, table: ResultTable, row) -> bool:
        if table.id != "cores":
            return False
        index, core = row.payload
        self.app.push_screen(AieCoreScreen(self.view, index, core))
        return True


class AieCoreScreen(ExplorerScreen):
    """One core: its iterations (phase, kernels, cycles, span, GMAC/s) and, below, the highlighted
    iteration with the core's notes."""

    DEFAULT_CSS = """
    AieCoreScreen #core-summary { height: auto; max-height: 2; padding: 0 1; background: $boost; }
    """

    def __init__(self, view: AieView, index: int, core) -> None:
        super().__init__()
        self.view = view
        self.run_index = index
        self.core = core

    def crumbs(self) -> list[str]:
        s = self.view
        return ["aie compare" if s.compare else "aie", "Cores", s.who(self.run_index, self.core.tile)]

    def compose(self) -> ComposeResult:
        s, i, core = self.view, self.run_index, self.core
        yield Breadcrumb(*self.crumbs())
        yield Static(v.core_summary(s, i, core), id="core-summary")
        empty = core.notes[0] if core.notes else "no iterations"
        yield TablePane("iterations", detail=lambda r: v.iteration_detail(s, i, core, r.payload), detail_height="1fr",
                        empty=empty, fit_rows=True, id="pane-iterations")
        yield FilterInput(placeholder="filter by phase or index (Enter keeps it, Esc clears)", id="filter")
        yield Footer()

    def on_mount(self) -> None:
        pane = self.query_one("#pane-iterations", TablePane)
        pane.show(v.iterations_spec(self.view, self.run_index, self.core))
        pane.table.focus()

    def export_name(self, table: ResultTable) -> str:
        return f"aie-{table.spec.name}"

    def on_result_table_row_selected(self, event: ResultTable.RowSelected) -> None:
        if self.query_one("#iterations", ResultTable).current_row() is not None:
            self.query_one(DetailScroll).focus()
