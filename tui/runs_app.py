"""The explorer's first screen for runs of rank traces: the ranks of both runs side by side (slowest
first) and their collectives (kind × size, A against B). Enter on a rank ends this app with that
rank chosen; the launcher then opens that rank's comparison in the usual explorer, and comes back
here when it is closed. It renders `kerneldiff.core.ranks.run.RunFindings`; no analysis here."""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.widgets import DataTable, Footer, Static, TabbedContent, TabPane

from kerneldiff.core.report import format as fmt

RANK_COLUMNS = ("run", "rank", "wall", "busy", "compute", "comm", "exposed comm", "idle", "collectives", "file")
COLLECTIVE_COLUMNS = ("kind", "size", "n A/B", "A time", "B time", "A wait", "B wait", "A busbw", "B busbw",
                      "A skew", "B skew", "gap")


def _us(x) -> str:
    return fmt.ABSENT if x is None else fmt.us(x)


def _gbps(x, pct) -> str:
    if x is None:
        return fmt.ABSENT
    return f"{x:,.1f}" + (f" ({pct:.0f}%)" if pct is not None else "")


def rank_rows(found) -> list[tuple[str, dict]]:
    """(run key, rank row) of both runs, slowest first."""
    rows = [(k, r) for k in ("a", "b") for r in found.ranks[k]]
    rows.sort(key=lambda kr: (-kr[1]["wall_us"], kr[0], kr[1]["rank"]))
    return rows


class RunsApp(App):
    """Ranks and Collectives of two runs; Enter on a rank returns ("a" | "b", rank)."""

    TITLE = "kerneldiff — runs"
    BINDINGS = [Binding("q", "quit", "Quit"), Binding("1", "tab('tab-ranks')", "Ranks"),
                Binding("2", "tab('tab-collectives')", "Collectives")]

    def __init__(self, found) -> None:
        super().__init__()
        self.found = found
        self.rows = rank_rows(found)

    def compose(self) -> ComposeResult:
        f = self.found
        rep = f.representative
        yield Static(f"A: {len(f.ranks['a'])} ranks (ranks from {f.rank_source['a']})   "
                     f"B: {len(f.ranks['b'])} ranks (ranks from {f.rank_source['b']})   "
                     f"representative: A rank {rep['a']}, B rank {rep['b']} ({rep['how']})   "
                     f"Enter: compare that rank", id="runs-head", markup=False)
        with TabbedContent(initial="tab-ranks"):
            with TabPane("Ranks", id="tab-ranks"):
                yield DataTable(id="ranks", cursor_type="row", zebra_stripes=True)
            with TabPane("Collectives", id="tab-collectives"):
                yield DataTable(id="collectives", cursor_type="row", zebra_stripes=True)
        yield Footer()

    def on_mount(self) -> None:
        t = self.query_one("#ranks", DataTable)
        t.add_columns(*RANK_COLUMNS)
        for key, r in self.rows:
            t.add_row(key.upper(), str(r["rank"]), _us(r["wall_us"]), _us(r["busy_us"]), _us(r["compute_us"]),
                      _us(r["comm_us"]), _us(r["exposed_comm_us"]), _us(r["idle_us"]), str(r["collectives"]),
                      r["file"].rsplit("/", 1)[-1])
        c = self.query_one("#collectives", DataTable)
        c.add_columns(*COLLECTIVE_COLUMNS)
        for row in self.found.collectives:
            a, b = row.a, row.b
            c.add_row(row.kind, fmt.size(row.nbytes) if row.nbytes >= 0 else "?",
                      f"{a.count if a else 0}/{b.count if b else 0}",
                      _us(a.total_us if a else None), _us(b.total_us if b else None),
                      _us(a.wait_us if a else None), _us(b.wait_us if b else None),
                      _gbps(a.busbw_gbps, a.pct_link_peak) if a else fmt.ABSENT,
                      _gbps(b.busbw_gbps, b.pct_link_peak) if b else fmt.ABSENT,
                      _us(a.skew_p50_us if a else None), _us(b.skew_p50_us if b else None), fmt.gap(row.gap_us))
        t.focus()

    def action_tab(self, tab: str) -> None:
        self.query_one(TabbedContent).active = tab
        self.query_one("#ranks" if tab == "tab-ranks" else "#collectives", DataTable).focus()

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        if event.data_table.id != "ranks":
            return
        key, r = self.rows[event.cursor_row]
        self.exit((key, int(r["rank"])))
