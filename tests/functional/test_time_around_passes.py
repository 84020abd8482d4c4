"""The time around the passes, recounted from the raw events of the eager and compiled Llama traces
(issue 38): a pass is the model forward call's span, measured on the kernels launched inside
`LlamaForCausalLM`'s call; what `generate()` launches after the call returns (sampling, the next
input) lies between passes. Under `--all-passes` the ledger gives the time before the first pass,
between passes and after the last pass a row each, and the rows still sum to the wall gap.

The oracle reads the JSON itself: GPU activities (kernel, gpu_memcpy, gpu_memset), their runtime
launch calls by correlation id, and the model's module calls (`nn.Module: LlamaForCausalLM_0`);
times as integer ns from the first activity, as the trace's clock gives them."""

from __future__ import annotations

import bisect
import gzip
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import real_trace
from kerneldiff.core.session import Session

EAGER, COMPILED = "h100_llama_eager_sdpa.json.gz", "h100_llama_compiled.json.gz"
GPU = ("kernel", "gpu_memcpy", "gpu_memset")


def raw_recount(name: str) -> dict:
    with gzip.open(real_trace(name), "rt", encoding="utf-8") as f:
        ev = json.load(f)["traceEvents"]
    launch = {e["args"]["correlation"]: float(e["ts"]) for e in ev
              if e.get("cat") in ("cuda_runtime", "cuda_driver") and "correlation" in e.get("args", {})}
    gpu = [e for e in ev if e.get("cat") in GPU]
    # every activity has its launch in the trace: nothing was launched before the profiler's window
    assert all(e["args"]["correlation"] in launch for e in gpu)
    calls = sorted((float(e["ts"]), float(e["ts"]) + float(e["dur"])) for e in ev
                   if e.get("cat") == "python_function" and e.get("name") == "nn.Module: LlamaForCausalLM_0")
    t0 = min(float(e["ts"]) for e in gpu)
    ns = lambda x: round(x * 1000)   # noqa: E731
    starts = [c[0] for c in calls]
    per: dict[int, list[tuple[int, int]]] = {}
    after_call = 0
    for e in gpu:
        t = launch[e["args"]["correlation"]]
        j = bisect.bisect_right(starts, t) - 1
        s = ns(float(e["ts"]) - t0)
        iv = (s, s + ns(max(float(e["dur"]), 0.0)))
        if j >= 0 and t <= calls[j][1]:
            per.setdefault(j, []).append(iv)
        elif j >= 0:
            after_call += 1
    every = [(ns(float(e["ts"]) - t0), ns(float(e["ts"]) - t0) + ns(max(float(e["dur"]), 0.0))) for e in gpu]
    w0, w1 = min(s for s, _ in every), max(e for _, e in every)
    spans = {j: (min(s for s, _ in iv), max(e for _, e in iv)) for j, iv in per.items()}
    first, last = min(s for s, _ in spans.values()), max(e for _, e in spans.values())
    summed = sum(e - s for s, e in spans.values())
    before, after = first - w0, w1 - last
    return {"calls": len(calls), "kernels": [len(per[j]) for j in sorted(per)], "after_call": after_call,
            "whole_us": (w1 - w0) / 1000, "passes_us": summed / 1000, "before": before / 1000,
            "between": ((w1 - w0) - summed - before - after) / 1000, "after": after / 1000}


@pytest.fixture(scope="module")
def truth():
    return {"a": raw_recount(EAGER), "b": raw_recount(COMPILED)}


def _compare(all_passes: bool):
    s = Session([str(real_trace(EAGER)), str(real_trace(COMPILED))], use_cache=False, all_passes=all_passes)
    s.load_all()
    return s.compare()


@pytest.mark.real
@pytest.mark.slow
def test_a_pass_holds_the_kernels_launched_inside_the_forward_call(truth):
    cmp = _compare(False)
    for side in ("a", "b"):
        t = truth[side]
        assert t["calls"] == 48 and t["after_call"] > 0     # generate() launches work after each call
        passes = getattr(cmp, side).timeline.passes
        assert [p.kernels for p in passes] == t["kernels"]
    # eager: 681 kernels inside each call (726 with the sampling after it, as passes read before)
    assert set(truth["a"]["kernels"]) == {681}
    w = cmp.wall
    assert w.window == "passes"
    assert w.a_wall_us == pytest.approx(truth["a"]["passes_us"], abs=1e-3)
    assert w.b_wall_us == pytest.approx(truth["b"]["passes_us"], abs=1e-3)
    assert w.a_outside_us == pytest.approx(truth["a"]["whole_us"] - truth["a"]["passes_us"], abs=1e-3)
    assert w.b_outside_us == pytest.approx(truth["b"]["whole_us"] - truth["b"]["passes_us"], abs=1e-3)


@pytest.mark.real
@pytest.mark.slow
def test_all_passes_ledger_has_rows_for_the_time_around_the_passes(truth):
    cmp = _compare(True)
    w = cmp.wall
    assert w.window == "whole"
    assert w.a_wall_us == pytest.approx(truth["a"]["whole_us"], abs=1e-3)
    assert w.b_wall_us == pytest.approx(truth["b"]["whole_us"], abs=1e-3)
    rows = {e.cause: e for e in cmp.ledger}
    # generate()'s sampling loop runs between the forward calls on both sides
    rows["between passes"] = rows.pop("between passes (host: _sample)")
    assert "transformers/generation/utils.py(2917): _sample" in rows["between passes"].detail
    for cause, key in (("before first pass", "before"), ("between passes", "between"), ("after last pass", "after")):
        assert rows[cause].kind == "outside"
        assert rows[cause].a_us == pytest.approx(truth["a"][key], abs=1e-3), cause
        assert rows[cause].b_us == pytest.approx(truth["b"][key], abs=1e-3), cause
    assert sum(e.gap_us for e in cmp.ledger) == pytest.approx(w.wall_gap_us, abs=1e-3)
    # the rows inside the passes are the default comparison's, which measures the passes alone
    default = {e.cause: e for e in _compare(False).ledger}
    for cause, e in default.items():
        assert rows[cause].a_us == pytest.approx(e.a_us, abs=1e-6) and rows[cause].b_us == pytest.approx(e.b_us, abs=1e-6)


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed_a=st.integers(0, 10**6), seed_b=st.integers(0, 10**6),
       vendor=st.sampled_from(["nvidia", "amd"]))
def test_generated_pairs_account_for_every_us_both_ways(tmp_path_factory, seed_a, seed_b, vendor):
    """On generated generate() traces: under --all-passes the ledger (the passes' rows and the rows
    around them) sums to the whole window's wall gap, the rows around the passes are never negative
    and sum to the whole span less the passes' spans, and compare B A mirrors compare A B."""
    import sys

    from conftest import ROOT

    sys.path.insert(0, str(ROOT / "tests" / "hostile"))
    import invariants as inv

    root = tmp_path_factory.mktemp("around")
    pa = inv.write_doc(root / "a.json", inv.synth_doc(root / "sa", seed_a, "hf-generate", vendor=vendor, steps=4))
    pb = inv.write_doc(root / "b.json", inv.synth_doc(root / "sb", seed_b, "hf-generate", steps=3))
    out = []
    for x, y in ((pa, pb), (pb, pa)):
        s = Session([str(x), str(y)], use_cache=False, workers=0, all_passes=True)
        s.load(0)
        s.load(1)
        out.append(s.compare())
    ab, ba = out
    assert sum(e.gap_us for e in ab.ledger) == pytest.approx(ab.wall.wall_gap_us, abs=1e-3)
    for side, t in (("a", ab.a.timeline), ("b", ab.b.timeline)):
        around = [e for e in ab.ledger if e.kind == "outside"]
        n = ab.a.passes if side == "a" else ab.b.passes
        div = n if ab.basis == "per_pass" else 1
        got = sum(getattr(e, f"{side}_us") for e in around)
        assert all(getattr(e, f"{side}_us") >= 0 for e in around)
        if t.passes and around:
            assert got == pytest.approx((t.span_us - sum(p.span_us for p in t.passes)) / div, abs=1e-3)
    mirror = {e.cause: e for e in ba.ledger}
    for e in ab.ledger:
        m = mirror[e.cause]
        assert (m.a_us, m.b_us) == pytest.approx((e.b_us, e.a_us), abs=1e-9) and m.gap_us == pytest.approx(-e.gap_us, abs=1e-9)
