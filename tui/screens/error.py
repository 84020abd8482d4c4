"""A trace failed to load: the loader's message, and the way on (browse the other trace)."""

from __future__ import annotations

import os
from dataclasses import dataclass

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Static

from ..messages import BrowseRequested
from ..text import DIM, SIDE_STYLE, literal, span
from ..widgets.footer import Footer
from ..widgets.header import Breadcrumb

SIDES = ("a", "b")


@dataclass(frozen=True)
class Failure:
    index: int
    path: str
    message: str


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

    def __init__(self, failures: list[Failure], browsable: tuple[int, str] | None = None) -> None:
        """`browsable`: (index, label) of a trace that loaded fine, if one did."""
        super().__init__()
        self.failures = failures
        self.browsable = browsable

    def compose(self) -> ComposeResult:
        yield Breadcrumb("error")
        with VerticalScroll(id="errors"):
            for f in self.failures:
                side = SIDES[f.index]
                t = span(f"{side.upper()} ", f"bold {SIDE_STYLE[side]}")
                t.append(literal(os.path.basename(f.path) or f.path, "bold"))
                t.append(" could not be loaded\n\n")
                t.append(literal(f.message))
                yield Static(t, classes="error")
            yield Static(self._way_on(), classes="ok")
        yield Footer()

    def _way_on(self) -> Text:
        t = Text()
        if self.browsable is not None:
            index, label = self.browsable
            side = SIDES[index]
            t.append(side.upper() + " ", style=f"bold {SIDE_STYLE[side]}")
            t.append(literal(label, "bold"))
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
            return self.browsable is not None
        return True

    def action_back(self) -> None:
        self.app.pop_screen()

    def action_browse(self) -> None:
        if self.browsable is not None:
            self.post_message(BrowseRequested(self.browsable[0]))
