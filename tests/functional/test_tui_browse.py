"""Browse mode: one trace in its own view (operations, layers, kernels, steps), driven from the
keyboard. Expected figures are computed here from the model's columns with numpy, not taken from
the screen's own source."""

from __future__ import annotations

import csv

import numpy as np
import pytest
from textual.widgets import TabbedContent

from kerneldiff.core.analysis.trace_totals import TraceOverview
from kerneldiff.core.demo import DEMO_B
from kerneldiff.tui.screens.browse import BrowseLayerScreen, BrowseScreen
from kerneldiff.tui.screens.kernel import KernelDetailScreen
from kerneldiff.tui.screens.main import MainScreen
from tui_driver import all_text, demo_app, screen_text, wait_for_main, wait_for_screen, wait_until
from kerneldiff.tui.text import fmt_pct, fmt_us
from kerneldiff.tui.widgets.result_table import ResultTable


def cell(table: ResultTable, row, key: str) -> str:
    i = [c.key for c in table.spec.columns].index(key)
    return row.cells[i].plain.strip()


@pytest.fixture
def model(demo_models):
    return demo_models[str(DEMO_B)]


async def show_tab(pilot, key: str, table_id: str) -> ResultTable:
    """Press a tab's number and wait until its table has the focus (it takes it after a refresh)."""
    await pilot.press(key)
    screen = pilot.app.screen
    table = screen.query_one(f"#{table_id}", ResultTable)
    await wait_until(pilot, lambda: screen.focused is table)
    return table


@pytest.mark.slow
async def test_browse_is_its_own_view_of_the_trace(demo_models, model):
    app = demo_app(demo_models, paths=[str(DEMO_B)])
    async with app.run_test(size=(120, 36)) as pilot:
        await wait_for_main(pilot)
        screen = app.screen
        assert isinstance(screen, BrowseScreen) and not isinstance(screen, MainScreen)
        assert isinstance(app.result, TraceOverview) and app.browsing == 0
        k = model.kernels
        text = screen_text(app)
        assert "browse › Operations" in text and model.label in text
        assert f"{len(k)} kernels" in text and fmt_us(float(k.dur.sum())) in text
        assert "A/B" not in text and "Gap" not in text  # nothing is compared

        # operations: one row per category, largest first, with count, total and share
        ops = screen.query_one("#operations", ResultTable)
        total = float(k.dur.sum())
        cats = {(model.categories[c] if c >= 0 else "Other"): c for c in np.unique(k.cat).tolist()}
        assert sorted(r.values[0] for r in ops.rows_shown) == sorted(cats)
        shown = [r.values[2] for r in ops.rows_shown]
        assert shown == sorted(shown, reverse=True)
        for row in ops.rows_shown:
            d = k.dur[k.cat == cats[row.values[0]]]
            assert cell(ops, row, "count") == str(len(d))
            assert cell(ops, row, "total") == fmt_us(float(d.sum()))
            assert cell(ops, row, "share") == fmt_pct(float(d.sum()) / total)
        top = ops.current_row().values[0]
        assert top in all_text(screen.query_one("#pane-operations"))  # the detail follows the cursor

        # layers: total, kernels, passes and the median per pass of every layer
        await pilot.press("2")
        await pilot.pause()
        assert screen.query_one(TabbedContent).active == "tab-layers"
        layers = screen.query_one("#layers", ResultTable)
        assert [r.values[0] for r in layers.rows_shown] == sorted(np.unique(k.layer[k.layer >= 0]).tolist())
        for row in layers.rows_shown:
            sel = k.layer == row.values[0]
            per_pass = np.bincount(k.step[sel], weights=k.dur[sel])[np.unique(k.step[sel])]
            assert cell(layers, row, "total") == fmt_us(float(k.dur[sel].sum()))
            assert cell(layers, row, "kernels") == str(int(sel.sum()))
            assert cell(layers, row, "passes") == str(len(per_pass))
            assert cell(layers, row, "median") == fmt_us(float(np.median(per_pass)))

        # kernels: name, category, count, total, mean
        await pilot.press("3")
        await pilot.pause()
        kernels = screen.query_one("#kernels", ResultTable)
        assert len(kernels.rows_all) == len(np.unique(k.name))
        for row in kernels.rows_shown[:5]:
            d = k.dur[k.name == model.strings.get(row.values[0])]
            assert cell(kernels, row, "count") == str(len(d))
            assert cell(kernels, row, "total") == fmt_us(float(d.sum()))
            assert cell(kernels, row, "mean") == fmt_us(float(d.mean()))
        assert f"Kernels {len(np.unique(k.name))}" in screen_text(app)  # the tab says how many

        # steps: the timeline, one row per step with its phase, kernels and GPU time
        await pilot.press("4")
        await pilot.pause()
        steps = screen.query_one("#steps", ResultTable)
        assert [r.values[0] for r in steps.rows_shown] == [s.index for s in model.steps]
        for row in steps.rows_shown:
            sel = k.step == row.values[0]
            assert row.values[1] == model.steps[row.values[0]].phase
            assert cell(steps, row, "kernels") == str(int(sel.sum()))
            assert cell(steps, row, "gpu") == fmt_us(float(k.dur[sel].sum()))
        assert model.steps[0].name in all_text(screen.query_one("#pane-steps")).replace("\n", "")


@pytest.mark.slow
async def test_enter_opens_a_kernel_and_a_layer_of_that_trace(demo_models, model, tmp_path, monkeypatch):
    monkeypatch.setenv("KERNELDIFF_EXPORT_DIR", str(tmp_path))
    app = demo_app(demo_models, paths=[str(DEMO_B)])
    async with app.run_test(size=(100, 36)) as pilot:
        await wait_for_main(pilot)
        screen = app.screen
        kernels = await show_tab(pilot, "3", "kernels")
        await pilot.press("j")
        chosen = kernels.current_row().payload
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, KernelDetailScreen))
        detail = app.screen
        assert len(detail.refs) == 1 and detail.refs[0].name == chosen.name
        assert model.kernel_name(detail.refs[0].detail.row) == chosen.name
        text = all_text(detail)
        flat = "".join(text.split())
        assert "".join(chosen.name.split()) in flat and chosen.category in text and "Python stack" in text
        assert f"count {chosen.stats.count}" in " ".join(text.split())
        assert "browse › Kernels ›" in screen_text(app) and "A/B" not in text
        await pilot.press("escape")
        assert app.screen is screen

        # L opens the busiest layer: its kernels in pass order; Enter opens one of them
        await pilot.press("L")
        await wait_for_screen(pilot, BrowseLayerScreen)
        k = model.kernels
        busy = max(np.unique(k.layer[k.layer >= 0]).tolist(), key=lambda l: float(k.dur[k.layer == l].sum()))
        layer_screen = app.screen
        assert layer_screen.layer_index == busy and f"browse › Layers › Layer {busy}" in screen_text(app)
        rows = layer_screen.query_one("#layer_kernels", ResultTable).rows_all
        assert sum(r.payload.stats.count for r in rows) == int((k.layer == busy).sum())
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, KernelDetailScreen))
        assert f"Layer {busy}" in screen_text(app)
        await pilot.press("escape")
        # e exports the layer's kernels as shown
        await pilot.press("e")
        await pilot.pause()
        exported = list(csv.DictReader(app.last_export.open()))
        assert app.last_export.name.startswith(f"kerneldiff-layer{busy}_kernels-all")
        assert [r["kernel"] for r in exported] == [r.payload.name for r in rows]


@pytest.mark.slow
async def test_phase_cycle_in_browse(demo_models, model):
    app = demo_app(demo_models, paths=[str(DEMO_B)])
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for_main(pilot)
        assert list(app.phases) == app.session.phases() == ["all", "prefill", "decode"]
        await pilot.press("4", "p")
        await wait_until(pilot, lambda: app.phase == "prefill" and not any(w.is_running for w in app.workers))
        steps = app.screen.query_one("#steps", ResultTable)
        assert [r.values[0] for r in steps.rows_all] == [s.index for s in model.steps if s.phase == "prefill"]
        mask = model.phase_mask("prefill")
        assert f"{int(mask.sum())} kernels" in screen_text(app) and "phase prefill" in screen_text(app)

        # the command palette offers the browse view's tabs and its busiest layer
        from kerneldiff.tui.commands import ExplorerCommands

        titles = {t: cb for t, _h, cb in ExplorerCommands(app.screen)._commands()}
        for t in ("Show Operations", "Show Layers", "Show Kernels", "Show Steps", "Show Warnings",
                  "Open busiest layer", "Cycle phase", "Export table as CSV"):
            assert t in titles
        titles["Open busiest layer"]()
        await wait_for_screen(pilot, BrowseLayerScreen)


@pytest.mark.slow
async def test_browse_fits_80x24(demo_models, monkeypatch):
    monkeypatch.setenv("NO_COLOR", "1")
    app = demo_app(demo_models, paths=[str(DEMO_B)])
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for_main(pilot)
        for key in "12345":
            await pilot.press(key)
            await pilot.pause()
            lines = screen_text(app).splitlines()
            assert len(lines) == 24 and all(len(line) <= 80 for line in lines)
            assert "Operations" in lines[4] and "Steps" in lines[4] and "Quit" in lines[-1]
        await show_tab(pilot, "3", "kernels")
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, KernelDetailScreen))
        lines = screen_text(app).splitlines()
        assert len(lines) == 24 and all(len(line) <= 80 for line in lines)
