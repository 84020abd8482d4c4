"""Naming a table's kernels (`short_name`, `distinct_short_names`) was made cheaper for 100,000
distinct names (issue 43): each pattern runs only where the name holds the text it needs, what is
read of one name alone (its signature, its gist) is read once a call, and a group of alike names
stops asking for gists at the first name that has none. None of it may change a name: the module
as it was (tests/names_display_reference.py) is the reference, held name for name on every kernel
name of the real traces (read from their raw JSON), on those names cut short, on the families of
numbered names `bench/bench_views.py` shows, and on generated names and tables."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import names_display_reference as before
from kerneldiff.core.names import display
from kerneldiff.core.names.demangle import readable
from kerneldiff.core.names.visible import visible

TRACES = Path(__file__).resolve().parents[2].parent / "shared" / "traces"
WIDTHS = (1, 6, 8, 12, 16, 18, 24, 30, 44, 48, 120)


def same(names: list[str], width: int) -> None:
    assert display.distinct_short_names(names, width) == before.distinct_short_names(names, width), width
    for n in dict.fromkeys(names):
        assert display.short_name(n, width) == before.short_name(n, width), (n, width)


@pytest.fixture(scope="module")
def real_tables() -> dict[str, list[str]]:
    """{trace: its GPU activity names as recorded}, read with plain gzip + json."""
    if not TRACES.is_dir():
        pytest.skip("../shared/traces not available")
    tables = {}
    for f in sorted(TRACES.rglob("*.json.gz")):
        with gzip.open(f, "rb") as fh:
            doc = json.load(fh)
        events = doc["traceEvents"] if isinstance(doc, dict) else doc
        names = sorted({e["name"] for e in events if isinstance(e, dict) and isinstance(e.get("name"), str)
                        and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")})
        if names:
            tables[str(f.relative_to(TRACES))] = names
    if not tables:
        pytest.skip("no traces in ../shared/traces")
    return tables


@pytest.mark.slow   # reads every real trace (~20 s of CPU)
@pytest.mark.real
def test_real_tables_read_as_before(real_tables):
    everything: set[str] = set()
    for names in real_tables.values():
        shown = sorted({visible(n) for n in names})   # as the explorer passes them
        demangled = sorted({readable(n) for n in names})
        for table in [names] + [t for t in (shown, demangled) if t != names]:
            for width in WIDTHS:
                same(table, width)
        everything.update(names)
    assert len(everything) > 100
    table = sorted(everything | {readable(n) for n in everything})
    for width in (12, 18, 30, 48):
        same(table, width)
    # names cut short: unbalanced brackets, half a namespace
    cut = sorted({n[:len(n) // k] for n in table for k in (2, 3)} - {""})
    for width in (16, 30):
        same(cut, width)


def bench_names(n: int) -> list[str]:
    """The numbered families of real kernel names that bench/bench_views.py names 100,000 of."""
    parts = ["Cijk_Alik_Bljk_BBS_BH_MT{}x128x64_MI16x16x1", "void vllm::rms_norm_kernel<c10::BFloat16, {}, 2>",
             "nvjet_hsh_{}x32_64x16_4x1_v_bz_TNT", "void at::native::vectorized_elementwise_kernel<4, {}>",
             "kernel_unified_attention_3d_{}", "ncclDevKernel_AllReduce_Sum_bf16_RING_LL_{}"]
    return [parts[i % len(parts)].format(i) for i in range(n)]


@pytest.mark.parametrize("width", [8, 18, 30, 48])
def test_numbered_families_read_as_before(width):
    same(bench_names(3_000), width)


GENERIC = ("void at::native::vectorized_elementwise_kernel<{v}, at::native::{f}<{t}>, std::array<char*, 3ul> >"
           "(int, at::native::{f}<{t}>, std::array<char*, 3ul>)",
           "void at::native::unrolled_elementwise_kernel<at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)"
           "::{{lambda()#3}}::operator()() const::{{lambda()#{v}}}::operator()() const::{{lambda({t})#1}}, "
           "at::detail::Array<char*, 2>, {f}>(int, {t})",
           "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<{t}, at::native::{f}<{t}>, unsigned int, "
           "{t}, 4> >(at::native::ReduceOp<{t}, at::native::{f}<{t}>, unsigned int, {t}, 4>)",
           "void at::native::elementwise_kernel<128, {v}, at::native::gpu_kernel_impl_nocast<at::native::{f}<{t}> >"
           "(at::TensorIteratorBase&, at::native::{f}<{t}> const&)::{{lambda(int)#1}}>(int, {t})")
PIECES = list("ab_1 :<>(){}[],.&*-#~$\n\t") + [
    "void ", "::", "true", "lambda", "elementwise_kernel<", "vectorized_elementwise_kernel<4, ", "reduce_kernel<",
    "operator", "{lambda", " const", "_kernel", "Kernel", "_kernel<", "Memcpy ", "Memcpy HtoD (Pageable -> Device)",
    "__nv_", "__hip_", "c10::", "std::", "at::native::", "(anonymous namespace)::", "gpu_kernel_impl_nocast",
    "MulFunctor<float>", "CUDAFunctor_add<c10::BFloat16>", "{lambda(float)#1}", "  ", "\u00a0", "_ZN5aiter3fooIiEEvv"]
NAMEISH = st.lists(st.sampled_from(PIECES), max_size=30).map("".join)


@settings(max_examples=300)
@given(st.lists(NAMEISH, max_size=12), st.integers(1, 64))
def test_generated_tables_read_as_before(names, width):
    same(names, width)


@settings(max_examples=200)
@given(st.lists(st.tuples(st.sampled_from(GENERIC),
                          st.sampled_from(["MulFunctor", "AddFunctor", "CUDAFunctor_add", "func_wrapper_t", "Sum"]),
                          st.sampled_from(["float", "c10::BFloat16", "c10::Half", "long", "int"]),
                          st.sampled_from(["1", "2", "4", "7", "8"])), min_size=1, max_size=10),
       st.integers(6, 60), st.lists(NAMEISH, max_size=3))
def test_generated_generic_kernels_read_as_before(kinds, width, others):
    # PyTorch's generic kernels alike but for their functor, element type or width: told apart by gists
    names = [t.format(f=f, t=ty, v=v) for t, f, ty, v in kinds] + others
    same(names, width)


def test_white_space_is_printable_only_as_a_space():
    # what lets `_one_space` skip its pattern: every character `\s` matches is one str.isspace calls
    # white space, and of them only the space is printable
    import re
    import sys

    ws = re.compile(r"\s")
    for c in map(chr, range(sys.maxunicode + 1)):
        assert (ws.match(c) is not None) == c.isspace(), hex(ord(c))
        assert not (c.isspace() and c.isprintable()) or c == " ", hex(ord(c))


def test_edge_names_read_as_before():
    names = [" ", "  \n", "\t_kernel<", "a" * 20_000, "void k<" + "a, " * 9_000 + ">", "Memcpy HtoD (Pageable -> Device)",
             "Memcpy DtoH (Device -> Pinned)", "averylongname_kernel\n", "::operator", "a:::b::{lambda()#1}",
             "x::y<a::b>::z", "void at::native::vectorized_elementwise_kernel<4, 1>", "_ZN5aiter3fooIiEEvv",
             "void  f<int>(int)", "f\u00a0g::h<i>"]
    for width in (1, 6, 12, 30, 48):
        same(names, width)
