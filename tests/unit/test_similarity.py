"""The alignment's name similarity (core/compare/align.py `_similarity`) counts matched characters
in C where the extension is built: the same count difflib's SequenceMatcher finds, so the same
ratio and the same alignments."""

from __future__ import annotations

from difflib import SequenceMatcher

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from kerneldiff.core.compare import align

_similarity = pytest.importorskip("kerneldiff.core.compare._similarity")


def _difflib(a: str, b: str) -> int:
    return sum(m.size for m in SequenceMatcher(None, a, b, autojunk=False).get_matching_blocks())


# small alphabets make many ties between equally long blocks, where the order of the search decides
_text = st.one_of(st.text(alphabet="ab", max_size=40), st.text(alphabet="abc_<>, ", max_size=120),
                  st.text(max_size=60))


@pytest.mark.slow
@settings(max_examples=500, deadline=None)
@given(_text, _text)
@example("", "")
@example("a", "")
@example("abab", "baba")
@example("😀é\x00", "é😀\x00")
def test_matches_is_difflibs(a, b):
    assert _similarity.matches(a, b) == _difflib(a, b)


@settings(max_examples=200, deadline=None)
@given(_text, _text)
def test_similarity_is_the_ratio(a, b):
    want = 1.0 if a == b else SequenceMatcher(None, a[:96], b[:96], autojunk=False).ratio()
    assert align._similarity(a, b) == want


def test_kernel_names():
    names = ["void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16>, "
             "at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<c10::BFloat16>, at::detail::Array<char*, 3>)",
             "triton_poi_fused_add_mul_rsqrt_12", "triton_red_fused__to_copy_add_mean_mul_pow_rsqrt_3",
             "nvjet_tst_128x64_64x4_2x1_v_bz_coopA_NT", "nvjet_tst_192x16_64x6_1x1_v_bz_coopA_T",
             "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)", "Memset (Device)"]
    for a in names:
        for b in names:
            assert _similarity.matches(a[:96], b[:96]) == _difflib(a[:96], b[:96])


# --- the alignment table in C (align._align with use_c) against the Python loop ---------------------

_seq = st.lists(st.tuples(st.sampled_from(["gemm", "attn", "norm", "fused", "elt"]),
                          st.sampled_from(["k1", "k2", "gemm_a", "gemm_b", "attn_fwd", "rms", "rms_gemm", "x"]),
                          st.sampled_from(["", "", "aten::mm", "aten::bmm", None])), max_size=14)


@pytest.mark.slow
@settings(max_examples=400, deadline=None)
@given(_seq, _seq, st.booleans(), st.booleans())
def test_table_in_c_gives_the_python_loops_pairs(a, b, with_ops, with_comps):
    """Equal names, equal categories with known and different operations, fused components, name
    similarity for the rest; ties everywhere (small alphabets): the same scores, the same table,
    the same pairs, and a shared similarity cache changes nothing."""
    comps = {"fused": ["norm", "gemm"]} if with_comps else None
    cats_a, names_a, ops_a = (list(x) for x in zip(*a)) if a else ([], [], [])
    cats_b, names_b, ops_b = (list(x) for x in zip(*b)) if b else ([], [], [])
    oa, ob = (ops_a, ops_b) if with_ops else (None, None)
    ref = align._align(cats_a, names_a, cats_b, names_b, comps, oa, ob, use_c=False)
    shared: dict = {}
    assert align._align(cats_a, names_a, cats_b, names_b, comps, oa, ob, shared) == ref
    assert align._align(cats_a, names_a, cats_b, names_b, comps, oa, ob, shared) == ref


def test_table_refuses_a_wrong_size():
    import numpy as np

    with pytest.raises(ValueError):
        _similarity.table(np.zeros(5), 2, 3, -1.0)
    with pytest.raises(ValueError):
        _similarity.table(np.zeros(6), -1, 3, -1.0)
    assert len(_similarity.table(np.zeros(0), 0, 4, -1.0)) == 5
