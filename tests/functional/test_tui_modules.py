"""The explorer's Modules screen (`m` on the compare screen): the module tree, expandable with
→ and ←, its rows the tree's figures; Enter drills to a module's kernel pairs; the host hotspots'
tabs; an 80x24 snapshot."""

from __future__ import annotations

import pytest

from tui_driver import demo_app, screen_text, wait_for_main, wait_for_screen
from kerneldiff.tui.widgets.result_table import ResultTable

pytestmark = pytest.mark.slow   # the explorer on the demo pair: several screens

SMALL = (80, 24)


async def _open(pilot):
    from kerneldiff.tui.screens.modules import ModulesScreen

    await wait_for_main(pilot)
    await pilot.press("m")
    await wait_for_screen(pilot, ModulesScreen)
    await pilot.pause()


@pytest.mark.asyncio
async def test_modules_tree_expands_and_collapses(demo_models):
    from kerneldiff.core.compare.module_compare import compare_modules

    app = demo_app(demo_models)
    async with app.run_test(size=SMALL) as pilot:
        await _open(pilot)
        screen = app.screen
        table = screen.query_one("#modules", ResultTable)
        a, b = app.session.models
        mc = compare_modules(a, b, app.result.phase)
        rows = list(table.rows_shown)
        assert rows[0].payload.path == "" and rows[0].values[1] == pytest.approx(mc.root.a.time_us)
        # each shown node's figures are the tree's
        nodes = {n.path: n for n in _walk(mc.root)}
        for r in rows:
            n = nodes[r.payload.path]
            assert r.values[3] == pytest.approx(n.gap_us)
        # cursor to a node with children that is not expanded: → shows its children right below it
        i = next(i for i, r in enumerate(rows) if r.payload.children and r.payload.path
                 and r.payload.path not in screen.expanded)
        table.move_cursor(row=i)
        await pilot.press("right")
        await pilot.pause()
        node = rows[i].payload
        shown = [r.payload.path for r in table.rows_shown]
        kids = [c.path for c in node.children]
        assert shown[i + 1:i + 1 + len(kids)] == kids
        # ← collapses it again
        await pilot.press("left")
        await pilot.pause()
        assert [r.payload.path for r in table.rows_shown] == [r.payload.path for r in rows]
        # the host tabs: the launch-bound idle by host operation sums to each side's ledger row
        await pilot.press("2")
        await pilot.pause()
        idle = screen.query_one("#host_idle", ResultTable)
        row = next(e for e in app.result.ledger if e.cause == "idle: launch-bound")
        assert sum(r.values[2] for r in idle.rows_all) == pytest.approx(row.a_us, abs=1e-6)
        assert sum(r.values[3] for r in idle.rows_all) == pytest.approx(row.b_us, abs=1e-6)
        assert "launch-bound" in screen_text(app)


@pytest.mark.asyncio
async def test_enter_on_a_module_shows_its_kernel_pairs(demo_models, tmp_path, monkeypatch):
    """Enter on a decoder layer's module: the comparison's kernel pairs whose kernel (either side's)
    was launched inside that module, by the kernel detail's own join (launch -> module calls around
    it), not the module tree's; Enter on a pair opens it."""
    from kerneldiff.core.analysis.modules import module_path
    from kerneldiff.tui.screens.kernel import KernelDetailScreen
    from kerneldiff.tui.screens.module_pairs import ModulePairsScreen

    monkeypatch.setenv("KERNELDIFF_EXPORT_DIR", str(tmp_path))
    app = demo_app(demo_models)
    async with app.run_test(size=SMALL) as pilot:
        await _open(pilot)
        screen = app.screen
        for _ in range(100):
            if screen.ready:
                break
            await pilot.pause(0.05)
        table = screen.query_one("#modules", ResultTable)
        rows = list(table.rows_shown)
        i = next(i for i, r in enumerate(rows) if "DecoderLayer" in r.payload.name)
        node = rows[i].payload
        table.move_cursor(row=i)
        await pilot.press("enter")
        await wait_for_screen(pilot, ModulePairsScreen)
        await pilot.pause()
        a, b = app.session.models

        def under(m, row):
            return row >= 0 and (" > ".join(module_path(m, row)) + " > ").startswith(node.path + " > ")

        want = [(al.layer, p.position) for al in sorted(app.result.alignments, key=lambda al: al.layer)
                for p in al.pairs if under(a, p.a_row) or under(b, p.b_row)]
        pairs = app.screen.query_one("#module_pairs", ResultTable)
        got = [(layer, p.position) for layer, p in (r.payload for r in pairs.rows_all)]
        assert want and sorted(got) == sorted(want)
        assert len({layer for layer, _ in got}) == 1     # one decoder layer's module: that layer's pairs
        # `e` writes them in the export schema's pairs table (docs/EXPORT_SCHEMA.md), in the order shown
        await pilot.press("e")
        await pilot.pause()
        import csv

        with app.last_export.open() as fh:
            exported = list(csv.DictReader(fh))
        assert [(int(r["layer"]), int(r["position"])) for r in exported] == \
            [(layer, p.position) for layer, p in (r.payload for r in pairs.rows_shown)]
        await pilot.press("enter")
        await wait_for_screen(pilot, KernelDetailScreen)


def _walk(n):
    yield n
    for c in n.children:
        yield from _walk(c)


def test_modules_80x24(snap_compare, demo_models):
    assert snap_compare(demo_app(demo_models), terminal_size=SMALL, run_before=_open)
