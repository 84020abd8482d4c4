"""Short names that tell kernels apart: copies keep the host memory's kind (HtoD Pageable against
HtoD Pinned, both in the two-rank HTA trace), PyTorch's vectorized element-wise kernels keep their
vector width (vec_ew<4, …> against vec_ew<8, …>): every distinct name of a real trace's copies and
vec_ew kernels that differ only in their vector width, read from its raw events, keeps a distinct
short name."""

from __future__ import annotations

import gzip
import json

import pytest

from kerneldiff.core.names.display import distinct_short_names, short_name

from conftest import real_trace


def _raw_names(path) -> set[str]:
    doc = json.loads(gzip.decompress(path.read_bytes()))
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    return {e["name"] for e in events if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")}


@pytest.mark.parametrize("trace", ["hta_two_ranks/sampled_rank-0.json.gz",
                                   pytest.param("h100_llama_eager_sdpa.json.gz", marks=pytest.mark.slow),   # ~6 s
                                   "h100_qwen1.5-0.5b_hf.json.gz"])
def test_copies_and_vec_ew_keep_apart(trace):
    import re

    names = sorted(n for n in _raw_names(real_trace(trace)) if n.startswith("Memcpy") or "vectorized_elementwise" in n)
    assert names
    copies = [n for n in names if n.startswith("Memcpy")]
    assert len({short_name(n, 16) for n in copies}) == len(copies)      # each copy apart on its own
    shorts = distinct_short_names(copies, 16)
    assert len(set(shorts.values())) == len(copies)
    # kernels that differ only in their vector width differ in their short names, on their own
    by_rest: dict[str, list[str]] = {}
    for n in names:
        by_rest.setdefault(re.sub(r"vectorized_elementwise_kernel<\d+,", "", n), []).append(n)
    for same in by_rest.values():
        assert len({short_name(n, 48) for n in same}) == len(same), same


def test_the_words_kept():
    assert short_name("Memcpy HtoD (Pageable -> Device)", 16) == "HtoD Pageable"
    assert short_name("Memcpy DtoH (Device -> Pinned)", 16) == "DtoH Pinned"
    vec = ("void at::native::vectorized_elementwise_kernel<{}, at::native::CUDAFunctor_add<float>, "
           "at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<float>, at::detail::Array<char*, 3>)")
    # the op first (what it computes), then the template with its vector width (float against bf16)
    assert short_name(vec.format(4), 40) == "add vec_ew<4>"
    assert short_name(vec.format(8), 40) == "add vec_ew<8>"
