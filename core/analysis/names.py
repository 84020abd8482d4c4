"""Short display names for kernels: enough to tell two kernels apart in a table cell."""

from __future__ import annotations

import re

_NAMESPACES = re.compile(r"(?:at::native::|at::cuda::|c10::|std::|cub::|cutlass::|\(anonymous namespace\)::|"
                         r"pytorch_flash::|void |__hip_|__nv_)")


_NAMED = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}


def _escape(ch: str) -> str:
    o = ord(ch)
    return _NAMED.get(ch) or (f"\\x{o:02x}" if o < 0x100 else f"\\u{o:04x}" if o < 0x10000 else f"\\U{o:08x}")


def visible(s: str) -> str:
    """`s` with every non-printable character (C0/C1 controls, ESC, bidi overrides, line
    separators, …) replaced by a visible escape, so a string from a trace cannot drive a terminal."""
    if s.isprintable():
        return s
    return "".join(ch if ch.isprintable() else _escape(ch) for ch in s)


def _strip_args(s: str) -> str:
    """Drop the trailing parameter list `(...)` of a demangled signature (a name that does not end
    in one, such as `k<(Enum)0>` or `k<…>::Kargs`, is left alone; so is a ` const` after it)."""
    s = s.rstrip()
    if s.endswith(" const"):
        s = s[:-6].rstrip()
    if not s.endswith(")"):
        return s
    depth = 0
    for i in range(len(s) - 1, -1, -1):
        ch = s[i]
        if ch == ")":
            depth += 1
        elif ch == "(":
            depth -= 1
            if depth == 0:
                head = s[:i].rstrip()
                return head if head else s
    return s


def _drop_return_type(s: str) -> str:
    """`std::enable_if<…>::type vllm::kernel<…>` -> `vllm::kernel<…>`: the name is the last
    space-separated token outside template brackets and parentheses (`(anonymous namespace)` and
    `{lambda(float)#1}` hold spaces that separate nothing)."""
    depth, cut = 0, -1
    for i, ch in enumerate(s):
        if ch in "<({[":
            depth += 1
        elif ch in ">)}]":
            depth = max(depth - 1, 0)
        elif ch == " " and depth == 0 and i + 1 < len(s) and s[i + 1] not in "<>(&*":
            cut = i
    return s[cut + 1:] if cut >= 0 and cut + 1 < len(s) else s


def strip_signature(s: str) -> str:
    """A demangled function without its return type and parameter list:
    `void aiter::k<float, 256>(float*, int)` -> `aiter::k<float, 256>`."""
    return _drop_return_type(_strip_args(s.strip()))


def _flatten_templates(s: str) -> str:
    """Keep first-level template arguments without their own template arguments; drop numbers."""
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
    if depth > 0:  # unbalanced (a name cut short): show what the first level held
        args.append("".join(arg).strip())
        out.append(", ".join(a for a in args if a) + "…>")
    return "".join(out).replace("<>", "")


# PyTorch's generic kernels differ only in their functor: shorten the common stem, keep the functor.
_STEMS = (("vectorized_elementwise_kernel", "vec_ew"), ("unrolled_elementwise_kernel", "unrolled_ew"),
          ("elementwise_kernel", "ew"), ("reduce_kernel", "reduce"), ("gpu_kernel_impl_nocast", "impl"))


def _unqualified(s: str) -> str:
    """Drop the namespaces and classes in front of the name (outside template arguments):
    `at::native::(anonymous namespace)::CatArrayBatchedCopy<T>` -> `CatArrayBatchedCopy<T>`."""
    depth, cuts = 0, [0]
    for i, ch in enumerate(s):
        if ch in "<({[":
            depth += 1
        elif ch in ">)}]":
            depth = max(depth - 1, 0)
        elif ch == ":" and depth == 0 and s.startswith("::", i) and i + 2 < len(s):
            cuts.append(i + 2)
    # a member that says nothing alone (`operator()`, a lambda) keeps its class
    if len(cuts) > 1 and s.startswith(("operator", "{lambda", "{unnamed"), cuts[-1]):
        return s[cuts[-2]:]
    return s[cuts[-1]:]


_QUALIFIER = re.compile(r"\b[A-Za-z_]\w*::(?=[A-Za-z_~])")
_KERNEL_SUFFIX = re.compile(r"(?<=\w{8})(?:_kernel|Kernel)(?=<|$)")   # not `device_kernel` -> `device`
_IDENT = re.compile(r"[\w.$]+")
# Shaping walks the name character by character in Python; a longer name (no real kernel's: CK's
# longest are ~3,000) is only cut, so a 300 MB name costs a slice, not minutes.
MAX_SHAPED = 16_384


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
        from kerneldiff.core.analysis.demangle import readable

        s = readable(s)
    if len(s) > width:
        s = _NAMESPACES.sub("", _drop_return_type(_strip_args(s)))
        s = _flatten_templates(s) if "<" in s else s
        for stem, short in _STEMS:
            s = s.replace(stem, short)
        s = re.sub(r"\s+", " ", s).strip() or name
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
