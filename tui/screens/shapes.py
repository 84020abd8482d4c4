"""One shape of the Shapes tab, on each side: the kernels that ran it (A's, then B's, longest first),
with their launches, time and TFLOP/s; Enter opens a kernel's detail (grid, block, registers, shared
memory, occupancy, and the launching op's input dims and dtypes). Follows the phase when `p`
changes it: the same shape in the new comparison, or a line saying the phase has none.
"""

from __future__ import annotations

from dataclasses import replace

from rich.text import Text
from textual.app import ComposeResult
from textual.widgets import Static

from kerneldiff.core.session import Comparison
from kerneldiff.core.session import ShapeSide
from kerneldiff.core.session import KernelRef

from .. import shape_views as sv
from ..text import DIM, SIDE_STYLE, literal, span
from ..widgets.footer import Footer
from ..widgets.header import Breadcrumb
from ..widgets.result_table import ResultTable
from ..widgets.table_pane import TablePane
from .base import ExplorerScreen, FilterInput

SIDES = ("a", "b")


class ShapeKernelsScreen(ExplorerScreen):
    """The kernels behind one GEMM or attention shape, both sides."""

    DEFAULT_CSS = """
    ShapeKernelsScreen #shape-summary { height: auto; max-height: 5; padding: 0 1; background: $boost; }
    """

    def __init__(self, session, shape, crumbs: list[str]) -> None:
        super().__init__()
        self.session = session
        self.shape = shape
        self.key = sv.shape_key(shape)
        self.crumb_parts = crumbs
        self.comparison: Comparison | None = None

    def crumbs(self) -> list[str]:
        return [*self.crumb_parts, sv.shape_title(self.shape)]

    def compose(self) -> ComposeResult:
        yield Breadcrumb(*self.crumbs())
        yield Static(id="shape-summary")
        yield TablePane("shape_kernels", hint=Text("A's kernels, then B's, longest first · % row: of the side's time "
                                                   "in the shape · Enter: detail", style=DIM),
                        empty="no kernel ran this shape in this phase", id="pane-shape-kernels")
        yield FilterInput(placeholder="filter kernels by name (Enter keeps it, Esc clears)", id="filter")
        yield Footer()

    def on_mount(self) -> None:
        self.watch(self.app, "result", self._show_result)
        self.query_one("#shape_kernels", ResultTable).focus()

    def _show_result(self, result) -> None:
        if isinstance(result, Comparison):
            self.show_comparison(result)

    def show_comparison(self, comp: Comparison) -> None:
        first = self.comparison is None
        self.comparison = comp
        kind = sv.GEMM if self.key[0] == sv.GEMM else sv.ATTENTION
        found = next((s for s in sv.shapes_of(comp, kind) if sv.shape_key(s) == self.key), None)
        summary = self.query_one("#shape-summary", Static)
        if found is None:   # the phase changed to one without this shape: say so, list nothing
            t = literal(sv.shape_title(self.shape), "bold")
            t.append(f"   not run in phase {comp.phase}", style=DIM)
            summary.update(t)
            self.shape = replace(self.shape, a=ShapeSide(), b=ShapeSide())
        else:
            self.shape = found
            summary.update(sv.shape_summary(found, comp))
        self.query_one("#pane-shape-kernels", TablePane).show(
            sv.shape_kernels_spec(self.shape, "shape_kernels"), keep_cursor=not first)

    def export_name(self, table: ResultTable) -> str:
        return f"shape_kernels-{self.comparison.phase if self.comparison else 'all'}"

    def on_result_table_row_selected(self, event) -> None:
        row = self.query_one("#shape_kernels", ResultTable).current_row()
        if row is None or self.comparison is None:
            return
        from .kernel import KernelDetailScreen, _short, kernel_ref

        key, k = row.payload
        index = SIDES.index(key)
        detail = self.session.kernel_detail(KernelRef(index, k.row))
        ref = kernel_ref(self.session, index, getattr(self.comparison, key).label, k.name, detail.category,
                         detail.rule, k, k.row, detail)
        ref.count_note = "launches for this shape"
        context = span(f"{key.upper()} ", f"bold {SIDE_STYLE[key]}")
        context.append(literal(sv.shape_title(self.shape), "bold"))
        context.append("   figures: its launches for this shape; inputs and launch: one of them", style=DIM)
        self.app.push_screen(KernelDetailScreen([ref], context, [*self.crumbs(), _short(k.name)]))
