"""Textual's Footer, composed again once however many binding changes came before a refresh."""

from __future__ import annotations

from textual.widgets import Footer as TextualFooter


class Footer(TextualFooter):
    """Each change of the bindings (a screen shown, the focus moved, a tab or a reactive with
    bindings changed) queues a full recompose of Textual's footer for after the next refresh: its
    keys unmounted, mounted and styled again, ~5 ms each. A comparison screen's first show queued
    eight in a row, all composing the same final bindings. Here the queued ones are counted and
    all but the last skipped: the last composes the bindings as they are then."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._queued = 0

    def bindings_changed(self, screen) -> None:
        super().bindings_changed(screen)
        # what Textual's footer checks before it queues a recompose
        if screen.app.app_focus and self.is_attached and screen is self.screen:
            self._queued += 1

    async def recompose(self) -> None:
        if self._queued:
            self._queued -= 1
            if self._queued:   # another is queued behind this one: that one composes what is current then
                return
        await super().recompose()
