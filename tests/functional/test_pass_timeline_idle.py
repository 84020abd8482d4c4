"""The pass timeline says how idle the pass is, draws idle cells as idle (·, dim) apart from thin
busy cells (▁), and carries a legend of its glyphs. The idle figure is recomputed from the raw JSON
events of a real pass: the pass's span less the union of its kernels' [ts, ts+dur). A pass is its
forward call's kernels (kerneldiff.core.analysis.pass_extent): the compiled decode pass is launch-
bound throughout, so at full width every cell holds a kernel; zoomed in, the cells between its
kernels read idle, each cell checked against the raw intervals."""

from __future__ import annotations

import gzip
import json

import numpy as np
import pytest

from conftest import real_trace


def _union(iv):
    total, cur_s, cur_e = 0.0, None, None
    for s, e in sorted(iv):
        if cur_e is None or s > cur_e:
            if cur_e is not None:
                total += cur_e - cur_s
            cur_s, cur_e = s, e
        else:
            cur_e = max(cur_e, e)
    return total + ((cur_e - cur_s) if cur_e is not None else 0.0)


@pytest.mark.slow
def test_idle_of_a_real_pass_matches_the_raw_events():
    from kerneldiff.core.analysis.pass_lanes import pass_kernels
    from kerneldiff.core.session import Session
    from kerneldiff.tui.screens.pass_timeline import IDLE, LEGEND, PassTimeline

    name = "h100_llama_compiled.json.gz"
    m = Session([str(real_trace(name))], use_cache=False).load(0)
    step = int(np.unique(m.kernels.step[m.kernels.step >= 0])[5])   # a decode pass
    s = pass_kernels(m, "a", "A", step, "all")
    # raw: the same pass's kernels (by their correlation ids) from the JSON
    rows = s.rows
    corr = set(m.kernels.corr[rows].tolist())
    with gzip.open(real_trace(name)) as fh:
        ev = json.load(fh)["traceEvents"]
    kev = [e for e in ev if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset") and e.get("ph") == "X"
           and int((e.get("args") or {}).get("correlation", -1)) in corr]
    iv = [(float(e["ts"]), float(e["ts"]) + float(e["dur"])) for e in kev]
    assert len(iv) == len(rows)
    span = max(e for _, e in iv) - min(s0 for s0, _ in iv)
    truth = span - _union(iv)
    assert s.idle_us == pytest.approx(truth, abs=0.01)
    class At80(PassTimeline):   # not mounted: the width an 80-column screen gives it
        cells = 80 - 2 - 7

    tl = At80([s])
    tl.fit()
    tl.cursor = (0, len(s.rows) - 1)
    lines = [str(t) for t in tl.lines()]
    assert any(f"idle " in ln and f"({truth / span:.0%})" in ln for ln in lines)
    assert lines[-1].strip() == LEGEND
    assert len(max(lines, key=len)) <= 80 + 2

    def raw_cells(stream, off, upc, n):
        """Per cell: does a raw kernel of `stream` overlap it (or start in it)?"""
        t0 = min(s0 for s0, _ in iv)
        mine = [(float(e["ts"]) - t0, float(e["ts"]) + float(e["dur"]) - t0) for e in kev
                if str(e["args"].get("stream")) == str(stream)]
        return [any((a < off + (c + 1) * upc and b > off + c * upc) or off + c * upc <= a < off + (c + 1) * upc
                    for a, b in mine) for c in range(n)]

    tl.cursor = (0, 0)
    tl.us_per_cell = span / (At80.cells * 40)       # the pass's first 40th: the gaps between kernels
    idle_seen = busy_seen = 0
    for ln in (str(t) for t in tl.lines()):
        if not ln[:7].strip().startswith("s") or not ln[:7].strip()[1:].isdigit():
            continue
        cells = ln[7:7 + At80.cells]
        want = raw_cells(int(ln[:7].strip()[1:]), 0.0, tl.us_per_cell, At80.cells)
        for c, (glyph, busy) in enumerate(zip(cells, want)):
            if glyph != "▓":                      # the selected kernel's block
                assert (glyph != IDLE) == busy, (c, glyph)
        idle_seen += cells.count(IDLE)
        busy_seen += sum(want)
    assert idle_seen > 0 and busy_seen > 0


def test_mostly_idle_lane_reads_idle():
    from kerneldiff.tui.screens.pass_timeline import IDLE, lane_cells

    start = np.array([0.0, 5000.0])
    end = start + 9.0
    cells = lane_cells(start, end, 0.0, 100.0, 60)
    assert cells.count(IDLE) == 58 and cells[0] != IDLE and cells[50] != IDLE
