"""The runs explorer at 80×24 on the real two-rank run: a collective's place reads whole in the
Collectives tab (`backward`, it was `back…`): each cell of the where column, as drawn, is the place
the row holds, uncut."""

from __future__ import annotations

import pytest

from kerneldiff.core.ranks.session import RunSession
from kerneldiff.tui.app import runs_explorer
from kerneldiff.tui.widgets.result_table import ResultTable
from tui_driver import screen_text, wait_until

from conftest import real_trace


@pytest.mark.slow
async def test_collective_places_whole_at_80x24():
    run = real_trace("hta_two_ranks/sampled_rank-0.json.gz").parent
    s = RunSession([str(run), str(run)], use_cache=False, jobs=1)
    s.load()
    app = runs_explorer(s, s.findings())
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await pilot.press("2")
        await wait_until(pilot, lambda: any(t.spec is not None and t.spec.name == "collectives" and t.region.height
                                            for t in app.screen.query(ResultTable)))
        await pilot.pause()
        table = next(t for t in app.screen.query(ResultTable) if t.spec is not None and t.spec.name == "collectives")
        places = {row.values[2] for row in table.rows_shown}
        assert "backward" in places
        i = [c.key for c in table.spec.columns].index("where")
        x = table.region.x + sum(table._col_widths[:i])
        lines = screen_text(app).splitlines()[table.region.y + 1:table.region.y + 1 + len(table.rows_shown)]
        shown = [line[x:x + table._col_widths[i]].strip() for line in lines]
        assert sorted(shown) == sorted(row.values[2] for row in table.rows_shown), shown
        assert not any("…" in c for c in shown)


@pytest.mark.slow
@pytest.mark.parametrize("size", [(80, 24), (160, 45)], ids=["80x24", "160x45"])
async def test_the_notes_take_the_room_the_tables_leave(size):
    """Two runs of two ranks fill four rows: the head shows every note (one line each) rather than
    `6 more notes: …` over empty rows, and every rank row stays in view."""
    run = real_trace("hta_two_ranks/sampled_rank-0.json.gz").parent
    s = RunSession([str(run), str(run)], use_cache=False, jobs=1)
    s.load()
    found = s.findings()
    app = runs_explorer(s, found)
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        await wait_until(pilot, lambda: any(t.spec is not None and t.region.height for t in app.screen.query(ResultTable)))
        await pilot.pause()
        text = screen_text(app)
        assert "more notes" not in text
        assert len(found.notes) >= 4
        assert sum(line.lstrip().startswith("note: ") for line in text.splitlines()) == len(found.notes)
        table = next(t for t in app.screen.query(ResultTable) if t.spec is not None and t.spec.name == "ranks")
        assert table.region.height - 1 >= len(table.rows_shown)
