"""The explorer driven from the keyboard (Textual pilot), asserting on what the screens show."""

from __future__ import annotations

import csv
import gzip
import json
import threading
import time

import pytest
from textual.widgets import ProgressBar, Static, TabbedContent

from core.compare import compare
from core.demo import DEMO_A, DEMO_B
from core.errors import LoadCancelled, TraceError
from core.loader import load
from core.probe import probe
from tui.app import KernelDiffApp
from tui.screens.error import ErrorScreen
from tui.screens.help import HelpScreen, binding_groups
from tui.screens.kernel import KernelDetailScreen
from tui.screens.layer import LayerScreen
from tui.screens.main import MainScreen
from tui.screens.start import StartScreen
from tui.testing import PreloadedLoader, screen_text, wait_for_main, wait_until
from tui.widgets.result_table import ResultTable
from tui.widgets.trace_card import TraceCard

from conftest import kineto_doc, write_trace


@pytest.fixture(scope="module")
def demo_models():
    return {str(DEMO_A): load(DEMO_A, use_cache=False), str(DEMO_B): load(DEMO_B, use_cache=False)}


@pytest.fixture(scope="module")
def demo_comparison(demo_models):
    return compare(demo_models[str(DEMO_A)], demo_models[str(DEMO_B)])


def demo_app(demo_models, **kw) -> KernelDiffApp:
    return KernelDiffApp([str(DEMO_A), str(DEMO_B)], use_cache=False, loader=PreloadedLoader(demo_models), **kw)


def all_text(screen) -> str:
    """Text of every Static on a screen (also what is scrolled out of view)."""
    from rich.console import Console

    console = Console(width=200, record=True, file=open("/dev/null", "w"), color_system=None)
    for s in screen.query(Static):
        console.print(s.content if hasattr(s, "content") else s.renderable)
    return console.export_text()


async def test_first_frame_shows_probe_metadata_before_loading(demo_models):
    app = demo_app(demo_models, autoload=False)
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        assert isinstance(app.screen, StartScreen)
        assert app.first_frame_seconds is not None and app.first_frame_seconds < 0.3
        assert app.models == [None, None]  # nothing loaded: the metadata came from the probes
        text = screen_text(app)
        for path in (DEMO_A, DEMO_B):
            info = probe(path)
            assert info.gpu in text
            assert path.name in text
        assert "Enter loads the traces" in text


async def test_keyboard_path_demo_layer_pair_detail_fusion_export(demo_models, demo_comparison, tmp_path, monkeypatch):
    monkeypatch.setenv("KERNELDIFF_EXPORT_DIR", str(tmp_path))
    comp = demo_comparison
    app = demo_app(demo_models)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for_main(pilot)
        main = app.screen
        assert isinstance(main, MainScreen) and not main.single
        header = screen_text(app)
        assert comp.a.label in header and comp.b.label in header and f"phase {comp.phase}" in header
        assert f"{len(comp.warnings)} warning" in header

        # the slowest layer is selected on arrival
        layers = main.query_one("#layers", ResultTable)
        slowest = comp.layers[0]
        assert layers.current_row().payload.layer == slowest.layer
        assert len(layers.rows_shown) == len(comp.layers)

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
        assert rows[0]["category"] == first.fused_category
        await pilot.press("E")
        await pilot.pause()
        data = json.loads(app.last_export.read_text())
        assert [d["kind"] for d in data] == [f.kind for f in comp.fusions]


async def test_sort_filter_and_phase_cycle(demo_models, demo_comparison):
    comp = demo_comparison
    app = demo_app(demo_models)
    async with app.run_test(size=(120, 36)) as pilot:
        await wait_for_main(pilot)
        main = app.screen
        layers = main.query_one("#layers", ResultTable)
        # layers arrive in layer order; s moves the sort to the next column (A total, largest first)
        assert layers.sort_column == 0
        await pilot.press("s")
        values = [r.payload.a.total_us for r in layers.rows_shown]
        assert layers.sort_column == 1 and values == sorted(values, reverse=True)
        await pilot.press("S")
        values = [r.payload.a.total_us for r in layers.rows_shown]
        assert values == sorted(values)

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
        choices = app.phase_choices()
        assert choices[0] == "all" and "prefill" in choices and "decode" in choices
        await pilot.press("p")
        await wait_until(pilot, lambda: app.phase == choices[1] and not any(w.is_running for w in app.workers))
        assert app.comparison.phase == choices[1]
        assert f"phase {choices[1]}" in screen_text(app)
        expected = compare(demo_models[str(DEMO_A)], demo_models[str(DEMO_B)], phase=choices[1])
        assert len(main.query_one("#same_kernels", ResultTable).rows_all) == len(expected.same_kernels)


class SlowLoader:
    """Reports progress many times a millisecond apart until cancelled (or `steps` are done)."""

    def __init__(self, real: PreloadedLoader, steps: int = 4000) -> None:
        self.real, self.steps = real, steps
        self.started = threading.Event()

    def __call__(self, path, *, progress=None, cancel=None, **kw):
        self.started.set()
        total = 1_000_000
        for i in range(self.steps):
            if progress(i / self.steps, "reading", i * total // self.steps, total) is False:
                raise LoadCancelled(path)
            time.sleep(0.0005)
        return self.real(path, progress=progress, cancel=cancel, **kw)


async def test_loading_shows_throttled_progress_and_esc_cancels(demo_models, monkeypatch):
    updates = []
    original = TraceCard.set_progress
    monkeypatch.setattr(TraceCard, "set_progress", lambda self, *a: (updates.append(a), original(self, *a)))
    loader = SlowLoader(PreloadedLoader(demo_models))
    app = KernelDiffApp([str(DEMO_A), str(DEMO_B)], use_cache=False, loader=loader)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_until(pilot, lambda: any(u[0] > 0.1 for u in updates))
        t0 = time.perf_counter()
        await pilot.pause(0.5)
        elapsed = time.perf_counter() - t0
        start = app.screen
        assert isinstance(start, StartScreen) and app.loading == {0, 1}
        bars = [start.card(i).query_one(ProgressBar) for i in (0, 1)]
        assert all(0 < b.progress < 100 for b in bars)
        assert "reading" in screen_text(app) and "Esc cancels" in screen_text(app)
        # thousands of progress callbacks, but at most ~10 redraws per second per bar
        n = len(updates)
        assert n <= 2 * (2 + (elapsed + 1.0) / 0.1)

        await pilot.press("escape")
        await wait_until(pilot, lambda: not app.loading)
        assert isinstance(app.screen, StartScreen) and app.models == [None, None]
        assert screen_text(app).count("cancelled") == 2

        # Enter loads again (this time to the end)
        loader.steps = 10
        await pilot.press("enter")
        await wait_for_main(pilot)
        assert app.comparison is not None


async def test_error_screen_names_the_file_and_keeps_the_other_trace_browsable(demo_models, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    bad = tmp_path / "broken.json"
    bad.write_text('{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 2}')
    with pytest.raises(TraceError) as exc:
        load("broken.json", use_cache=False)
    app = KernelDiffApp([str(DEMO_A), "broken.json"], use_cache=False, loader=PreloadedLoader(demo_models))
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_until(pilot, lambda: isinstance(app.screen, ErrorScreen))
        text = screen_text(app).replace("\n", " ")
        assert "broken.json" in text and "could not be loaded" in text
        assert " ".join(str(exc.value).split()[1:4]) in " ".join(text.split())
        assert "b browses it" in " ".join(text.split())
        await pilot.press("b")
        await wait_for_main(pilot)
        main = app.screen
        assert main.single
        own = compare(demo_models[str(DEMO_A)], demo_models[str(DEMO_A)])
        assert len(main.query_one("#layers", ResultTable).rows_shown) == len(own.layers)
        assert len(main.query_one("#kernels", ResultTable).rows_all) == len(own.same_kernels)
        # browse mode drills into a layer's kernel sequence and a kernel
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, LayerScreen))
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, KernelDetailScreen))
        assert len(app.screen.refs) == 1
    assert app.exit_code == 2


async def test_trace_strings_are_shown_literally(tmp_path):
    evil = "gemm\x1b[31m_[bold]x[/bold]_kernel"
    events = []
    for i in range(6):
        events.append({"ph": "X", "cat": "kernel", "name": evil, "ts": 10 + 10 * i, "dur": 5,
                       "pid": 0, "tid": 7, "args": {"device": 0, "stream": 7, "correlation": i}})
    path = write_trace(tmp_path / "evil.json.gz", kineto_doc(events), gz=True)
    app = KernelDiffApp([str(path)], use_cache=False)
    async with app.run_test(size=(120, 30)) as pilot:
        await wait_for_main(pilot)
        await pilot.press("3")
        await pilot.pause()
        text = screen_text(app)
        assert "\x1b" not in text
        assert "\\x1b[31m_[bold]x[/bold]_kernel" in text.replace("\n", "")


async def test_help_lists_every_binding_and_palette_offers_the_actions(demo_models):
    app = demo_app(demo_models)
    async with app.run_test(size=(100, 40)) as pilot:
        await wait_for_main(pilot)
        await pilot.press("question_mark")
        await wait_until(pilot, lambda: isinstance(app.screen, HelpScreen))
        text = all_text(app.screen)
        for _title, items in binding_groups(app):
            for _keys, desc in items:
                assert desc in text
        for desc in ("Filter", "Sort", "Export", "Phase", "Quit", "Back", "Open / drill down", "Tab 3"):
            assert desc in text
        await pilot.press("escape")
        assert isinstance(app.screen, MainScreen)

        from tui.commands import ExplorerCommands

        provider = ExplorerCommands(app.screen)
        titles = {t: cb for t, _h, cb in provider._commands()}
        for t in ("Filter by name", "Sort by next column", "Export table as CSV", "Cycle phase", "Help",
                  "Show Fusion", "Open slowest layer", "Quit kerneldiff"):
            assert t in titles
        titles["Show Fusion"]()
        await pilot.pause()
        assert app.screen.query_one(TabbedContent).active == "tab-fusion"
        hits = [h async for h in provider.search("export csv")]
        assert hits and "Export table as CSV" in hits[0].text


async def test_fits_80x24_with_truncated_names_and_no_color(demo_models, demo_comparison, monkeypatch):
    monkeypatch.setenv("NO_COLOR", "1")
    app = demo_app(demo_models)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for_main(pilot)
        assert app.no_color
        lines = screen_text(app).splitlines()
        assert len(lines) == 24 and all(len(line) <= 80 for line in lines)
        assert "Layers" in lines[4] and "Quit" in lines[-1]
        assert "A▀ B▄" in "\n".join(lines)  # the chart legend reads without colour
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, LayerScreen))
        pairs = app.screen.query_one("#pairs", ResultTable)
        widths = pairs._widths
        long = [r for r in pairs.rows_shown if r.payload.a_name and len(r.payload.a_name) > widths["a_name"]]
        assert long, "the demo has kernel names longer than an 80-column cell"
        assert all(len(r.cells[1].plain) <= widths["a_name"] for r in long)
        svg = app.export_screenshot()
        assert "#ff9e64" not in svg.lower() and "#7dcfff" not in svg.lower()
