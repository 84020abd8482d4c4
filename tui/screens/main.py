"""The main screen: the comparison of two traces in tabs. (One trace on its own: screens/browse.py.)"""

from __future__ import annotations

from functools import partial
from typing import Callable

from textual.binding import Binding

from kerneldiff.core.session import Comparison, LayerRow, OperationRow, SameKernel
from kerneldiff.core.session import AttentionShape, GemmShape

from .. import shape_views, summary_views, views
from ..messages import ComparisonShown, Exported
from ..widgets.header import ComparisonHeader
from ..widgets.result_table import ResultTable
from ..widgets.table_pane import TablePane
from .base import TabbedExplorerScreen

COMPARE_TABS = (("summary", "Summary"), ("layers", "Layers"), ("operations", "Operations"), ("fusion", "Fusion"),
                ("same_kernels", "Same kernels"), ("warnings", "Warnings"), ("timeline", "Timeline"),
                ("shapes", "Shapes"))

# the tab keys of the compare screen (browse has its own: BROWSE_TAB_BINDINGS)
TAB_BINDINGS = [
    Binding("0", "show_tab(-1)", "Summary", show=False, tooltip="Summary tab: the wall-clock gap, cause by cause"),
    Binding("1", "show_tab(0)", "Tab 1", show=False, tooltip="Layers tab"),
    Binding("2", "show_tab(1)", "Tab 2", show=False, tooltip="Operations tab"),
    Binding("3", "show_tab(2)", "Tab 3", show=False, tooltip="Fusion tab"),
    Binding("4", "show_tab(3)", "Tab 4", show=False, tooltip="Same kernels tab"),
    Binding("5", "show_tab(4)", "Tab 5", show=False, tooltip="Warnings tab"),
    Binding("6", "show_tab(5)", "Tab 6", show=False, tooltip="Timeline tab: busy/idle per pass"),
    Binding("7", "show_tab(6)", "Tab 7", show=False, tooltip="Shapes tab: GEMM and attention shapes side by side"),
    Binding("L", "open_slowest", "Slowest layer", show=False,
            tooltip="Open the layer with the largest gap"),
]


class MainScreen(TabbedExplorerScreen):
    """Tabs over the comparison the app holds (`app.result`), for the session's two traces."""

    BINDINGS = [*TAB_BINDINGS,
                Binding("a", "toggle_shapes", "GEMM/attention", show=False,
                        tooltip="Shapes tab: switch between GEMM and attention shapes"),
                Binding("m", "open_modules", "Modules", show=False,
                        tooltip="The module tree (GPU time per module path) and the host hotspots, side by side"),
                Binding("h", "write_report", "HTML report", show=False,
                        tooltip="Write the HTML report and the Perfetto file (both traces, passes lined up) of this "
                                "comparison and phase (current dir or $KERNELDIFF_EXPORT_DIR)")]
    tabs = COMPARE_TABS
    lazy_panes = True
    tab_offset = 1      # keys 1–7 keep naming Layers … Shapes; 0 is the Summary before them
    crumb_root = "compare"

    def __init__(self, session) -> None:
        super().__init__()
        self.session = session
        self.comparison: Comparison | None = None
        self.shape_kind = shape_views.GEMM   # what the Shapes tab lists (`a` toggles)

    # --- layout -------------------------------------------------------------------------------
    def _header(self) -> ComparisonHeader:
        return ComparisonHeader(id="header")

    def _pane(self, key: str) -> TablePane:
        if key == "summary":
            return TablePane("summary", detail=lambda r: summary_views.ledger_detail(r.payload, self.comparison),
                             detail_height="1fr", id="pane-summary", hint="", empty="no work to account for")
        if key == "layers":
            return TablePane("layers", hint="", id="pane-layers")
        if key == "operations":
            return TablePane("operations", detail=lambda r: views.operation_detail(r.payload, self.comparison),
                             detail_height="1fr", id="pane-operations", empty="no kernels in this phase", hint="")
        if key == "fusion":
            return TablePane("fusion", detail=lambda r: views.fusion_evidence(r.payload, self.comparison),
                             detail_height="1fr", fit_rows=True, id="pane-fusion",
                             empty="no fusion differences found")
        if key == "same_kernels":
            return TablePane(key, detail=lambda r: views.same_kernel_detail(r.payload, self.comparison),
                             detail_height="1fr", id=f"pane-{key}", empty="no kernel name runs on both sides",
                             hint=views.same_kernels_hint())
        if key == "timeline":
            return TablePane("timeline", id="pane-timeline", hint="", empty="no forward passes in this phase")
        if key == "shapes":
            return TablePane("shapes", detail=lambda r: shape_views.shape_detail(r.payload, self.comparison),
                             detail_height="1fr", id="pane-shapes", hint="", empty="no shapes to show")
        return TablePane("warnings", id="pane-warnings", hint="")

    def on_mount(self) -> None:
        self.watch(self.app, "result", self._show_result)

    def _show_result(self, result) -> None:
        if isinstance(result, Comparison):
            self.show_comparison(result)

    # --- data ---------------------------------------------------------------------------------
    def show_comparison(self, comp: Comparison) -> None:
        first = self.comparison is None
        self.comparison = comp
        self.query_one("#header", ComparisonHeader).show(comp, list(self.app.phases))
        for key, _ in self.tabs:
            pane = self.pane(key)
            if pane is not None:   # (a pane mounted later is filled then: on_table_pane_ready)
                self._fill(key, pane, keep=not first)
        counts = {"fusion": len(comp.fusions), "warnings": len(comp.warnings)}
        self.label_tabs(counts)
        if first:
            self.focus_active_table()
        self.call_after_refresh(self.post_message, ComparisonShown(comp))

    def on_table_pane_ready(self, event: TablePane.Ready) -> None:
        key = (event.pane.id or "").removeprefix("pane-")
        if self.comparison is not None and key in dict(self.tabs):
            self._fill(key, event.pane, keep=False)

    def _fill(self, key: str, pane: TablePane, keep: bool) -> None:
        """Show the comparison in tab `key`'s pane (`keep`: the cursor stays on its row, by name)."""
        comp = self.comparison
        if key == "summary":
            pane.set_hint(summary_views.summary_hint(comp))
            pane.show(summary_views.summary_spec(comp), keep_cursor=keep)
        elif key == "layers":
            pane.set_hint(views.layers_hint(comp))
            pane.show(views.layers_spec(comp), keep_cursor=False)
        elif key == "operations":
            pane.set_hint(views.operations_hint(comp))
            pane.show(views.operations_spec(comp), keep_cursor=keep)
        elif key == "fusion":
            pane.show(views.fusion_spec(comp), keep_cursor=keep)
        elif key == "same_kernels":
            pane.show(views.same_kernels_spec(comp), keep_cursor=keep)
        elif key == "warnings":
            pane.show(views.warnings_spec(comp.warnings), keep_cursor=keep)
            pane.set_hint("" if comp.warnings else "no warnings")
        elif key == "timeline":
            pane.set_hint(views.timeline_hint(comp))
            pane.show(views.timeline_spec(comp), keep_cursor=keep)
        elif key == "shapes":
            self._show_shapes(keep)

    def _show_shapes(self, keep: bool) -> None:
        comp = self.comparison
        pane = self.pane("shapes")
        if pane is None:
            return
        pane.set_hint(shape_views.shapes_hint(comp, self.shape_kind))
        pane.show(shape_views.shapes_spec(comp, self.shape_kind), keep_cursor=keep)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "toggle_shapes":
            return self.is_mounted and self._active_key() == "shapes"
        return super().check_action(action, parameters)

    def action_toggle_shapes(self) -> None:
        if self.comparison is None:
            return
        self.shape_kind = shape_views.ATTENTION if self.shape_kind == shape_views.GEMM else shape_views.GEMM
        self._show_shapes(keep=False)   # the hint line says which kind is shown

    # --- reports ----------------------------------------------------------------------------------
    def traces_ready(self) -> bool:
        """A stored comparison is shown before its traces are loaded (kerneldiff.tui.app): what reads
        them says so, for the moment they take."""
        if getattr(self.app, "traces_ready", True):
            return True
        self.notify("the traces behind this comparison are still loading: a moment", timeout=3)
        return False

    def action_write_report(self) -> None:
        if self.comparison is None or not self.traces_ready():
            return
        self.notify("writing the HTML report and the Perfetto file…", timeout=3)
        self.run_worker(partial(self._write_report, self.comparison), thread=True, exclusive=True, group="report",
                        exit_on_error=False)

    def _write_report(self, comp: Comparison) -> None:
        """Thread worker: render and write both files, then say where (or why not) on the UI thread."""
        from ..export import write_reports

        try:
            paths = write_reports(self.session, comp)
        except Exception as e:   # an unwritable directory, or a bug: said on screen, the explorer goes on
            self.app.call_from_thread(self.notify, f"report failed: {getattr(e, 'strerror', None) or e}",
                                      severity="error", markup=False)
            return
        self.app.call_from_thread(self._reported, *paths)

    def _reported(self, page, pair) -> None:
        self.post_message(Exported(page))
        self.notify(f"HTML → {page}\nPerfetto → {pair}", title="Report written", markup=False, timeout=8)

    # --- drill-down ---------------------------------------------------------------------------
    def export_name(self, table: ResultTable) -> str:
        return f"{table.spec.name}-{self.comparison.phase}"

    def open_row(self, table: ResultTable, row) -> bool:
        opening = self._drill_down(table, row)
        if opening is None:
            return False
        if self.traces_ready():
            opening()
        return True

    def _drill_down(self, table: ResultTable, row) -> Callable[[], None] | None:
        """What Enter on `row` opens (every drill-down reads the traces), or None: nowhere to go."""
        from .kernel import same_kernel_screen

        from .drill import operation_screen, outside_layers_screen

        push, p = self.app.push_screen, row.payload
        if isinstance(p, LayerRow) and p.layer < 0:
            return lambda: push(outside_layers_screen(self.session, self.comparison, self._crumbs()))
        if isinstance(p, LayerRow):
            return partial(self.open_layer, p.layer)
        if isinstance(p, OperationRow):
            return lambda: push(operation_screen(self.session, self.comparison, p, self._crumbs()))
        if isinstance(p, SameKernel):
            return lambda: push(same_kernel_screen(self.session, self.comparison, p, self._crumbs()))
        if isinstance(p, (GemmShape, AttentionShape)):
            from .shapes import ShapeKernelsScreen

            return lambda: push(ShapeKernelsScreen(self.session, p, self._crumbs()))
        if table.spec is not None and table.spec.name == "timeline" and isinstance(p, tuple):
            from .pass_timeline import PassTimelineScreen

            return lambda: push(PassTimelineScreen(self.session, self.comparison, int(row.values[0]), p,
                                                   [*self._crumbs(), views.pass_crumb(row.values[0], *p)]))
        return None

    def action_open_modules(self) -> None:
        if self.comparison is None or not self.traces_ready():
            return
        from .modules import ModulesScreen

        self.app.push_screen(ModulesScreen(self.session, self.comparison))

    def open_layer(self, layer: int) -> None:
        from .layer import LayerScreen

        self.app.push_screen(LayerScreen(self.session, layer))

    def action_open_slowest(self) -> None:
        if not self.traces_ready():
            return
        if self.comparison.layers:
            self.open_layer(self.comparison.layers[0].layer)
        else:
            self.notify("no transformer layers were found in these traces", severity="warning")
