"""The explorer on a pair it has compared before: the stored comparison is the first screen (no start
screen), the same comparison as computed; the traces load behind it, and what reads them (drill-downs,
another phase) waits for them, saying so. The comparison screen's hidden tabs are mounted after the
first frame and filled as they come."""

from __future__ import annotations

import shutil
import threading

import pytest

from kerneldiff.core import comparison_cache
from kerneldiff.core.demo import DEMO_A, DEMO_B
from kerneldiff.core.session import Session
from kerneldiff.tui.app import KernelDiffApp
from kerneldiff.tui.screens.layer import LayerScreen
from kerneldiff.tui.screens.main import COMPARE_TABS, MainScreen
from kerneldiff.tui.screens.start import StartScreen
from kerneldiff.tui.state import LOADED
from tui_driver import screen_text, wait_for_main, wait_for_screen, wait_for_text, wait_until
from kerneldiff.tui.widgets.result_table import ResultTable
from kerneldiff.tui.widgets.table_pane import TablePane

SIZE = (120, 36)


@pytest.fixture()
def paths(tmp_path, monkeypatch):
    """The demo pair, copied (keys name the files), with a cache of its own."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    out = []
    for side, p in zip("ab", (DEMO_A, DEMO_B)):
        shutil.copy(p, tmp_path / f"{side}-{p.name}")
        out.append(str(tmp_path / f"{side}-{p.name}"))
    return out


def stored_entries():
    return list(comparison_cache.cache_dir().glob(f"*{comparison_cache.SUFFIX}"))


async def first_opening(paths) -> str:
    """Open the pair once (computed, then stored once shown); the comparison screen's text."""
    app = KernelDiffApp(paths)
    assert app.stored is None
    async with app.run_test(size=SIZE) as pilot:
        await wait_for_main(pilot)
        await wait_until(pilot, lambda: stored_entries() and not any(w.is_running for w in app.workers))
        return screen_text(app)


@pytest.mark.slow
async def test_a_pair_compared_before_opens_on_its_stored_comparison(paths):
    computed = await first_opening(paths)
    app = KernelDiffApp(paths)
    assert app.stored is not None
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        # the first screen: no start screen under it, and what it shows is what was computed
        assert isinstance(app.screen, MainScreen) and not any(isinstance(s, StartScreen) for s in app.screen_stack)
        await wait_for_main(pilot)
        assert screen_text(app) == computed
        # the traces load behind it; nothing is compared again
        await wait_until(pilot, lambda: all(s.status == LOADED for s in app.traces))
        assert app.session.loaded and app._generation == 0
        fresh = Session(paths, use_cache=False)
        fresh.load_all()
        assert app.result == fresh.compare()
        assert app.first_frame_seconds is not None


@pytest.mark.slow
async def test_what_reads_the_traces_waits_for_them(paths, monkeypatch):
    await first_opening(paths)
    gate = threading.Event()
    real_load = Session.load

    def held(self, index, progress=None, cancel=None):
        gate.wait(30)
        return real_load(self, index, progress, cancel)

    monkeypatch.setattr(Session, "load", held)
    app = KernelDiffApp(paths)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: isinstance(app.screen, MainScreen) and app.screen.comparison is not None)
        await wait_until(pilot, lambda: app.screen.pane("layers") is not None)
        main = app.screen
        await pilot.press("1")   # Layers: Enter opens a layer, which reads the traces
        await wait_until(pilot, lambda: isinstance(main.focused, ResultTable) and main.focused.id == "layers")
        await pilot.press("enter")
        await pilot.press("p")   # another phase is compared from the traces
        await pilot.pause()
        assert app.screen is main and app.phase == "all"
        shown = [n.message for n in app._notifications]
        assert any("still loading" in m for m in shown) and any("once the traces are loaded" in m for m in shown)
        gate.set()
        # loaded: the phase asked for is compared, and Enter opens the layer
        await wait_until(pilot, lambda: app.result.phase != "all" and not any(w.is_running for w in app.workers))
        assert app.phase == app.result.phase
        await pilot.press("enter")
        await wait_for_screen(pilot, LayerScreen)


@pytest.mark.slow
async def test_every_tab_is_filled_though_hidden_tabs_mount_after_the_first_frame(paths):
    app = KernelDiffApp(paths, use_cache=False)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: isinstance(app.screen, MainScreen) and app.screen.comparison is not None)
        main = app.screen
        await pilot.press("7")   # a hidden tab, perhaps before its pane is there
        await wait_for_main(pilot)
        assert main.focused is main.pane("shapes").table   # its table takes the focus when it comes
        for key, _ in COMPARE_TABS:
            pane = main.query_one(f"#pane-{key}", TablePane)
            assert pane.table.spec is not None, key
        # a new phase reaches the panes mounted late too
        await pilot.press("p")
        await wait_until(pilot, lambda: app.result.phase != "all" and not any(w.is_running for w in app.workers))
        await pilot.pause()
        for key in ("layers", "timeline", "warnings"):
            assert main.pane(key).table.spec is not None


@pytest.mark.slow
async def test_a_trace_that_fails_behind_a_stored_comparison_shows_the_error_screen(paths, monkeypatch):
    from kerneldiff.core.errors import TraceError
    from kerneldiff.tui.screens.error import ErrorScreen

    await first_opening(paths)
    real_load = Session.load

    def failing(self, index, progress=None, cancel=None):
        if index == 1:
            raise TraceError(self.paths[1], "gone while it was read")
        return real_load(self, index, progress, cancel)

    monkeypatch.setattr(Session, "load", failing)
    app = KernelDiffApp(paths)
    async with app.run_test(size=SIZE) as pilot:
        # the text is read across the box edges (the message wraps where the temporary path puts it,
        # later under xdist) and waited on (the body is drawn some frames after the screen is on top)
        await wait_for_text(pilot, ErrorScreen, "gone while it was read")
        assert app.exit_code == 2
