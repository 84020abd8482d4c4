"""Screens read from the session in thread workers: the screen is up, and answers keys, while a
query is still running; what the worker read is applied when it ends, and a newer phase wins over
an older query (the drill-down of an operation, a layer of one trace)."""

from __future__ import annotations

import threading

import pytest

from kerneldiff.core.compare.engine import compare
from kerneldiff.core.demo import DEMO_A, DEMO_B
from kerneldiff.tui.screens.browse import BrowseLayerScreen
from kerneldiff.tui.screens.drill import SideKernelsScreen
from tui_driver import demo_app, screen_text, wait_for_main, wait_for_screen, wait_until
from kerneldiff.tui.widgets.result_table import ResultTable

A, B = str(DEMO_A), str(DEMO_B)


def _held(session, method: str):
    """Make session.`method` wait for the returned event (the query of a big trace, slowed down)."""
    go = threading.Event()
    real = getattr(session, method)
    calls = []

    def slow(*args, **kwargs):
        calls.append(args)
        assert go.wait(20), "the test never released the query"
        return real(*args, **kwargs)

    setattr(session, method, slow)
    return go, calls


def _side_totals(screen) -> dict[str, float]:
    rows = screen.query_one("#side_kernels", ResultTable).rows_all
    return {side: sum(r.payload[1].stats.total_us for r in rows if r.payload[0] == side) for side in ("a", "b")}


@pytest.mark.slow
async def test_an_operations_kernels_are_read_off_the_ui_thread_and_follow_the_phase(demo_models):
    app = demo_app(demo_models)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for_main(pilot)
        go, calls = _held(app.session, "operation_kernels")
        await pilot.press("2")
        ops = app.screen.query_one("#operations", ResultTable)
        await wait_until(pilot, lambda: app.screen.focused is ops)
        category = ops.current_row().payload.category
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, SideKernelsScreen) and calls)
        screen = app.screen
        # the query waits; the screen is drawn and takes keys meanwhile
        assert not screen.ready and f"compare › Operations › {category}" in screen_text(app)
        await pilot.press("question_mark")
        await wait_until(pilot, lambda: type(app.screen).__name__ == "HelpScreen")
        await pilot.press("escape")
        await wait_until(pilot, lambda: app.screen is screen)
        assert not screen.ready
        go.set()
        await wait_for_screen(pilot, SideKernelsScreen)
        want = next(o for o in app.result.operations if o.category == category)
        got = _side_totals(screen)
        assert got["a"] == pytest.approx(want.a.total_us) and got["b"] == pytest.approx(want.b.total_us)
        # p: the next phase's comparison, then its kernels, read again in a worker
        await pilot.press("p")
        await wait_until(pilot, lambda: app.phase == "prefill" and screen.ready and screen.comparison.phase == "prefill")
        prefill = compare(demo_models[A], demo_models[B], phase="prefill")
        want = next(o for o in prefill.operations if o.category == category)
        got = _side_totals(screen)
        assert got["a"] == pytest.approx(want.a.total_us) and got["b"] == pytest.approx(want.b.total_us)


@pytest.mark.slow
async def test_a_stale_query_is_dropped_when_a_newer_phase_was_asked(demo_models):
    """The older query ends after the newer one: its kernels are not shown over the newer phase's."""
    app = demo_app(demo_models)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for_main(pilot)
        await pilot.press("2")
        ops = app.screen.query_one("#operations", ResultTable)
        await wait_until(pilot, lambda: app.screen.focused is ops)
        await pilot.press("enter")
        await wait_for_screen(pilot, SideKernelsScreen)
        screen = app.screen
        go, calls = _held(app.session, "operation_kernels")
        await pilot.press("p")                                      # prefill: its query is held
        await wait_until(pilot, lambda: app.phase == "prefill" and calls)
        held = len(calls)
        del app.session.operation_kernels                           # the next query answers at once
        await pilot.press("p")                                      # decode: answered at once
        await wait_until(pilot, lambda: app.phase == "decode" and screen.ready)
        assert screen.comparison.phase == "decode" and len(calls) == held
        decode = _side_totals(screen)
        go.set()                                                    # the prefill query ends last
        await pilot.pause(0.2)
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert screen.comparison.phase == "decode" and _side_totals(screen) == decode


@pytest.mark.slow
async def test_a_layers_kernels_are_read_in_a_worker(demo_models):
    app = demo_app(demo_models, paths=[B])
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for_main(pilot)
        go, calls = _held(app.session, "layer_kernels")
        await pilot.press("L")
        await wait_until(pilot, lambda: isinstance(app.screen, BrowseLayerScreen) and calls)
        screen = app.screen
        assert not screen.ready and f"browse › Layers › Layer {screen.layer_index}" in screen_text(app)
        go.set()
        await wait_for_screen(pilot, BrowseLayerScreen)
        k = demo_models[B].kernels
        rows = screen.query_one("#layer_kernels", ResultTable).rows_all
        assert sum(r.payload.stats.count for r in rows) == int((k.layer == screen.layer_index).sum())


@pytest.mark.slow
async def test_a_pass_timeline_reads_its_kernels_in_a_worker(demo_models):
    from kerneldiff.tui.screens.pass_timeline import PassTimeline, PassTimelineScreen

    app = demo_app(demo_models)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for_main(pilot)
        go, calls = _held(app.session, "pass_kernels")
        await pilot.press("6")
        await pilot.pause()
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, PassTimelineScreen) and calls)
        screen = app.screen
        assert not screen.ready and "reading the pass's kernels…" in screen_text(app)
        await pilot.press("right", "down", "plus", "0", "enter")    # keys before the kernels: nothing breaks
        assert app.screen is screen and not screen.ready
        go.set()
        await wait_for_screen(pilot, PassTimelineScreen)
        view = screen.query_one(PassTimeline)
        assert len(view.sides) == 2 and view.cursor == (0, 0) and all(len(s.rows) for s in view.sides)
        assert "█" in screen_text(app) and "reading" not in screen_text(app)
