"""A trace failed to load: the loader's message, and the way on (browse the other trace)."""

from __future__ import annotations

import os

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Static

from ..text import DIM, SIDE_STYLE, literal, span
from ..widgets.header import Breadcrumb


class ErrorScreen(Screen):
    BINDINGS = [
        Binding("escape", "back", "Back"),
        Binding("b", "browse", "Browse the other trace"),
    ]

    DEFAULT_CSS = """
    ErrorScreen #errors { padding: 1 2; }
    ErrorScreen .error { border: round $error; padding: 0 1; height: auto; margin-bottom: 1; }
    ErrorScreen .ok { height: auto; }
    """

    def compose(self) -> ComposeResult:
        app = self.app
        yield Breadcrumb("error")
        with VerticalScroll(id="errors"):
            for i, msg in enumerate(app.errors):
                if msg is None:
                    continue
                t = span(f"{app.side_key(i).upper()} ", f"bold {SIDE_STYLE.get(app.side_key(i), '')}")
                t.append(literal(os.path.basename(app.paths[i]) or app.paths[i], "bold"))
                t.append(" could not be loaded\n\n")
                t.append(literal(msg))
                yield Static(t, classes="error")
            yield Static(self._way_on(), classes="ok")
        yield Footer()

    def _way_on(self) -> Text:
        app = self.app
        ok = app.browsable_index()
        t = Text()
        if ok is not None:
            t.append(app.side_key(ok).upper() + " ", style=f"bold {SIDE_STYLE.get(app.side_key(ok), '')}")
            t.append(literal(app.models[ok].label, "bold"))
            t.append(" loaded fine: ")
            t.append("b", style="bold")
            t.append(" browses it.\n")
        t.append("Esc", style="bold")
        t.append(" goes back to the traces, ")
        t.append("q", style="bold")
        t.append(" quits.")
        t.append("\nThe terminal is restored on exit whatever happened.", style=DIM)
        return t

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "browse":
            return self.app.browsable_index() is not None
        return True

    def action_back(self) -> None:
        self.app.pop_screen()

    def action_browse(self) -> None:
        ok = self.app.browsable_index()
        if ok is not None:
            self.app.pop_screen()
            self.app.browse(ok)
