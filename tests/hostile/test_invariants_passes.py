"""Issue 26: passes are what the trace holds, one by one.

- Removing one pass (its CPU events and the kernels they launched) removes exactly that pass: one
  pass fewer, every other pass with the same figures (the split of its idle time aside, which may
  name a call of the removed pass as the cause), the kernels less by that pass's.
- A trace repeated after a pause (two generate() calls recorded together) reads as twice the passes
  with the same per-pass figures, and the pause (with the second run's set-up) is outside every
  pass: the last pass of the first run does not absorb it."""

from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import invariants as inv
from conftest import real_trace
from kerneldiff.core.analysis.timeline import _flat, timeline
from kerneldiff.core.orchestration import load

# a copy's times are rewritten in whole ns (invariants.repeated): a few ns on a trace at a double's
# resolution
ABS_US = 0.05


def _passes(path):
    m = load(path, use_cache=False, workers=0)
    return m, [{k: v for k, v in _flat(p).items() if k not in ("index", "name")} for p in timeline(m).passes]


# where a pass starts is its place on the clock, not what it measures: removing an earlier pass or
# repeating the trace after a pause moves it
POSITION = {"start_us"}


def _same(p: dict, q: dict) -> bool:
    return all(math.isclose(p[k], q[k], rel_tol=1e-9, abs_tol=ABS_US) if isinstance(p[k], float) else p[k] == q[k]
               for k in p if k not in POSITION)


def _check_removal(root, doc: dict, j: int) -> None:
    model, before = _passes(inv.write_doc(root / "whole.json", doc))
    if len(before) < 3:
        pytest.skip("needs three passes or more")
    j %= len(before)
    gone = int((model.kernels.step == j).sum())
    m2, after = _passes(inv.write_doc(root / "less.json", inv.without_pass(doc, model, j)))
    assert len(after) == len(before) - 1
    assert len(m2.kernels) == len(model.kernels) - gone
    # the idle split of a pass may name the removed pass's calls as the cause (a sync at its end
    # that the previous pass's GPU work waited behind): the split is left out, its sum is not
    split = ("launch_bound_us", "sync_us", "other_us")
    for p, q in zip(before[:j] + before[j + 1:], after):
        assert _same({k: v for k, v in p.items() if k not in split}, {k: v for k, v in q.items() if k not in split}), (p, q)


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10**6), style=st.sampled_from(["vllm", "sglang", "hf-generate"]), j=st.integers(0, 10))
def test_removing_one_pass_removes_exactly_that_pass_on_generated_traces(tmp_path_factory, seed, style, j):
    root = tmp_path_factory.mktemp("minus")
    doc = inv.synth_doc(root / "src", seed, style, steps=5, gpu_annotations=False)
    _check_removal(root, doc, j)


@pytest.mark.slow
@pytest.mark.parametrize("j", [0, 20, 47])
def test_removing_one_pass_removes_exactly_that_pass_on_a_real_trace(tmp_path, j):
    _check_removal(tmp_path, inv.read_doc(real_trace("h100_llama_eager_sdpa.json.gz")), j)


def _check_repeat(root, doc: dict, pause_us: float) -> None:
    m1, once = _passes(inv.write_doc(root / "once.json", doc))
    m2, twice = _passes(inv.write_doc(root / "twice.json", inv.repeated(doc, pause_us)))
    n = len(once)
    assert len(twice) == 2 * n
    for j in range(n):
        assert _same(once[j], twice[j]), (j, once[j], twice[j])
        assert _same(once[j], twice[n + j]), (j + n, once[j], twice[n + j])
    # the pause lies between the first run's last pass and the second run's first
    first_end = max(s.ts + s.dur for s in m2.steps[:n])
    assert m2.steps[n].ts - first_end >= pause_us
    assert int((m2.kernels.step < 0).sum()) == 2 * int((m1.kernels.step < 0).sum())


@pytest.mark.slow
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10**6), style=st.sampled_from(["hf-generate", "hf", "vllm"]),
       pause_us=st.sampled_from([5_000.0, 200_000.0, 3e6]), bare=st.booleans())
def test_a_trace_repeated_after_a_pause_reads_as_twice_the_passes_on_generated_traces(tmp_path_factory, seed, style,
                                                                                      pause_us, bare):
    """With set-up kernels before the first pass; `bare`: without ProfilerStep windows (module calls
    alone mark the passes, nothing else stops the first run's last one)."""
    root = tmp_path_factory.mktemp("twice")
    doc = inv.with_setup(inv.synth_doc(root / "src", seed, style, gpu_annotations=False))
    _check_repeat(root, inv.without_profiler_steps(doc) if bare else doc, pause_us)


@pytest.mark.parametrize("name", [pytest.param("h100_llama_eager_sdpa.json.gz", marks=pytest.mark.slow),
                                  pytest.param("h100_llama_compiled.json.gz", marks=pytest.mark.slow)])
def test_a_real_trace_repeated_after_a_pause_reads_as_twice_the_passes(tmp_path, name):
    """h100_llama_eager_sdpa (one generate(): 48 passes) twice, 200 ms apart: the first run's last
    pass spanned 237.7 ms (the pause and the second run's set-up) instead of 25.8 ms."""
    _check_repeat(tmp_path, inv.read_doc(real_trace(name)), 200_000.0)
