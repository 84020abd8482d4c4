"""The explorer's runs screen (tui/screens/runs.py): both runs' ranks slowest first, their collectives,
and Enter on a rank ending it with that rank chosen."""

from __future__ import annotations

import pytest
from textual.widgets import TabbedContent

from kerneldiff.core.ranks.session import RunSession
from kerneldiff.core.synth.ranks import write_run
from kerneldiff.tui.app import KernelDiffApp, runs_explorer
from kerneldiff.tui.widgets.result_table import ResultTable


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    base = tmp_path_factory.mktemp("tui_runs")
    write_run(base / "a", ranks=3, straggler=2, straggle_us=50, transfer_us=80, passes=2, layers=2)
    write_run(base / "b", ranks=3, straggler=None, transfer_us=60, overlap_us=30, passes=2, layers=2, naming="vllm")
    s = RunSession([str(base / "a"), str(base / "b")], use_cache=False, jobs=1)
    s.load()
    return s


@pytest.fixture(scope="module")
def found(runs):
    return runs.findings()


async def test_the_one_explorer_opens_on_the_runs_screen(runs, found):
    """Two runs open the explorer's one App straight on the runs screen (chosen by the result's
    type), with nothing left to load and no start screen below it."""
    from kerneldiff.tui.run_views import RunsView
    from kerneldiff.tui.screens.runs import RunsScreen

    app = runs_explorer(runs, found)
    assert type(app) is KernelDiffApp and isinstance(app.result, RunsView) and app.result.found is found
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert [type(s) for s in app.screen_stack] == [RunsScreen]
        assert not app.loading and app.title == "kerneldiff — runs"


@pytest.mark.slow
async def test_ranks_slowest_first_and_enter_picks_one(runs, found):
    app = runs_explorer(runs, found)
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        t = app.query_one("#ranks", ResultTable)
        assert t.row_count == 6
        walls = [r.wall_us for _, r in app.result.rows]
        assert walls == sorted(walls, reverse=True)
        assert [str(c) for c in t.get_row_at(0)[:2]] == ["A", "0"]     # A's passes are slower
        await pilot.press("down", "down", "enter")
        await pilot.pause()
    assert app.return_value == ("a", 2)


async def test_collectives_tab(runs, found):
    app = runs_explorer(runs, found)
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("2")
        await pilot.pause()
        assert app.query_one(TabbedContent).active == "tab-collectives"
        c = app.query_one("#collectives", ResultTable)
        assert c.row_count == 1
        row = [str(x) for x in c.get_row_at(0)]
        assert row[0] == "all_reduce" and row[3] == "4/4"
        await pilot.press("q")
    assert app.return_value == 0            # quit: no rank chosen


async def test_collectives_keep_kind_and_size_when_scrolled(runs, found):
    """At 80 columns the Collectives table scrolls sideways; kind and size stay on screen at its far
    end, beside the gap (its last column), as drawn."""
    import re

    from tui_driver import screen_text

    from kerneldiff.core.report.run_report import size

    app = runs_explorer(runs, found)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("2")
        await pilot.pause()
        c = app.query_one("#collectives", ResultTable)
        assert c.max_scroll_x > 0                    # the table is wider than the screen
        await pilot.press("end")
        await pilot.pause()
        assert c.scroll_x == c.max_scroll_x
        text = screen_text(app)
        head = next(line for line in text.splitlines() if "kind" in line)
        assert re.search(r"kind\s+size\b", head) and "gap" in head and "n A/B" not in head
        c0 = found.collectives[0]
        assert any(line.lstrip("▌ ").startswith("all_reduce") and size(c0.nbytes) in line for line in text.splitlines())


@pytest.mark.slow
async def test_filter_and_sort_the_ranks(runs, found):
    app = runs_explorer(runs, found)
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        t = app.query_one("#ranks", ResultTable)
        await pilot.press("slash", *"run", "space", "b", "enter")
        await pilot.pause()
        assert [str(t.get_row_at(i)[0]) for i in range(t.row_count)] == ["B"] * 3
        await pilot.press("escape")            # clears the filter
        await pilot.pause()
        assert t.row_count == 6
        await pilot.press("x")                 # most exposed communication first
        await pilot.pause()
        exposed = [t.get_row_at(i)[6] for i in range(t.row_count)]
        keys = [(str(t.get_row_at(i)[0]).lower(), int(str(t.get_row_at(i)[1]))) for i in range(t.row_count)]
        want = sorted(((k, r.rank) for k in "ab" for r in found.ranks[k]),
                      key=lambda kr: -next(r.exposed_comm_us for r in found.ranks[kr[0]] if r.rank == kr[1]))
        assert [w[1] for w in want][:1] == [k[1] for k in keys][:1] and len(exposed) == 6
        await pilot.press("n")                 # by file name, A to Z
        await pilot.pause()
        names = [str(t.get_row_at(i)[-1]) for i in range(t.row_count)]
        assert names == sorted(names, key=str.lower)


@pytest.mark.slow
async def test_export_writes_the_cli_schema_as_shown(runs, found, tmp_path, monkeypatch):
    import csv
    import json

    from kerneldiff.core.report.run_tables import run_table

    monkeypatch.setenv("KERNELDIFF_EXPORT_DIR", str(tmp_path))
    app = runs_explorer(runs, found)
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        await pilot.press("slash", *"run", "space", "a", "enter", "e")
        await pilot.pause()
        await pilot.press("2", "E")
        await pilot.pause()
    rows = list(csv.reader(open(tmp_path / "kerneldiff-runs-ranks.csv")))
    head, want = run_table(found, "ranks")
    assert rows[0] == head and len(rows) == 4 and {r[0] for r in rows[1:]} == {"a"}
    # the slowest first, as on screen, with the CLI's rounded figures
    assert [float(r[3]) for r in rows[1:]] == sorted((float(r[3]) for r in rows[1:]), reverse=True)
    assert sorted(rows[1:]) == sorted([[str(v) for v in r] for r in want if r[0] == "a"])
    coll = json.loads((tmp_path / "kerneldiff-runs-collectives.json").read_text())
    head, want = run_table(found, "collectives")
    assert len(coll) == 1 and list(coll[0]) == head and coll[0]["kind"] == "all_reduce"


@pytest.mark.slow
async def test_help_lists_the_runs_keys(runs, found):
    from kerneldiff.tui.screens.runs import runs_binding_groups

    app = runs_explorer(runs, found)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("question_mark")
        await pilot.pause()
        groups = dict(runs_binding_groups(app))
        keys = {k for items in groups.values() for k, _d in items}
        assert {"/", "s", "e", "1", "2", "x", "q", "?"} <= {x.strip() for k in keys for x in k.split(",")}
        assert type(app.screen).__name__ == "RunsHelpScreen"
        await pilot.press("escape")
        await pilot.pause()
        assert type(app.screen).__name__ == "RunsScreen"
