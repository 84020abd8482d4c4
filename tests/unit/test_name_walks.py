"""The walks over a kernel name that shorten it for a table cell (`drop_return_type`,
`_flatten_templates`, `_unqualified`) step from one bracket, space or separator to the next in C
instead of over every character, and `gist` rejects a name naming none of PyTorch's generic
templates before cutting it: each must read every name exactly as the character-by-character walk
does. The references below are those walks as they were, written out here; the names are every
kernel name of the real traces (read from their raw JSON, as recorded and demangled) and
generated ones heavy in brackets, spaces, colons and commas."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kerneldiff.core.names import display, generic
from kerneldiff.core.names.demangle import readable
from kerneldiff.core.names.parts import drop_return_type, strip_args

TRACES = Path(__file__).resolve().parents[2].parent / "shared" / "traces"


def ref_drop_return_type(s: str) -> str:
    depth, cut = 0, -1
    for i, ch in enumerate(s):
        if ch in "<({[":
            depth += 1
        elif ch in ">)}]":
            depth = max(depth - 1, 0)
        elif ch == " " and depth == 0 and i + 1 < len(s) and s[i + 1] not in "<>(&*":
            cut = i
    return s[cut + 1:] if cut >= 0 and cut + 1 < len(s) else s


def ref_flatten_templates(s: str) -> str:
    out, depth, arg = [], 0, []
    args: list[str] = []
    for ch in s:
        if ch == "<":
            depth += 1
            if depth == 1:
                out.append("<")
                arg = []
                args = []
            continue
        if ch == ">":
            depth -= 1
            if depth == 0:
                args.append("".join(arg).strip())
                kept = [a for a in args if a and not re.fullmatch(r"[-\d.]+[a-z]*|true|false", a)]
                out.append(", ".join(kept) + ">")
            continue
        if depth == 1 and ch == ",":
            args.append("".join(arg).strip())
            arg = []
            continue
        if depth == 1:
            arg.append(ch)
        elif depth == 0:
            out.append(ch)
    if depth > 0:
        args.append("".join(arg).strip())
        out.append(", ".join(a for a in args if a) + "…>")
    return "".join(out).replace("<>", "")


def ref_unqualified(s: str) -> str:
    depth, cuts = 0, [0]
    for i, ch in enumerate(s):
        if ch in "<({[":
            depth += 1
        elif ch in ">)}]":
            depth = max(depth - 1, 0)
        elif ch == ":" and depth == 0 and s.startswith("::", i) and i + 2 < len(s):
            cuts.append(i + 2)
    if len(cuts) > 1 and s.startswith(("operator", "{lambda", "{unnamed"), cuts[-1]):
        return s[cuts[-2]:]
    return s[cuts[-1]:]


def gist_has_template(name: str) -> bool:
    """Does the walk `gist` does before looking at template arguments find one of its templates?"""
    s = generic._QUALIFIED.sub("", generic._VOID.sub("", drop_return_type(strip_args(name.strip()))))
    return any(s.startswith(p) for p, _ in generic._TEMPLATES)


def check(name: str) -> None:
    assert drop_return_type(name) == ref_drop_return_type(name), name
    assert display._flatten_templates(name) == ref_flatten_templates(name), name
    assert display._unqualified(name) == ref_unqualified(name), name
    if not gist_has_template(name):
        assert generic.gist(name) is None, name


@pytest.fixture(scope="module")
def real_names() -> list[str]:
    """Every GPU activity name of the real traces, as recorded and demangled (plain gzip + json)."""
    if not TRACES.is_dir():
        pytest.skip("../shared/traces not available")
    names: set[str] = set()
    for f in sorted(TRACES.glob("*.json.gz")):
        with gzip.open(f, "rb") as fh:
            doc = json.load(fh)
        events = doc["traceEvents"] if isinstance(doc, dict) else doc
        names.update(e["name"] for e in events if isinstance(e, dict) and e.get("cat") in ("kernel", "gpu_memcpy")
                     and isinstance(e.get("name"), str))
    if not names:
        pytest.skip("no traces in ../shared/traces")
    return sorted(names | {readable(n) for n in names if n.startswith("_Z")})


@pytest.mark.slow
def test_real_names_walk_as_before(real_names):
    assert len(real_names) > 100
    for name in real_names:
        check(name)
        for cut in (len(name) // 3, len(name) // 2):   # names cut short: unbalanced brackets
            check(name[:cut])


NAMEISH = st.lists(st.sampled_from(list("ab_1 :<>(){}[],.&*-#") + ["void ", "::", "true", "lambda",
                                                                             "elementwise_kernel<", "reduce_kernel<",
                                                                             "operator", "{lambda", " const"]),
                   max_size=40).map("".join)


@settings(max_examples=400, deadline=None)
@given(NAMEISH)
def test_generated_names_walk_as_before(name):
    check(name)


def test_known_names():
    for name in ("void at::native::vectorized_elementwise_kernel<4, at::native::AUnaryFunctor<float, float, float, "
                 "at::native::binary_internal::MulFunctor<float> >, std::array<char*, 2> >(int, "
                 "at::native::AUnaryFunctor<float, float, float, at::native::binary_internal::MulFunctor<float> >, "
                 "std::array<char*, 2>)",
                 "std::enable_if<true, void>::type vllm::rms_norm_kernel<c10::BFloat16, 8, 2>",
                 "a>b<c, 1, d<e>>, f", "x:::y", "k<(Enum)0>::Kargs", "::", "a::b::", " a  b "):
        check(name)
    assert generic.gist("void foo<int>(int)") is None
    assert generic.gist("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, "
                        "std::array<char*, 3> >(int, at::native::CUDAFunctor_add<float>, std::array<char*, 3>)").op == "add"


def ref_common_prefix(forms: list[str]) -> int:
    first, n = forms[0], min(len(f) for f in forms)
    i = 0
    while i < n and all(f[i] == first[i] for f in forms):
        i += 1
    while i > 0 and first[i - 1] not in display._SEPARATORS:
        i -= 1
    return i


def ref_common_suffix(forms: list[str], prefix: int) -> int:
    first, n = forms[0], min(len(f) for f in forms) - prefix
    j = 0
    while j < n and all(f[-1 - j] == first[-1 - j] for f in forms):
        j += 1
    while j > 0 and first[-j] not in display._SEPARATORS:
        j -= 1
    return j


@settings(max_examples=400, deadline=None)
@given(st.lists(st.text(alphabet="ab_<:x1 ", max_size=12), min_size=2, max_size=6))
def test_common_parts_as_before(forms):
    """The common start and end of a group of alike names (os.path.commonprefix of the group, and
    of it reversed) cut where the character-by-character walk cuts them."""
    p = display._common_prefix(forms)
    assert p == ref_common_prefix(forms)
    assert display._common_suffix(forms, p) == ref_common_suffix(forms, p)


def test_real_groups_common_parts_as_before():
    forms = [f"nvjet_sm90_tst_{a}x8_64x8_2x1_v_bz_TNT" for a in (128, 256, 64)]
    p = display._common_prefix(forms)
    assert (p, display._common_suffix(forms, p)) == (ref_common_prefix(forms), ref_common_suffix(forms, p)) == (15, 18)
