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
