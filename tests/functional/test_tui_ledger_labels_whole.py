"""The explorer's labels are whole at 80×24: the ledger (Summary tab) shows `exposed communication`
on the real two-rank run in full (it was `exposed communica…`), browse's Operations shows the B200
trace's `Attention (prefill)` (it was `Attention (prefil…`); a label wider than its column wraps onto
a second line at a word rather than being cut."""

from __future__ import annotations

import pytest

from kerneldiff.tui.screens.main import MainScreen
from kerneldiff.tui.widgets.result_table import ResultTable
from tui_driver import demo_app, screen_text, wait_for_main

from conftest import real_trace


@pytest.fixture(scope="module")
def two_ranks():
    from kerneldiff.core.orchestration import load

    paths = [str(real_trace(f"hta_two_ranks/sampled_rank-{r}.json.gz")) for r in (0, 1)]
    return paths, {p: load(p, use_cache=False) for p in paths}


def cause_column(app, name: str = "summary") -> tuple[list[str], list]:
    """The text in a table's first column, line by line as drawn, and the rows in view."""
    table = next(t for t in app.screen.query(ResultTable) if t.spec is not None and t.spec.name == name)
    r, width = table.region, table._col_widths[0]
    lines = screen_text(app).splitlines()[r.y + 1:r.y + r.height]   # below the header
    cells = [line[r.x:r.x + width].lstrip("▌").strip() for line in lines]
    return cells, list(table.rows_shown)


@pytest.mark.slow
@pytest.mark.parametrize("size", [(80, 24), (60, 24)], ids=["80x24", "60x24"])
async def test_every_cause_in_view_is_whole(two_ranks, size):
    paths, models = two_ranks
    app = demo_app(models, paths=paths)
    async with app.run_test(size=size) as pilot:
        await wait_for_main(pilot)
        assert isinstance(app.screen, MainScreen)
        cells, rows = cause_column(app)
        causes = [row.values[0] for row in rows]
        assert "exposed communication" in causes
        assert not any("…" in c for c in cells), cells
        # the words drawn, in order, are those of the causes in order (the last in view may be cut
        # off by the table's bottom edge, mid-row, not mid-word)
        drawn = " ".join(c for c in cells if c).split()
        words = " ".join(causes).split()
        assert len(drawn) >= 6 and drawn == words[:len(drawn)], (drawn, words)
        assert "communication" in drawn
        if size[0] == 80:   # the common labels stay on one line at 80 columns
            assert "exposed communication" in cells and "idle: launch-bound" in cells
        else:               # narrower, the label wraps at its space: both words whole, one per line
            i = cells.index("exposed")
            assert cells[i + 1] == "communication"


@pytest.mark.slow
async def test_browse_operations_at_80x24_are_whole():
    from kerneldiff.core.orchestration import load
    from kerneldiff.tui.screens.browse import BrowseScreen

    path = str(real_trace("b200_vllm_eager.json.gz"))
    app = demo_app({path: load(path, use_cache=False)}, paths=[path])
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for_main(pilot)
        assert isinstance(app.screen, BrowseScreen)
        cells, rows = cause_column(app, "operations")
        names = [row.values[0] for row in rows]
        assert "Attention (prefill)" in names[:8]
        assert not any("…" in c for c in cells), cells
        drawn = " ".join(c for c in cells if c).split()
        words = " ".join(names).split()
        assert len(drawn) >= 8 and drawn == words[:len(drawn)], (drawn, words)
        assert "(prefill)" in drawn


@pytest.mark.slow
async def test_a_hint_wider_than_80_columns_takes_two_lines(demo_models):
    """The Layers hint (the layers within noise, the test behind the *, the way on) is longer than
    a line at 80 columns: it wraps to a second line instead of ending in `…`."""
    app = demo_app(demo_models)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for_main(pilot)
        await pilot.press("1")
        await pilot.pause()
        table = next(t for t in app.screen.query(ResultTable) if t.spec is not None and t.spec.name == "layers")
        lines = screen_text(app).splitlines()
        hint = " ".join(line.strip() for line in lines[table.region.y - 2:table.region.y])
        n = len(app.screen.comparison.layers)
        assert f"corrected for {n} layers) Enter: kernel pairs" in " ".join(hint.split()), hint
