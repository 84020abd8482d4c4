"""Layers read on the headline's basis (issue 39): the headline leads with the wall clock, so each layer
shows its span (first to last kernel, summed over the passes) beside its kernel time, and says who is
slower by which. Eager vs compiled Llama: every layer's kernels are slower on eager (A), while the
compiled side's late layers span far longer (B waits on the host)."""

from __future__ import annotations

import gzip
import json
from collections import defaultdict

import pytest

from conftest import real_trace

from kerneldiff.core import Session


def raw_spans(path) -> dict[int, float]:
    """Layer -> its span summed over passes, from the raw events: a decoder layer's call is an
    `nn.Module: LlamaDecoderLayer_N` python_function event (N the layer), and its span the first
    start to the last end of the kernels launched inside it (empty where the trace has no such
    events: the compiled forward records none)."""
    with gzip.open(path, "rt") as f:
        ev = json.load(f)["traceEvents"]
    mods = sorted((float(e["ts"]), float(e["ts"]) + float(e["dur"]), int(e["name"].rsplit("_", 1)[1])) for e in ev
                  if e.get("ph") == "X" and e.get("cat") == "python_function"
                  and e.get("name", "").startswith("nn.Module: LlamaDecoderLayer"))
    calls = {int(e["args"]["correlation"]): float(e["ts"]) for e in ev
             if e.get("ph") == "X" and e.get("cat") == "cuda_runtime" and "correlation" in e.get("args", {})}
    starts = [m[0] for m in mods]
    import bisect

    span: dict[int, list] = defaultdict(lambda: [float("inf"), float("-inf")])
    for e in ev:
        if e.get("ph") != "X" or e.get("cat") not in ("kernel", "gpu_memcpy", "gpu_memset"):
            continue
        t = calls.get(int(e["args"].get("correlation", -1)))
        if t is None:
            continue
        i = bisect.bisect_right(starts, t) - 1
        if i < 0 or mods[i][1] < t:
            continue
        s = span[i]
        s[0] = min(s[0], float(e["ts"]))
        s[1] = max(s[1], float(e["ts"]) + float(e["dur"]))
    out: dict[int, float] = defaultdict(float)
    for i, (lo, hi) in span.items():
        out[mods[i][2]] += hi - lo
    return out


@pytest.mark.real
@pytest.mark.slow
def test_layers_show_their_span_beside_kernel_time():
    a, b = real_trace("h100_llama_eager_sdpa.json.gz"), real_trace("h100_llama_compiled.json.gz")
    s = Session([str(a), str(b)], use_cache=False)
    s.load_all()
    cmp = s.compare("all")
    rows = {r.layer: r for r in cmp.layers}
    ra = raw_spans(a)
    assert sorted(ra) == sorted(rows)
    for l, r in rows.items():
        assert r.span_gap_us == pytest.approx(r.a.wall_us - r.b.wall_us)
        assert r.a.wall_us == pytest.approx(ra[l], rel=0.02), l
    r15 = rows[15]
    assert r15.gap_us > 0 and r15.span_gap_us < -40_000          # ~69 ms on A, ~124 ms on B
    assert r15.slower_by == "A kernels, B span"
    assert all(r.slower_by.startswith("A") for r in rows.values())
