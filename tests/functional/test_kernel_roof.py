"""The kernel detail's roofline reading: a GEMM kernel's achieved TFLOP/s over its launches equals
2·m·n·k of its launching aten::mm calls (their recorded Input Dims, joined to the kernels by
External id in the raw JSON) over the kernels' time; never above the peak; the decode GEMMs
(m = 4) sit under the memory roof; the peak used and its source are named; the explorer's detail
shows them."""

from __future__ import annotations

import gzip
import json
from collections import defaultdict

import pytest

from conftest import real_trace

TRACE = "h100_llama_eager_sdpa.json.gz"


def raw_mm_kernels(path) -> dict[str, tuple[float, float, set]]:
    """kernel name -> (2·m·n·k summed over its launches, their µs, the m values), for names every
    launch of which is the only kernel of an aten::mm call."""
    doc = json.loads(gzip.decompress(path.read_bytes()))
    ev = doc["traceEvents"]
    ops = {e["args"]["External id"]: e for e in ev
           if e.get("cat") == "cpu_op" and "External id" in e.get("args", {})}
    kernels = [e for e in ev if e.get("ph") == "X" and e.get("cat") == "kernel"]
    per_op = defaultdict(int)
    for e in kernels:
        per_op[e["args"].get("External id")] += 1
    out: dict[str, list] = {}
    bad = set()
    for e in kernels:
        x = e["args"].get("External id")
        op = ops.get(x)
        if op is None or op["name"] != "aten::mm" or per_op[x] != 1:
            bad.add(e["name"])
            continue
        (m, k), (k2, n) = op["args"]["Input Dims"][:2]
        acc = out.setdefault(e["name"], [0.0, 0.0, set()])
        acc[0] += 2.0 * m * n * k
        acc[1] += float(e["dur"])
        acc[2].add(m)
    return {n: tuple(v) for n, v in out.items() if n not in bad}


@pytest.mark.slow
def test_gemm_kernel_roof_against_raw_events():
    from kerneldiff.core.session import Session

    path = real_trace(TRACE)
    truth = raw_mm_kernels(path)
    assert truth
    s = Session([str(path)], use_cache=False)
    s.load(0)
    m = s._model(0)
    checked = 0
    for name, (flops, us, ms) in truth.items():
        r = s.kernel_roof(s.kernel_ref(0, name))
        assert r is not None and r.covered == r.launches
        assert r.tflops == pytest.approx(flops / (us * 1e-6) / 1e12, rel=2e-3), name
        assert r.gpu and r.source and r.peak_figure == "bf16" and r.peak_tflops
        assert r.tflops <= r.peak_tflops and r.pct_roofline <= 100.0
        if ms == {4}:
            assert r.bound == "memory"
        checked += 1
    assert checked >= 2


@pytest.mark.slow
def test_the_detail_shows_achieved_rates_and_the_peak():
    from kerneldiff.core.session import Session
    from kerneldiff.tui.screens.kernel import kernel_ref, side_summary

    path = real_trace(TRACE)
    name = next(n for n, (_f, _us, ms) in raw_mm_kernels(path).items() if ms == {4})   # a decode GEMM
    s = Session([str(path)], use_cache=False)
    s.load(0)
    ref = kernel_ref(s, 0, "A", name, "Dense GEMM", "", _stats(), s.kernel_ref(0, name).row)
    from rich.console import Console

    con = Console(width=100, record=True)
    con.print(side_summary(ref, single=True))
    text = con.export_text()
    assert "achieved" in text and "TFLOP/s" in text and "TB/s" in text
    assert "memory-bound" in text and "of its roof" in text and "source:" in text


def _stats():
    from kerneldiff.core.compare.result import Stats

    return Stats(count=1, total_us=1.0, mean_us=1.0, median_us=1.0, min_us=1.0, p90_us=1.0, p95_us=1.0, max_us=1.0)
