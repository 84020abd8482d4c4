"""The main screen: the comparison (or one trace in browse mode) in tabs."""

from __future__ import annotations

from rich.text import Text
from textual.binding import Binding
from textual.widgets import TabbedContent

from kerneldiff.core.compare.result import Comparison, LayerRow, SameKernel

from .. import views
from ..text import DIM, SIDE_STYLE, literal
from ..widgets.header import ComparisonHeader, TraceHeader
from ..widgets.result_table import ResultTable
from ..widgets.table_pane import TablePane
from .base import TabbedExplorerScreen

COMPARE_TABS = (("layers", "Layers"), ("operations", "Operations"), ("fusion", "Fusion"),
                ("same_kernels", "Same kernels"), ("warnings", "Warnings"))
BROWSE_TABS = (("layers", "Layers"), ("operations", "Operations"), ("kernels", "Kernels"), ("warnings", "Warnings"))


class MainScreen(TabbedExplorerScreen):
    """Tabs over one Comparison. `single=True` browses one trace (a self-comparison's side A)."""

    BINDINGS = [
        Binding("1", "show_tab(0)", "Tab 1", show=False, tooltip="Layers tab"),
        Binding("2", "show_tab(1)", "Tab 2", show=False, tooltip="Operations tab"),
        Binding("3", "show_tab(2)", "Tab 3", show=False, tooltip="Fusion tab (browse: Kernels)"),
        Binding("4", "show_tab(3)", "Tab 4", show=False, tooltip="Same kernels tab (browse: Warnings)"),
        Binding("5", "show_tab(4)", "Tab 5", show=False, tooltip="Warnings tab"),
        Binding("L", "open_slowest", "Slowest layer", show=False, tooltip="Open the layer with the largest gap"),
    ]

    def __init__(self, comparison: Comparison, single: bool = False) -> None:
        super().__init__()
        self.comparison = comparison
        self.single = single
        self.tabs = BROWSE_TABS if single else COMPARE_TABS

    # --- layout -------------------------------------------------------------------------------
    @property
    def crumb_root(self) -> str:
        return "browse" if self.single else "compare"

    def _header(self):
        return TraceHeader(id="header") if self.single else ComparisonHeader(id="header")

    def _pane(self, key: str) -> TablePane:
        single = self.single
        if key == "layers":
            return TablePane("layers", hint=self._layers_hint(), id="pane-layers")
        if key == "operations":
            return TablePane("operations", detail=lambda r: views.operation_detail(r.payload, self.comparison, single),
                             detail_height="1fr", id="pane-operations", empty="no kernels in this phase")
        if key == "fusion":
            return TablePane("fusion", detail=lambda r: views.fusion_evidence(r.payload, self.comparison),
                             detail_height="1fr", fit_rows=True, id="pane-fusion",
                             empty="no fusion differences found")
        if key in ("same_kernels", "kernels"):
            return TablePane(key, detail=lambda r: views.same_kernel_detail(r.payload, self.comparison, single),
                             detail_height="1fr", id=f"pane-{key}",
                             empty="no kernel name runs on both sides" if not single else "no kernels")
        return TablePane("warnings", detail=lambda r: views.warning_detail(r.payload, self.comparison),
                         detail_height="1fr", id="pane-warnings", empty="no warnings")

    def _layers_hint(self) -> Text:
        comp = self.comparison
        t = Text()
        if not comp.layers:
            t.append("no transformer layers were found (see Warnings); the other tabs still compare", style=DIM)
            return t
        if self.single:
            t.append("Enter: the layer's kernels", style=DIM)
            return t
        t.append("▀ ", style=SIDE_STYLE["a"])
        t.append("A ", style=f"bold {SIDE_STYLE['a']}")
        t.append(literal(comp.a.label))
        t.append("   ▄ ", style=SIDE_STYLE["b"])
        t.append("B ", style=f"bold {SIDE_STYLE['b']}")
        t.append(literal(comp.b.label))
        t.append("   Enter: kernel pairs", style=DIM)
        return t

    def on_mount(self) -> None:
        self.show_comparison(self.comparison, first=True)

    # --- data ---------------------------------------------------------------------------------
    def show_comparison(self, comp: Comparison, first: bool = False) -> None:
        self.comparison = comp
        single = self.single
        phases = self.app.phase_choices() if hasattr(self.app, "phase_choices") else None
        self.query_one("#header").show(comp, phases)
        self.query_one("#pane-layers", TablePane).set_hint(self._layers_hint())
        keep = not first
        self.query_one("#pane-layers", TablePane).show(views.layers_spec(comp, single), keep_cursor=False)
        self.query_one("#pane-operations", TablePane).show(views.operations_spec(comp, single), keep_cursor=keep)
        if single:
            self.query_one("#pane-kernels", TablePane).show(views.same_kernels_spec(comp, True), keep_cursor=keep)
        else:
            self.query_one("#pane-fusion", TablePane).show(views.fusion_spec(comp), keep_cursor=keep)
            self.query_one("#pane-same_kernels", TablePane).show(views.same_kernels_spec(comp), keep_cursor=keep)
        self.query_one("#pane-warnings", TablePane).show(views.warnings_spec(comp), keep_cursor=keep)
        for key, title in self.tabs:
            n = self._count(key, comp)
            label = f"{title} {n}" if n is not None else title
            self.query_one(TabbedContent).get_tab(f"tab-{key}").label = label
        if first:
            self.query_one("#layers", ResultTable).focus()

    def _count(self, key: str, comp: Comparison) -> int | None:
        if key == "fusion":
            return len(comp.fusions)
        if key == "warnings":
            return len(comp.warnings)
        return None

    # --- drill-down ---------------------------------------------------------------------------
    def export_name(self, table: ResultTable) -> str:
        return f"{table.spec.name}-{self.comparison.phase}"

    def open_row(self, table: ResultTable, row) -> bool:
        if isinstance(row.payload, LayerRow):
            self.open_layer(row.payload.layer)
        elif isinstance(row.payload, SameKernel):
            self.app.open_same_kernel(row.payload, crumbs=self._crumbs())
        else:
            return False
        return True

    def open_layer(self, layer: int) -> None:
        from .layer import LayerScreen

        self.app.push_screen(LayerScreen(self.comparison, layer, single=self.single))

    def action_open_slowest(self) -> None:
        if self.comparison.layers:
            if self.single:
                layer = max(self.comparison.layers, key=lambda r: r.a.total_us).layer
            else:
                layer = self.comparison.layers[0].layer
            self.open_layer(layer)
        else:
            self.notify("no transformer layers were found in these traces", severity="warning")
