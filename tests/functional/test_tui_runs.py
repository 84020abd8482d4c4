"""The explorer's runs screen (tui/runs_app.py): both runs' ranks slowest first, their collectives,
and Enter on a rank ending it with that rank chosen."""

from __future__ import annotations

import pytest
from textual.widgets import DataTable, TabbedContent

from kerneldiff.core.ranks.run import findings
from kerneldiff.core.ranks.session import RunSession
from kerneldiff.core.synth.ranks import write_run
from kerneldiff.tui.runs_app import RunsApp


@pytest.fixture(scope="module")
def found(tmp_path_factory):
    base = tmp_path_factory.mktemp("tui_runs")
    write_run(base / "a", ranks=3, straggler=2, straggle_us=50, transfer_us=80, passes=2, layers=2)
    write_run(base / "b", ranks=3, straggler=None, transfer_us=60, overlap_us=30, passes=2, layers=2, naming="vllm")
    s = RunSession([str(base / "a"), str(base / "b")], use_cache=False, jobs=1)
    return findings(*s.load())


async def test_ranks_slowest_first_and_enter_picks_one(found):
    app = RunsApp(found)
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        t = app.query_one("#ranks", DataTable)
        assert t.row_count == 6
        walls = [r["wall_us"] for _, r in app.rows]
        assert walls == sorted(walls, reverse=True)
        assert [str(c) for c in t.get_row_at(0)[:2]] == ["A", "0"]     # A's passes are slower
        await pilot.press("down", "down", "enter")
        await pilot.pause()
    assert app.return_value == ("a", 2)


async def test_collectives_tab(found):
    app = RunsApp(found)
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("2")
        await pilot.pause()
        assert app.query_one(TabbedContent).active == "tab-collectives"
        c = app.query_one("#collectives", DataTable)
        assert c.row_count == 1
        row = [str(x) for x in c.get_row_at(0)]
        assert row[0] == "all_reduce" and row[2] == "4/4"
        await pilot.press("q")
    assert app.return_value is None
