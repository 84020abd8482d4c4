"""What one row of a comparison is made of, on each side: the kernels of an operation (Enter on the
Operations tab) or of the time outside every layer (Enter on the Layers tab's `outside` row).

One table holds A's kernels, then B's (each largest first; `t`, `n` re-sort them); Enter opens a
kernel's detail on its own trace. The figures come from the session
(`Session.operation_kernels`, `Session.outside_layer_kernels`) for the comparison's phase, read in a
thread worker (the UI never waits on them), and follow the phase when `p` changes it.
"""

from __future__ import annotations

from typing import Callable

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.message import Message
from textual.widgets import Static
from textual.worker import get_current_worker

from kerneldiff.core.session import Comparison, OperationRow

from .. import trace_views as tv
from .. import views
from ..text import DIM, SIDE_STYLE, fmt_gap, fmt_ratio, fmt_us, literal, span
from ..widgets.footer import Footer
from ..widgets.header import Breadcrumb
from ..widgets.result_table import ResultTable
from ..widgets.table_pane import TablePane
from .base import ExplorerScreen, FilterInput

SIDES = ("a", "b")


class SideKernelsScreen(ExplorerScreen):
    """A's and B's kernels behind one row of the comparison."""

    DEFAULT_CSS = """
    SideKernelsScreen #drill-summary { height: auto; max-height: 3; padding: 0 1; background: $boost; }
    """

    def __init__(self, session, title: str, kernels: Callable[[int, str], list],
                 figures: Callable[[Comparison], tuple[float, float, float | None, float] | None],
                 crumbs: list[str], name: str) -> None:
        """`kernels(index, phase)`: one side's kernels; `figures(comparison)`: (A time, B time, A/B,
        gap) of the row as the comparison has it (None when the phase has no such row)."""
        super().__init__()
        self.session = session
        self.title_text = title
        self.kernels = kernels
        self.figures = figures
        self.crumb_parts = crumbs
        self.table_name = name
        self.comparison: Comparison | None = None     # the one shown (None until its kernels are read)
        self._wanted: Comparison | None = None        # the one whose kernels are being read

    def crumbs(self) -> list[str]:
        return [*self.crumb_parts, self.title_text]

    @property
    def ready(self) -> bool:
        """Showing the kernels of the comparison on screen (none being read)."""
        return self._wanted is not None and self.comparison is self._wanted

    def compose(self) -> ComposeResult:
        yield Breadcrumb(*self.crumbs())
        yield Static(id="drill-summary")
        yield TablePane("side_kernels", detail=lambda r: tv.kernel_detail(r.payload[1]), detail_height="1fr",
                        hint=Text("A's kernels, then B's, largest first · % row: of the side's time here · Enter: detail",
                                  style=DIM),
                        empty="no kernels in this phase", id="pane-side-kernels")
        yield FilterInput(placeholder="filter kernels by name or category (Enter keeps it, Esc clears)", id="filter")
        yield Footer()

    def on_mount(self) -> None:
        self.watch(self.app, "result", self._show_result)
        self.query_one("#side_kernels", ResultTable).focus()

    class KernelsRead(Message):
        """Both sides' kernels for `comparison`'s phase, read by the worker."""

        def __init__(self, comparison: Comparison, sides: dict[str, list]) -> None:
            super().__init__()
            self.comparison = comparison
            self.sides = sides

    def _show_result(self, result) -> None:
        if isinstance(result, Comparison):
            self._wanted = result
            self._read_kernels(result)

    @work(thread=True, exclusive=True, exit_on_error=False, group="side-kernels", name="side kernels")
    def _read_kernels(self, comp: Comparison) -> None:
        try:
            sides = {side: self.kernels(i, comp.phase) for i, side in enumerate(SIDES)}
        except Exception as e:     # said on screen, never a traceback
            self.app.notify(f"{self.title_text}: could not read the kernels ({type(e).__name__}: {e})",
                            severity="error", markup=False)
            return
        if not get_current_worker().is_cancelled:
            self.post_message(self.KernelsRead(comp, sides))

    def on_side_kernels_screen_kernels_read(self, m: KernelsRead) -> None:
        if m.comparison is self._wanted:      # else a newer phase was asked for meanwhile
            self.show_comparison(m.comparison, m.sides)

    def show_comparison(self, comp: Comparison, sides: dict[str, list]) -> None:
        first = self.comparison is None
        self.comparison = comp
        totals = {side: sum(k.stats.total_us for k in ks) for side, ks in sides.items()}
        self.query_one("#drill-summary", Static).update(self._summary(comp, sides, totals))
        self.query_one("#pane-side-kernels", TablePane).show(
            views.side_kernels_spec(self.table_name, sides, totals), keep_cursor=not first)

    def _summary(self, comp: Comparison, sides: dict[str, list], totals: dict[str, float]) -> Text:
        t = literal(self.title_text, "bold")
        fig = self.figures(comp)
        if fig is not None:
            _a, _b, ratio, gap = fig
            t.append(f"   A/B {fmt_ratio(ratio)}   gap {fmt_gap(gap)}   phase {comp.phase}")
        for side in SIDES:
            t.append("\n")
            t.append(f"{side.upper()} ", style=f"bold {SIDE_STYLE[side]}")
            n = len(sides[side])
            t.append(f"{fmt_us(totals[side])} in {n} kernel name{'s' if n != 1 else ''}"
                     if n else "runs none of it", style="" if n else DIM)
        return t

    def export_name(self, table: ResultTable) -> str:
        return f"{self.table_name}-{self.comparison.phase if self.comparison else 'all'}"

    def on_result_table_row_selected(self, event) -> None:
        row = self.query_one("#side_kernels", ResultTable).current_row()
        if row is None or self.comparison is None:
            return
        from .kernel import trace_kernel_screen

        side, k = row.payload
        index = SIDES.index(side)
        label = getattr(self.comparison, side).label
        context = span(f"{side.upper()} ", f"bold {SIDE_STYLE[side]}")
        context.append(literal(self.title_text))
        self.app.push_screen(trace_kernel_screen(self.session, index, label, k, self.crumbs(), context))


def operation_screen(session, comp: Comparison, op: OperationRow, crumbs: list[str]) -> SideKernelsScreen:
    """Enter on an Operations row: that operation's kernels on each side."""
    category = op.category

    def figures(c: Comparison):
        row = next((o for o in c.operations if o.category == category), None)
        return None if row is None else (row.a.total_us, row.b.total_us, row.ratio, row.gap_us)

    return SideKernelsScreen(session, category, lambda i, phase: session.operation_kernels(i, category, phase),
                             figures, crumbs, f"operation-{category}")


def outside_layers_screen(session, comp: Comparison, crumbs: list[str]) -> SideKernelsScreen:
    """Enter on the Layers tab's `outside` row: the kernels outside every layer on each side."""

    def figures(c: Comparison):
        o = c.outside_layers
        return None if o is None else (o.a.total_us, o.b.total_us, o.ratio, o.gap_us if o.ratio is not None else None)

    return SideKernelsScreen(session, "outside layers", lambda i, phase: session.outside_layer_kernels(i, phase),
                             figures, crumbs, "outside-layers")
