"""The explorer marks the passes that are not steady (issue 38): with --all-passes the Timeline tab
marks the CUDA-graph capture pass of the recorded static-graphs trace (`c`, the pass holding the
trace's one `cudaStreamBeginCapture` call, read from the raw events) and its line says what the
marks mean; by default that pass is left out and the line says so. The help says what is left out
and why."""

from __future__ import annotations

import gzip
import json

import pytest

from conftest import ROOT
from tui_driver import screen_text, wait_for_main, wait_for_tab_bar
from kerneldiff.tui.app import KernelDiffApp
from kerneldiff.tui.widgets.result_table import ResultTable

pytestmark = pytest.mark.slow

GRAPHS = ROOT / "tests" / "data" / "recorded" / "h100small_static_graphs.json.gz"
SMALL = (80, 24)


def _capture_pass() -> int:
    with gzip.open(GRAPHS, "rt", encoding="utf-8") as f:
        ev = json.load(f)["traceEvents"]
    (t,) = [float(e["ts"]) for e in ev if e.get("name") == "cudaStreamBeginCapture"]
    # no stacks: a forward's entry is its compiled graph's call, or the eager prefill's embedding
    # lookup outside every such call
    graphs = [(float(e["ts"]), float(e["ts"]) + float(e["dur"])) for e in ev if e.get("cat") == "user_annotation"
              and e.get("name", "").startswith("## Call CompiledFxGraph")]
    emb = [float(e["ts"]) for e in ev if e.get("cat") == "cpu_op" and e.get("name") == "aten::embedding"
           and not any(a <= float(e["ts"]) <= b for a, b in graphs)]
    entries = sorted([a for a, _ in graphs] + emb)
    return max(i for i, s in enumerate(entries) if s <= t)


async def _timeline(pilot):
    await wait_for_main(pilot)
    await pilot.press("6")
    await wait_for_tab_bar(pilot)
    await pilot.wait_for_scheduled_animations()
    await pilot.wait_for_animation()
    await pilot.pause()


@pytest.mark.asyncio
@pytest.mark.parametrize("all_passes", [True, False])
async def test_timeline_marks_the_capture_pass(all_passes):
    app = KernelDiffApp([str(GRAPHS), str(GRAPHS)], use_cache=False, all_passes=all_passes)
    async with app.run_test(size=(200, 40)) as pilot:
        await _timeline(pilot)
        rows = app.screen.query_one("#timeline", ResultTable).rows_all
        marked = {r.values[0]: r.cells[0].plain for r in rows if not r.cells[0].plain.strip().isdigit()}
        text = screen_text(app)
        if all_passes:
            assert marked == {_capture_pass(): f"{_capture_pass()} c"}
            assert "marks: c CUDA-graph capture (not steady)" in text and "left out" not in text
        else:
            assert marked == {} and len(rows) == 15
            assert "left out: A capture; B capture (--all-passes keeps them)" in text


def test_help_says_what_is_left_out_and_why():
    from kerneldiff.tui.screens.help import binding_groups

    groups = dict(binding_groups(KernelDiffApp([str(GRAPHS)], use_cache=False, autoload=False)))
    words = " ".join(d for _k, d in groups["What is compared"])
    assert "steady passes only" in words and "--all-passes" in words and "capture" in words


def test_marked_timeline_80x24(snap_compare):
    app = KernelDiffApp([str(GRAPHS), str(GRAPHS)], use_cache=False, all_passes=True)
    assert snap_compare(app, terminal_size=SMALL, run_before=_timeline)


def test_pass_timeline_draws_the_passes_measured_kernels_and_names_the_kind():
    from kerneldiff.core.session import Session
    from kerneldiff.tui.views import pass_crumb

    s = Session([str(GRAPHS), str(GRAPHS)], use_cache=False, workers=0, all_passes=True)
    s.load(0)
    s.load(1)
    cmp = s.compare()
    for p in cmp.a.timeline.passes:
        assert len(s.pass_kernels(0, p.pass_).rows) == p.kernels
        crumb = pass_crumb(p.pass_, p, None)
        assert crumb == (f"Pass {p.pass_} (CUDA-graph capture)" if p.pass_ == _capture_pass() else f"Pass {p.pass_}")
