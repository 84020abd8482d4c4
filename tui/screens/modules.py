"""The model's own structure and the host's time, for the comparison shown: the module tree (GPU
time per module path, aligned across the sides, expandable with →/←; Enter: the module's kernel
pairs) and the host hotspots (launch-bound idle by the host operation running; host self time).
`m` on the compare screen opens it.

Both readings are computed the first time they are asked for (`Session.modules`,
`Session.host_hotspots`), in a thread worker: the UI never waits on them.
"""

from __future__ import annotations

from rich.text import Text
from textual.binding import Binding
from textual.widgets import Static

from .. import module_views as mv
from ..text import DIM
from ..widgets.result_table import ResultTable
from ..widgets.table_pane import TablePane
from .base import TabbedExplorerScreen

MODULE_TABS = (("modules", "Modules"), ("host_idle", "Host: idle"), ("host_self", "Host: self time"))


class ModulesScreen(TabbedExplorerScreen):
    DEFAULT_CSS = """
    ModulesScreen #modules-summary { height: auto; max-height: 2; padding: 0 1; background: $boost; }
    """
    BINDINGS = [
        Binding("1", "show_tab(0)", "Tab 1", show=False, tooltip="Modules tab: GPU time per module path"),
        Binding("2", "show_tab(1)", "Tab 2", show=False, tooltip="Host: launch-bound idle by host operation"),
        Binding("3", "show_tab(2)", "Tab 3", show=False, tooltip="Host: self time per host operation"),
        Binding("right", "expand", "Expand", show=False, priority=True, tooltip="Modules: expand the node"),
        Binding("left", "collapse", "Collapse", show=False, priority=True,
                tooltip="Modules: collapse the node (or go to its parent)"),
    ]
    tabs = MODULE_TABS
    crumb_root = "compare › modules"

    def __init__(self, session, comparison, crumbs: list[str] | None = None) -> None:
        super().__init__()
        self.session = session
        self.comparison = comparison
        self.modules = None
        self.hot = None
        self.expanded: set[str] = set()

    @property
    def ready(self) -> bool:
        """Both readings shown (the tests wait for it)."""
        return self.modules is not None and self.hot is not None

    def _header(self) -> Static:
        return Static(Text("reading the module tree and the host hotspots…", style=DIM), id="modules-summary")

    def _pane(self, key: str) -> TablePane:
        if key == "modules":
            return TablePane("modules", detail=lambda r: mv.module_detail(r.payload, self.modules),
                             detail_height="1fr", id="pane-modules", hint="", empty="reading…")
        return TablePane(key, id=f"pane-{key}", hint="", empty="reading…")

    def on_mount(self) -> None:
        self.run_worker(self._read, thread=True, exclusive=True, group="modules", exit_on_error=False)

    def _read(self) -> None:
        phase = self.comparison.phase
        try:
            modules = self.session.modules(phase)
            self.app.call_from_thread(self._show_modules, modules)
            hot = self.session.host_hotspots(phase)
            self.app.call_from_thread(self._show_host, hot)
        except Exception as e:   # a reading that fails is said on screen; the explorer goes on
            self.app.call_from_thread(self.notify, f"cannot read the module tree: {e}", severity="error",
                                      markup=False)

    def _show_modules(self, mc) -> None:
        self.modules = mc
        # open the way down to the model's blocks: the largest child, while a node has few children
        self.expanded = set()
        node = mc.root
        while node.children and (node is mc.root or len(node.children) <= 3):
            node = max(node.children, key=lambda c: max(c.a.time_us if c.a else 0, c.b.time_us if c.b else 0))
            if not node.children:
                break
            self.expanded.add(node.path)
        head = Text()
        head.append(f"module tree by {'path' if mc.form == 'path' else 'decoder layer'}"
                    f"; sources A: {mc.sources['a']}, B: {mc.sources['b']}")
        if mc.form == "layer":
            head.append(" (the module paths do not meet)", style=DIM)
        self.query_one("#modules-summary", Static).update(head)
        self._fill_modules(keep=False)

    def _fill_modules(self, keep: bool, select: str | None = None) -> None:
        pane = self.pane("modules")
        if pane is None or self.modules is None:
            return
        pane.set_hint(mv.modules_hint(self.modules))
        spec = mv.modules_spec(self.modules, self.expanded)
        if select is not None:
            spec.select = select
            keep = False
        pane.show(spec, keep_cursor=keep)

    def _show_host(self, hot) -> None:
        self.hot = hot
        for key, rows, which in (("host_idle", hot.idle_by_op, "idle"), ("host_self", mv.self_rows(hot), "self")):
            pane = self.pane(key)
            if pane is not None:
                pane.set_hint(mv.host_hint(hot, which))
                pane.show(mv.host_spec(rows, key))

    # --- the tree -----------------------------------------------------------------------------------
    def _node(self):
        if self._active_key() != "modules":
            return None
        table = self.current_table()
        row = table.current_row() if table is not None else None
        return row.payload if row is not None else None

    def action_expand(self) -> None:
        node = self._node()
        if node is None:
            self._sideways(+1)
            return
        if node.children and node.path and node.path not in self.expanded:
            self.expanded.add(node.path)
            self._fill_modules(keep=True)

    def action_collapse(self) -> None:
        node = self._node()
        if node is None:
            self._sideways(-1)
            return
        if node.path in self.expanded:
            self.expanded.discard(node.path)
            self._fill_modules(keep=True)
        elif " > " in node.path:   # go up: collapse the parent, the cursor on it
            parent = node.path.rsplit(" > ", 1)[0]
            self.expanded.discard(parent)
            self._fill_modules(keep=False, select=parent)

    def _sideways(self, step: int) -> None:
        table = self.current_table()
        if table is not None and table.allow_horizontal_scroll:
            table.action_cursor_right() if step > 0 else table.action_cursor_left()

    def open_row(self, table: ResultTable, row) -> bool:
        """Enter on a module: its kernel pairs (as a layer's), whatever its depth (→/← expand)."""
        node = row.payload
        if table.spec is not None and table.spec.name == "modules" and hasattr(node, "children"):
            from .module_pairs import ModulePairsScreen

            self.app.push_screen(ModulePairsScreen(self.session, self.comparison, node, self._crumbs()))
            return True
        return False
