"""The kernel pairs' G column has a legend for each mark, the blank included."""

from __future__ import annotations

import pytest

from kerneldiff.tui.screens.layer import LayerScreen
from tui_driver import all_text, demo_app, wait_for_main, wait_until


@pytest.mark.slow   # drills into a layer on the explorer: ~3 s
async def test_the_g_column_legend_names_the_blank(demo_models):
    app = demo_app(demo_models)
    async with app.run_test(size=(120, 36)) as pilot:
        await wait_for_main(pilot)
        await pilot.press("1", "enter")
        await wait_until(pilot, lambda: isinstance(app.screen, LayerScreen))
        await pilot.pause()
        text = all_text(app.screen)
    assert "G: 1-9 op fusion group" in text and "= same kernel" in text and "blank: different kernels" in text
