"""Helpers for driving the explorer headless (tests, snapshots, screenshots).

`PreloadedLoader` stands in for core.loader.load with models loaded once, so each test app starts
in milliseconds and progress is deterministic; `screen_text` is what a user would read on screen.
"""

from __future__ import annotations

import asyncio
import io
import os
from typing import Any

from rich.console import Console


class PreloadedLoader:
    """A `load` replacement that hands out already-loaded models by path."""

    def __init__(self, models: dict[str, Any]) -> None:
        self.models = {os.path.abspath(p): m for p, m in models.items()}
        self.calls = 0

    def __call__(self, path, *, progress=None, cancel=None, **_kw) -> Any:
        from core.errors import LoadCancelled
        from core.loader import load

        self.calls += 1
        key = os.path.abspath(os.fspath(path))
        model = self.models.get(key)
        if model is None:  # not preloaded (e.g. a broken file under test): the real loader decides
            return load(path, progress=progress, cancel=cancel, **_kw)
        size = getattr(model.info, "size", 0)
        if progress is not None and progress(1.0, "done", size, size) is False:
            raise LoadCancelled(path)
        return model


def screen_text(app) -> str:
    """The current screen as plain text (what the terminal shows, without colour)."""
    width, height = app.size
    console = Console(width=width, height=height, file=io.StringIO(), force_terminal=True, color_system=None,
                      record=True, legacy_windows=False, safe_box=False)
    console.print(app.screen._compositor.render_update(full=True, screen_stack=app._background_screens))
    return console.export_text()


async def wait_until(pilot, condition, timeout: float = 10.0, step: float = 0.02) -> None:
    """Pause the pilot until `condition()` holds (workers done, screen pushed…)."""
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while not condition():
        if loop.time() > end:
            raise TimeoutError("condition not reached")
        await pilot.pause(step)
    await pilot.pause()


async def wait_for_main(pilot, timeout: float = 20.0) -> None:
    """Until the comparison (or browse) screen is up and no worker is running."""
    from .screens.main import MainScreen

    app = pilot.app
    await wait_until(pilot, lambda: isinstance(app.screen, MainScreen) and app.screen.is_mounted
                     and not any(w.is_running for w in app.workers), timeout)
    await pilot.pause()
