"""Helpers for driving the explorer headless in tests and snapshots (test code: not in the wheel).

`PreloadedLoader` stands in for the session's loader with models loaded once, so each test app starts
in milliseconds and progress is deterministic; `screen_text` is what a user would read on screen.
"""

from __future__ import annotations

import asyncio
import io
import os
from typing import Any

from rich.console import Console


class PreloadedLoader:
    """A session `loader` that hands out already-loaded models by path (None for any other path:
    the session reads that file itself)."""

    def __init__(self, models: dict[str, Any]) -> None:
        self.models = {os.path.abspath(p): m for p, m in models.items()}
        self.calls = 0

    def __call__(self, path, *, progress=None, cancel=None, **_kw) -> Any:
        from kerneldiff.core.errors import LoadCancelled

        self.calls += 1
        key = os.path.abspath(os.fspath(path))
        model = self.models.get(key)
        if model is None:  # not preloaded (e.g. a broken file under test): the session reads it
            return None
        size = getattr(model.info, "size", 0)
        if progress is not None and progress(1.0, "done", size, size) is False:
            raise LoadCancelled(path)
        return model


def demo_app(models: dict[str, Any], paths: list[str] | None = None, **kw):
    """The explorer on the demo pair (or `paths`), loading from already-loaded `models`."""
    from kerneldiff.core.demo import DEMO_A, DEMO_B

    from kerneldiff.tui.app import KernelDiffApp

    return KernelDiffApp(paths or [str(DEMO_A), str(DEMO_B)], use_cache=False, loader=PreloadedLoader(models), **kw)


def all_text(screen) -> str:
    """Text of every Static on a screen (also what is scrolled out of view)."""
    from textual.widgets import Static

    console = Console(width=200, record=True, file=io.StringIO(), color_system=None)
    for s in screen.query(Static):
        console.print(s.content if hasattr(s, "content") else s.renderable)
    return console.export_text()


def screen_text(app) -> str:
    """The current screen as plain text (what the terminal shows, without colour)."""
    width, height = app.size
    console = Console(width=width, height=height, file=io.StringIO(), force_terminal=True, color_system=None,
                      record=True, legacy_windows=False, safe_box=False)
    console.print(app.screen._compositor.render_update(full=True, screen_stack=app._background_screens))
    return console.export_text()


async def wait_until(pilot, condition, timeout: float = 30.0, step: float = 0.02) -> None:
    """Pause the pilot until `condition()` holds (workers done, screen pushed…)."""
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while not condition():
        if loop.time() > end:
            raise TimeoutError("condition not reached")
        await pilot.pause(step)
    await pilot.pause()


async def wait_for_tab_bar(pilot, timeout: float = 40.0) -> None:
    """Until the active tab of each tab bar on the screen lies fully in view and the bar's scrolling
    has ended. At 80 columns the bar overflows and scrolls to a newly active tab with an animation,
    which a snapshot must not catch halfway, and which starts later on a busy machine (a fixed pause
    before waiting for animations was not always enough)."""
    from textual.widgets import Tabs

    def shown() -> bool:
        for tabs in pilot.app.screen.query(Tabs):
            tab = tabs.active_tab
            if tab is None:
                continue
            bar = tabs.query_one("#tabs-scroll").region
            if tab.region.x < bar.x or tab.region.right > bar.right:
                return False
        return True

    await wait_until(pilot, shown, timeout)
    await pilot.wait_for_scheduled_animations()
    await pilot.wait_for_animation()
    await pilot.pause()


async def wait_for_screen(pilot, kind: type, timeout: float = 30.0) -> None:
    """Until a screen of `kind` is on top and shows what its workers read (screens that read from
    the session in a worker say so with `ready`)."""
    app = pilot.app
    await wait_until(pilot, lambda: isinstance(app.screen, kind) and getattr(app.screen, "ready", True), timeout)


BOX_EDGES = str.maketrans({c: " " for c in "│┃║╭╮╰╯─━"})


async def wait_for_text(pilot, kind: type, *needles: str, timeout: float = 90.0) -> str:
    """Until a screen of `kind` is on top, mounted, and its text on screen holds every one of
    `needles`; that text, read as words joined by single spaces with the borders of boxes taken out,
    so that a sentence wrapped inside a box (where it wraps depends on a file's path) reads whole.
    A screen is on top some frames before its body is drawn, more of them on a loaded machine."""
    app = pilot.app
    seen = ""

    def shown() -> bool:
        nonlocal seen
        if not (isinstance(app.screen, kind) and app.screen.is_mounted):
            return False
        seen = " ".join(screen_text(app).translate(BOX_EDGES).split())
        return all(n in seen for n in needles)

    try:
        await wait_until(pilot, shown, timeout, step=0.05)
    except TimeoutError:
        raise TimeoutError(f"{kind.__name__} never showed {needles}; it showed: {seen[:400]!r}") from None
    return seen


async def wait_for_main(pilot, timeout: float = 40.0) -> None:
    """Until the comparison (or browse) screen is up and no worker is running."""
    from textual.lazy import Lazy

    from kerneldiff.tui.screens.browse import BrowseScreen
    from kerneldiff.tui.screens.main import MainScreen

    app = pilot.app
    await wait_until(pilot, lambda: isinstance(app.screen, (MainScreen, BrowseScreen)) and app.screen.is_mounted
                     and not any(w.is_running for w in app.workers), timeout)
    # the first table takes the focus once the result is shown; its tab pane then tells the tabs
    # (TabPane.Focused): a tab key pressed before that message is handled is undone by it
    await wait_until(pilot, lambda: app.screen.focused is not None, timeout)
    # the hidden tabs' panes are mounted after the first frame (TabbedExplorerScreen.lazy_panes):
    # a tab opened before its pane is there lays out again when the pane comes
    await wait_until(pilot, lambda: not app.screen.query(Lazy), timeout)
    await pilot.pause()
