"""The explorer's screen for two runs of rank traces: the ranks of both runs side by side (slowest
first) and their collectives (kind × size, A against B), in tabs, with the runs' stragglers and notes
above them. The tables filter (`/`), sort (`s`, `t`, `n`, `o`, `S`, `x`) and export (`e` CSV, `E`
JSON, in the CLI's `--table ranks|collectives` schema) like the other explorer tables; `?` lists
the keys.

Enter on a rank ends the explorer with that rank chosen, ("a" | "b", rank); the launcher then opens
that rank's comparison in the usual explorer, and comes back here when it is closed."""

from __future__ import annotations

from textual.binding import Binding
from textual.widgets import Static

from ..run_views import RUN_TABS, RunsView, collectives_spec, export_rows, head_lines, ranks_spec, runs_head
from ..widgets.table_pane import TablePane
from .base import TabbedExplorerScreen
from .help import HelpScreen


class RunsScreen(TabbedExplorerScreen):
    """Ranks and Collectives of two runs, in tabs (keys 1 and 2)."""

    BINDINGS = [Binding("1", "show_tab(0)", "Ranks", show=False, tooltip="Ranks tab: both runs' ranks, slowest first"),
                Binding("2", "show_tab(1)", "Collectives", show=False,
                        tooltip="Collectives tab: kind × message size, A against B"),
                Binding("x", "sort_named('exposed')", "By exposed comm", show=False,
                        tooltip="Ranks: sort by exposed communication, most first (again: reverse)")]
    DEFAULT_CSS = "#runs-head { height: auto; padding: 0 1; }"   # runs_head gives it its lines (head_lines)
    tabs = RUN_TABS
    crumb_root = "runs"

    def __init__(self, view: RunsView) -> None:
        super().__init__()
        self.view = view
        self.found = view.found

    def help_screen(self) -> HelpScreen:
        """`?` here lists the runs screen's keys (KernelDiffApp.action_help)."""
        return RunsHelpScreen()

    def _rows(self) -> int:
        """The rows of the taller table."""
        return max(len(self.view.rows), len(self.found.collectives))

    def _header(self) -> Static:
        return Static(runs_head(self.found, head_lines(self.app.size.height, self._rows())), id="runs-head")

    def on_resize(self, event) -> None:
        super().on_resize(event)
        for head in self.query("#runs-head"):
            head.update(runs_head(self.found, head_lines(self.app.size.height, self._rows())))

    def _pane(self, key: str) -> TablePane:
        if key == "ranks":
            rep = self.found.representative
            hint = (f"⏎ compares that rank with the other run's (same rank, else its slowest) · representative: "
                    f"A rank {rep.a}, B rank {rep.b} ({rep.how})")
            return TablePane("ranks", hint=hint, id="pane-ranks", empty="no ranks")
        return TablePane("collectives", id="pane-collectives", empty="no collectives in either run",
                         hint="busbw GB/s (% of the link's peak) · wait: beyond the fastest rank's · skew: last start − "
                              "first (median) · gap: A − B of time per rank")

    def on_mount(self) -> None:
        self.query_one("#pane-ranks", TablePane).show(ranks_spec(self.found))
        self.query_one("#pane-collectives", TablePane).show(collectives_spec(self.found))
        self.call_after_refresh(self.focus_active_table)

    def open_row(self, table, row) -> bool:
        if table.id != "ranks":
            return False
        key, r = row.payload
        self.app.exit((key, int(r.rank)))
        return True

    def action_sort_named(self, name: str) -> None:
        table = self.current_table()
        if name == "exposed" and (table is None or table.spec is None or "exposed" not in table.spec.sorts):
            self.notify("x sorts the Ranks table by exposed communication", timeout=2)
            return
        super().action_sort_named(name)

    def action_export(self, fmt: str = "csv") -> None:
        """The table as shown (filter and order), in the CLI's `--table` schema."""
        from ..export import write_table
        from ..messages import Exported

        table = self.current_table()
        if table is None or table.spec is None:
            return
        head, shown = export_rows(self.found, table)
        try:
            path = write_table(f"runs-{table.spec.name}", head, shown, fmt)
        except OSError as e:
            self.notify(f"export failed: {e.strerror or e}", severity="error", markup=False)
            return
        self.post_message(Exported(path))
        self.notify(f"{len(shown)} rows → {path}", title="Exported", markup=False, timeout=6)


def runs_binding_groups(app) -> list[tuple[str, list[tuple[str, str]]]]:
    """(context, [(keys, description)]) of the runs screen's keys: the explorer's own that apply
    here (the phase key does not: the runs are not compared by phase), then the screen's."""
    from ..widgets.result_table import ResultTable
    from .base import ExplorerScreen
    from .help import _TABLE_ACTIONS, _TABLE_WORDS, _bindings, binding_rows

    everywhere = [b for b in _bindings(type(app)) if app.check_action(b.action, ()) is not False]
    words = dict(_TABLE_WORDS, select_cursor="Ranks: compare that rank with the other run's in the usual explorer")
    return [
        ("Everywhere", binding_rows(app, everywhere)
         + [(app.get_key_display(Binding("ctrl+p", "")), "Command palette")]),
        ("Tables", binding_rows(app, _bindings(ResultTable), words, _TABLE_ACTIONS)),
        ("Filter, sort, export", binding_rows(app, _bindings(ExplorerScreen))),
        ("Runs", binding_rows(app, _bindings(RunsScreen)) + [("tab", "Move focus: tab bar → table")]),
        ("Help", binding_rows(app, _bindings(HelpScreen))),
    ]


class RunsHelpScreen(HelpScreen):
    """`?` on the runs screen: its own keys."""

    def groups(self):
        return runs_binding_groups(self.app)
