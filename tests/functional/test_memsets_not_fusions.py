"""A memset one vendor's library launches and the other's does not (the H100's cuBLAS workspace
clears under aten::mm/aten::addmm) fuses nothing: it is a launch-count difference, never listed as
"fused on" the other side. Truth from the raw JSON events: the gpu_memset events whose correlation
id links to a runtime launch the trace recorded (those launched before the profiler's window are
left out of every comparison, as cut work)."""

from __future__ import annotations

import gzip
import json

import pytest

from conftest import real_trace

QWEN = ("mi300x_qwen1.5-0.5b_hf.json.gz", "h100_qwen1.5-0.5b_hf.json.gz")


def _num(v):
    return int(v) if v is not None and str(v).lstrip("-").isdigit() else None


def memsets(name: str) -> tuple[int, float]:
    with gzip.open(real_trace(name)) as fh:
        ev = json.load(fh)["traceEvents"]
    launched = {_num((e.get("args") or {}).get("correlation")) for e in ev if e.get("cat") in ("cuda_runtime", "cuda_driver")}
    ms = [e for e in ev if e.get("cat") == "gpu_memset" and e.get("ph") == "X"
          and _num((e.get("args") or {}).get("correlation")) in launched]
    return len(ms), sum(float(e["dur"]) for e in ms)


@pytest.fixture(scope="module")
def qwen():
    from kerneldiff.core import Session

    s = Session([str(real_trace(QWEN[0])), str(real_trace(QWEN[1]))], use_cache=False)
    s.load_all()
    return s.compare("all")


@pytest.mark.slow
def test_workspace_memsets_are_a_launch_count_difference(qwen):
    (na, _), (nb, us_b) = memsets(QWEN[0]), memsets(QWEN[1])
    assert na == 0 and nb > 0            # the MI300X launches none
    found = [f for f in qwen.fusions if f.kind == "launch_count"]
    assert len(found) == 1
    f = found[0]
    assert f.component_side == "b"       # the side that launches the memsets
    # every memset launched in the window, and nothing else
    assert f.occurrences == nb and f.component_cost_us == pytest.approx(us_b, abs=1e-3)
    assert not [g for g in qwen.fusions if g.kind == "count_imbalance" and g.fused_category == f.fused_category]


@pytest.mark.slow
def test_reports_list_memsets_apart_from_fusions(qwen):
    import io

    from rich.console import Console

    from kerneldiff.cli.text_report import render_text
    from kerneldiff.core.report.html import render_html
    from kerneldiff.core.report.markdown import render_markdown

    buf = io.StringIO()
    render_text(qwen, Console(file=buf, width=80, no_color=True))
    text = buf.getvalue()
    fusions = text.split("Fusion differences", 1)[1] if "Fusion differences" in text else ""
    assert "Launch-count differences (not fusions)" in text and "memsets" not in fusions.split("•", 1)[0]
    md = render_markdown(qwen)
    assert "Launch-count differences (not fusions)" in md
    assert "memsets the other side" not in md.split("Launch-count differences (not fusions)", 1)[1].split("\n", 1)[1]
    html = render_html(qwen)
    assert "Launch-count differences (not fusions)" in html
