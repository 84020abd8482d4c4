"""`compare B A` is `compare A B` mirrored, and a trace against itself shows no difference.

Mirrored: gaps negated, ratios inverted, every layer's alignment pair for pair with the sides
swapped, the same fusion findings (and savings) with their sides swapped (`tests/mirror.py`). On
generated pairs (Hypothesis over the synthetic generator's pairs and planted op fusions) and on the
real pairs in ../shared/traces.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kerneldiff.core.analysis.classify import Classifier
from kerneldiff.core.compare.align import align
from kerneldiff.core.compare.engine import compare
from kerneldiff.core.orchestration import load
from kerneldiff.core.synth.pair import SynthConfig, write_pair, write_trace
from kerneldiff.core.synth.trace import Plant

from conftest import real_trace
from mirror import mirror_diffs

CLF = Classifier.load()
SETTINGS = settings(max_examples=8, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


def _both_ways(a, b, phase: str = "all") -> list[str]:
    ab = compare(a, b, phase, classifier=CLF).to_dict()
    ba = compare(b, a, phase, classifier=CLF).to_dict()
    return mirror_diffs(ab, ba)


def _self(m) -> None:
    c = compare(m, m, classifier=CLF)
    assert c.gap_us == 0 and c.ratio in (1.0, None)
    assert all(o.gap_us == 0 and o.ratio in (1.0, None) for o in c.operations)
    assert all(l.gap_us == 0 for l in c.layers)
    for al in c.alignments:
        assert all(p.a_name == p.b_name and p.gap_us == 0 and p.ratio in (1.0, None) for p in al.pairs)
        assert not al.groups
    assert c.fusions == []
    assert c.wall is None or c.wall.wall_gap_us == 0


# --- the alignment on its own ---------------------------------------------------------------------------

kernels = st.lists(st.tuples(st.sampled_from(["GEMM", "Norm", "Elementwise", "Attention"]),
                             st.sampled_from(["k0", "k1", "k2", "gemm_a", "gemm_b", "norm_fused"])),
                   max_size=14)


@pytest.mark.slow
@settings(max_examples=300, deadline=None, derandomize=True, database=None)
@given(a=kernels, b=kernels)
def test_alignment_swapped_is_the_mirror(a, b):
    comps = {"Norm": ["Elementwise"]}
    ab = align([c for c, _ in a], [n for _, n in a], [c for c, _ in b], [n for _, n in b], comps)
    ba = align([c for c, _ in b], [n for _, n in b], [c for c, _ in a], [n for _, n in a], comps)
    assert ab == [(i, j) for j, i in ba]
    assert sorted(i for i, _ in ab if i is not None) == list(range(len(a)))
    assert sorted(j for _, j in ab if j is not None) == list(range(len(b)))


def test_alignment_of_a_sequence_with_itself_is_the_diagonal():
    cats, names = ["GEMM", "Norm", "GEMM", "Elementwise"], ["g", "n", "g", "e"]
    assert align(cats, names, cats, names) == [(i, i) for i in range(4)]


@pytest.mark.slow
def test_swapping_an_alignment_twice_gives_it_back(llama):
    """The mirror that fusion detection computes through (canonical side order) loses nothing."""
    from kerneldiff.core.compare import swap

    c = compare(*llama, classifier=CLF)
    from dataclasses import replace

    for al in c.alignments:
        back = swap.alignment(swap.alignment(al))
        assert [replace(p, ratio=None) for p in back.pairs] == [replace(p, ratio=None) for p in al.pairs]
        assert [p.ratio for p in back.pairs] == pytest.approx([p.ratio for p in al.pairs], rel=1e-12)
        assert replace(back, pairs=[]) == replace(al, pairs=[])
        m = swap.alignment(al)
        assert [(p.a_name, p.b_name) for p in m.pairs] == [(p.b_name, p.a_name) for p in al.pairs]
        assert [(g.fused_side, g.a_indices) for g in m.groups] == [(swap.FLIP[g.fused_side], g.b_indices)
                                                                   for g in al.groups]


# --- generated pairs ------------------------------------------------------------------------------------

@pytest.mark.slow
@SETTINGS
@given(seed=st.integers(0, 50), graph=st.booleans(), moe=st.booleans(),
       attention=st.sampled_from(["fused", "decomposed"]),
       gpus=st.sampled_from([("mi300x", "h100"), ("h100", "b200"), ("mi355x", "mi300x")]),
       phase=st.sampled_from(["all", "prefill", "decode"]))
def test_generated_pair_swapped_is_the_mirror(tmp_path_factory, seed, graph, moe, attention, gpus, phase):
    d = tmp_path_factory.mktemp("pair")
    vendor = {"mi300x": "amd", "mi355x": "amd", "h100": "nvidia", "b200": "nvidia"}
    pa, pb, _ = write_pair(d, seed, layers=3, steps=3, graph=graph, moe=moe, attention=attention, gzip=False,
                           gpu_a=gpus[0], gpu_b=gpus[1], vendor_a=vendor[gpus[0]], vendor_b=vendor[gpus[1]])
    a, b = load(pa, classifier=CLF, use_cache=False), load(pb, classifier=CLF, use_cache=False)
    assert _both_ways(a, b, phase) == []
    _self(a)


@pytest.mark.slow
@SETTINGS
@given(ops=st.sets(st.sampled_from(["norm", "act", "rope"]), min_size=1), attention=st.booleans(),
       seed=st.integers(0, 20))
def test_generated_op_fusions_swapped_are_the_mirror(tmp_path_factory, ops, attention, seed):
    """Planted op-level fusions (one side eager, one op per kernel): the same findings both ways."""
    d = tmp_path_factory.mktemp("ops")
    eager = SynthConfig(vendor="nvidia", gpu="h100", layers=3, steps=3, seed=seed, salt=1,
                        plant=Plant(unfused_ops=tuple(sorted(ops))), attention="decomposed" if attention else "fused")
    fused = SynthConfig(vendor="amd", gpu="mi300x", layers=3, steps=3, seed=seed, salt=2)
    write_trace(d / "e.json", eager)
    write_trace(d / "f.json", fused)
    a, b = load(d / "e.json", classifier=CLF, use_cache=False), load(d / "f.json", classifier=CLF, use_cache=False)
    ab = compare(a, b, classifier=CLF)
    assert ab.fusions, "the planted fusions are found"
    assert mirror_diffs(ab.to_dict(), compare(b, a, classifier=CLF).to_dict()) == []


# --- real pairs -----------------------------------------------------------------------------------------

LLAMA = ("h100_llama_eager_sdpa.json.gz", "h100_llama_compiled.json.gz")
REAL_PAIRS = [
    pytest.param(("h100_llama_eager_sdpa.json.gz", "h200_llama_eager_sdpa.json.gz"), marks=pytest.mark.slow),
    pytest.param(("mi300x_qwen1.5-0.5b_hf.json.gz", "h100_qwen1.5-0.5b_hf.json.gz"), marks=pytest.mark.slow),
    pytest.param(("mi300x_vllm_gptoss_decode.json.gz", "b200_vllm_eager.json.gz"), marks=pytest.mark.slow),
    pytest.param(("a100_control.json.gz", "v100_test.json.gz"), marks=pytest.mark.slow),
]


@pytest.fixture(scope="module")
def llama():
    return tuple(load(real_trace(n), classifier=CLF) for n in LLAMA)


@pytest.mark.slow
@pytest.mark.parametrize("phase", ["all", "prefill", "decode"])
def test_eager_vs_compiled_swapped_is_the_mirror(llama, phase):
    """The pair the issue found: 16 layer alignments and the RoPE finding differed with the order."""
    a, b = llama
    assert _both_ways(a, b, phase) == []
    ab, ba = compare(a, b, phase, classifier=CLF), compare(b, a, phase, classifier=CLF)
    assert [f.measured_saving_us for f in ab.fusions] == pytest.approx([f.measured_saving_us for f in ba.fusions])
    assert [(f.kind, f.fused_category) for f in ab.fusions] == [(f.kind, f.fused_category) for f in ba.fusions]


@pytest.mark.slow
def test_real_trace_against_itself(llama):
    for m in llama:
        _self(m)


@pytest.mark.parametrize("names", REAL_PAIRS)
def test_real_pair_swapped_is_the_mirror(names):
    a, b = (load(real_trace(n), classifier=CLF) for n in names)
    assert _both_ways(a, b) == []
    _self(a)
    _self(b)
