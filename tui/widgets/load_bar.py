"""A one-line load progress bar with its percentage.

One widget that draws itself, where Textual's ProgressBar composes three (bar, percentage, ETA)
with their own styles and timers: two of those cost ~20 ms of the explorer's first frame.
"""

from __future__ import annotations

from rich.text import Text
from textual.reactive import reactive
from textual.widget import Widget


class LoadBar(Widget):
    """`progress` runs from 0 to 100; the bar fills the width left of the percentage."""

    COMPONENT_CLASSES = {"load-bar--done", "load-bar--todo", "load-bar--complete"}
    DEFAULT_CSS = """
    LoadBar { height: 1; }
    LoadBar > .load-bar--done { color: $primary; }
    LoadBar > .load-bar--complete { color: $success; }
    LoadBar > .load-bar--todo { color: $surface-lighten-2; }
    """

    progress: reactive[float] = reactive(0.0)

    def update(self, progress: float) -> None:
        self.progress = max(0.0, min(100.0, float(progress)))

    def render(self) -> Text:
        label = f" {self.progress:3.0f}%"
        width = max(0, self.size.width - len(label))
        filled = round(width * self.progress / 100)
        done = "load-bar--complete" if self.progress >= 100 else "load-bar--done"
        t = Text(no_wrap=True)
        t.append("━" * filled, style=self.get_component_rich_style(done))
        t.append("━" * (width - filled), style=self.get_component_rich_style("load-bar--todo"))
        t.append(label)
        return t
