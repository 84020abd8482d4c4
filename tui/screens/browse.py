"""Browse one trace on its own: its operations, layers, kernels, steps (its timeline) and warnings.

Nothing is compared: the tables are the trace's overview (kerneldiff.core.analysis.trace_totals), which
the app computes for the current phase and keeps in `result`; these screens watch it. Enter on a
layer lists that layer's kernels (read from the session in a thread worker), Enter on a kernel
opens its detail.
"""

from __future__ import annotations

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.message import Message
from textual.widgets import Static
from textual.worker import get_current_worker

from kerneldiff.core.session import KernelTotal, LayerTotal, StepTotal, TraceOverview

from .. import trace_views as tv
from .. import views
from ..text import DIM, span
from ..widgets.footer import Footer
from ..widgets.header import Breadcrumb, TraceHeader
from ..widgets.result_table import ResultTable
from ..widgets.table_pane import TablePane
from .base import ExplorerScreen, FilterInput, TabbedExplorerScreen
from .kernel import trace_kernel_screen
from textual.binding import Binding

SIDES = ("a", "b")
BROWSE_TABS = (("operations", "Operations"), ("layers", "Layers"), ("kernels", "Kernels"), ("steps", "Steps"),
               ("warnings", "Warnings"))


# One trace has five tabs, in another order than a comparison's seven: its own keys and words
# (6 and 7, Timeline and Shapes, compare two traces: pressed here they say so)
BROWSE_TAB_BINDINGS = [
    *(Binding(str(i + 1), f"show_tab({i})", f"Tab {i + 1}", show=False, tooltip=f"{title} tab")
      for i, (_key, title) in enumerate(BROWSE_TABS)),
    Binding("6,7", "no_tab", "Tab 6, 7", show=False,
            tooltip="Nothing: Timeline and Shapes compare two traces (Steps is this trace's timeline)"),
    Binding("L", "open_slowest", "Busiest layer", show=False, tooltip="Open the busiest layer (most GPU time)"),
]


class BrowseScreen(TabbedExplorerScreen):
    """Tabs over one trace's overview (`index`: which trace of the session)."""

    BINDINGS = BROWSE_TAB_BINDINGS
    tabs = BROWSE_TABS
    crumb_root = "browse"

    def __init__(self, session, index: int) -> None:
        super().__init__()
        self.session = session
        self.index = index
        self.side = SIDES[index]
        self.overview: TraceOverview | None = None

    def _header(self) -> TraceHeader:
        return TraceHeader(id="header")

    def _pane(self, key: str) -> TablePane:
        if key == "operations":
            return TablePane("operations", detail=lambda r: tv.operation_detail(r.payload, self.overview),
                             detail_height="1fr", id="pane-operations", empty="no kernels in this phase")
        if key == "layers":
            return TablePane("layers", hint="", id="pane-layers")
        if key == "kernels":
            return TablePane("kernels", detail=lambda r: tv.kernel_detail(r.payload), detail_height="1fr",
                             id="pane-kernels", empty="no kernels in this phase")
        if key == "steps":
            return TablePane("steps", detail=lambda r: tv.step_detail(r.payload), detail_height="1fr",
                             hint=tv.steps_hint(), id="pane-steps", empty="no steps in this phase")
        return TablePane("warnings", id="pane-warnings", hint="")

    def on_mount(self) -> None:
        self.watch(self.app, "result", self._show_result)

    def _show_result(self, result) -> None:
        if isinstance(result, TraceOverview):
            self.show_overview(result)

    # --- data ---------------------------------------------------------------------------------
    def show_overview(self, ov: TraceOverview) -> None:
        first = self.overview is None
        self.overview = ov
        keep = not first
        self.query_one("#header", TraceHeader).show(ov, self.side)
        layers = self.query_one("#pane-layers", TablePane)
        layers.set_hint(tv.layers_hint(ov))
        layers.show(tv.layers_spec(ov, self.side), keep_cursor=False)
        self.query_one("#pane-operations", TablePane).show(tv.operations_spec(ov, self.side), keep_cursor=keep)
        self.query_one("#pane-kernels", TablePane).show(tv.kernels_spec(ov), keep_cursor=keep)
        self.query_one("#pane-steps", TablePane).show(tv.steps_spec(ov), keep_cursor=keep)
        self.query_one("#pane-warnings", TablePane).show(views.warnings_spec(ov.warnings), keep_cursor=keep)
        self.query_one("#pane-warnings", TablePane).set_hint("" if ov.warnings else "no warnings")
        counts = {"kernels": len(ov.kernel_totals), "steps": len(ov.steps), "warnings": len(ov.warnings)}
        self.label_tabs(counts)
        if first:
            self.focus_active_table()

    # --- drill-down ---------------------------------------------------------------------------
    def export_name(self, table: ResultTable) -> str:
        return f"{table.spec.name}-{self.overview.phase}"

    def open_row(self, table: ResultTable, row) -> bool:
        if isinstance(row.payload, LayerTotal):
            self.open_layer(row.payload.layer)
        elif isinstance(row.payload, KernelTotal):
            self.app.push_screen(trace_kernel_screen(self.session, self.index, self.overview.label, row.payload,
                                                     self._crumbs()))
        elif isinstance(row.payload, StepTotal):
            self.open_pass(row.payload.index)
        else:
            return False
        return True

    def open_pass(self, step: int) -> None:
        """This trace's pass timeline: the comparison's, with this side alone."""
        from types import SimpleNamespace

        from .pass_timeline import PassTimelineScreen

        side = SimpleNamespace(label=self.overview.label)
        only = SimpleNamespace(phase=self.overview.phase, a=side, b=side)   # what the screen reads of a comparison
        one = SimpleNamespace(pass_=step)   # what the screen reads of a pass (its number)
        passes = (one, None) if self.index == 0 else (None, one)
        self.app.push_screen(PassTimelineScreen(self.session, only, step, passes, [*self._crumbs(), f"Step {step}"]))

    def open_layer(self, layer: int) -> None:
        self.app.push_screen(BrowseLayerScreen(self.session, self.index, layer))

    def action_no_tab(self) -> None:
        self.notify("one trace: tabs 1–5. Timeline and Shapes compare two traces; Steps (4) is this "
                    "trace's timeline", timeout=4)

    def action_open_slowest(self) -> None:
        busiest = tv.busiest_layer(self.overview) if self.overview is not None else None
        if busiest is None:
            self.notify("no transformer layers were found in this trace", severity="warning")
        else:
            self.open_layer(busiest)


class BrowseLayerScreen(ExplorerScreen):
    """One layer of one trace: its kernels in the order a pass runs them; Enter opens a kernel."""

    DEFAULT_CSS = """
    BrowseLayerScreen #layer-summary { height: auto; max-height: 2; padding: 0 1; background: $boost; }
    """

    def __init__(self, session, index: int, layer: int) -> None:
        super().__init__()
        self.session = session
        self.index = index
        self.layer_index = layer
        self.overview: TraceOverview | None = None     # the one shown (None until its kernels are read)
        self._wanted: TraceOverview | None = None      # the one whose kernels are being read

    def crumbs(self) -> list[str]:
        return ["browse", "Layers", f"Layer {self.layer_index}"]

    @property
    def ready(self) -> bool:
        """Showing the layer's kernels in the overview's phase (none being read)."""
        return self._wanted is not None and self.overview is self._wanted

    def compose(self) -> ComposeResult:
        yield Breadcrumb(*self.crumbs())
        yield Static(id="layer-summary")
        yield TablePane("layer_kernels", hint=Text("Enter: kernel detail", style=DIM),
                        empty="no kernels in this phase", id="pane-layer-kernels")
        yield FilterInput(placeholder="filter kernels by name (Enter keeps it, Esc clears)", id="filter")
        yield Footer()

    def on_mount(self) -> None:
        self.watch(self.app, "result", self._show_result)
        self.query_one("#layer_kernels", ResultTable).focus()

    class KernelsRead(Message):
        """The layer's kernels in `overview`'s phase, read by the worker."""

        def __init__(self, overview: TraceOverview, kernels: list[KernelTotal]) -> None:
            super().__init__()
            self.overview = overview
            self.kernels = kernels

    def _show_result(self, result) -> None:
        if isinstance(result, TraceOverview):
            self._wanted = result
            self._read_kernels(result)

    @work(thread=True, exclusive=True, exit_on_error=False, group="layer-kernels", name="layer kernels")
    def _read_kernels(self, ov: TraceOverview) -> None:
        try:
            kernels = self.session.layer_kernels(self.index, self.layer_index, ov.phase)
        except Exception as e:     # said on screen, never a traceback
            self.app.notify(f"layer {self.layer_index}: could not read its kernels ({type(e).__name__}: {e})",
                            severity="error", markup=False)
            return
        if not get_current_worker().is_cancelled:
            self.post_message(self.KernelsRead(ov, kernels))

    def on_browse_layer_screen_kernels_read(self, m: KernelsRead) -> None:
        if m.overview is not self._wanted:     # a newer phase was asked for meanwhile
            return
        first = self.overview is None
        self.overview = m.overview
        row = next((r for r in m.overview.layers if r.layer == self.layer_index), None)
        self.query_one("#layer-summary", Static).update(tv.layer_summary(row, self.layer_index, m.overview.phase))
        self.query_one("#pane-layer-kernels", TablePane).show(tv.layer_kernels_spec(self.layer_index, m.kernels),
                                                              keep_cursor=not first)

    def export_name(self, table: ResultTable) -> str:
        return f"{table.spec.name}-{self.overview.phase}"

    def on_result_table_row_selected(self, event) -> None:
        row = self.query_one("#layer_kernels", ResultTable).current_row()
        if row is not None and isinstance(row.payload, KernelTotal):
            context = span(f"Layer {self.layer_index}", "bold")
            context.append(" · kernel")
            self.app.push_screen(trace_kernel_screen(self.session, self.index, self.overview.label, row.payload,
                                                     self.crumbs(), context))
