"""The explorer's Shapes tab (issue 15 item 4): GEMM shapes side by side, `a` for the attention shapes,
Enter for a shape's kernels on each side and Enter again for a kernel's detail. Its rows are the
comparison's `gemm_shapes` / `attention_shapes`. These run on a generated MI300X/H100 pair whose
kernel times come from target TFLOP/s per shape (tests/shapes_pair.py), so the figures shown are known.

Update the snapshots after an intended change with `pytest tests/functional/test_tui_snapshots_shapes.py
--snapshot-update` and look at the SVGs in tests/__snapshots__/.
"""

from __future__ import annotations

import csv
import json

import pytest

from kerneldiff.core.orchestration import load
from kerneldiff.core.report import format as fmt
from tui_driver import demo_app, screen_text, wait_for_main, wait_for_tab_bar, wait_until
from kerneldiff.tui.widgets.result_table import ResultTable
from shapes_pair import write_shapes_pair

pytestmark = pytest.mark.slow   # big inputs, subprocesses or many screens: CI runs it, the fast loop does not

SMALL = (80, 24)
LARGE = (120, 36)


def _models(paths) -> dict:
    return {str(p): load(p, use_cache=False) for p in paths}


@pytest.fixture(scope="module")
def shapes_pair(tmp_path_factory):
    paths = write_shapes_pair(tmp_path_factory.mktemp("shapes"))
    return [str(p) for p in paths], _models(paths)


def _app(pair, **kw):
    paths, models = pair
    return demo_app(models, paths=paths, **kw)


async def _open_shapes(pilot):
    await wait_for_main(pilot)
    await pilot.press("7")
    await pilot.pause()


@pytest.mark.asyncio
async def test_shapes_tab_rows_are_the_comparisons_shapes(shapes_pair, tmp_path, monkeypatch):
    monkeypatch.setenv("KERNELDIFF_EXPORT_DIR", str(tmp_path))
    app = _app(shapes_pair)
    async with app.run_test(size=LARGE) as pilot:
        await _open_shapes(pilot)
        main = app.screen
        table = main.query_one("#shapes", ResultTable)
        assert main.focused is table
        comp = app.result
        assert len(comp.gemm_shapes) == 4
        rows = table.rows_shown
        # one row per GEMM shape, in the comparison's order (largest |gap| first), every figure its own
        assert [r.payload for r in rows] == comp.gemm_shapes
        for r, g in zip(rows, comp.gemm_shapes):
            assert r.values == (g.op, f"{g.m}×{g.n}×{g.k}", g.batch, g.dtype, g.a.total_us, g.b.total_us, g.gap_us,
                                g.a.tflops, g.b.tflops, g.a.pct_roofline, g.b.pct_roofline, g.a.bound,
                                g.a.tbps, g.b.tbps, g.ratio, g.a.calls, g.b.calls)
        gaps = [abs(r.values[6]) for r in rows]
        assert gaps == sorted(gaps, reverse=True)
        text = screen_text(app)
        top = comp.gemm_shapes[0]
        assert "4 GEMM shapes" in text and "4096×2816×1024" in text and fmt.gap(top.gap_us) in text
        assert fmt.rate(top.a.tflops) in text and fmt.percent(top.b.pct_roofline) in text and "compute" in text

        # t: largest A + B first; n: by operator, then size; s: back to the gap
        await pilot.press("t")
        times = [r.values[4] + r.values[5] for r in table.rows_shown]
        assert times == sorted(times, reverse=True)
        await pilot.press("n")
        assert [r.values[0] for r in table.rows_shown] == sorted(r.values[0] for r in table.rows_shown)
        await pilot.press("s")
        assert [r.payload for r in table.rows_shown] == comp.gemm_shapes

        # / matches kernel names: only B's split-K shape runs a splitKreduce kernel
        await pilot.press("slash", *"splitkreduce", "enter")
        assert [(r.payload.m, r.payload.n, r.payload.k) for r in table.rows_shown] == [(4096, 1024, 2816)]
        await pilot.press("escape")
        assert len(table.rows_shown) == 4

        # e exports the rows as shown, figures unrounded
        await pilot.press("e")
        await wait_until(pilot, lambda: app.last_export is not None)
        assert app.last_export.name == "kerneldiff-gemm_shapes-all.csv"
        exported = list(csv.DictReader(app.last_export.open()))
        assert [float(x["a_tflops"]) for x in exported] == pytest.approx([g.a.tflops for g in comp.gemm_shapes])

        # a: the attention shapes, same columns after the shape
        await pilot.press("a")
        await pilot.pause()
        att = table.rows_shown
        assert [r.payload for r in att] == comp.attention_shapes and table.spec.name == "attention_shapes"
        assert att[0].values[0] == "B16 H16/16 S256×256 D64 causal*"
        assert att[0].values[2:5] == (comp.attention_shapes[0].a.total_us, comp.attention_shapes[0].b.total_us,
                                      comp.attention_shapes[0].gap_us)
        assert "1 attention shape," in screen_text(app)
        await pilot.press("a")
        assert table.spec.name == "gemm_shapes"


@pytest.mark.asyncio
async def test_enter_lists_a_shapes_kernels_then_opens_one(shapes_pair):
    from kerneldiff.tui.screens.kernel import KernelDetailScreen
    from kerneldiff.tui.screens.shapes import ShapeKernelsScreen

    app = _app(shapes_pair)
    async with app.run_test(size=SMALL) as pilot:
        await _open_shapes(pilot)
        comp = app.result
        qkv = next(g for g in comp.gemm_shapes if g.op == "aten::addmm")
        table = app.screen.query_one("#shapes", ResultTable)
        table.move_cursor(row=comp.gemm_shapes.index(qkv))
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, ShapeKernelsScreen))
        kt = app.screen.query_one("#shape_kernels", ResultTable)
        # A's kernels, then B's, each as the comparison lists them
        expected = [("A", k) for k in qkv.a.kernels] + [("B", k) for k in qkv.b.kernels]
        assert [(r.values[0], r.values[1], r.values[2], r.values[3], r.values[5]) for r in kt.rows_shown] == \
            [(s, k.name, k.count, k.total_us, k.tflops) for s, k in expected]
        text = screen_text(app)
        assert "addmm 4096×3072×1024 bf16" in text and "Memset (Device)" in text and f"{qkv.b.calls} calls" in text
        # the memset does none of the GEMM: no TFLOP/s
        memset = next(r for r in kt.rows_shown if r.values[1] == "Memset (Device)")
        assert memset.values[5] is None

        # Enter on B's GEMM kernel: the kernel detail, with the launch and the operator's inputs
        gemm = next(i for i, r in enumerate(kt.rows_shown) if r.values[0] == "B" and r.values[5] is not None)
        kt.move_cursor(row=gemm)
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, KernelDetailScreen))
        ref = app.screen.refs[0]
        assert ref.name == kt.rows_shown[gemm].values[1] and ref.stats.count == qkv.b.calls
        d = ref.detail
        assert (d.grid, d.block, d.registers, d.shared_memory, d.occupancy) == ("[132,1,1]", "[384,1,1]", 168,
                                                                                   213_248, 12)
        assert json.loads(d.input_dims)[1:3] == [[4096, 1024], [1024, 3072]]
        await pilot.press("escape")
        await wait_until(pilot, lambda: isinstance(app.screen, ShapeKernelsScreen))

        # p: the screen follows the phase (the pair's passes are all 'unknown': the same shape, recompared)
        await pilot.press("p")
        await wait_until(pilot, lambda: app.result.phase != "all" and not any(w.is_running for w in app.workers))
        await pilot.pause()
        screen = app.screen
        assert screen.comparison is app.result and screen.shape in app.result.gemm_shapes
        assert f"phase {app.result.phase}" in screen_text(app)
        await pilot.press("escape")
        await wait_until(pilot, lambda: not isinstance(app.screen, ShapeKernelsScreen))
        assert app.screen.query_one("#shapes", ResultTable).rows_shown[0].payload == app.result.gemm_shapes[0]


@pytest.mark.asyncio
async def test_shapeless_traces_say_why_the_tab_is_empty(tmp_path):
    paths = write_shapes_pair(tmp_path, record_shapes=False)
    app = demo_app(_models(paths), paths=[str(p) for p in paths])
    async with app.run_test(size=SMALL) as pilot:
        await _open_shapes(pilot)
        table = app.screen.query_one("#shapes", ResultTable)
        assert table.rows_all == []
        assert "no operator shapes recorded" in screen_text(app)
        await pilot.press("enter")   # nothing to open
        assert app.screen.query_one("#shapes", ResultTable) is table


@pytest.mark.asyncio
async def test_kernel_names_from_the_trace_are_shown_literally(tmp_path):
    from kerneldiff.tui.screens.shapes import ShapeKernelsScreen

    a, b = write_shapes_pair(tmp_path)
    doc = json.loads(b.read_text())
    hostile = "gemm[bold red]x[/]\x1b[31m_k"
    for e in doc["traceEvents"]:
        if e.get("name") == "nvjet_sm90_tst_128x128_64x6_2x1_v_bz_TNT":
            e["name"] = hostile
    b.write_text(json.dumps(doc))
    app = demo_app(_models((a, b)), paths=[str(a), str(b)])
    async with app.run_test(size=LARGE) as pilot:
        await _open_shapes(pilot)
        comp = app.result
        o_proj = next(g for g in comp.gemm_shapes if (g.n, g.k) == (1024, 1024))
        table = app.screen.query_one("#shapes", ResultTable)
        table.move_cursor(row=comp.gemm_shapes.index(o_proj))
        await pilot.pause()
        assert "gemm[bold red]x[/]\\x1b[31m_k" in screen_text(app)    # the detail pane, literally
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, ShapeKernelsScreen))
        assert [r.values[1] for r in app.screen.query_one("#shape_kernels", ResultTable).rows_shown][-1] == hostile
        assert "gemm[bold red]x[/]\\x1b[31m_k" in screen_text(app)


async def _shapes_tab(pilot):
    # at 80 columns the tab bar overflows (Summary first) and scrolls to Shapes with an animation,
    # which a snapshot must not catch halfway
    await wait_for_main(pilot)
    await pilot.press("7")
    await wait_for_tab_bar(pilot)   # the bar's scroll to the tab starts after it is activated
    await pilot.wait_for_scheduled_animations()
    await pilot.wait_for_animation()
    await pilot.pause()


@pytest.mark.parametrize("size", [SMALL, LARGE], ids=["80x24", "120x36"])
def test_shapes(snap_compare, shapes_pair, size):
    assert snap_compare(_app(shapes_pair), terminal_size=size, run_before=_shapes_tab)


def test_shapes_no_color_80x24(snap_compare, shapes_pair, monkeypatch):
    monkeypatch.setenv("NO_COLOR", "1")
    assert snap_compare(_app(shapes_pair), terminal_size=SMALL, run_before=_shapes_tab)


def test_attention_shapes_80x24(snap_compare, shapes_pair):
    assert snap_compare(_app(shapes_pair), press=["a"], terminal_size=SMALL, run_before=_shapes_tab)


@pytest.mark.parametrize("size", [SMALL, LARGE], ids=["80x24", "120x36"])
def test_shape_kernels(snap_compare, shapes_pair, size):
    assert snap_compare(_app(shapes_pair), press=["j", "enter"], terminal_size=size, run_before=_shapes_tab)
