"""The first screen: what each trace is (instant, from the probe) and, below, the load progress."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Static

from ..text import DIM
from ..widgets.header import Breadcrumb
from ..widgets.trace_card import TraceCard


class StartScreen(Screen):
    BINDINGS = [
        Binding("enter", "open", "Load / open"),
        Binding("escape", "cancel", "Cancel loading"),
    ]

    DEFAULT_CSS = """
    StartScreen #cards { height: auto; }
    StartScreen #hint { height: auto; padding: 0 1; color: $text-muted; }
    """

    def compose(self) -> ComposeResult:
        app = self.app
        yield Breadcrumb("traces")
        with VerticalScroll():
            with Horizontal(id="cards"):
                for i, path in enumerate(app.paths):
                    yield TraceCard(app.side_key(i), path, app.infos[i], app.errors[i], id=f"card-{i}")
            yield Static(id="hint")
        yield Footer()

    def on_mount(self) -> None:
        self.refresh_hint()
        self.call_after_refresh(self.app.first_frame_shown)

    def card(self, index: int) -> TraceCard:
        return self.query_one(f"#card-{index}", TraceCard)

    def refresh_hint(self) -> None:
        app = self.app
        if app.loading:
            t = Text("Loading in the background… ")
            t.append("Esc cancels", style="bold")
        elif app.comparison is not None:
            t = Text("Loaded. ")
            t.append("Enter", style="bold")
            t.append(" opens the explorer.")
        elif any(app.errors):
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
        self.app.open_or_load()

    def action_cancel(self) -> None:
        self.app.cancel_loading()
