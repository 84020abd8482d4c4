"""The kernel pairs and fusions computed in a forked child (`engine.compare(beside=True)`) while this
process computes the rest: the comparison is the one a single process computes, on generated and
real pairs in both orders, and a child that fails leaves the work to this process."""

from __future__ import annotations

import json
import os

import pytest

from kerneldiff.core.compare import engine
from kerneldiff.core.demo import DEMO_A, DEMO_B
from kerneldiff.core.processes.fork_child import can_fork
from kerneldiff.core.orchestration import load

from conftest import real_trace


def _json(a, b, classifier, beside: bool) -> str:
    return json.dumps(engine.compare(a, b, classifier=classifier, beside=beside).to_dict(), default=str)


def _pairs():
    yield "demo", lambda: (DEMO_A, DEMO_B)
    yield "h100-eager/compiled", lambda: (real_trace("h100_llama_eager_sdpa.json.gz"),
                                          real_trace("h100_llama_compiled.json.gz"))
    yield "mi300x/h100-qwen", lambda: (real_trace("mi300x_qwen1.5-0.5b_hf.json.gz"),
                                       real_trace("h100_qwen1.5-0.5b_hf.json.gz"))


@pytest.mark.slow
@pytest.mark.parametrize("paths", [p for _, p in _pairs()], ids=[n for n, _ in _pairs()])
def test_beside_gives_the_comparison_of_one_process(paths, classifier, monkeypatch):
    monkeypatch.setattr(engine, "BESIDE_KERNELS", 0)        # every pair forks
    monkeypatch.setattr(engine, "BESIDE_SEQUENCES", 0)
    assert can_fork()
    a, b = (load(p, use_cache=False) for p in paths())
    for x, y in ((a, b), (b, a)):
        assert _json(x, y, classifier, True) == _json(x, y, classifier, False)


def test_a_failing_child_leaves_the_pairs_to_this_process(classifier, monkeypatch, tmp_path):
    monkeypatch.setattr(engine, "BESIDE_KERNELS", 0)
    monkeypatch.setattr(engine, "BESIDE_SEQUENCES", 0)
    here = os.getpid()
    real = engine._pairs_and_fusions
    ran_here = []

    def fails_in_the_child(*args):
        if os.getpid() != here:
            (tmp_path / "child ran").touch()
            os._exit(3)                                      # dies without a reply
        ran_here.append(True)
        return real(*args)

    monkeypatch.setattr(engine, "_pairs_and_fusions", fails_in_the_child)
    a, b = load(DEMO_A, use_cache=False), load(DEMO_B, use_cache=False)
    got = _json(a, b, classifier, True)
    assert (tmp_path / "child ran").exists() and ran_here == [True]
    monkeypatch.setattr(engine, "_pairs_and_fusions", real)
    assert got == _json(a, b, classifier, False)


@pytest.mark.parametrize("few", ["kernels", "sequences"])
def test_pairs_with_little_for_a_child_stay_in_one_process(classifier, monkeypatch, few):
    """Too few layer kernels, or layers that repeat a few kernel sequences (what a real model's
    layers do: the child would align a handful), and no child is forked: its fork, copied pages
    and pickled result would cost more than the work it takes."""
    from kerneldiff.core.processes import fork_child as child_load

    def no_fork(*_a, **_k):
        raise AssertionError("forked for a pair with little to do")

    monkeypatch.setattr(child_load, "Beside", no_fork)
    a, b = load(DEMO_A, use_cache=False), load(DEMO_B, use_cache=False)
    if few == "kernels":
        assert len(a.kernels.dur) + len(b.kernels.dur) < engine.BESIDE_KERNELS
    else:
        monkeypatch.setattr(engine, "BESIDE_KERNELS", 0)
        assert len(set(engine.layer_groups(a, "all").sig.tolist())) < engine.BESIDE_SEQUENCES
    engine.compare(a, b, classifier=classifier, beside=True)
