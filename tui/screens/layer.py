"""One layer of a comparison: its aligned kernel pairs side by side."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.widgets import Static

from kerneldiff.core.session import Comparison, KernelPair

from .. import views
from ..text import DIM, SIDE_STYLE, fmt_gap, fmt_ratio, fmt_us, span
from ..widgets.footer import Footer
from ..widgets.header import Breadcrumb
from ..widgets.result_table import ResultTable
from .base import ExplorerScreen, FilterInput


def _passes(n: int) -> str:
    return f"{n} pass" if n == 1 else f"{n} passes"


def pairs_basis(al, row) -> str:
    """Which passes the pairs' figures are over: those that run the layer's usual kernel sequence."""
    got = [(n, side.passes) for n, side in ((al.a_passes, row.a), (al.b_passes, row.b)) if n]
    if not got:
        return ""
    if all(n == m for n, m in got):
        m = max(m for _n, m in got)
        return f"pairs: mean per launch over all {_passes(m)}"
    if len(set(got)) == 1:
        n, m = got[0]
        return f"pairs: mean per launch over the {n} of {m} passes that run the usual kernels"
    parts = [f"{k} {n} of {side.passes}" for k, n, side in (("A", al.a_passes, row.a), ("B", al.b_passes, row.b)) if n]
    return "pairs: mean per launch over " + ", ".join(parts) + " passes (those that run the usual kernels)"


class LayerScreen(ExplorerScreen):
    DEFAULT_CSS = """
    LayerScreen #layer-summary { height: auto; max-height: 4; padding: 0 1; background: $boost; }
    LayerScreen #pair-status { height: 4; padding: 0 1; border-top: solid $primary-darken-2; }
    """

    def __init__(self, session, layer: int) -> None:
        super().__init__()
        self.session = session
        self.comparison: Comparison | None = None
        self.layer_index = layer

    def crumbs(self) -> list[str]:
        return ["compare", "Layers", f"Layer {self.layer_index}"]

    def compose(self) -> ComposeResult:
        yield Breadcrumb(*self.crumbs())
        yield Static(id="layer-summary")
        yield ResultTable(id="pairs")
        yield Static(id="pair-status")
        yield FilterInput(placeholder="filter kernels by name or category (Enter keeps it, Esc clears)", id="filter")
        yield Footer()

    def on_mount(self) -> None:
        self.watch(self.app, "result", self._show_result)
        self.query_one("#pairs", ResultTable).focus()

    def _show_result(self, result) -> None:
        if isinstance(result, Comparison):
            self.show_comparison(result)

    def show_comparison(self, comp: Comparison) -> None:
        first = self.comparison is None
        self.comparison = comp
        table = self.query_one("#pairs", ResultTable)
        al = comp.alignment(self.layer_index)
        row = next((r for r in comp.layers if r.layer == self.layer_index), None)
        self.query_one("#layer-summary", Static).update(self._summary(comp, al, row))
        if al is None:
            table.clear(columns=True)
            table.spec = None
            self.query_one("#pair-status", Static).update(
                Text(f"layer {self.layer_index} has no kernels in phase {comp.phase}", style=DIM))
            return
        table.show(views.pairs_spec(al), keep_cursor=not first)
        self._update_status()

    def _summary(self, comp: Comparison, al, row) -> Text:
        t = span(f"Layer {self.layer_index}", "bold")
        if row is None:
            t.append(f"  (phase {comp.phase})", style=DIM)
            return t
        ratio = fmt_ratio(row.ratio) if comp.layers_from == "both" else "—"
        spread = f" ±{fmt_us(row.spread_us)}" if row.spread_us is not None else ""
        t.append(f"   A/B {ratio}   gap {fmt_gap(row.gap_us) if comp.layers_from == 'both' else '—'}{spread}"
                 f"   rank {row.rank} of {len(comp.layers)}")
        if row.noise:
            t.append(" (≈ typical)", style=DIM)
        t.append(f"   phase {comp.phase}")
        for key, side, per in (("a", row.a, al.a_kernels_per_pass if al else 0),
                               ("b", row.b, al.b_kernels_per_pass if al else 0)):
            t.append("\n")
            t.append(key.upper(), style=f"bold {SIDE_STYLE[key]}")
            if not side.passes:
                t.append(" no kernels in this layer", style=DIM)
                continue
            t.append(f" {fmt_us(side.total_us)} over {_passes(side.passes)} · {per} kernels/pass"
                     f" · median {fmt_us(side.median_us)}/pass")
        if al is not None:
            t.append("\n")
            t.append(pairs_basis(al, row), style=DIM)
        return t

    def on_result_table_row_highlighted(self, event: ResultTable.RowHighlighted) -> None:
        self._update_status()

    def after_filter(self, table: ResultTable) -> None:
        self._update_status()

    def _update_status(self) -> None:
        table = self.query_one("#pairs", ResultTable)
        row = table.current_row()
        status = self.query_one("#pair-status", Static)
        if row is None:
            status.update(Text("no kernel matches the filter" if table.filter_text else "", style=DIM))
            return
        t = views.pair_status(row.payload, self.size.width - 2, self.comparison, self.layer_index)
        t.append("\n")
        t.append("Enter: kernel detail   G: 1-9 op fusion group · F fusion note · = same kernel · "
                 "blank: different kernels, no fusion found", style=DIM)
        status.update(t)

    def on_result_table_row_selected(self, event: ResultTable.RowSelected) -> None:
        row = self.query_one("#pairs", ResultTable).current_row()
        if row is not None and isinstance(row.payload, KernelPair):
            from .kernel import pair_screen

            al = self.comparison.alignment(self.layer_index)
            self.app.push_screen(pair_screen(self.session, self.comparison, row.payload, self.layer_index,
                                             self.crumbs(), al))
