"""Pass kinds (steady / warmup / capture / compile) from the trace's own events, and comparisons that
read the steady passes by default (`--all-passes`: every pass).

The oracle reads the raw JSON: the pass that holds the recorded `cudaStreamBeginCapture` call (a
CUDA graph being recorded) is the capture pass; a trace without any such call has none."""

from __future__ import annotations

import gzip
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import ROOT
from kerneldiff.core.analysis.pass_kinds import assign_kinds
from kerneldiff.core.orchestration import load
from kerneldiff.core.session import Session

DATA = ROOT / "tests" / "data" / "recorded"
GRAPHS = DATA / "h100small_static_graphs.json.gz"
EAGER = DATA / "h100small_eager_attn.json.gz"


def _raw(path):
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return json.load(f)["traceEvents"]


def test_the_pass_holding_the_graph_capture_is_the_capture_pass():
    capture_ts = [float(e["ts"]) for e in _raw(GRAPHS) if e.get("name") == "cudaStreamBeginCapture"]
    assert len(capture_ts) == 1
    m = load(GRAPHS, use_cache=False, workers=0)
    starts = [s.ts for s in m.steps]
    holder = max(i for i, t in enumerate(starts) if t <= capture_ts[0])
    assert [s.kind for s in m.steps] == ["capture" if i == holder else "steady" for i in range(len(m.steps))]


def test_an_eager_run_has_only_steady_passes():
    assert not any(e.get("name", "").startswith(("cudaStreamBeginCapture", "cudaGraphInstantiate"))
                   for e in _raw(EAGER))
    m = load(EAGER, use_cache=False, workers=0)
    assert {s.kind for s in m.steps} == {"steady"}


@pytest.mark.parametrize("all_passes", [False, True])
def test_comparisons_read_steady_passes_unless_told(all_passes):
    s = Session([str(GRAPHS), str(GRAPHS)], use_cache=False, workers=0, all_passes=all_passes)
    s.load(0)
    s.load(1)
    cmp = s.compare()
    kinds = [p.kind for p in cmp.a.timeline.passes]
    if all_passes:
        assert cmp.a.passes == 16 and kinds.count("capture") == 1 and cmp.a.passes_left_out is None
    else:
        assert cmp.a.passes == 15 and set(kinds) == {"steady"}
        left = cmp.a.passes_left_out
        assert left.kinds == {"capture": 1} and left.line.startswith("1 pass left out: capture")
        assert any("left out: capture" in n for n in cmp.comparability.notes)


@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10**6), j=st.integers(0, 9), marker=st.sampled_from(
    [("cuda_runtime", "cudaStreamBeginCapture", "capture"), ("cuda_runtime", "cudaGraphInstantiateWithFlags", "capture"),
     ("user_annotation", "CUDAGraphNode.record_data: compile_id=0/0", "capture"),
     ("python_function", "torch/_dynamo/convert_frame.py(1000): _compile", "compile")]))
def test_a_marker_inside_one_pass_marks_that_pass_only(tmp_path_factory, seed, j, marker):
    import sys

    sys.path.insert(0, str(ROOT / "tests" / "hostile"))
    import invariants as inv

    root = tmp_path_factory.mktemp("kinds")
    doc = inv.synth_doc(root / "src", seed, "hf-generate", steps=4)
    m = load(inv.write_doc(root / "orig.json", doc), use_cache=False, workers=0)
    if len(m.steps) < 2:
        pytest.skip("one pass")
    j %= len(m.steps)
    s = m.steps[j]
    cat, name, kind = marker
    pid = next(e["pid"] for e in doc["traceEvents"] if e.get("cat") == "cpu_op")
    tid = next(e["tid"] for e in doc["traceEvents"] if e.get("cat") == "cpu_op")
    doc["traceEvents"].append({"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid,
                               "ts": s.ts + min(s.dur, 1.0) / 2, "dur": 0.1, "args": {}})
    m2 = load(inv.write_doc(root / "marked.json", doc), use_cache=False, workers=0)
    assert len(m2.steps) == len(m.steps)
    assert [x.kind for x in m2.steps] == [kind if i == j else "steady" for i in range(len(m.steps))]
    assign_kinds(m2)   # the same again: idempotent
    assert [x.kind for x in m2.steps].count(kind) == 1


def _pieces_doc(names: list[str]):
    """One compiled-graph call per name, each launching one GEMM kernel, 100 µs apart."""
    from conftest import kineto_doc

    ev = []
    for i, n in enumerate(names):
        t = 1000.0 + 100.0 * i
        ev.append({"ph": "X", "cat": "user_annotation", "name": f"## Call CompiledFxGraph {n} ##", "pid": 1,
                   "tid": 1, "ts": t, "dur": 50.0, "args": {}})
        ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": t + 5,
                   "dur": 3.0, "args": {"correlation": 10 + i}})
        ev.append({"ph": "X", "cat": "kernel", "name": "sm90_xmma_gemm_bf16bf16_bf16f32", "pid": 0, "tid": 7,
                   "ts": t + 10, "dur": 20.0, "args": {"correlation": 10 + i, "device": 0, "stream": 7}})
    return kineto_doc(ev)


@pytest.mark.parametrize("names, passes", [
    (["first", "mid", "mid", "mid", "last"] * 3, 3),         # piecewise: one forward, five graph calls
    (["first", "mid", "mid", "mid", "last"] * 2 + ["first", "mid"], 3),   # the window cuts the last one
    (["whole"] * 6, 6),                                       # one whole-forward graph per pass
    (["prefill", "decode1"] + ["decode"] * 5, 7),             # compile ids 0/0, 0/1, 0/2…
    (["bs8", "bs16"] * 4, 8),                                 # two batch sizes' graphs taking turns
])
def test_piecewise_graph_calls_of_one_forward_are_one_pass(tmp_path, names, passes):
    from conftest import write_trace

    m = load(write_trace(tmp_path / "p.json", _pieces_doc(names)), use_cache=False, workers=0)
    assert len(m.steps) == passes
