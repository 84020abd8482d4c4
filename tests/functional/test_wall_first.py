"""`info` and browse lead with the wall clock and its idle, as `compare` does: the B200 vLLM trace's
84.49 ms span (11.67 ms of kernels, 86 % idle) is the first figure of its summary and of the browse
header, recomputed here from the raw JSON events (the union of kernel, memcpy and memset intervals)."""

from __future__ import annotations

import gzip
import json

import pytest

from kerneldiff.cli.main import main
from kerneldiff.core.report import format as fmt

from conftest import real_trace


def raw_wall(path) -> tuple[float, float]:
    """(span, idle) in µs: first GPU activity's start to the last one's end, less their union."""
    doc = json.loads(gzip.decompress(path.read_bytes()))
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    iv = sorted((float(e["ts"]), float(e["ts"]) + float(e["dur"])) for e in events
                if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset"))
    busy, (cs, ce) = 0.0, iv[0]
    for s, e in iv[1:]:
        if s > ce:
            busy, cs, ce = busy + ce - cs, s, e
        else:
            ce = max(ce, e)
    busy += ce - cs
    span = max(e for _, e in iv) - iv[0][0]
    return span, span - busy


def test_info_leads_with_wall_clock_and_idle(capsys):
    path = real_trace("b200_vllm_eager.json.gz")
    span, idle = raw_wall(path)
    assert main(["info", str(path), "--json", "--no-cache"]) == 0
    wall = json.loads(capsys.readouterr().out)["summary"]["wall"]
    assert wall["wall_us"] == pytest.approx(span, abs=0.01) and wall["idle_us"] == pytest.approx(idle, abs=0.01)
    assert wall["busy_us"] + wall["idle_us"] == pytest.approx(wall["wall_us"], abs=1e-6)
    assert main(["info", str(path), "--no-cache"]) == 0
    out = capsys.readouterr().out
    summary = out[out.index("recorded"):].splitlines()[1]       # the first line after the probe
    assert summary.startswith(f"wall clock {fmt.us(span)}") and f"idle {fmt.us(idle)} (86%)" in summary


async def test_browse_header_leads_with_wall_clock_and_idle():
    from kerneldiff.core.orchestration import load
    from tui_driver import demo_app, screen_text, wait_for_main

    path = real_trace("b200_vllm_eager.json.gz")
    span, idle = raw_wall(path)
    app = demo_app({str(path): load(path, use_cache=False)}, [str(path)])
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for_main(pilot)
        header = screen_text(app).splitlines()[1]
    assert f"wall {fmt.us(span)}  idle {fmt.us(idle)} (86%)" in header
    assert header.index("wall") < header.index("929 kernels")


def test_browse_kernel_categories_are_whole():
    """Browse's Kernels tab gives Category the width of its longest name (up to 24): `Attention
    (prefill)` and `MoE GEMM+SwiGLU` whole, not `Attention (…`."""
    from kerneldiff.core.session import Session
    from kerneldiff.tui import trace_views as tv

    s = Session([str(real_trace("b200_vllm_eager.json.gz"))], use_cache=False)
    s.load(0)
    spec = tv.kernels_spec(s.overview(0))
    rows = spec.build({"name": 30})
    cats = {r.cells()[1].plain if callable(r.cells) else r.cells[1].plain for r in rows}
    assert {"Attention (prefill)", "MoE GEMM+SwiGLU"} <= cats and not any("…" in c for c in cats)
