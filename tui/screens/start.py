"""The first screen: what each trace is (instant, from the probe) and, below, the load progress.

It shows the app's state (`traces`, `result`) by watching it, and asks for loading or opening by
posting messages; the app does the work.
"""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.screen import Screen
from textual.widgets import Static

from kerneldiff.core.session import TraceInfo

from ..messages import CancelRequested, OpenRequested, StartShown
from ..state import FAILED, LOADED, TraceState
from ..text import DIM
from ..widgets.footer import Footer
from ..widgets.header import Breadcrumb
from ..widgets.trace_card import TraceCard

SIDES = ("a", "b")


class StartScreen(Screen):
    BINDINGS = [
        Binding("enter", "open", "Load / open"),
        Binding("escape", "cancel", "Cancel loading"),
    ]

    DEFAULT_CSS = """
    StartScreen #cards { height: auto; }
    StartScreen #hint { height: auto; padding: 0 1; color: $text-muted; }
    """

    def __init__(self, paths: list[str], infos: list[TraceInfo | None]) -> None:
        super().__init__()
        self.paths = paths
        self.infos = infos

    def compose(self) -> ComposeResult:
        yield Breadcrumb("traces")
        with VerticalScroll():
            with Horizontal(id="cards"):
                for i, (path, info) in enumerate(zip(self.paths, self.infos)):
                    yield TraceCard(SIDES[i], path, info, id=f"card-{i}")
            yield Static(id="hint")
        yield Footer()

    def on_mount(self) -> None:
        self.watch(self.app, "traces", self._show_traces)
        self.watch(self.app, "result", self.refresh_hint, init=False)
        self.call_after_refresh(self.post_message, StartShown())

    def card(self, index: int) -> TraceCard:
        return self.query_one(f"#card-{index}", TraceCard)

    def _show_traces(self, old: tuple[TraceState, ...], new: tuple[TraceState, ...]) -> None:
        for i, state in enumerate(new):
            if old is new or i >= len(old) or old[i] != state:  # redraw only the card that changed
                self.card(i).show(state)
        if old is new or [s.status for s in old] != [s.status for s in new]:   # the hint says a status
            self.refresh_hint()

    def refresh_hint(self) -> None:
        app = self.app
        if app.loading:
            t = Text("Loading in the background… ")
            t.append("Esc cancels", style="bold")
        elif app.result is not None:
            t = Text("Loaded. ")
            t.append("Enter", style="bold")
            t.append(" opens the explorer.")
        elif app.traces and all(s.status == LOADED for s in app.traces):
            # loaded, the comparison on its way (or failed: Enter tries again)
            t = Text("Loaded. ")
            t.append("Enter", style="bold")
            t.append(" opens the explorer.")
        elif any(s.status == FAILED for s in app.traces):
            t = Text("A trace could not be loaded. ")
            t.append("Enter", style="bold")
            t.append(" shows the error.")
        else:
            t = Text("")
            t.append("Enter", style="bold")
            t.append(" loads the traces.")
        t.append("   ? help · q quit", style=DIM)
        self.query_one("#hint", Static).update(t)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "cancel":
            return bool(self.app.loading)
        if action == "open":
            return not self.app.loading
        return True

    def action_open(self) -> None:
        self.post_message(OpenRequested())

    def action_cancel(self) -> None:
        self.post_message(CancelRequested())
