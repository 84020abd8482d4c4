"""Browse (one trace) opens a step's pass timeline on Enter in Steps: this side's kernels of that
step, its idle said and drawn, with the legend. Expected figures from the model's columns."""

from __future__ import annotations

import numpy as np
import pytest

from kerneldiff.core.demo import DEMO_B
from kerneldiff.tui.screens.pass_timeline import LEGEND, PassTimelineScreen
from kerneldiff.tui.text import fmt_us
from kerneldiff.tui.widgets.result_table import ResultTable
from tui_driver import demo_app, wait_for_main, wait_for_screen, wait_until


@pytest.mark.slow
async def test_enter_on_a_step_opens_its_pass_timeline(demo_models):
    model = demo_models[str(DEMO_B)]
    app = demo_app(demo_models, paths=[str(DEMO_B)])
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for_main(pilot)
        await pilot.press("4")
        screen = app.screen
        steps = screen.query_one("#steps", ResultTable)
        await wait_until(pilot, lambda: screen.focused is steps)
        step = steps.rows_shown[0].values[0]
        await pilot.press("enter")
        await wait_for_screen(pilot, PassTimelineScreen)
        tl_screen = app.screen
        sides = tl_screen.sides
        assert len(sides) == 1 and sides[0].side == "a"
        k = model.kernels
        sel = k.step == step
        assert len(sides[0].rows) == int(sel.sum())
        # idle: the step's span less the union of its kernels, from the columns
        order = np.argsort(k.ts[sel], kind="stable")
        s0, e0 = k.ts[sel][order], (k.ts[sel] + k.dur[sel])[order]
        reach = np.maximum.accumulate(e0)
        idle = float(np.clip(s0[1:] - reach[:-1], 0, None).sum())
        assert sides[0].idle_us == pytest.approx(idle, abs=0.01)   # times from the pass start: rounding
        lines = [str(t) for t in tl_screen.timeline.lines()]
        assert f"idle {fmt_us(idle)}" in lines[0]
        assert lines[-1].strip() == LEGEND
