"""The explorer goes through one session (kerneldiff.core.session): loads are `session.load(i)` in
thread workers, the comparison is `session.compare(phase)`, phases are `session.phases()`, and the
app's state is reactive (the start screen follows `traces`, the explorer screens follow `result`).
Sessions here are built by the test, with injected slow or failing loaders."""

from __future__ import annotations

import threading

import pytest

from kerneldiff.core.compare.engine import compare
from kerneldiff.core.demo import DEMO_A, DEMO_B
from kerneldiff.core.errors import LoadCancelled, TraceError
from kerneldiff.core.session import Session
from kerneldiff.tui.app import KernelDiffApp
from kerneldiff.tui.screens.browse import BrowseScreen
from kerneldiff.tui.screens.error import ErrorScreen
from kerneldiff.tui.screens.main import MainScreen
from kerneldiff.tui.screens.start import StartScreen
from kerneldiff.tui.state import FAILED, LOADED, LOADING, TraceState
from tui_driver import PreloadedLoader, all_text, screen_text, wait_for_main, wait_until

PATHS = [str(DEMO_A), str(DEMO_B)]


class GatedLoader:
    """Reports one progress step, then waits for the test to open its gate (or for a cancel)."""

    def __init__(self, real, fail: dict[str, Exception] | None = None) -> None:
        self.real = real
        self.fail = fail or {}
        self.gate = threading.Event()
        self.calls: list[str] = []

    def __call__(self, path, *, progress=None, cancel=None, **kw):
        self.calls.append(path)
        progress(0.25, "reading", 250, 1000)
        while not self.gate.wait(0.01):
            if cancel.is_set():
                raise LoadCancelled(path)
        if path in self.fail:
            raise self.fail[path]
        return self.real(path, progress=progress, cancel=cancel, **kw)


def probed(loader, paths=PATHS) -> Session:
    s = Session(paths, use_cache=False, loader=loader)
    s.probe(strict=False)
    return s


@pytest.mark.slow
async def test_the_app_loads_and_compares_through_its_session(demo_models):
    loader = GatedLoader(PreloadedLoader(demo_models))
    session = probed(loader)
    app = KernelDiffApp(PATHS, session=session)
    assert app.session is session
    async with app.run_test(size=(100, 30)) as pilot:
        # both loads run at once, each waiting at 25%: the cards show the state the app holds
        await wait_until(pilot, lambda: all(s.status == LOADING and s.fraction == 0.25 for s in app.traces))
        assert app.loading == {0, 1} and sorted(loader.calls) == sorted(PATHS)
        start = app.screen
        assert isinstance(start, StartScreen)
        assert screen_text(app).count("reading") == 2 and "Esc cancels" in screen_text(app)
        loader.gate.set()
        await wait_for_main(pilot)
        assert all(s.status == LOADED for s in app.traces)
        assert session.models[0] is demo_models[str(DEMO_A)] and session.models[1] is demo_models[str(DEMO_B)]
        # the comparison is the session's: the same figures as the engine's on the same models
        expected = compare(session.models[0], session.models[1])
        assert isinstance(app.screen, MainScreen) and app.result.phase == "all"
        assert app.result.gap_us == expected.gap_us and len(app.result.layers) == len(expected.layers)
        assert list(app.phases) == session.phases()
        text = all_text(start)
        assert text.count("loaded: ") == 2  # each card's summary line
        # Esc at the top level keeps the comparison (it used to drop back to the start screen) and says so
        main = app.screen
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is main and any("top level: q quits" in n.message for n in app._notifications)


@pytest.mark.slow
async def test_phase_cycling_follows_the_session(demo_models):
    session = probed(PreloadedLoader(demo_models))
    session.phases = lambda: ["all", "decode"]  # what the session offers is what p cycles through
    app = KernelDiffApp(PATHS, session=session)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for_main(pilot)
        assert app.phases == ("all", "decode") and "(p: all/decode)" in screen_text(app)
        await pilot.press("p")
        await wait_until(pilot, lambda: app.phase == "decode" and not any(w.is_running for w in app.workers))
        assert app.result.phase == "decode"
        await pilot.press("p")
        await wait_until(pilot, lambda: app.phase == "all" and not any(w.is_running for w in app.workers))
        assert app.result.phase == "all"


@pytest.mark.slow
async def test_a_failing_load_leaves_the_other_trace_to_browse(demo_models):
    broken = TraceError(str(DEMO_B), "the loader refused it (planted)")
    loader = GatedLoader(PreloadedLoader(demo_models), fail={str(DEMO_B): broken})
    loader.gate.set()
    session = probed(loader)
    app = KernelDiffApp(PATHS, session=session)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_until(pilot, lambda: isinstance(app.screen, ErrorScreen))
        assert app.traces[1] == TraceState.failed(str(broken)) and app.traces[0].status == LOADED
        text = " ".join(all_text(app.screen).split())
        assert "the loader refused it (planted)" in text and "b browses it" in text
        assert session.models[1] is None and app.exit_code == 2
        await pilot.press("b")
        await wait_for_main(pilot)
        assert isinstance(app.screen, BrowseScreen) and app.browsing == 0
        assert app.result.path == session.models[0].path and app.result.kernels == len(session.models[0].kernels)
        assert "browse › Operations" in screen_text(app)


async def test_an_unexpected_loader_error_is_one_line_not_a_traceback(demo_models):
    loader = GatedLoader(PreloadedLoader(demo_models), fail={str(DEMO_A): RuntimeError("boom\nsecond line")})
    loader.gate.set()
    app = KernelDiffApp(PATHS, session=probed(loader))
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_until(pilot, lambda: isinstance(app.screen, ErrorScreen))
        assert app.traces[0].status == FAILED
        assert app.traces[0].message == f"{DEMO_A}: unexpected error while loading (RuntimeError: boom second line)"
        assert "Traceback" not in screen_text(app)


@pytest.mark.slow
async def test_cancel_then_reload_goes_through_the_session_again(demo_models):
    loader = GatedLoader(PreloadedLoader(demo_models))
    app = KernelDiffApp(PATHS, session=probed(loader))
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_until(pilot, lambda: app.loading == {0, 1})
        await pilot.press("escape")
        await wait_until(pilot, lambda: not app.loading)
        assert [s.status for s in app.traces] == ["cancelled", "cancelled"] and app.session.models == [None, None]
        assert screen_text(app).count("cancelled") == 2
        loader.gate.set()
        await pilot.press("enter")
        await wait_for_main(pilot)
        assert len(loader.calls) == 4 and app.session.loaded
