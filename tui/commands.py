"""Command palette (ctrl+p): the same actions as the keys, for the screen you are on."""

from __future__ import annotations

from functools import partial
from typing import Callable

from textual.command import DiscoveryHit, Hit, Hits, Provider


class ExplorerCommands(Provider):
    def _commands(self) -> list[tuple[str, str, Callable]]:
        from .screens.base import ExplorerScreen, TabbedExplorerScreen
        from .screens.browse import BrowseScreen
        from .screens.main import MainScreen
        from .screens.start import StartScreen

        screen, app = self.screen, self.app
        out: list[tuple[str, str, Callable]] = []
        if isinstance(screen, TabbedExplorerScreen):
            for i, (_key, title) in enumerate(screen.tabs):
                n = i - screen.tab_offset          # the number key of the tab (0: the Summary)
                out.append((f"Show {title}", f"switch to the {title} tab ({n + 1})", partial(screen.action_show_tab, n)))
        if isinstance(screen, MainScreen):
            out.append(("Open slowest layer", "drill into the layer with the largest gap (L)", screen.action_open_slowest))
            out.append(("Write HTML report", "the HTML report and the Perfetto file of this comparison and phase (h)",
                        screen.action_write_report))
        if isinstance(screen, BrowseScreen):
            out.append(("Open busiest layer", "drill into the layer that takes the most time (L)",
                        screen.action_open_slowest))
        if isinstance(screen, ExplorerScreen) and screen.current_table() is not None:
            out += [
                ("Filter by name or category", "show only rows whose name or category contains the text (/)",
                 screen.action_filter),
                ("Sort by gap", "largest |gap| first: the slowest relative to the other side (s)",
                 partial(screen.action_sort_named, "gap")),
                ("Sort by time", "largest time first (t)", partial(screen.action_sort_named, "time")),
                ("Sort by name", "A to Z (n)", partial(screen.action_sort_named, "name")),
                ("Sort by next column", "cycle the sort column (o)", screen.action_sort),
                ("Reverse sort", "flip the sort direction (S)", screen.action_reverse_sort),
                ("Export table as CSV", "write the current table to a CSV file (e)", partial(screen.action_export, "csv")),
                ("Export table as JSON", "write the current table to a JSON file (E)",
                 partial(screen.action_export, "json")),
            ]
        if isinstance(screen, ExplorerScreen):
            out.append(("Back", "go back one level (Esc)", screen.action_back))
        if isinstance(screen, StartScreen):
            out.append(("Load / open", "load the traces or open the explorer (Enter)", screen.action_open))
            if app.loading:
                out.append(("Cancel loading", "stop loading (Esc)", screen.action_cancel))
        if app.check_action("cycle_phase", ()):
            out.append(("Cycle phase", "all → prefill → decode … and recompute (p)", app.action_cycle_phase))
        out.append(("Help", "list every key binding (?)", app.action_help))
        out.append(("Quit kerneldiff", "leave the explorer (q)", app.action_quit))
        return out

    async def discover(self) -> Hits:
        for title, help_text, cb in self._commands():
            yield DiscoveryHit(title, cb, help=help_text)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for title, help_text, cb in self._commands():
            score = matcher.match(title)
            if score > 0:
                yield Hit(score, matcher.highlight(title), cb, text=title, help=help_text)
