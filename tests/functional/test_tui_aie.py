"""AMD AIE (NPU) traces in the explorer, driven from the keyboard (Textual pilot) on generated traces
whose answer is planted (kerneldiff.core.aie.synth): cores → a core's iterations → the system aggregate, two
runs side by side, notes for mismatched counts, the mixed-kind error, literal trace strings, the
launcher's AIE options, and two 80×24 snapshots.

Expected figures come from the generator's truth, not from the screen under test.
"""

from __future__ import annotations

import csv

import pytest
from textual.widgets import TabbedContent

from kerneldiff.core.report.format import ABSENT
from kerneldiff.core.aie.analysis import AieParams, analyze_aie, compare_aie
from kerneldiff.core.aie.synth import AiePlan, write_aie_trace
from kerneldiff.tui.app import KernelDiffApp
from kerneldiff.tui.screens.aie import AieCoreScreen, AieScreen
from kerneldiff.tui.screens.browse import BrowseScreen
from kerneldiff.tui.screens.error import ErrorScreen
from tui_driver import screen_text, wait_for_text, wait_until
from kerneldiff.tui.widgets.result_table import ResultTable

from conftest import kineto_doc, write_trace

SHAPE = {"M": 128, "K": 128, "N": 128, "rows": 2, "cols": 2}
COUNTS = {"warmup": 2, "iterations": 5}
PLAN_A = AiePlan(seed=11)
# another tiling of the same GEMM: one row of four cores, the second core 30% slower
PLAN_B = AiePlan(rows=1, cols=4, seed=5, core_slowdown=(1.0, 1.3))
# core 1's boundary stall after run 3 is cut short: runs 3 and 4 merge into one iteration there
PLAN_MERGED = AiePlan(seed=3, short_boundaries=((1, 3),))


@pytest.fixture(scope="module")
def traces(tmp_path_factory):
    d = tmp_path_factory.mktemp("aie")
    out = {}
    for name, plan in (("a", PLAN_A), ("b", PLAN_B), ("merged", PLAN_MERGED)):
        path = d / f"{name}.json"
        out[name] = (str(path), write_aie_trace(path, plan))
    return out


async def wait_for_aie(pilot) -> AieScreen:
    app = pilot.app
    await wait_until(pilot, lambda: isinstance(app.screen, AieScreen) and app.screen.is_mounted
                     and not any(w.is_running for w in app.workers))
    await pilot.pause()
    return app.screen


def cell(row, key: str, table: ResultTable) -> str:
    i = [c.key for c in table.spec.columns].index(key)
    return row.cells[i].plain.strip()


def truth_gmacs(truth, core: int, iterations) -> float:
    vals = [truth.core_gmacs(core, i) for i in iterations]
    return sum(vals) / len(vals)


@pytest.mark.slow
async def test_cores_iterations_system_with_planted_truth(traces, tmp_path, monkeypatch):
    monkeypatch.setenv("KERNELDIFF_EXPORT_DIR", str(tmp_path))
    path, truth = traces["a"]
    app = KernelDiffApp([path], use_cache=False, aie={**SHAPE, **COUNTS})
    async with app.run_test(size=(100, 32)) as pilot:
        screen = await wait_for_aie(pilot)
        text = screen_text(app)
        assert "GEMM 128×128×128 on 2×2" in text and "warm-up 2 · perf 5" in text and "1250 MHz" in text
        assert "aie › Cores" in text

        # the cores table: one row per planted core, every count and figure from the truth
        cores = screen.query_one("#cores", ResultTable)
        by_tile = {t.tile: (k, t) for k, t in enumerate(truth.cores)}
        assert sorted(r.payload[1].tile for r in cores.rows_shown) == sorted(by_tile)
        perf = range(2, 7)
        for row in cores.rows_shown:
            k, t = by_tile[row.payload[1].tile]
            assert cell(row, "iterations", cores) == "7/7"
            assert cell(row, "perf", cores) == "2–6"
            assert cell(row, "kernels", cores) == f"{sum(len(g) for g in t.iterations):,}"
            assert float(cell(row, "gmacs", cores)) == pytest.approx(truth_gmacs(truth, k, perf), abs=0.006)
            assert row.values[-1] >= t.duplicates + t.outliers  # every planted flaw was dropped
        assert cores.rows_shown[0].payload[1].tile in text

        # Enter: the first core's iterations, phases labelled from the expected counts
        first = cores.current_row().payload[1]
        k, t = by_tile[first.tile]
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, AieCoreScreen))
        core_screen = app.screen
        its = core_screen.query_one("#iterations", ResultTable)
        assert [r.values[1] for r in its.rows_shown] == ["warmup"] * 2 + ["perf"] * 5
        assert [r.values[2] for r in its.rows_shown] == [len(g) for g in t.iterations]
        for i, row in enumerate(its.rows_shown):
            assert cell(row, "span_cycles", its) == f"{t.span(i):,}"
            assert float(cell(row, "gmacs", its)) == pytest.approx(truth.core_gmacs(k, i), abs=0.006)
        text = screen_text(app)
        assert f"aie › Cores › {first.tile}" in text and "warmup" in text and "perf" in text
        assert "iteration 0" in text
        await pilot.press("j", "j")
        assert "iteration 2" in screen_text(app)

        # Esc back, then `a` jumps to the system aggregate: runtime = slowest core per perf iteration
        await pilot.press("escape")
        assert app.screen is screen
        await pilot.press("a")
        await pilot.pause()
        assert screen.query_one(TabbedContent).active == "tab-system"
        system = screen.query_one("#system", ResultTable)
        assert [r.values[0] for r in system.rows_shown] == list(perf)
        for row in system.rows_shown:
            i = row.values[0]
            assert row.values[1] == truth.system_runtime(i)
            slowest = max(truth.cores, key=lambda c: c.span(i)).tile
            assert row.values[3] == slowest
            assert float(cell(row, "gmacs", system)) == pytest.approx(truth.system_gmacs(i), abs=0.006)
        assert "aie › System" in screen_text(app)

        # s: sort by the next column (Iter, then Runtime largest first)
        await pilot.press("s", "s")
        runtimes = [r.values[1] for r in system.rows_shown]
        assert runtimes == sorted(runtimes, reverse=True)

        # /: filter the rows by name ("best" is the fastest perf iteration)
        best = min(perf, key=lambda i: (truth.system_runtime(i), i))
        await pilot.press("slash", *"best", "enter")
        assert [r.values[0] for r in system.rows_shown] == [best]
        await pilot.press("escape")  # Esc clears the filter first
        assert len(system.rows_shown) == len(perf) and app.screen is screen

        # e: export the table as shown
        await pilot.press("e")
        await pilot.pause()
        rows = list(csv.DictReader(app.last_export.open()))
        assert app.last_export.name.startswith("kerneldiff-aie-system")
        assert [int(r["runtime_cycles"]) for r in rows] == runtimes
        assert [r["slowest"] for r in rows] == [r.values[3] for r in system.rows_shown]


@pytest.mark.slow
async def test_no_shape_shows_dashes_and_says_why(traces):
    path, truth = traces["a"]
    app = KernelDiffApp([path], use_cache=False)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await wait_for_aie(pilot)
        text = screen_text(app)
        assert "no GEMM shape: GMAC/s shown as -" in text
        assert "warm-up 0 · perf all" in text
        assert "system " in text and "⚠ 0 notes" in text  # the header's three lines all fit
        cores = screen.query_one("#cores", ResultTable)
        assert {cell(r, "gmacs", cores) for r in cores.rows_shown} == {ABSENT}
        assert {cell(r, "iterations", cores) for r in cores.rows_shown} == {"7"}  # nothing expected
        await pilot.press("2")
        await pilot.pause()
        system = screen.query_one("#system", ResultTable)
        # without counts every iteration is perf, and every core has all of them
        assert [r.values[0] for r in system.rows_shown] == list(range(len(truth.cores[0].iterations)))
        assert {cell(r, "gmacs", system) for r in system.rows_shown} == {ABSENT}
        lines = screen_text(app).splitlines()
        assert len(lines) == 24 and all(len(line) <= 80 for line in lines)


@pytest.mark.slow
async def test_mismatched_counts_explained_in_notes(traces):
    path, truth = traces["merged"]
    merged = truth.cores[1]
    assert len(merged.iterations) == 6  # the planted answer: two runs merged on this core
    expected_notes = analyze_aie(path, None, 2, 5)
    n_notes = (len(expected_notes.notes) + sum(len(c.notes) for c in expected_notes.cores)
               + len(expected_notes.aggregate.notes))
    app = KernelDiffApp([path], use_cache=False, aie=COUNTS)
    async with app.run_test(size=(100, 32)) as pilot:
        screen = await wait_for_aie(pilot)
        assert f"⚠ {n_notes} notes" in screen_text(app)
        cores = screen.query_one("#cores", ResultTable)
        row_index = next(i for i, r in enumerate(cores.rows_shown) if r.payload[1].tile == merged.tile)
        row = cores.rows_shown[row_index]
        assert cell(row, "iterations", cores) == "6/7!"
        for _ in range(row_index):
            await pilot.press("j")
        text = " ".join(screen_text(app).split())
        assert "detected 6 iteration(s) but expected 7 (2 warm-up + 5 perf)" in text

        # the Notes tab lists every note with where it comes from
        await pilot.press("3")
        await pilot.pause()
        tabs = screen.query_one(TabbedContent)
        assert tabs.active == "tab-notes" and str(tabs.get_tab("tab-notes").label) == f"Notes {n_notes}"
        notes = screen.query_one("#notes", ResultTable)
        assert len(notes.rows_shown) == n_notes
        assert any(r.values[0] == merged.tile and "about twice the typical" in r.values[1] for r in notes.rows_shown)

        # that core's iterations: the merged one holds both runs' kernels
        await pilot.press("1")
        await pilot.pause()
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, AieCoreScreen))
        its = app.screen.query_one("#iterations", ResultTable)
        assert [r.values[2] for r in its.rows_shown] == [len(g) for g in merged.iterations]
        assert [r.values[1] for r in its.rows_shown] == ["warmup"] * 2 + ["perf"] * 4
        assert "6 iterations (7 expected)" in screen_text(app)


@pytest.mark.slow
async def test_two_runs_side_by_side(traces):
    (pa, ta), (pb, tb) = traces["a"], traces["b"]
    app = KernelDiffApp([pa, pb], use_cache=False, aie={**SHAPE, **COUNTS})
    async with app.run_test(size=(100, 32)) as pilot:
        screen = await wait_for_aie(pilot)
        text = screen_text(app)
        assert "aie compare › Cores" in text and "a.json" in text and "b.json" in text
        # B's slow core sets its runtime: the header's ratio is of the planted system runtimes
        perf = range(2, 7)
        mean_a = sum(ta.system_runtime(i) for i in perf) / 5
        mean_b = sum(tb.system_runtime(i) for i in perf) / 5
        assert f"B/A runtime {mean_b / mean_a:.2f}×" in text

        cores = screen.query_one("#cores", ResultTable)
        assert [r.values[0] for r in cores.rows_shown] == ["A"] * 4 + ["B"] * 4

        params = AieParams()
        run_a = analyze_aie(pa, None, 2, 5, params)
        run_b = analyze_aie(pb, None, 2, 5, params)
        cmp = compare_aie(run_a, run_b)
        await pilot.press("3")
        await pilot.pause()
        table = screen.query_one("#compare", ResultTable)
        metrics = [r.values[0] for r in table.rows_shown]
        assert "system runtime (slowest core) (cycles)" in metrics
        runtime_row = next(r for r in table.rows_shown if r.values[0].startswith("system runtime (slowest"))
        assert runtime_row.values[1:3] == (mean_a, mean_b) and runtime_row.values[4] == "A"
        assert len(metrics) == len(cmp.rows) - 1  # all but the shape, which the header shows

        await pilot.press("4")
        await pilot.pause()
        paired = screen.query_one("#paired", ResultTable)
        assert [(r.values[2], r.values[5]) for r in paired.rows_shown] == [
            (ta.system_runtime(i), tb.system_runtime(i)) for i in perf]

        # Enter on one of B's cores opens B's iterations of it
        await pilot.press("1")
        await pilot.pause()
        for _ in range(5):
            await pilot.press("j")
        chosen = cores.current_row().payload[1]
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, AieCoreScreen))
        assert f"aie compare › Cores › B {chosen.tile}" in screen_text(app)
        k = next(k for k, c in enumerate(tb.cores) if c.tile == chosen.tile)
        its = app.screen.query_one("#iterations", ResultTable)
        assert [r.values[6] for r in its.rows_shown] == [tb.cores[k].span(i) for i in range(7)]


@pytest.mark.slow
async def test_aie_with_kineto_is_an_error_naming_both_kinds(traces, tmp_path):
    events = [{"ph": "X", "cat": "kernel", "name": "gemm_kernel", "ts": 10 + 10 * i, "dur": 5, "pid": 0, "tid": 7,
               "args": {"device": 0, "stream": 7, "correlation": i}} for i in range(4)]
    gpu = write_trace(tmp_path / "gpu.json", kineto_doc(events))
    path, _truth = traces["a"]
    app = KernelDiffApp([str(gpu), path], use_cache=False)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_until(pilot, lambda: isinstance(app.screen, ErrorScreen))
        text = " ".join(screen_text(app).split())
        assert "AMD AIE (NPU) trace" in text and "PyTorch profiler (Kineto) GPU trace" in text
        assert "a.json could not be loaded" in text and "gpu.json" in text
        # the GPU trace loaded (through a Kineto session): b browses it
        assert app.session.kind != "aie" and app.session.models[0] is not None
        await pilot.press("b")
        await wait_until(pilot, lambda: isinstance(app.screen, BrowseScreen) and app.result is not None)
        assert app.result.kernels == 4 and "gemm_kernel" in [k.name for k in app.result.kernel_totals]
        assert "browse › Operations" in screen_text(app)
    assert app.exit_code == 2


@pytest.mark.slow
async def test_broken_aie_trace_leaves_the_other_browsable(traces, tmp_path):
    import json

    from kerneldiff.core.aie.synth import make_aie_events

    events, _ = make_aie_events(AiePlan(seed=7))
    data = json.dumps(events)
    broken = tmp_path / "cut.json"
    broken.write_text(data[: len(data) // 2])  # an AIE head (the probe says "aie"), then cut off
    path, truth = traces["a"]
    app = KernelDiffApp([path, str(broken)], use_cache=False)
    async with app.run_test(size=(100, 30)) as pilot:
        # the text is read across the box edges (the message wraps where the temporary path puts it,
        # later under xdist) and waited on (the body is drawn some frames after the screen is on top)
        await wait_for_text(pilot, ErrorScreen, "cut.json could not be loaded", "not valid JSON",
                            "a.json loaded fine: b browses it")
        await pilot.press("b")
        screen = await wait_for_aie(pilot)
        assert not screen.view.compare and "aie › Cores" in screen_text(app)
        cores = screen.query_one("#cores", ResultTable)
        assert sorted(r.payload[1].tile for r in cores.rows_shown) == sorted(c.tile for c in truth.cores)


@pytest.mark.slow
async def test_trace_strings_shown_literally_and_clock_option(tmp_path):
    evil = "t\x1b[31m[bold]0,2[/bold]"
    path = tmp_path / "evil.json"
    truth = write_aie_trace(path, AiePlan(seed=2, tile_names=(evil,)))
    app = KernelDiffApp([str(path)], use_cache=False, aie={"clock_mhz": 1000})
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await wait_for_aie(pilot)
        cores = screen.query_one("#cores", ResultTable)
        assert cores.current_row().payload[1].tile == evil  # natural sort puts "t…" first
        text = screen_text(app)
        assert "\x1b" not in text
        assert "t\\x1b[31m[bold]0,2[/bold]" in text  # in the table and the detail pane, markup intact
        # the clock option reaches the analysis: cycles become µs at 1000 MHz
        assert "1000 MHz" in text
        system = screen.query_one("#system", ResultTable)
        assert [r.values[2] for r in system.rows_shown] == pytest.approx(
            [truth.system_runtime(r.values[0]) / 1000 for r in system.rows_shown])
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, AieCoreScreen))
        assert "Cores › t\\x1b[31m[bold]0,2[/bold]" in screen_text(app)


def test_launcher_passes_aie_options(traces, monkeypatch, capsys):
    import kerneldiff.tui.app
    from kerneldiff.cli.app_launch import launch

    path, _truth = traces["a"]
    seen = {}
    monkeypatch.setattr(kerneldiff.tui.app, "run_app", lambda paths, **kw: seen.update(paths=paths, **kw) or 0)
    assert launch([path, "--M", "256", "--K", "64", "--N", "128", "--rows", "1", "--cols", "4", "--warmup", "1",
                   "--iterations", "3", "--clock-mhz", "1000"]) == 0
    assert seen["paths"] == [path]
    assert seen["aie"] == {"M": 256, "K": 64, "N": 128, "rows": 1, "cols": 4, "warmup": 1, "iterations": 3,
                           "clock_mhz": 1000.0}
    assert launch([path]) == 0 and seen["aie"] is None
    monkeypatch.undo()
    # a partial shape is refused before the app starts
    assert launch([path, "--M", "128", "--K", "128"]) == 2
    assert "--M, --K, --N, --rows and --cols go together" in capsys.readouterr().err
    import gc

    assert gc.isenabled()   # off while the launch imports and reads; on again when it runs no app


# --- snapshots (80×24) ------------------------------------------------------------------------

SMALL = (80, 24)


def _snap_app(tmp_path, monkeypatch) -> KernelDiffApp:
    monkeypatch.chdir(tmp_path)  # relative paths: the screen shows the same names on every machine
    write_aie_trace(tmp_path / "gemm_2x2.json", PLAN_MERGED)
    return KernelDiffApp(["gemm_2x2.json"], use_cache=False, aie={**SHAPE, **COUNTS})


@pytest.mark.slow
def test_aie_cores_80x24(snap_compare, tmp_path, monkeypatch):
    app = _snap_app(tmp_path, monkeypatch)
    # the highlighted core is the one whose iterations merged: its notes show in the detail pane
    assert snap_compare(app, terminal_size=SMALL, run_before=wait_for_aie, press=["j", "j"])


@pytest.mark.slow
def test_aie_core_iterations_80x24(snap_compare, tmp_path, monkeypatch):
    app = _snap_app(tmp_path, monkeypatch)
    # that core's merged iteration (twice the kernels), with the explanation below
    assert snap_compare(app, terminal_size=SMALL, run_before=wait_for_aie, press=["j", "j", "enter", "j", "j", "j"])

