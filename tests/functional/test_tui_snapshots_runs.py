"""Snapshots of the explorer's runs screen (tui/screens/runs.py) at 80×24 and 120×36: the ranks of two
generated runs (a planted straggler on each), the collectives, and the help.

Update after an intended change with `pytest tests/functional/test_tui_snapshots_runs.py --snapshot-update`
and look at the SVGs in tests/functional/__snapshots__/.
"""

from __future__ import annotations

import pytest

from kerneldiff.core.ranks.session import RunSession
from kerneldiff.core.synth.ranks import write_run
from kerneldiff.tui.app import runs_explorer

SMALL = (80, 24)
LARGE = (120, 36)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    base = tmp_path_factory.mktemp("snap_runs")
    write_run(base / "a", ranks=4, straggler=2, straggle_us=50, transfer_us=80, overlap_us=30, passes=2, layers=2)
    write_run(base / "b", ranks=4, straggler=1, straggle_us=120, transfer_us=60, passes=2, layers=2, naming="vllm")
    s = RunSession([str(base / "a"), str(base / "b")], use_cache=False, jobs=1)
    s.load()
    return s, s.findings()   # the explorer takes the session and its findings (runs_explorer)


@pytest.mark.parametrize("size", [SMALL, LARGE], ids=["80x24", "120x36"])
def test_runs_ranks(snap_compare, runs, size):
    assert snap_compare(runs_explorer(*runs), terminal_size=size)


@pytest.mark.slow
@pytest.mark.parametrize("size", [SMALL, LARGE], ids=["80x24", "120x36"])
def test_runs_collectives(snap_compare, runs, size):
    assert snap_compare(runs_explorer(*runs), press=["2"], terminal_size=size)


@pytest.mark.slow
def test_runs_help_80x24(snap_compare, runs):
    assert snap_compare(runs_explorer(*runs), press=["question_mark"], terminal_size=SMALL)


@pytest.mark.slow
def test_runs_collectives_scrolled_80x24(snap_compare, runs):
    """Scrolled to the far end: kind and size stay beside the last columns."""
    assert snap_compare(runs_explorer(*runs), press=["2", "end"], terminal_size=SMALL)
