"""`?`: every key binding of the explorer, read from the classes that define them."""

from __future__ import annotations

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from ..widgets.result_table import ResultTable
from ..widgets.table_pane import DetailScroll

# Table keys worth listing (the rest are mouse-only or duplicates)
_TABLE_ACTIONS = {"cursor_up", "cursor_down", "page_up", "page_down", "scroll_top", "scroll_bottom", "select_cursor",
                  "cursor_left", "cursor_right"}
_TABLE_WORDS = {"cursor_up": "Up", "cursor_down": "Down", "page_up": "Page up", "page_down": "Page down",
                "scroll_top": "First row", "scroll_bottom": "Last row", "select_cursor": "Open / drill down",
                "cursor_left": "Scroll left a whole column (the first column stays)",
                "cursor_right": "Scroll right a whole column (the first column stays; a column is shown whole "
                                "or not at all)"}


def _bindings(cls) -> list[Binding]:
    out = []
    for b in getattr(cls, "BINDINGS", []):
        if isinstance(b, tuple):
            b = Binding(*b)
        out.append(b)
    return out


def _aie_screen():
    from .aie import AieScreen

    return AieScreen


def binding_rows(app, bindings, words=None, only=None) -> list[tuple[str, str]]:
    """(keys, description) per action among `bindings` (`words` overrides descriptions; `only`
    keeps those actions), keys of one description joined."""
    def keys(b: Binding) -> str:
        return ", ".join(app.get_key_display(Binding(k.strip(), b.action)) for k in b.key.split(","))

    merged: dict[str, list[str]] = {}
    for b in bindings:
        if only is not None and b.action not in only:
            continue
        desc = (words or {}).get(b.action) or b.tooltip or b.description or b.action
        merged.setdefault(desc, []).append(keys(b))
    return [(", ".join(dict.fromkeys(k)), d) for d, k in merged.items()]


def binding_groups(app) -> list[tuple[str, list[tuple[str, str]]]]:
    """(context, [(keys, description)]) for every binding the explorer defines."""
    from .base import ExplorerScreen
    from .browse import BrowseScreen
    from .error import ErrorScreen
    from .kernel import KernelDetailScreen
    from .main import MainScreen
    from .start import StartScreen

    def rows(bindings, words=None, only=None) -> list[tuple[str, str]]:
        return binding_rows(app, bindings, words, only)

    table_bindings = _bindings(ResultTable)
    groups = [
        ("Everywhere", rows(_bindings(type(app))) + [(app.get_key_display(Binding("ctrl+p", "")), "Command palette")]),
        ("Tables", rows(table_bindings, _TABLE_WORDS, _TABLE_ACTIONS)),
        ("Explorer screens", rows(_bindings(ExplorerScreen))),
        ("Main screen (tabs)", rows(_bindings(MainScreen))
         + [("←, →", "Switch tab (when the tab bar has focus)"),
            ("tab", "Move focus: tab bar → table → detail pane (the focused one is marked in the accent colour)"),
            ("⏎", "Drill down: a layer → its kernel pairs; an operation or `outside` → its kernels on each side; "
                   "a shape → the kernels that ran it")]),
        ("Browsing one trace (tabs)", rows(_bindings(BrowseScreen))),
        ("Detail panes", rows(_bindings(DetailScroll) + _bindings(KernelDetailScreen))),
        ("AIE (NPU) traces", rows(_bindings(_aie_screen()))),
        ("Start screen", rows(_bindings(StartScreen))),
        ("Error screen", rows(_bindings(ErrorScreen))),
        ("Help", rows(_bindings(HelpScreen))),
        ("What is compared", [
            ("passes", "By default a comparison reads the steady passes only: warm-up, CUDA-graph capture and "
                              "compile passes do work a steady pass does not (a capture pass measured 2.4x a decode "
                              "pass, 98% idle), so they are left out and the Timeline tab says so. A pass is "
                              "measured on its forward call: what runs before, between (generate()'s sampling) "
                              "and after the passes is not in the headline. Work launched before the profiler's "
                              "window (its launch is not in the trace) is left out either way: only its tail "
                              "was recorded."),
            ("", "Start with `kerneldiff A B --all-passes` to compare every pass and the whole window: "
                             "the Timeline tab marks the passes that are not steady (w warm-up, c capture, k "
                             "compile), and the ledger gives the time before, between and after the passes a row "
                             "each."),
        ]),
    ]
    return groups


class HelpScreen(ModalScreen):
    BINDINGS = [
        Binding("escape,question_mark,q", "close", "Close help"),
        Binding("j", "scroll('down')", "Scroll down", show=False),
        Binding("k", "scroll('up')", "Scroll up", show=False),
    ]

    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll { width: 76; max-width: 100%; height: 90%; border: round $accent;
                                  background: $surface; padding: 0 1; }
    """

    def groups(self) -> list[tuple[str, list[tuple[str, str]]]]:
        """What the screen lists (another app's help, the runs screen's, lists its own)."""
        return binding_groups(self.app)

    def compose(self) -> ComposeResult:
        groups = self.groups()
        width = max(len(k) for _t, items in groups for k, _d in items)
        parts = []
        for title, items in groups:
            t = Table.grid(padding=(0, 2))
            t.add_column(no_wrap=True, style="bold", width=width)
            t.add_column()
            for k, d in items:
                t.add_row(Text(k), Text(d))
            parts += [Text(title, style="bold underline"), t, Text("")]
        with VerticalScroll(id="help") as v:
            v.border_title = "Keys"
            v.border_subtitle = "Esc closes"
            yield Static(Group(*parts))

    def on_mount(self) -> None:
        self.query_one("#help").focus()

    def action_close(self) -> None:
        self.app.pop_screen()

    def action_scroll(self, direction: str) -> None:
        v = self.query_one("#help", VerticalScroll)
        v.scroll_down() if direction == "down" else v.scroll_up()
