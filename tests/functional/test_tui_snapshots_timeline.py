"""The explorer's Timeline tab (issue 14 item 5): per forward pass, span, busy and idle of each side,
the slowest pass first; its numbers are the comparison's (Side.timeline, Comparison.wall)."""

from __future__ import annotations

import pytest

from tui_driver import demo_app, screen_text, wait_for_main, wait_for_screen, wait_for_tab_bar, wait_until
from kerneldiff.tui.views import timeline_passes
from kerneldiff.tui.widgets.result_table import ResultTable
from kerneldiff.core.report import format as fmt

pytestmark = pytest.mark.slow   # big inputs, subprocesses or many screens: CI runs it, the fast loop does not

SMALL = (80, 24)


@pytest.mark.asyncio
async def test_timeline_tab_numbers_are_the_comparisons(demo_models):
    app = demo_app(demo_models)
    async with app.run_test(size=SMALL) as pilot:
        await wait_for_main(pilot)
        await pilot.press("6")
        await pilot.pause()
        main = app.screen
        table = main.query_one("#timeline", ResultTable)
        assert main.focused is table
        comp = app.result
        pa, pb = comp.a.timeline.passes, comp.b.timeline.passes
        assert pa and pb
        rows = table.rows_shown
        assert len(rows) == max(len(pa), len(pb))
        # the largest |span gap| first, as the CLI's pass table (issue 30: the header no longer marks
        # both span columns sorted for an order by the longer of the two)
        gaps = [abs(r.values[3]) for r in rows if r.values[3] is not None]
        assert gaps == sorted(gaps, reverse=True) and table.sort_name == "gap"
        for r in rows:
            # the row's number is the pass's index among all passes (its "pass"), the same on both sides
            n = r.values[0]
            a = next((p for p in pa if p.pass_ == n), None)
            b = next((p for p in pb if p.pass_ == n), None)
            for i, key in ((1, "span_us"), (8, "busy_us"), (10, "idle_us"), (12, "launch_bound_us"),
                           (14, "sync_us"), (16, "kernels")):
                assert r.values[i] == (getattr(a, key) if a else None)
                assert r.values[i + 1] == (getattr(b, key) if b else None)
            if a and b:
                assert r.values[3] == pytest.approx(a.span_us - b.span_us)
                assert r.values[4] == pytest.approx(a.idle_us / a.span_us)
        # every pass of the phase is a row, and each side's passes add up to no more than its wall span
        assert sum(r.values[1] or 0 for r in rows) <= comp.a.timeline.span_us + 1e-6
        assert len(timeline_passes(comp)) == len(rows)
        text = screen_text(app)
        assert "Timeline" in text and "A span" in text
        assert f"wall A {fmt.us(comp.wall.a_wall_us)}" in text
        first = rows[0]
        assert fmt.us(first.values[1]) in text

        # p recomputes: the tab follows the phase
        await pilot.press("p")
        await wait_until(pilot, lambda: app.result.phase != "all" and not any(w.is_running for w in app.workers))
        await pilot.pause()
        table = main.query_one("#timeline", ResultTable)
        assert len(table.rows_all) == max(len(app.result.a.timeline.passes), len(app.result.b.timeline.passes))


async def _timeline_tab(pilot):
    # at 80 columns the tab bar overflows (Summary first): it scrolls to the Timeline tab with an
    # animation, which the snapshot must not catch halfway
    await wait_for_main(pilot)
    await pilot.press("6")
    await wait_for_tab_bar(pilot)   # the bar's scroll to the tab starts after it is activated
    await pilot.wait_for_scheduled_animations()
    await pilot.wait_for_animation()
    await pilot.pause()


def test_timeline_80x24(snap_compare, demo_models):
    assert snap_compare(demo_app(demo_models), terminal_size=SMALL, run_before=_timeline_tab)


def test_timeline_no_color_80x24(snap_compare, demo_models, monkeypatch):
    monkeypatch.setenv("NO_COLOR", "1")
    assert snap_compare(demo_app(demo_models), terminal_size=SMALL, run_before=_timeline_tab)


async def test_pass_timeline_blocks_zoom_and_kernel_detail(demo_models):
    from kerneldiff.tui.screens.kernel import KernelDetailScreen
    from kerneldiff.tui.screens.pass_timeline import PassTimeline, PassTimelineScreen

    app = demo_app(demo_models)
    async with app.run_test(size=SMALL) as pilot:
        await wait_for_main(pilot)
        await pilot.press("6")
        await pilot.pause()
        table = app.screen.query_one("#timeline", ResultTable)
        row = table.rows_shown[table.cursor_row]
        await pilot.press("enter")
        await wait_for_screen(pilot, PassTimelineScreen)
        view = app.screen.query_one(PassTimeline)
        a, b = row.payload
        # the kernels drawn are the pass's: as many, over the same span, as the timeline counts
        for side, p in zip(view.sides, (a, b)):
            assert len(side.rows) == p.kernels
            assert side.span_us == pytest.approx(p.span_us, abs=1e-3)
        text = screen_text(app)
        assert f"Pass {row.values[0]}" in text and "launch" in text and "█" in text and "▓" in text
        # zoom in halves the µs per cell, 0 fits the pass again, → walks to the next kernel
        fit = view.us_per_cell
        await pilot.press("plus")
        assert view.us_per_cell == pytest.approx(fit / 2)
        await pilot.press("0")
        assert view.us_per_cell == pytest.approx(fit)
        await pilot.press("right", "right")
        assert view.cursor == (0, 2)
        await pilot.press("down")
        assert view.cursor[0] == 1
        await pilot.press("l")
        assert view.offset_us > 0
        side, i = view.selected()
        name = app.session.models[1].kernel_name(int(side.rows[i]))
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, KernelDetailScreen))
        assert app.screen.refs[0].name == name
        await pilot.press("escape")
        await wait_until(pilot, lambda: isinstance(app.screen, PassTimelineScreen))


async def test_pass_timeline_kernel_detail_counts_the_phase_shown(demo_models):
    """In a phase, the kernel detail of the pass timeline counts the launches of the name in that
    phase (Session.name_durations), as the rest of the screen does."""
    from kerneldiff.tui.screens.kernel import KernelDetailScreen
    from kerneldiff.tui.screens.pass_timeline import PassTimeline, PassTimelineScreen

    app = demo_app(demo_models, phase="decode")
    async with app.run_test(size=SMALL) as pilot:
        await wait_for_main(pilot)
        assert app.result.phase == "decode"
        await pilot.press("6")
        await pilot.pause()
        await pilot.press("enter")
        await wait_for_screen(pilot, PassTimelineScreen)
        side, i = app.screen.query_one(PassTimeline).selected()
        row = int(side.rows[i])
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, KernelDetailScreen))
        ref = app.screen.refs[0]
        m = app.session.models[0]
        k = m.kernels
        in_decode = int(((k.name == k.name[row]) & m.phase_mask("decode")).sum())
        assert ref.stats.count == in_decode < int((k.name == k.name[row]).sum())
        assert ref.count_note == "launches of this name in the decode phase"


def test_pass_timeline_80x24(snap_compare, demo_models):
    from kerneldiff.tui.screens.pass_timeline import PassTimelineScreen

    async def run_before(pilot):      # the pass's kernels are read in a worker: drawn before → →
        await wait_for_main(pilot)
        await pilot.press("6", "enter")
        await wait_for_screen(pilot, PassTimelineScreen)

    assert snap_compare(demo_app(demo_models), press=["right", "right"], terminal_size=SMALL, run_before=run_before)
