"""Snapshots of the drill-down path (pytest-textual-snapshot): layers → a layer's kernel pairs → kernel
detail, at 80×24 and at a roomy size.

Update after an intended change with `pytest tests/functional/test_tui_snapshots.py --snapshot-update` and look at
the SVGs in tests/functional/__snapshots__/ (`python -m tests.make_screenshots` copies them under readable names).
"""

from __future__ import annotations

import pytest

from tui_driver import demo_app, wait_for_main

pytestmark = pytest.mark.slow   # big inputs, subprocesses or many screens: CI runs it, the fast loop does not

SMALL = (80, 24)
LARGE = (120, 36)


@pytest.mark.parametrize("size", [SMALL, LARGE], ids=["80x24", "120x36"])
def test_summary(snap_compare, demo_models, size):
    # what the explorer opens on: the headline in words and the gap ledger, the first cause's detail
    assert snap_compare(demo_app(demo_models), terminal_size=size, run_before=wait_for_main)


def test_summary_no_color_80x24(snap_compare, demo_models, monkeypatch):
    monkeypatch.setenv("NO_COLOR", "1")   # the slower side must still be told without colour: the signs say it
    assert snap_compare(demo_app(demo_models), terminal_size=SMALL, run_before=wait_for_main)


@pytest.mark.parametrize("size", [SMALL, LARGE], ids=["80x24", "120x36"])
def test_layers(snap_compare, demo_models, size):
    # the explorer opens on the Summary: 1 is the Layers tab these snapshots are of
    assert snap_compare(demo_app(demo_models), press=["1"], terminal_size=size, run_before=wait_for_main)


@pytest.mark.parametrize("size", [SMALL, LARGE], ids=["80x24", "120x36"])
def test_layer_pairs(snap_compare, demo_models, size):
    assert snap_compare(demo_app(demo_models), press=["1", "enter"], terminal_size=size, run_before=wait_for_main)


@pytest.mark.parametrize("size", [SMALL, LARGE], ids=["80x24", "120x36"])
def test_kernel_detail(snap_compare, demo_models, size):
    assert snap_compare(demo_app(demo_models), press=["1", "enter", "j", "enter"], terminal_size=size,
                        run_before=wait_for_main)
