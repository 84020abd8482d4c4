"""The explorer read by a performance engineer (pilot tests): one statistic per column, layers slowest
first with the time outside layers as a row, one-sided layers said in the tab, demangled names, a
category filter and column, operations that drill into their kernels, direct sort keys, wrapped
warnings, ctrl+c, Esc at the top level and a visible focus."""

from __future__ import annotations

import pytest
from textual.widgets import Tabs

from kerneldiff.core.compare.engine import compare
from kerneldiff.core.demo import DEMO_A, DEMO_B
from kerneldiff.tui import views
from kerneldiff.tui.screens.drill import SideKernelsScreen
from kerneldiff.tui.screens.kernel import KernelDetailScreen
from kerneldiff.tui.screens.layer import LayerScreen
from kerneldiff.tui.screens.main import MainScreen
from tui_driver import all_text, demo_app, screen_text, wait_for_main, wait_for_screen, wait_until
from kerneldiff.tui.widgets.result_table import ResultTable

from model_edits import without_layers

A, B = str(DEMO_A), str(DEMO_B)


@pytest.fixture(scope="module")
def comp(demo_models):
    return compare(demo_models[A], demo_models[B])


# --- one statistic per column (views, no terminal) -------------------------------------------------

def test_pair_columns_are_means_and_the_ratio_and_gap_come_from_them(comp):
    al = comp.alignment(4)
    spec = views.pairs_spec(al)
    labels = [c.label for c in spec.columns]
    assert labels[3:7] == ["A mean", "B mean", "A/B", "Gap"] and labels[-1] == "Category"
    rows = spec.build({"a_name": 30, "b_name": 30})
    both = [r for r in rows if r.values[3] is not None and r.values[4] is not None]
    assert both
    for r in both:
        assert r.values[5] == pytest.approx(r.values[3] / r.values[4])
        assert r.values[6] == pytest.approx(r.values[3] - r.values[4])
    # the example: 73.5µs and 29.4µs medians beside a 2.47× mean ratio; now the means
    p1 = next(r for r in rows if r.values[0] == 1)
    assert views.fmt_ratio(p1.values[5]) == "2.47×" and views.fmt_us(p1.values[3]) == "72.3µs"


def test_operations_are_per_pass_when_the_pass_counts_differ(comp):
    import dataclasses

    per = dataclasses.replace(comp, basis="per_pass", a=dataclasses.replace(comp.a, passes=3),
                              b=dataclasses.replace(comp.b, passes=2))
    spec = views.operations_spec(per)
    assert [c.label for c in spec.columns[1:3]] == ["A/pass", "B/pass"]
    rows = spec.build({"category": 14})
    for r, o in zip(rows, per.operations):
        if o.a.count:
            assert r.values[1] == pytest.approx(o.a.total_us / 3)
        if o.b.count:
            assert r.values[2] == pytest.approx(o.b.total_us / 2)


def test_same_kernels_name_their_statistics(comp):
    spec = views.same_kernels_spec(comp)
    assert [c.label for c in spec.columns[3:7]] == ["A mean", "B mean", "A/B", "Total gap"]
    for r, k in zip(spec.build({"name": 30}), comp.same_kernels):
        assert r.values[5] == pytest.approx(k.a.mean_us / k.b.mean_us)
        assert r.values[6] == pytest.approx(k.a.total_us - k.b.total_us)


# --- layers ----------------------------------------------------------------------------------------

@pytest.mark.slow
async def test_layers_slowest_first_with_the_outside_row_that_drills_down(demo_models, comp):
    app = demo_app(demo_models)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for_main(pilot)
        await pilot.press("1")   # the Summary opens first; these checks are the Layers tab's
        layers = app.screen.query_one("#layers", ResultTable)
        assert [r.key for r in layers.rows_shown][0] == str(comp.layers[0].layer)
        assert "outside" in screen_text(app) and "Gap▼" in screen_text(app)
        # sideways, the Layer column stays
        layers.scroll_x = 30
        await pilot.pause()
        lines = [l for l in screen_text(app).splitlines() if "outside" in l or "Layer" in l]
        assert any(l.lstrip("▌ ").startswith("Layer") for l in lines) and any("outside" in l for l in lines)
        # Enter on `outside`: the kernels outside every layer, per side
        await pilot.press("n")             # by layer: outside last
        await pilot.press("G")
        assert layers.current_row().key == "outside"
        await pilot.press("enter")
        await wait_for_screen(pilot, SideKernelsScreen)
        screen = app.screen
        rows = screen.query_one("#side_kernels", ResultTable).rows_all
        for side in ("a", "b"):
            total = sum(r.payload[1].stats.total_us for r in rows if r.payload[0] == side)
            assert total == pytest.approx(getattr(comp.outside_layers, side).total_us)
        assert "outside layers" in screen_text(app) and "compare › Layers › outside layers" in screen_text(app)
        await pilot.press("escape")
        assert isinstance(app.screen, MainScreen)


@pytest.mark.slow
async def test_layer_screen_says_which_passes_the_pairs_are_over(demo_models, comp):
    app = demo_app(demo_models)
    async with app.run_test(size=(120, 36)) as pilot:
        await wait_for_main(pilot)
        await pilot.press("1")   # the Summary opens first; these checks are the Layers tab's
        await pilot.press("enter")       # the slowest layer: 4
        await wait_until(pilot, lambda: isinstance(app.screen, LayerScreen))
        text = screen_text(app)
        assert "pairs: mean per launch over the 5 of 6 passes that run the usual kernels" in text
        assert "A mean" in text and "Category" in text
        # the fused AMD kernel, demangled, and its pair's count explained in the detail
        await pilot.press("j")
        pair = app.screen.query_one("#pairs", ResultTable).current_row().payload
        assert pair.a_name.startswith("_ZN5aiter32fused_rmsnorm_gemm")
        assert "aiter::fused_rmsnorm_gemm_a16w16_kernel<std::bfloat16_t, 256, 64, true>" in screen_text(app)
        assert "fused_rmsnorm" in app.screen.query_one("#pairs", ResultTable).current_row().cells[1].plain
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, KernelDetailScreen))
        detail = " ".join(all_text(app.screen).split())
        assert ("void aiter::fused_rmsnorm_gemm_a16w16_kernel<std::bfloat16_t, 256, 64, true>(std::bfloat16_t*, "
                "std::bfloat16_t const*") in detail
        assert pair.a_name in detail.replace(" ", "")        # the symbol as recorded, under it
        assert "over 5 of the layer's 6 passes" in detail


async def test_only_one_side_has_layers_and_the_tab_says_so(demo_models):
    models = {A: without_layers(demo_models[A]), B: demo_models[B]}
    app = demo_app(models)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for_main(pilot)
        await pilot.press("1")   # the Summary opens first; these checks are the Layers tab's
        text = screen_text(app)
        assert "only B has layers" in text
        layers = app.screen.query_one("#layers", ResultTable)
        assert all(r.values[3] is None and r.values[4] is None for r in layers.rows_shown)   # no A/B, no gap
        assert "−6.69ms" not in text and "—" in text
        assert layers.sort_name == "time"


# --- names, category filter and column --------------------------------------------------------------

@pytest.mark.slow
async def test_filter_matches_categories_too(demo_models, comp):
    app = demo_app(demo_models)
    async with app.run_test(size=(120, 36)) as pilot:
        await wait_for_main(pilot)
        await pilot.press("1")   # the Summary opens first; these checks are the Layers tab's
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, LayerScreen))
        pairs = app.screen.query_one("#pairs", ResultTable)
        await pilot.press("slash", *"gemm", "enter")
        al = comp.alignment(4)
        expected = [p.position for p in al.pairs
                    if "gemm" in " ".join(filter(None, (p.a_name, p.b_name, p.a_category, p.b_category))).lower()]
        assert [r.payload.position for r in pairs.rows_shown] == expected
        # GEMMs whose names do not say so (Cijk_…, nvjet_…) are kept for their category
        assert any("gemm" not in f"{r.payload.a_name}{r.payload.b_name}".lower() for r in pairs.rows_shown)
        # s: largest |gap| first
        await pilot.press("escape", "s")
        gaps = [abs(r.payload.gap_us) for r in pairs.rows_shown]
        assert gaps == sorted(gaps, reverse=True) and len(gaps) == len(al.pairs)


# --- operations drill down ---------------------------------------------------------------------------

@pytest.mark.slow
async def test_enter_on_an_operation_lists_its_kernels_on_each_side(demo_models, comp):
    app = demo_app(demo_models)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for_main(pilot)
        await pilot.press("2")
        ops = app.screen.query_one("#operations", ResultTable)
        await wait_until(pilot, lambda: app.screen.focused is ops)
        target = next(i for i, r in enumerate(ops.rows_shown) if r.payload.category == "Attention")
        for _ in range(target):
            await pilot.press("j")
        await pilot.press("enter")
        await wait_for_screen(pilot, SideKernelsScreen)
        table = app.screen.query_one("#side_kernels", ResultTable)
        op = next(o for o in comp.operations if o.category == "Attention")
        for side, stats in (("a", op.a), ("b", op.b)):
            mine = [r.payload[1] for r in table.rows_all if r.payload[0] == side]
            assert sum(k.stats.total_us for k in mine) == pytest.approx(stats.total_us)
            assert sum(k.stats.count for k in mine) == stats.count
        text = screen_text(app)
        assert "compare › Operations › Attention" in text and "A/B 1.53×" in text
        first = table.current_row().payload[1]
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, KernelDetailScreen))
        assert first.name in all_text(app.screen).replace("\n", "")
        await pilot.press("escape")
        await pilot.press("escape")
        assert isinstance(app.screen, MainScreen)


# --- warnings, keys and focus ---------------------------------------------------------------------------

@pytest.mark.slow
async def test_warnings_wrap_at_80x24(demo_models):
    models = {A: without_layers(demo_models[A]), B: demo_models[B]}
    app = demo_app(models)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for_main(pilot)
        await pilot.press("5")
        await pilot.pause()
        warnings = app.result.warnings
        assert warnings and max(len(w) for w in warnings) > 80
        flat = " ".join(screen_text(app).replace("▌", " ").split())
        for w in warnings:
            assert " ".join(w.split()) in flat                     # whole, wrapped over lines


@pytest.mark.slow
async def test_ctrl_c_quits(demo_models):
    app = demo_app(demo_models)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for_main(pilot)
        await pilot.press("ctrl+c")
        await pilot.pause()
        assert app._exit


@pytest.mark.slow
async def test_focus_is_visible_and_esc_keeps_the_top_level(demo_models):
    app = demo_app(demo_models)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for_main(pilot)
        await pilot.press("1")   # the Summary opens first; these checks are the Layers tab's
        main = app.screen
        table = main.query_one("#layers", ResultTable)

        def header_line() -> str:
            return next(l for l in screen_text(app).splitlines() if "Layer " in l and "A total" in l)

        assert main.focused is table and header_line().startswith("▌")      # the accent bar
        await pilot.press("tab")
        assert isinstance(main.focused, Tabs) and not header_line().startswith("▌")
        await pilot.press("tab")
        assert main.focused is table and header_line().startswith("▌")
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is main
