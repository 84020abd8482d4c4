"""Snapshots of the screens issue 17 changed or added (pytest-textual-snapshot): an operation's kernels on
each side, the Layers tab when only one trace has layers, and wrapped warnings.

Update after an intended change with `pytest tests/functional/test_tui_snapshots_reading.py --snapshot-update` and look
at the SVGs in tests/functional/__snapshots__/ (`python -m tests.make_screenshots` copies them under readable names).
"""

from __future__ import annotations

import pytest

from kerneldiff.core.demo import DEMO_A, DEMO_B
from kerneldiff.tui.screens.drill import SideKernelsScreen
from tui_driver import demo_app, wait_for_main, wait_for_screen, wait_for_tab_bar

from model_edits import without_layers

pytestmark = pytest.mark.slow   # big inputs, subprocesses or many screens: CI runs it, the fast loop does not

SMALL = (80, 24)
LARGE = (120, 36)


def one_sided(demo_models):
    """The demo pair as if A's layers had not been found."""
    return demo_app({str(DEMO_A): without_layers(demo_models[str(DEMO_A)]), str(DEMO_B): demo_models[str(DEMO_B)]})


@pytest.mark.parametrize("size", [SMALL, LARGE], ids=["80x24", "120x36"])
def test_operation_kernels(snap_compare, demo_models, size):
    # Operations tab, second row (Attention), Enter: its kernels on A, then on B (read in a worker)
    async def run_before(pilot):
        await wait_for_main(pilot)
        await pilot.press("2", "j", "enter")
        await wait_for_screen(pilot, SideKernelsScreen)

    assert snap_compare(demo_app(demo_models), terminal_size=size, run_before=run_before)


@pytest.mark.parametrize("size", [SMALL, LARGE], ids=["80x24", "120x36"])
def test_one_sided_layers(snap_compare, demo_models, size):
    assert snap_compare(one_sided(demo_models), press=["1"], terminal_size=size, run_before=wait_for_main)


async def _warnings_tab(pilot):
    await wait_for_main(pilot)
    await pilot.press("5")
    await wait_for_tab_bar(pilot)   # at 80 columns the bar may scroll to the tab, with an animation


def test_warnings_wrapped_80x24(snap_compare, demo_models):
    assert snap_compare(one_sided(demo_models), terminal_size=SMALL, run_before=_warnings_tab)
