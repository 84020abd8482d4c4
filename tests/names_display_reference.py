"""The display names as `core/names/display.py` made them before naming 100,000 distinct names was
made cheaper (issue 43), kept whole as the reference the differential test
(tests/unit/test_names_as_before.py) holds the faster module to, name for name."""

from __future__ import annotations

import os
import re

from kerneldiff.core.lazy_pattern import LazyPattern
from kerneldiff.core.names.generic import gist
from kerneldiff.core.names.parts import drop_return_type, strip_args, strip_signature

_NAMESPACES = LazyPattern(r"(?:at::native::|at::cuda::|c10::|std::|cub::|cutlass::|\(anonymous namespace\)::|"
                         r"pytorch_flash::|void |__hip_|__nv_)")


_ANGLE_OR_COMMA = LazyPattern(r"[<>,]")
_PLAIN_ARG = LazyPattern(r"[-\d.]+[a-z]*|true|false")


def _flatten_templates(s: str) -> str:
    """Keep first-level template arguments without their own template arguments; drop numbers."""
    # walked from one `<`, `>` or `,` to the next: the text between them goes where the depth says
    out: list[str] = []
    depth, arg, at = 0, "", 0
    args: list[str] = []
    for m in _ANGLE_OR_COMMA.finditer(s):
        i = m.start()
        if depth == 1:
            arg += s[at:i]
        elif depth == 0:
            out.append(s[at:i])
        at = i + 1
        ch = s[i]
        if ch == "<":
            depth += 1
            if depth == 1:
                out.append("<")
                arg = ""
                args = []
        elif ch == ">":
            depth -= 1
            if depth == 0:
                args.append(arg.strip())
                kept = [a for a in args if a and not _PLAIN_ARG.fullmatch(a)]
                out.append(", ".join(kept) + ">")
        elif depth == 1:
            args.append(arg.strip())
            arg = ""
        elif depth == 0:
            out.append(",")
    if depth == 1:
        arg += s[at:]
    elif depth == 0:
        out.append(s[at:])
    if depth > 0:  # unbalanced (a name cut short): show what the first level held
        args.append(arg.strip())
        out.append(", ".join(a for a in args if a) + "…>")
    return "".join(out).replace("<>", "")


# PyTorch's generic kernels differ only in their functor: shorten the common stem, keep the functor.
_STEMS = (("vectorized_elementwise_kernel", "vec_ew"), ("unrolled_elementwise_kernel", "unrolled_ew"),
          ("elementwise_kernel", "ew"), ("reduce_kernel", "reduce"), ("gpu_kernel_impl_nocast", "impl"))


_BRACKET_OR_SCOPE = LazyPattern(r"[<({\[>)}\]]|:(?=:)")


def _unqualified(s: str) -> str:
    """Drop the namespaces and classes in front of the name (outside template arguments):
    `at::native::(anonymous namespace)::CatArrayBatchedCopy<T>` -> `CatArrayBatchedCopy<T>`."""
    depth, cuts, n = 0, [0], len(s)
    for m in _BRACKET_OR_SCOPE.finditer(s):   # brackets, and each `:` that another follows
        ch = m.group()
        if ch in "<({[":
            depth += 1
        elif ch in ">)}]":
            depth = max(depth - 1, 0)
        elif depth == 0 and m.start() + 2 < n:
            cuts.append(m.start() + 2)
    # a member that says nothing alone (`operator()`, a lambda) keeps its class
    if len(cuts) > 1 and s.startswith(("operator", "{lambda", "{unnamed"), cuts[-1]):
        return s[cuts[-2]:]
    return s[cuts[-1]:]


_QUALIFIER = LazyPattern(r"\b[A-Za-z_]\w*::(?=[A-Za-z_~])")
_KERNEL_SUFFIX = LazyPattern(r"(?<=\w{8})(?:_kernel|Kernel)(?=<|$)")   # not `device_kernel` -> `device`
_IDENT = LazyPattern(r"[\w.$]+")
# Shaping walks the name's brackets and separators in Python; a longer name (no real kernel's: CK's
# longest are ~3,000) is only cut, so a 300 MB name costs a slice, not minutes.
MAX_SHAPED = 16_384


_SPACES = LazyPattern(r"\s+")
_COPY = LazyPattern(r"Memcpy (\w+) \((\w+) -> (\w+)\)")
_VEC_WIDTH = LazyPattern(r"vectorized_elementwise_kernel<\s*(\d+)\s*,")


def _copy_name(kind: str, src: str, dst: str, width: int) -> str:
    """`Memcpy HtoD (Pageable -> Device)` -> `HtoD Pageable`: the host memory's kind (pageable or
    pinned) is what tells two copies of one direction apart."""
    host = src if kind.startswith("Hto") else dst if kind.endswith("toH") else ""
    short = f"{kind} {host}" if host and host not in ("Host", "Device") else kind
    return short if len(short) <= width else kind[:width]


def short_name(name: str, width: int = 48) -> str:
    """`name` in at most `width` cells, keeping what tells kernels apart: a mangled name is demangled
    (without its parameter list), then, as long as it does not fit, the parameter list, return type and well-known namespaces
    go, template arguments lose their own arguments and numbers, PyTorch's generic stems shrink,
    the remaining qualifiers go (`vllm::act_and_mul_kernel<…>` -> `act_and_mul_kernel<…>`, then
    those of the template arguments), then a trailing `_kernel`; what still does not fit is cut with an ellipsis."""
    s = name.strip()
    if len(s) > MAX_SHAPED:
        keep = max(width - 1, 1)
        tail = keep * 2 // 5 if width >= 20 else 0
        return s[:keep - tail] + "…" + (s[len(s) - tail:] if tail else "")
    if s.startswith("_Z"):
        # imported here: the demangler (~1,000 lines) only for traces that hold mangled names
        from kerneldiff.core.names.demangle import readable

        s = readable(s)
    copy = _COPY.fullmatch(s)
    if copy and len(s) > width:
        return _copy_name(*copy.groups(), width)
    vec = _VEC_WIDTH.search(s)
    if len(s) > width and (g := gist(s)) is not None:
        s = g.text()    # PyTorch's generic kernels by their op: `rsqrt vec_ew<4>`
        return s if len(s) <= width else s[:width - 1] + "…"
    if len(s) > width:
        s = _NAMESPACES.sub("", drop_return_type(strip_args(s)))
        s = _flatten_templates(s) if "<" in s else s
        for stem, short in _STEMS:
            s = s.replace(stem, short)
        if vec:    # the vector width tells vec_ew<4, add> from vec_ew<8, add> (float against bf16)
            s = s.replace("vec_ew<", f"vec_ew<{vec.group(1)}, ", 1)
        s = _SPACES.sub(" ", s).strip() or name
    if len(s) > width:
        s = _unqualified(s)
    if len(s) > width:   # and inside the template arguments
        s = _QUALIFIER.sub("", s)
    if len(s) > width:
        s = _KERNEL_SUFFIX.sub("", s, count=1) or s
    if len(s) > width:
        keep = width - 1
        if _IDENT.fullmatch(s) and width >= 20:
            # one plain identifier (`kernel_unified_attention_3d`, `Cijk_…_MT128x128x64_…`): its end
            # tells it apart from its siblings as often as its start does
            tail = keep * 2 // 5
            s = s[:keep - tail] + "…" + s[len(s) - tail:]
        else:
            s = s[:keep] + "…"
    return s


# Where a name may be cut between its common part and the part that differs: after a separator, so
# `nvjet_sm90_tst_` + `128x8_64x8` rather than `nvjet_sm90_tst_1` + `28x8`.
_SEPARATORS = frozenset("_:<>,() ")


def _full_form(name: str) -> str:
    """The name without what never tells kernels apart: parameter list, return type, well-known
    namespaces; PyTorch's generic stems shortened as in `short_name`."""
    s = name.strip()
    if s.startswith("_Z"):
        from kerneldiff.core.names.demangle import readable

        s = readable(s)
    s = _unqualified(_NAMESPACES.sub("", strip_signature(s)) or s)
    for stem, short in _STEMS:
        s = s.replace(stem, short)
    return _SPACES.sub(" ", s).strip() or name


def _common_prefix(forms: list[str]) -> int:
    # the common start of all is that of the first and last in sorted order (os.path.commonprefix)
    first, i = forms[0], len(os.path.commonprefix(forms))
    while i > 0 and first[i - 1] not in _SEPARATORS:   # back to just after a separator
        i -= 1
    return i


def _common_suffix(forms: list[str], prefix: int) -> int:
    first, n = forms[0], min(len(f) for f in forms) - prefix
    j = max(min(len(os.path.commonprefix([f[::-1] for f in forms])), n), 0)
    while j > 0 and first[-j] not in _SEPARATORS:   # on to a separator
        j -= 1
    return j


def _fit_middle(form: str, prefix: int, suffix: int, width: int) -> str:
    """`form` in `width` cells keeping its middle (form[prefix:-suffix], what differs) whole where
    it fits; the room left shows the common start (the family: nvjet, cudnn…), then the common
    end, each elided with '…'."""
    if len(form) <= width:
        return form
    front, mid, back = form[:prefix], form[prefix:len(form) - suffix], form[len(form) - suffix:]
    lead, trail = ("…" if front else ""), ("…" if back else "")
    if len(lead) + len(mid) + len(trail) >= width:
        # the middle does not fit: the family (the common start's first word) and the middle's start
        fam = next((i for i, ch in enumerate(front) if i and ch in "<(:, "), len(front))
        fam = min(fam, (width - 2) // 3)
        if fam >= 2:
            return front[:fam] + "…" + mid[:width - fam - 2] + "…"
        return (lead + mid)[:width - 1] + "…"
    room = width - len(lead) - len(mid) - len(trail)
    if room < 4:                        # a family cut to a few letters says nothing
        return lead + mid + trail
    if room >= len(front):
        head, room = front, room - len(front) + len(lead)
    else:
        head, room = front[:room] + "…", 0
    if room + len(trail) >= len(back):
        tail = back
    elif room >= 3:
        tail = "…" + back[len(back) - room:]
    else:
        tail = trail
    return head + mid + tail


def distinct_short_names(names, width: int) -> dict[str, str]:
    """Short names for the names of one table (`short_name`), except where different names would
    read the same: those keep the part that tells them apart — the common start and end among
    them elided, their distinguishing middle (a tile configuration, a functor) kept whole, so eight
    `nvjet_sm90_tst_…` read `…_128x8_64x8_2x1…`, `…_256x8_64x6_2x1…`. Names still alike after
    that are compared again among themselves (their common part is longer, their middles shorter)."""
    unique = list(dict.fromkeys(n for n in names if n))
    short = {n: short_name(n, width) for n in unique}
    if width < 6:
        return short
    _generic_apart(unique, short, width)
    forms: dict[str, str] = {}
    for _round in range(3):
        groups: dict[str, list[str]] = {}
        for n in unique:
            groups.setdefault(short[n], []).append(n)
        alike = [g for g in groups.values() if len(g) > 1]
        if not alike:
            break
        for group in alike:
            typed = _typed_gists(group, width)
            if typed is not None:   # generic kernels told apart by their element type
                short.update(typed)
                continue
            fs = [forms.get(n) or forms.setdefault(n, _full_form(n)) for n in group]
            if len(set(fs)) < len(fs):   # differ only in the parameter list: read them whole
                fs = [_full_readable(n) for n in group]
            if len(set(fs)) < len(fs) or any(len(f) > MAX_SHAPED for f in fs):
                continue
            p = _common_prefix(fs)
            s = _common_suffix(fs, p)
            for n, f in zip(group, fs):
                short[n] = _fit_middle(f, p, s, width)
    return short


_TOKEN = LazyPattern(r"#?\w+")


def _fit_op(op: str, rest: str, width: int) -> str:
    """`op` + `rest` in `width` cells: what tells them apart (`rest`) kept whole, the op shortened."""
    text = op + rest
    if len(text) <= width:
        return text
    if len(rest) + 4 <= width:
        return op[:width - len(rest) - 1] + "…" + rest
    return text[:width - 1] + "…"


def _generic_apart(names: list[str], short: dict[str, str], width: int) -> None:
    """PyTorch's generic kernels of one op (every `direct_copy`) told apart among themselves, so
    that a table's copies read `direct_copy(float) ew`, `direct_copy(long) unrolled_ew`."""
    from kerneldiff.core.names.demangle import readable

    by_op: dict[str, list[str]] = {}
    for n in names:
        g = gist(readable(n) if n.startswith("_Z") else n)
        if g is not None:
            by_op.setdefault(g.op, []).append(n)
    for members in by_op.values():
        if len(members) > 1 and len({short[n] for n in members}) < len(members):
            short.update(_typed_gists(members, width) or {})


def _typed_gists(group: list[str], width: int) -> dict[str, str] | None:
    """Generic kernels of one table, told apart by the least of their element type and template
    that does it (`direct_copy(float) ew`, `direct_copy(long) unrolled_ew`; the op shortened first:
    `direct_c…(long) ew`), and those still alike by the first word that differs between their
    names (a lambda's `#7`, a launch size `128`). None where one is not generic or two still read
    the same."""
    from kerneldiff.core.names.demangle import readable

    gs = dict(zip(group, (gist(readable(n) if n.startswith("_Z") else n) for n in group)))
    if not all(gs.values()):
        return None

    def label(g, dtype: bool, template: bool) -> str:
        return _fit_op(g.op, (f"({g.dtype})" if dtype and g.dtype else "") + (f" {g.template}" if template else ""),
                       width)

    for dtype, template in ((False, True), (True, False), (True, True)):
        out = {n: label(g, dtype, template) for n, g in gs.items()}
        if len(set(out.values())) == len(out):
            return out
    alike: dict[str, list[str]] = {}
    for n, text in out.items():
        alike.setdefault(text, []).append(n)
    for members in (m for m in alike.values() if len(m) > 1):
        forms = [_full_form(n) for n in members]
        if len(set(forms)) < len(forms):
            return None
        p = _common_prefix(forms)
        q = _common_suffix(forms, p)
        words = [_TOKEN.search(f[p:len(f) - q]) for f in forms]
        if not all(words):
            return None
        for n, w in zip(members, words):
            g, token = gs[n], w.group(0)[:8]
            # the most that fits whole beside at least four letters of the op
            rests = [(f"({g.dtype})" if dtype and g.dtype else "") + (f" {g.template}" if template else "")
                     + f" {token}" for dtype, template in ((True, True), (True, False), (False, False))]
            rest = next((r for r in rests if len(r) + 4 <= width), rests[-1])
            out[n] = _fit_op(g.op, rest, width)
    return out if len(set(out.values())) == len(out) else None


def _full_readable(name: str) -> str:
    """The name without its parameter list and qualifiers, its template arguments as written
    (`__hip_bfloat16` and `__nv_bfloat16` differ here, not in `_full_form`)."""
    from kerneldiff.core.names.demangle import readable

    s = name.strip()
    s = readable(s) if s.startswith("_Z") else s
    return _unqualified(strip_signature(s) or s)
