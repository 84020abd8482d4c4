"""Snapshots of the other screens (pytest-textual-snapshot): metadata and loading (progress frozen at known
values), fusion evidence, operations, help, the error screen, browse mode and NO_COLOR.

Update after an intended change with `pytest tests/functional/test_tui_snapshots_more.py --snapshot-update` and look at
the SVGs in tests/functional/__snapshots__/ (`python -m tests.make_screenshots` copies them under readable names).
"""

from __future__ import annotations

import pytest

from kerneldiff.core.demo import DEMO_A, DEMO_B
from kerneldiff.tui.state import TraceState
from kerneldiff.tui.screens.error import ErrorScreen
from tui_driver import demo_app, wait_for_main, wait_until

pytestmark = pytest.mark.slow   # big inputs, subprocesses or many screens: CI runs it, the fast loop does not

SMALL = (80, 24)
LARGE = (120, 36)


def test_start_metadata_80x24(snap_compare, demo_models):
    assert snap_compare(demo_app(demo_models, autoload=False), terminal_size=SMALL)


@pytest.mark.parametrize("size", [SMALL, LARGE], ids=["80x24", "120x36"])
def test_start_loading(snap_compare, demo_models, size):
    app = demo_app(demo_models, autoload=False)

    async def run_before(pilot):
        # a frozen moment of a load: the app's state as the loaders' progress makes it
        await pilot.pause()
        states = []
        for i, (fraction, stage) in enumerate(((0.42, "reading"), (0.93, "phases"))):
            size_ = app.session.infos[i].size
            states.append(TraceState.loading(fraction, stage, int(size_ * min(fraction / 0.9, 1)), size_))
        app.traces = tuple(states)
        await pilot.pause()

    assert snap_compare(app, terminal_size=size, run_before=run_before)


@pytest.mark.parametrize("size", [SMALL, LARGE], ids=["80x24", "120x36"])
def test_fusion_evidence(snap_compare, demo_models, size):
    assert snap_compare(demo_app(demo_models), press=["3"], terminal_size=size, run_before=wait_for_main)


def test_operations_80x24(snap_compare, demo_models):
    assert snap_compare(demo_app(demo_models), press=["2"], terminal_size=SMALL, run_before=wait_for_main)


def test_help_80x24(snap_compare, demo_models):
    assert snap_compare(demo_app(demo_models), press=["question_mark"], terminal_size=SMALL, run_before=wait_for_main)


def test_error_80x24(snap_compare, demo_models, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the message names the file as given: keep it relative and stable
    (tmp_path / "broken.json").write_text('{"traceEvents": [}')
    app = demo_app(demo_models, paths=[str(DEMO_A), "broken.json"])

    async def run_before(pilot):
        await wait_until(pilot, lambda: isinstance(app.screen, ErrorScreen))

    assert snap_compare(app, terminal_size=SMALL, run_before=run_before)


def test_browse_one_trace_80x24(snap_compare, demo_models):
    assert snap_compare(demo_app(demo_models, paths=[str(DEMO_B)]), terminal_size=SMALL, run_before=wait_for_main)


def test_layers_no_color_80x24(snap_compare, demo_models, monkeypatch):
    monkeypatch.setenv("NO_COLOR", "1")
    assert snap_compare(demo_app(demo_models), press=["1"], terminal_size=SMALL, run_before=wait_for_main)
