"""The pass timeline draws at most MAX_LANES streams per side, busiest first, and says how many it
left out (issue 16, third corpus: a pass of 200,000 one-kernel streams froze the explorer for 38 s
opening it, and drew 200,000 lines on every key)."""

from __future__ import annotations

import json

import hostile_corpus as hc
from kerneldiff.core.orchestration import load
from kerneldiff.core.analysis.pass_lanes import pass_kernels
from kerneldiff.tui.screens.pass_timeline import MAX_LANES, PassTimeline


def _many_streams(tmp_path, n: int):
    ev = hc.good_events(steps=1)
    for k in range(n):
        ev.append({"ph": "X", "cat": "kernel", "name": "nvjet_tst_streamy", "pid": 0, "tid": 100 + k,
                   "ts": 100.0 + k * 0.01, "dur": 1.0 + (k == 7) * 500.0,
                   "args": {"device": 0, "stream": 100 + k, "correlation": 9_000_000 + k}})
    p = tmp_path / "streams.json"
    p.write_text(json.dumps({**hc.metadata(), "traceEvents": ev}))
    return load(p, use_cache=False)


def test_a_pass_of_many_streams_draws_the_busiest_and_counts_the_rest(tmp_path):
    m = _many_streams(tmp_path, 5_000)
    step = int(m.kernels.step[m.kernels.step >= 0].min())
    s = pass_kernels(m, "a", "A", step, "all")
    assert len(s.streams) == 5_001 and s.busiest[0] == 107          # the one long kernel's stream
    assert sorted(int(x) for x in s.lanes[107]) == [int(i) for i in range(len(s.rows)) if s.stream[i] == 107]
    tl = PassTimeline([s])
    lines = [str(t) for t in tl.lines()]
    lanes = [ln for ln in lines if ln.lstrip().startswith("s") and ln[:7].strip().startswith("s")]
    assert len(lanes) == MAX_LANES
    assert any("s107" in ln for ln in lanes)
    assert any("4,993 more streams not drawn" in ln for ln in lines)
    # the selected kernel's stream is drawn even when it is not among the busiest
    far = int(next(i for i in range(len(s.rows)) if s.stream[i] == 4_000 + 100))
    tl.cursor = (0, far)
    lines = [str(t) for t in tl.lines()]
    assert any(ln[:7].strip() == "s4100" for ln in lines)
    assert any("4,992 more streams not drawn" in ln for ln in lines)


def test_a_mostly_idle_lane_reads_mostly_idle_at_full_view():
    # issue 30: a pass 91% idle drew as an almost solid strip until zoomed ~5x: every cell that held
    # any kernel was drawn full. A cell now shows how much of its time is busy, in eighths.
    import numpy as np

    from kerneldiff.tui.screens.pass_timeline import IDLE, LEVELS, lane_cells

    # 100 kernels of 9 µs, one every 100 µs: 9% busy, across 50 cells of 200 µs
    start = np.arange(100) * 100.0
    end = start + 9.0
    cells = lane_cells(start, end, 0.0, 200.0, 50)
    assert all(c in LEVELS[1:3] for c in cells)          # ▁ or ▂: about a tenth busy, never █
    # zoomed into one kernel: full where it runs, blank where it does not
    zoomed = lane_cells(start, end, 0.0, 1.0, 20)
    assert zoomed[:9] == ["█"] * 9 and zoomed[9:] == [IDLE] * 11      # idle drawn as such
    # two kernels back to back inside one full stretch: the second start is a boundary
    back = lane_cells(np.array([0.0, 10.0]), np.array([10.0, 20.0]), 0.0, 2.0, 10)
    assert back[5] == "▌" and back.count("█") == 9
