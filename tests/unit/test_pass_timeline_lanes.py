"""The pass timeline draws at most MAX_LANES streams per side, busiest first, and says how many it
left out (issue 16, third corpus: a pass of 200,000 one-kernel streams froze the explorer for 38 s
opening it, and drew 200,000 lines on every key)."""

from __future__ import annotations

import json

import hostile_corpus as hc
from kerneldiff.core.ingest.loader import load
from kerneldiff.tui.screens.pass_timeline import MAX_LANES, PassTimeline, pass_kernels


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
