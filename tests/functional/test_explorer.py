"""The explorer driven from the keyboard (Textual pilot): navigation, tables, help and palette.

Assertions are on what the screens show, compared with what core computes independently.
"""

from __future__ import annotations

import csv
import json

import pytest
from textual.widgets import TabbedContent

from kerneldiff.core.compare.engine import compare
from kerneldiff.core.demo import DEMO_A, DEMO_B
from kerneldiff.tui.screens.help import HelpScreen, binding_groups
from kerneldiff.tui.screens.kernel import KernelDetailScreen
from kerneldiff.tui.screens.layer import LayerScreen
from kerneldiff.tui.screens.main import MainScreen
from tui_driver import all_text, demo_app, screen_text, wait_for_main, wait_until
from kerneldiff.tui.widgets.result_table import ResultTable
from kerneldiff.tui.text import fmt_us


@pytest.fixture(scope="module")
def demo_comparison(demo_models):
    return compare(demo_models[str(DEMO_A)], demo_models[str(DEMO_B)])


@pytest.mark.slow
async def test_keyboard_path_demo_layer_pair_detail_fusion_export(demo_models, demo_comparison, tmp_path, monkeypatch):
    monkeypatch.setenv("KERNELDIFF_EXPORT_DIR", str(tmp_path))
    comp = demo_comparison
    app = demo_app(demo_models)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for_main(pilot)
        await pilot.press("1")   # the Summary opens first; these checks are the Layers tab's
        main = app.screen
        assert isinstance(main, MainScreen)
        header = screen_text(app)
        assert comp.a.label in header and comp.b.label in header and f"phase {comp.phase}" in header
        assert f"{len(comp.warnings)} warning" in header

        # layers arrive slowest first (largest |gap|), the cursor on the first; the kernels outside
        # every layer are a row of their own
        layers = main.query_one("#layers", ResultTable)
        slowest = comp.layers[0]
        assert layers.current_row().payload.layer == slowest.layer
        assert len(layers.rows_shown) == len(comp.layers) + 1
        gaps = [abs(r.payload.gap_us) for r in layers.rows_shown]
        assert gaps == sorted(gaps, reverse=True) and layers.sort_name == "gap"
        assert any(r.payload == comp.outside_layers and r.key == "outside" for r in layers.rows_shown)

        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, LayerScreen))
        layer_screen = app.screen
        assert layer_screen.layer_index == slowest.layer
        al = comp.alignment(slowest.layer)
        pairs = layer_screen.query_one("#pairs", ResultTable)
        assert [r.payload.position for r in pairs.rows_shown] == [p.position for p in al.pairs]
        text = screen_text(app)
        assert f"Layer {slowest.layer}" in text and "compare › Layers › Layer" in text
        if any(p.a_name is None or p.b_name is None for p in al.pairs):
            assert "· none ·" in "\n".join(str(r.cells[1]) + str(r.cells[2]) for r in pairs.rows_shown)

        # walk down to the first pair that has a kernel on both sides and open it
        target = next(i for i, p in enumerate(al.pairs) if p.a_name and p.b_name)
        for _ in range(target):
            await pilot.press("j")
        pair = pairs.current_row().payload
        assert pair == al.pairs[target]
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, KernelDetailScreen))
        detail = all_text(app.screen)
        for name in (pair.a_name, pair.b_name):
            assert name in detail.replace("\n", "")  # full names, wrapped but whole
        for rule in (pair.a_rule, pair.b_rule):
            assert rule in detail
        assert pair.a_category in detail and "median" in detail and "p95" in detail
        assert "Python stack" in detail
        op = demo_models[str(DEMO_A)].cpu_op_name(pair.a_row)
        if op:
            assert op in detail

        # Esc goes back one level at a time
        await pilot.press("escape")
        assert isinstance(app.screen, LayerScreen)
        await pilot.press("escape")
        assert app.screen is main

        # fusion tab: list → evidence pane
        await pilot.press("3")
        await pilot.pause()
        assert main.query_one(TabbedContent).active == "tab-fusion"
        fusion = main.query_one("#fusion", ResultTable)
        assert len(fusion.rows_shown) == len(comp.fusions)
        first = comp.fusions[0]
        evidence = all_text(main.query_one("#pane-fusion"))
        assert first.evidence.split()[0] in evidence and "occurrences" in evidence
        assert first.fused_category in evidence
        await pilot.press("enter")
        assert main.focused is not None and main.focused.has_class("detail")
        await pilot.press("escape")
        assert main.focused is fusion

        # export the fusion table
        await pilot.press("e")
        await pilot.pause()
        path = app.last_export
        assert path is not None and path.parent == tmp_path and path.suffix == ".csv"
        rows = list(csv.DictReader(path.open()))
        assert len(rows) == len(comp.fusions)
        assert rows[0]["fused_category"] == first.fused_category
        await pilot.press("E")
        await pilot.pause()
        data = json.loads(app.last_export.read_text())
        assert [d["kind"] for d in data] == [f.kind for f in comp.fusions]


@pytest.mark.slow
async def test_sort_filter_and_phase_cycle(demo_models, demo_comparison):
    comp = demo_comparison
    app = demo_app(demo_models)
    async with app.run_test(size=(120, 36)) as pilot:
        await wait_for_main(pilot)
        await pilot.press("1")   # the Summary opens first; these checks are the Layers tab's
        main = app.screen
        layers = main.query_one("#layers", ResultTable)
        # layers arrive slowest first; t sorts by time (A + B), n by layer, s back to the gap,
        # o walks the columns from the first, S reverses whatever order is on
        assert layers.sort_name == "gap"
        await pilot.press("t")
        values = [r.payload.a.total_us + r.payload.b.total_us for r in layers.rows_shown]
        assert layers.sort_name == "time" and values == sorted(values, reverse=True)
        await pilot.press("S")
        values = [r.payload.a.total_us + r.payload.b.total_us for r in layers.rows_shown]
        assert values == sorted(values)
        await pilot.press("n")
        assert [r.payload.layer for r in layers.rows_shown] == sorted(r.layer for r in comp.layers) + [-1]
        await pilot.press("s")
        gaps = [abs(r.payload.gap_us) for r in layers.rows_shown]
        assert gaps == sorted(gaps, reverse=True)
        assert "Gap▼" in screen_text(app)
        await pilot.press("o", "o")
        values = [r.payload.a.total_us for r in layers.rows_shown]
        assert layers.sort_column == 1 and values == sorted(values, reverse=True)

        # / filters the same-kernels table by name
        await pilot.press("4")
        same = main.query_one("#same_kernels", ResultTable)
        assert len(same.rows_shown) == len(comp.same_kernels)
        needle = comp.same_kernels[0].name.split("<")[0].split("(")[0][-6:].lower()
        await pilot.press("slash", *needle, "enter")
        expected = [k for k in comp.same_kernels if needle in k.name.lower()]
        assert 0 < len(same.rows_shown) == len(expected) <= len(comp.same_kernels)
        assert main.focused is same
        await pilot.press("slash", "escape")
        assert len(same.rows_shown) == len(comp.same_kernels)

        # p recomputes the comparison for the next phase
        choices = list(app.phases)
        assert choices == app.session.phases()
        assert choices[0] == "all" and "prefill" in choices and "decode" in choices
        await pilot.press("p")
        await wait_until(pilot, lambda: app.phase == choices[1] and not any(w.is_running for w in app.workers))
        assert app.result.phase == choices[1]
        assert f"phase {choices[1]}" in screen_text(app)
        expected = compare(demo_models[str(DEMO_A)], demo_models[str(DEMO_B)], phase=choices[1])
        assert len(main.query_one("#same_kernels", ResultTable).rows_all) == len(expected.same_kernels)


@pytest.mark.slow
async def test_help_lists_every_binding_and_palette_offers_the_actions(demo_models):
    app = demo_app(demo_models)
    async with app.run_test(size=(100, 40)) as pilot:
        await wait_for_main(pilot)
        await pilot.press("1")   # the Summary opens first; these checks are the Layers tab's
        await pilot.press("question_mark")
        await wait_until(pilot, lambda: isinstance(app.screen, HelpScreen))
        text = all_text(app.screen)
        flat = " ".join(text.split())     # a long description wraps over lines
        for _title, items in binding_groups(app):
            for _keys, desc in items:
                assert " ".join(desc.split()) in flat
        for word in ("filter", "sort", "export", "phase", "quit", "back", "drill down", "fusion tab", "palette"):
            assert word in text.lower()
        await pilot.press("escape")
        assert isinstance(app.screen, MainScreen)

        from kerneldiff.tui.commands import ExplorerCommands

        provider = ExplorerCommands(app.screen)
        titles = {t: cb for t, _h, cb in provider._commands()}
        for t in ("Filter by name or category", "Sort by gap", "Sort by time", "Sort by name", "Sort by next column",
                  "Export table as CSV", "Cycle phase", "Help",
                  "Show Fusion", "Open slowest layer", "Quit kerneldiff"):
            assert t in titles
        titles["Show Fusion"]()
        await pilot.pause()
        assert app.screen.query_one(TabbedContent).active == "tab-fusion"
        hits = [h async for h in provider.search("export csv")]
        assert hits and "Export table as CSV" in hits[0].text


@pytest.mark.slow
async def test_the_summary_opens_first_with_the_ledger(demo_models, demo_comparison):
    """Issue 25: the first thing the explorer shows is the wall clock and the gap ledger."""
    from kerneldiff.core.report.headline import headline

    comp = demo_comparison
    app = demo_app(demo_models)
    async with app.run_test(size=(100, 40)) as pilot:
        await wait_for_main(pilot)
        main = app.screen
        assert main.query_one(TabbedContent).active == "tab-summary"
        ledger = main.query_one("#summary", ResultTable)
        assert main.focused is ledger
        assert [r.payload.cause for r in ledger.rows_shown] == [e.cause for e in comp.ledger]
        text = screen_text(app)
        assert f"wall {fmt_us(comp.wall.a_wall_us)}" in text and "compare › Summary" in text
        assert headline(comp).verdict[:40] in " ".join(text.split())
        await pilot.press("1")
        assert main.query_one(TabbedContent).active == "tab-layers"
        await pilot.press("0")
        assert main.query_one(TabbedContent).active == "tab-summary"
